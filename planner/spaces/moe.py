"""The mixture-of-experts family's search space: the shared enumeration plus the expert axes ``ep`` and ``etp``.

Rules (Megatron-Core MoE; the framework profile narrows them):

* ``ep`` divides the number of routed experts; ``ep·etp`` divides the product of the plan axes the framework folds
  expert parallelism over (Megatron-Core "MoE parallel folding": dp·cp·tp; torchtitan: dp·cp; DeepSpeed-MoE: dp);
* ``etp`` divides the expert FFN size, stays inside the scale-up domain and is 1 unless the framework has expert
  tensor parallelism (``--expert-tensor-parallel-size``);
* ``tp > 1`` needs sequence parallelism (Megatron-Core rejects tensor + expert parallelism without it).
"""
from __future__ import annotations

import numpy as np

from parplan.models.moe import RECOMPUTE_MODES
from parplan.models.plan import RECOMPUTE
from parplan.planner.space import build_space as _build
from parplan.planner.space import divisors

ETP_VALUES = (1, 2, 4, 8)


def _fold_span(cols: dict, over) -> np.ndarray:
    span = np.ones_like(cols["tp"])
    for axis in over:
        span = span * cols[axis]
    return span


def knob_values(knob: str, workload, fw, devices_per_node: int) -> np.ndarray:
    """The values of an expert knob the framework can run: ep among the divisors of the experts; etp among
    ETP_VALUES dividing the expert FFN, inside the scale-up domain, and only 1 without expert TP.  The search and
    partial-plan completion (``planner/complete.py``) both take them from here."""
    mdl = workload.model
    if knob == "ep":
        return divisors(int(mdl.experts)) if getattr(fw, "ep", True) else np.array([1], dtype=np.int64)
    if knob == "etp":
        fe = int(mdl.moe_ffn_hidden)
        return np.array([t for t in ETP_VALUES if fe % t == 0 and t <= devices_per_node
                         and (t == 1 or getattr(fw, "etp", False))], dtype=np.int64)
    raise KeyError(knob)


def row_axes_for(workload, devices_per_node: int):
    def row_axes(cols, fix, fw, excl, rule_text):
        over = tuple(getattr(fw, "ep_over", None) or ("dp", "cp", "tp"))
        ep_vals = knob_values("ep", workload, fw, devices_per_node)
        etp_vals = knob_values("etp", workload, fw, devices_per_node)
        n = cols["tp"].shape[0]
        pairs = np.array([(a, b) for a in ep_vals for b in etp_vals], dtype=np.int64).reshape(-1, 2)
        k = pairs.shape[0]
        out = {name: np.repeat(a, k) for name, a in cols.items()}
        ep, etp = np.tile(pairs[:, 0], n), np.tile(pairs[:, 1], n)
        span = _fold_span(out, over)
        ok = (span % (ep * etp)) == 0
        rule_text.setdefault("ep_fold", f"ep·etp does not divide {'·'.join(over)} (expert parallelism is folded over "
                                        f"them by {fw.name})")
        excl["ep_fold"] = excl.get("ep_fold", 0) + int((~ok).sum())
        okf = np.ones_like(ok)
        for key, arr in (("ep", ep), ("etp", etp)):
            if key in fix:
                okf &= arr == fix[key]
        excl["fixed"] = excl.get("fixed", 0) + int((ok & ~okf).sum())
        ok &= okf
        out = {name: a[ok] for name, a in out.items()}
        out["ep"], out["etp"] = ep[ok], etp[ok]
        return out

    return row_axes


def _sp_with_tp(cols, Z, R, S):
    return S | (cols["tp"] <= 1).reshape(-1, 1, 1, 1)


def build_space(workload, n_devices: int, devices_per_node: int, **kw):
    return _build(workload, n_devices, devices_per_node, row_axes=row_axes_for(workload, devices_per_node),
                  cell_rules=[("moe_sp", "tp > 1 without sequence parallelism (required with experts)", _sp_with_tp)],
                  recompute_levels=tuple(RECOMPUTE.index(r) for r in RECOMPUTE_MODES), **kw)
