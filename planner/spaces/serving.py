"""The serving search space: candidate deployments of a workload on a cluster (aggregated, disaggregated
prefill/decode and, for MoE models, attention/FFN-disaggregated), bounded by ``MAX_CANDIDATES``."""
from __future__ import annotations

from parplan.errors import SpecError
from parplan.models.serving_plan import Deployment, Pool

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


def _replica_counts(most: int) -> list[int]:
    """Replica counts searched: every count up to 8, then powers of two and the most that fit."""
    return sorted({r for r in range(1, min(most, 8) + 1)} | {r for r in _pow2_upto(most)} | {most}) if most else []


def candidates(workload, cluster, serving, modes=None, max_candidates: int = MAX_CANDIDATES) -> list[Deployment]:
    m = workload.model
    n = cluster.n_devices
    dpn = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    moe = hasattr(m, "experts")
    modes = tuple(modes or (MODES if moe else MODES[:2]))
    tps = [t for t in _pow2_upto(dpn) if m.heads % t == 0]
    pps = [p for p in (1, 2, 4, 8) if p <= m.layers and p <= n]
    spds = sorted({0.0, float(serving.spd_drop_budget)})
    out: list[Deployment] = []

    def add(d):
        out.append(d)
        if len(out) > max_candidates:
            raise SpecError(f"more than {max_candidates:,} candidate deployments", key="--serve",
                            hint="restrict the modes or use a smaller cluster")

    def attn_shapes():
        for tp in tps:
            for dp in (_pow2_upto(dpn // tp) if moe else [1]):
                for ep in sorted({1, tp * dp}) if moe else [1]:
                    if ep > 1 and m.experts % ep:
                        continue
                    yield tp, dp, ep

    if "aggregated" in modes:
        for tp, dp, ep in attn_shapes():
            for pp in pps:
                per = tp * pp * dp
                for R in _replica_counts(n // per):
                    for B in BATCHES:
                        for C in CHUNKS:
                            for spd in (spds if tp > 1 else [0.0]):
                                for fused in ([False, True] if moe and ep > 1 and tp > 1 else [False]):
                                    add(Deployment("aggregated", (Pool("mixed", R, tp, pp, ep, dp, B, C),),
                                                   spd_drop=spd, fused_ar_a2a=fused))
    if "disaggregated" in modes and n >= 2:
        for tp_p, dp_p, ep_p in attn_shapes():
            for tp_d, dp_d, ep_d in attn_shapes():
                for Rp in _replica_counts((n - tp_d * dp_d) // (tp_p * dp_p)):
                    for Rd in _replica_counts((n - Rp * tp_p * dp_p) // (tp_d * dp_d)):
                        for B in BATCHES:
                            add(Deployment("disaggregated", (Pool("prefill", Rp, tp_p, 1, ep_p, dp_p, B, 0),
                                                             Pool("decode", Rd, tp_d, 1, ep_d, dp_d, B, 0))))
    if "af-disaggregated" in modes and moe:
        eps = [e for e in _pow2_upto(n) if m.experts % e == 0 and e >= 2]
        for tp in tps:
            for dp in _pow2_upto(dpn // tp):
                for e_ep in eps:
                    for Ra in _replica_counts((n - e_ep) // (tp * dp)):
                        for B in BATCHES:
                            for C in (0, 2048):
                                for mb in MICRO_BATCHES:
                                    add(Deployment("af-disaggregated",
                                                   (Pool("attention", Ra, tp, 1, 1, dp, B, C),
                                                    Pool("expert", 1, 1, 1, e_ep, 1, B, 0)), micro_batches=mb))
    return out
