"""The optimizer step: memory-bound over the parameters one device updates (the step assembly of every
transformer family, ``step_terms``, and the heterogeneous pipeline, ``hetero``, price it here)."""
from __future__ import annotations

import numpy as np

# Bytes moved per parameter by one Adam step (memory-bound): read master, m, v, fp32 grad (16 B), write master,
# m, v (12 B) and the 16-bit weight copy (2 B), plus one read of the grads for the global-norm clip (4 B).
OPTIMIZER_STEP_BYTES = {"adam": 34.0, "adamw": 34.0, "sgd": 26.0}


def updated_params(stage_params, zero, shard, experts=None, edp=None):
    """Parameters the busiest device updates: its stage's (first, last, middle) dense parameters sharded over the
    ZeRO group ``shard`` (ZeRO ≥ 1), plus its experts' sharded over the expert-data-parallel group ``edp``."""
    shard_div = np.where(zero >= 1, shard, 1.0)
    if experts is None:
        return np.maximum(np.maximum(stage_params[0], stage_params[1]), stage_params[2]) / shard_div
    x_div = np.where(zero >= 1, np.asarray(edp, dtype=np.float64), 1.0)
    first, last, mid = (p / shard_div + x / x_div for p, x in zip(stage_params, experts))
    return np.maximum(np.maximum(first, last), mid)


def optimizer_step_s(params, optimizer: str, bw_mem):
    """Seconds of one optimizer step over ``params`` parameters at ``bw_mem`` bytes/s."""
    return params * OPTIMIZER_STEP_BYTES[optimizer] / bw_mem
