"""Serving planner: every candidate deployment (planner/spaces/serving.py) priced in one vectorized call
(``models.serving.evaluate_serving``), ranked by output tokens/s per device (or per $) among those that fit and meet
every SLO; equal-outcome deployments are one row (the simplest: smallest batch, then chunk); a throughput-vs-TPOT
Pareto front over every deployment that fits; and, when none passes, why and what would fit."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from parplan.models.serving import GiB, SLO_KEYS, estimate_at, evaluate_serving
from parplan.planner.spaces.serving import candidates


@dataclass
class ServingPlanSet:
    workload: object
    cluster: object
    serving: object
    ranked: list  # ServingEstimate, best first (fit and meet the SLOs)
    pareto: list  # ServingEstimate on the throughput-per-device vs TPOT front (fitting deployments)
    closest: object  # the best deployment that fits, when none passes (else None)
    advice: list[str]
    stats: dict
    price_per_hour: float | None = None
    equivalent: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ranked)

    @property
    def best(self):
        return self.ranked[0] if self.ranked else None

    def usd_per_million_tokens(self, e) -> float | None:
        if self.price_per_hour is None or not e.output_tokens_per_s > 0:
            return None
        return e.n_devices * self.price_per_hour / 3600.0 / e.output_tokens_per_s * 1e6


def _pareto(tput: np.ndarray, lat: np.ndarray, ok: np.ndarray) -> list[int]:
    """Indices on the front: no other row has at least the throughput and at most the latency (one strictly)."""
    idx = [i for i in np.flatnonzero(ok) if np.isfinite(lat[i])]
    idx.sort(key=lambda i: (lat[i], -tput[i]))
    front, best = [], -np.inf
    for i in idx:
        if tput[i] > best * (1 + 1e-9):
            front.append(int(i))
            best = tput[i]
    return front


def suggest_serving_plans(workload, cluster, serving, *, top: int = 10, price_per_hour: float | None = None,
                          modes=None) -> ServingPlanSet:
    t0 = time.perf_counter()
    deps = candidates(workload, cluster, serving, modes)
    res = evaluate_serving(workload, cluster, serving, deps)
    score = res["output_tokens_per_s_per_device"]
    ok = res["slo_ok"]
    # rank: throughput per device (per $ orders the same on one cluster), then the lower TTFT p99, the lower TPOT,
    # then the simpler deployment (fewer devices, smaller batch and chunk)
    simple = np.array([d.n_devices * 1e6 + sum(p.max_batch * 10 + p.chunk_tokens / 1e3 for p in d.pools)
                       for d in deps])
    order = np.lexsort((simple, res["tpot_p50_s"], res["ttft_p99_s"], -np.round(score, 6)))
    ranked, counts, seen = [], [], {}
    for i in order:
        if not ok[i]:
            continue
        key = (round(float(score[i]), 4), round(float(res["ttft_p99_s"][i]), 6), round(float(res["tpot_p50_s"][i]), 6),
               deps[i].mode, int(res["n_devices"][i]))
        if key in seen:
            counts[seen[key]] += 1
            continue
        seen[key] = len(ranked)
        counts.append(1)
        ranked.append(int(i))
    keep = ranked if top == 0 else ranked[:top]
    est = [estimate_at(res, i, deps[i], workload, cluster, serving) for i in keep]
    front = _pareto(score, res["tpot_p50_s"], res["fits"] & ~res["overloaded"])
    pareto = [estimate_at(res, i, deps[i], workload, cluster, serving) for i in front[:50]]
    closest, advice = None, []
    if not ranked:
        closest, advice = _why(workload, cluster, serving, deps, res)
    stats = {"candidates": len(deps), "fitting": int(res["fits"].sum()), "passing": int(ok.sum()),
             "distinct_passing": len(ranked), "wall_s": time.perf_counter() - t0,
             "modes": sorted({d.mode for d in deps})}
    return ServingPlanSet(workload=workload, cluster=cluster, serving=serving, ranked=est, pareto=pareto,
                          closest=closest, advice=advice, stats=stats, price_per_hour=price_per_hour,
                          equivalent=counts[:len(keep)])


def _why(workload, cluster, serving, deps, res):
    """Why nothing passes, and what would: the memory floor, or for each failing SLO the best value reached."""
    fits = res["fits"]
    lines: list[str] = []
    if not fits.any():
        w = res["weights_bytes"]
        i = int(np.nanargmin(w))
        cap = float(res["memory_capacity_bytes"][i])
        lines.append(f"no deployment fits in device memory: the smallest weight share is {w[i] / GiB:.1f} GiB of "
                     f"{cap / GiB:.0f} GiB per device ({deps[i].to_string()}); try weights: fp8 or int4, an fp8 KV "
                     "cache, or a cluster with more devices")
        return None, lines
    slo = serving.slos()
    live = fits & ~res["overloaded"]
    if not live.any():
        lines.append("every deployment that fits is overloaded at this load: lower arrival_rate_per_s or add devices")
    for j, k in enumerate(SLO_KEYS):
        if k not in slo:
            continue
        v = res["output_tokens_per_s"] if k == "min_tokens_per_s" else res[k if k != "tpot_s" else "tpot_p50_s"]
        vv = np.where(live, v, np.nan)
        if not np.isfinite(vv).any():
            continue
        i = int(np.nanargmax(vv) if k == "min_tokens_per_s" else np.nanargmin(vv))
        met = (vv[i] >= slo[k]) if k == "min_tokens_per_s" else (vv[i] <= slo[k])
        if met:
            continue
        lines.append(f"{k} {slo[k]:g} is out of reach: the best deployment reaches {vv[i]:.4g} "
                     f"({deps[i].to_string()}); relax it, use fp8 weights/activations, or more devices")
    if not lines:
        lines.append("each SLO is met by some deployment, but none meets all at once: relax the tightest SLO or "
                     "add devices")
    # closest: the deployment failing the fewest SLOs, then the highest goodput
    nfail = res["slo_fail"].sum(axis=1) + (~live) * 10
    i = int(np.lexsort((-res["goodput_tokens_per_s"], nfail))[0])
    return estimate_at(res, i, deps[i], workload, cluster, serving), lines
