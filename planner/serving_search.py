"""Serving planner: every candidate deployment (planner/spaces/serving.py, built as arrays) priced in one vectorized
pass (``models.serving.evaluate``; the load and latencies of the deployments that fit in memory only, as nothing
else is ranked), ranked by output tokens/s per device (or per $) among those that fit and meet every SLO;
equal-outcome deployments are one row (the simplest: smallest batch, then chunk); a throughput-vs-TPOT Pareto
front over every deployment that fits; and, when none passes, why and what would fit.  ``Deployment`` objects,
breakdowns and goodput are made for the reported rows only."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from parplan.models.serving import GiB, SLO_KEYS, estimate_at, evaluate
from parplan.models.serving_arrays import unique_rows
from parplan.planner.spaces.serving import candidate_set


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


def _pareto_loop(tput, lat, idx) -> list[int]:
    """The front's scan over rows ``idx`` sorted by (latency, −throughput): a row joins when its throughput beats
    the last joined one's by more than 1e-9 (relative)."""
    front, best = [], -np.inf
    for i in idx:
        if tput[i] > best * (1 + 1e-9):
            front.append(int(i))
            best = tput[i]
    return front


def _pareto(tput: np.ndarray, lat: np.ndarray, ok: np.ndarray) -> list[int]:
    """Indices on the front: no other row has at least the throughput and at most the latency (one strictly).
    Only a row whose throughput beats every earlier row's can join the scan (throughputs ≥ 0), so the scan runs
    over those records alone."""
    idx = np.flatnonzero(ok & np.isfinite(lat))
    idx = idx[np.lexsort((-tput[idx], lat[idx]))]  # stable: ties keep the row order
    t = tput[idx]
    if not len(idx) or not (np.all(np.isfinite(t)) and np.all(t >= 0)):
        return _pareto_loop(tput, lat, idx)
    record = np.ones(len(t), dtype=bool)
    record[1:] = t[1:] > np.maximum.accumulate(t)[:-1]
    return _pareto_loop(tput, lat, idx[record])


def _round_as_python(x: np.ndarray, nd: int) -> np.ndarray:
    """``round(float(v), nd)`` of every value, vectorized: rint(v·10^nd)/10^nd is the same double (the nearest to
    the decimal, IEEE division being correctly rounded) wherever v·10^nd is below 2^30 and not within 10⁻⁶ of a
    half (its product's rounding error is below 2^30·2^−53 ≈ 1.2·10⁻⁷); the other values go through ``round``."""
    x = np.asarray(x, dtype=np.float64)
    s = x * 10.0 ** nd
    out = np.rint(s) / 10.0 ** nd
    with np.errstate(invalid="ignore"):
        risky = ~((np.abs(s) < 2.0 ** 30) & (np.abs(s - np.floor(s) - 0.5) > 1e-6))
    for i in np.flatnonzero(risky):
        out[i] = round(float(x[i]), nd)
    return out


def _distinct_outcomes(order, cols) -> tuple[np.ndarray, np.ndarray]:
    """The first row (in ``order``) of each distinct outcome — equal tuples of the key columns over ``order``,
    compared as Python floats (−0.0 = 0.0; a NaN equals nothing) — and how many rows each stands for."""
    if not len(order):
        return order, np.zeros(0, dtype=np.int64)
    nan = np.zeros(len(order), dtype=bool)
    keys = []
    for c in cols:
        c = np.asarray(c)
        if c.dtype.kind == "f":
            nan |= np.isnan(c)
            c = np.where(np.isnan(c), 0.0, c) + 0.0
        keys.append(c)
    keys.append(np.where(nan, np.arange(len(order)), -1))
    first, inv = unique_rows(*keys)
    first = np.sort(first)
    return order[first], np.bincount(inv)[inv[first]]


def _estimates(res, idx, ds, workload, cluster, serving) -> list:
    """``ServingEstimate`` of the rows ``idx`` (their breakdowns priced together)."""
    if not len(idx):
        return []
    rows = res.rows(idx)
    return [estimate_at(rows, j, ds.deployment(int(i)), workload, cluster, serving) for j, i in enumerate(idx)]


def suggest_serving_plans(workload, cluster, serving, *, top: int = 10, price_per_hour: float | None = None,
                          modes=None) -> ServingPlanSet:
    t0 = time.perf_counter()
    ds = candidate_set(workload, cluster, serving, modes)
    res = evaluate(workload, cluster, serving, ds, only_fitting=True)
    if not len(ds):
        stats = {"candidates": 0, "fitting": 0, "passing": 0, "distinct_passing": 0, "modes": [],
                 "wall_s": time.perf_counter() - t0}
        return ServingPlanSet(workload=workload, cluster=cluster, serving=serving, ranked=[], pareto=[], closest=None,
                              advice=["no candidate deployment of the modes asked on this cluster"], stats=stats,
                              price_per_hour=price_per_hour)
    score = res["output_tokens_per_s_per_device"]
    ttft99, tpot = res["ttft_p99_s"], res["tpot_p50_s"]
    ok = res["slo_ok"]
    # rank: throughput per device (per $ orders the same on one cluster), then the lower TTFT p99, the lower TPOT,
    # then the simpler deployment (fewer devices, smaller batch and chunk); equal outcomes (rounded) are one row.
    # Latencies are compared to the nanosecond: rows equal but for float noise (an open loop's rate-bound rows,
    # one prefill pool beside several decode pools) rank by simplicity on any machine, not by the last bits
    sel = np.flatnonzero(ok)
    simple = ds.column(lambda b: b.simplicity())[sel]
    order = sel[np.lexsort((simple, np.round(tpot[sel], 9), np.round(ttft99[sel], 9), -np.round(score[sel], 6)))]
    ranked, counts = _distinct_outcomes(order, (
        _round_as_python(score[order], 4), _round_as_python(ttft99[order], 6), _round_as_python(tpot[order], 6),
        ds.mode_codes()[order], res["n_devices"][order].astype(np.int64)))
    keep = ranked if top == 0 else ranked[:top]
    front = _pareto(score, tpot, res["fits"] & ~res["overloaded"])[:50]
    closest_i, advice = None, []
    if not len(ranked):
        if not res.complete and res["fits"].any() and not (res["fits"] & ~res["overloaded"]).any():
            res = evaluate(workload, cluster, serving, ds)  # the closest may then be a deployment that does not fit
        closest_i, advice = _why(serving, ds, res)
    est = _estimates(res, np.concatenate([keep, front, [] if closest_i is None else [closest_i]]).astype(np.int64),
                     ds, workload, cluster, serving)
    stats = {"candidates": len(ds), "fitting": int(res["fits"].sum()), "passing": int(ok.sum()),
             "distinct_passing": len(ranked), "wall_s": time.perf_counter() - t0, "modes": ds.modes()}
    return ServingPlanSet(workload=workload, cluster=cluster, serving=serving, ranked=est[:len(keep)],
                          pareto=est[len(keep):len(keep) + len(front)],
                          closest=est[-1] if closest_i is not None else None, advice=advice, stats=stats,
                          price_per_hour=price_per_hour, equivalent=[int(n) for n in counts[:len(keep)]])


def _why(serving, ds, res):
    """Why nothing passes, and what would: the memory floor, or for each failing SLO the best value reached; the
    row of the closest deployment (None when nothing fits)."""
    fits = res["fits"]
    lines: list[str] = []
    if not fits.any():
        w = res["_w_floor"]  # (an af deployment's expert pool, not its small attention share: "4.2 GiB of 80 GiB")
        i = int(np.nanargmin(w))
        cap = float(res["memory_capacity_bytes"][i])
        lines.append(f"no deployment fits in device memory: the smallest weight share is {w[i] / GiB:.1f} GiB of "
                     f"{cap / GiB:.0f} GiB per device ({ds.deployment(i).to_string()}); try weights: fp8 or int4, an "
                     "fp8 KV cache, or a cluster with more devices")
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
                     f"({ds.deployment(i).to_string()}); relax it, use fp8 weights/activations, or more devices")
    if not lines:
        lines.append("each SLO is met by some deployment, but none meets all at once: relax the tightest SLO or "
                     "add devices")
    # closest: the deployment failing the fewest SLOs, then the highest goodput
    nfail = res["slo_fail"].sum(axis=1) + (~live) * 10
    return int(np.lexsort((-res["goodput_tokens_per_s"], nfail))[0]), lines
