"""The serving search space: candidate deployments of a workload on a cluster (aggregated, disaggregated
prefill/decode and, for MoE models, attention/FFN-disaggregated), bounded by ``MAX_CANDIDATES``.

Built as arrays (``models.serving_arrays.DeploymentSet``, one block per mode) in the order of the nested loops
written in each builder's comment; ``candidates`` makes the ``Deployment`` objects of every row."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from parplan.errors import SpecError
from parplan.models.serving_arrays import DeploymentBlock, DeploymentSet, PoolArrays

BATCHES = (8, 16, 32, 64, 128, 256, 512)  # vLLM --max-num-seqs values people run (default 256)
CHUNKS = (0, 512, 2048, 8192)  # --max-num-batched-tokens (0: no chunked prefill); vLLM V1 default 2048–8192
MICRO_BATCHES = (2, 3)  # MegaScale-Infer ping-pong (m ≥ 2; the paper's setup m = 3, seed S09)
MAX_CANDIDATES = 200_000
MODES = ("aggregated", "disaggregated", "af-disaggregated")


def _pow2_upto(n: int) -> list[int]:
    out, v = [], 1
    while v <= n:
        out.append(v)
        v *= 2
    return out


@lru_cache(maxsize=None)
def _replica_counts(most: int) -> tuple:
    """Replica counts searched: every count up to 8, then powers of two and the most that fit."""
    if not most:
        return ()
    return tuple(sorted({r for r in range(1, min(most, 8) + 1)} | {r for r in _pow2_upto(most)} | {most}))


def _product(*axes) -> list[np.ndarray]:
    """Every combination of the axes' values, the last axis fastest (the order of nested for-loops)."""
    grids = np.meshgrid(*[np.asarray(a) for a in axes], indexing="ij")
    return [g.ravel() for g in grids]


def _rows(outer: list[tuple], inners: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Outer loop rows (tuples of ints), each followed by its inner loops' rows (``inners[i]``: columns): the
    columns of outer values repeated over their inner rows, then the inner columns."""
    same = all(inn is inners[0] for inn in inners)
    counts = len(inners[0][0]) if same else np.array([len(inn[0]) for inn in inners], dtype=np.int64)
    head = [np.repeat(col, counts) for col in np.array(outer, dtype=np.float64).T]
    if same:
        return head + [np.tile(col, len(outer)) for col in inners[0]]
    return head + [np.concatenate([inn[k] for inn in inners]) for k in range(len(inners[0]))]


class _Budget:
    """The running count of candidates against ``MAX_CANDIDATES`` (the same refusal as adding them one by one)."""

    def __init__(self, most: int):
        self.most, self.n = most, 0

    def add(self, k: int) -> None:
        self.n += int(k)
        if self.n > self.most:
            raise SpecError(f"more than {self.most:,} candidate deployments", key="--serve",
                            hint="restrict the modes or use a smaller cluster")


def _aggregated(moe, shapes, pps, n, spds, budget):
    # for (tp, dp, ep) in shapes: for pp: for R in replica counts: for B: for C: for spd: for fused
    outer, inners, cache = [], [], {}
    for tp, dp, ep in shapes:
        for pp in pps:
            reps = _replica_counts(n // (tp * pp * dp))
            if not reps:
                continue
            key = (len(spds) if tp > 1 else 1, bool(moe and ep > 1 and tp > 1))
            if key not in cache:
                cache[key] = _product(BATCHES, CHUNKS, spds if tp > 1 else [0.0], [False, True] if key[1] else [False])
            for R in reps:
                outer.append((tp, dp, ep, pp, R))
                inners.append(cache[key])
    if not outer:
        return None
    tp, dp, ep, pp, R, B, C, spd, fused = _rows(outer, inners)
    budget.add(len(tp))
    pool = PoolArrays.of("mixed", len(tp), replicas=R, tp=tp, pp=pp, ep=ep, attn_dp=dp, max_batch=B, chunk_tokens=C)
    return DeploymentBlock.of("aggregated", (pool,), spd_drop=spd, fused=fused.astype(bool))


def _disaggregated(shapes, n, budget):
    # for prefill (tp, dp, ep): for decode (tp, dp, ep): for Rp: for Rd: for B
    outer = []
    for tp_p, dp_p, ep_p in shapes:
        for tp_d, dp_d, ep_d in shapes:
            for Rp in _replica_counts((n - tp_d * dp_d) // (tp_p * dp_p)):
                for Rd in _replica_counts((n - Rp * tp_p * dp_p) // (tp_d * dp_d)):
                    outer.append((tp_p, dp_p, ep_p, Rp, tp_d, dp_d, ep_d, Rd))
    if not outer:
        return None
    tp_p, dp_p, ep_p, Rp, tp_d, dp_d, ep_d, Rd, B = _rows(outer, [[np.array(BATCHES, dtype=np.float64)]] * len(outer))
    budget.add(len(B))
    k = len(B)
    pre = PoolArrays.of("prefill", k, replicas=Rp, tp=tp_p, ep=ep_p, attn_dp=dp_p, max_batch=B, chunk_tokens=0)
    dec = PoolArrays.of("decode", k, replicas=Rd, tp=tp_d, ep=ep_d, attn_dp=dp_d, max_batch=B, chunk_tokens=0)
    return DeploymentBlock.of("disaggregated", (pre, dec))


def _af(m, tps, dpn, n, budget):
    # for tp: for dp: for expert ep: for Ra: for B: for C in (0, 2048): for micro-batches
    eps = [e for e in _pow2_upto(n) if m.experts % e == 0 and e >= 2]
    inner = _product(BATCHES, (0, 2048), MICRO_BATCHES)
    outer = [(tp, dp, e_ep, Ra) for tp in tps for dp in _pow2_upto(dpn // tp) for e_ep in eps
             for Ra in _replica_counts((n - e_ep) // (tp * dp))]
    if not outer:
        return None
    tp, dp, e_ep, Ra, B, C, mb = _rows(outer, [inner] * len(outer))
    budget.add(len(B))
    k = len(B)
    attn = PoolArrays.of("attention", k, replicas=Ra, tp=tp, attn_dp=dp, max_batch=B, chunk_tokens=C)
    expert = PoolArrays.of("expert", k, ep=e_ep, max_batch=B)
    return DeploymentBlock.of("af-disaggregated", (attn, expert), micro_batches=mb)


def candidate_set(workload, cluster, serving, modes=None, max_candidates: int = MAX_CANDIDATES) -> DeploymentSet:
    """Every candidate deployment as arrays, in the enumeration order (modes in ``MODES`` order)."""
    m = workload.model
    n = cluster.n_devices
    dpn = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    moe = hasattr(m, "experts")
    modes = tuple(modes or (MODES if moe else MODES[:2]))
    tps = [t for t in _pow2_upto(dpn) if m.heads % t == 0]
    pps = [p for p in (1, 2, 4, 8) if p <= m.layers and p <= n]
    spds = sorted({0.0, float(serving.spd_drop_budget)})
    shapes = [(tp, dp, ep) for tp in tps for dp in (_pow2_upto(dpn // tp) if moe else [1])
              for ep in (sorted({1, tp * dp}) if moe else [1]) if not (ep > 1 and m.experts % ep)]
    budget = _Budget(max_candidates)
    blocks = []
    if "aggregated" in modes:
        blocks.append(_aggregated(moe, shapes, pps, n, spds, budget))
    if "disaggregated" in modes and n >= 2:
        blocks.append(_disaggregated(shapes, n, budget))
    if "af-disaggregated" in modes and moe:
        blocks.append(_af(m, tps, dpn, n, budget))
    return DeploymentSet([b for b in blocks if b is not None])


def candidates(workload, cluster, serving, modes=None, max_candidates: int = MAX_CANDIDATES) -> list:
    """Every candidate ``Deployment`` (``candidate_set``'s rows as objects)."""
    return candidate_set(workload, cluster, serving, modes, max_candidates).deployments()
