"""What a serving simulation reports: latency percentiles, throughput, KV-cache use, preemptions, per pool.

Metrics as vLLM's ``benchmark_serving.py`` defines them (https://github.com/vllm-project/vllm/blob/main/benchmarks/
benchmark_serving.py, ``calculate_metrics``): **TTFT** = first output token − arrival; **TPOT** = (last token −
first token) / (output tokens − 1), per request with more than one output token; **ITL** = every gap between two
successive output tokens of a request (one sample per token); **E2E** = last token − arrival.  Percentiles are
numpy's linear interpolation (``np.percentile``, the benchmark's own); ITL percentiles weight each iteration by the
sequences that decoded in it.

**Warm-up**: the first ``warmup`` requests (in arrival order) are left out of every statistic, and throughput is
measured over the window from the first measured request's arrival to the last request's arrival — a window in
which the load is the steady one (the drain after the last arrival is out).  A run is **saturated** when fewer than
90 % of the requests that arrived in that window completed in it (open loop): the queue grows with the run length
and its latencies are a lower bound (a stable queue completes all but the few in service at the window's end).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass, field

import numpy as np

SATURATION_SHARE = 0.9  # completions / arrivals in the window below which an open-loop run is saturated (ours)


@dataclass(frozen=True)
class Percentiles:
    mean: float
    p50: float
    p90: float
    p99: float
    n: int

    @staticmethod
    def of(values, weights=None) -> "Percentiles":
        v = np.asarray(values, dtype=float)
        if v.size == 0:
            return Percentiles(0.0, 0.0, 0.0, 0.0, 0)
        if weights is None:
            p50, p90, p99 = np.percentile(v, [50, 90, 99])
            return Percentiles(float(v.mean()), float(p50), float(p90), float(p99), int(v.size))
        w = np.asarray(weights, dtype=float)
        keep = w > 0
        v, w = v[keep], w[keep]
        if v.size == 0:
            return Percentiles(0.0, 0.0, 0.0, 0.0, 0)
        order = np.argsort(v, kind="stable")
        v, w = v[order], w[order]
        cw = np.cumsum(w)
        total = cw[-1]
        q = [v[min(int(np.searchsorted(cw, f * total, side="left")), v.size - 1)] for f in (0.5, 0.9, 0.99)]
        return Percentiles(float(np.dot(v, w) / total), float(q[0]), float(q[1]), float(q[2]), int(round(total)))


@dataclass(frozen=True)
class PoolStats:
    role: str
    replicas: int
    iterations: int
    busy_share: float  # busy seconds / (replicas × makespan)
    mean_decode_batch: float  # decoding sequences per iteration
    preemptions: int
    kv_capacity_tokens: int  # per replica
    kv_peak_share: float  # the fullest replica's peak blocks / its capacity


@dataclass(frozen=True)
class ServingSimulation:
    mode: str
    mix: str
    n_requests: int
    warmup: int  # requests left out of the statistics
    measured: int
    seed: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    output_tokens_per_s: float  # in the measurement window
    requests_per_s: float
    output_tokens_per_s_per_device: float
    n_devices: int
    window_s: tuple  # (start, end) of the measurement window
    makespan_s: float
    kv_util_mean: float  # mean share of the KV blocks in use over the window (pools that hold KV)
    kv_util_peak: float
    preemptions: int
    preempted_requests: int
    saturated: bool
    events: int
    iterations: int
    output_tokens: int  # every output token of the run (warm-up and drain included): Σ OSL
    pools: tuple = ()
    notes: tuple = field(default_factory=tuple)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["window_s"] = list(self.window_s)
        d["pools"] = [asdict(p) for p in self.pools]
        d["notes"] = list(self.notes)
        return d


def summarize(reqs, log, replicas, pools_meta, *, mode, mix, seed, warmup, n_devices, rate, notes=()) \
        -> ServingSimulation:
    """The statistics of a played run (``serving_loop.play``)."""
    n = len(reqs.isl)
    arrival = np.asarray(reqs.arrival)
    first = np.asarray(reqs.first)
    end = np.asarray(reqs.end)
    osl = np.asarray(reqs.osl)
    m = slice(warmup, n)
    ttft = first[m] - arrival[m]
    e2e = end[m] - arrival[m]
    multi = osl[m] > 1
    tpot = (end[m][multi] - first[m][multi]) / (osl[m][multi] - 1)
    t0 = float(arrival[warmup])
    t1 = float(arrival[n - 1])
    if t1 <= t0:  # every measured request arrived at once (a closed loop of at least n clients): the whole run
        t1 = log.makespan
    span = max(t1 - t0, 1e-300)
    it_end = log.it_end
    lo, hi = bisect_left(it_end, t0), bisect_right(it_end, t1)
    tokens = sum(log.it_tokens[lo:hi])
    done = bisect_right(log.done_t, t1) - bisect_left(log.done_t, t0)
    # ITL: one sample per continuing decode of each iteration ending in the window, plus the longer gaps
    ends = np.asarray(it_end)
    dur = np.asarray(log.it_dur)
    dec = np.asarray(log.it_dec)
    win = (ends >= t0) & (ends <= t1)
    ex = [g for (t, g) in log.extra_t if t0 <= t <= t1]
    itl = Percentiles.of(np.concatenate([dur[win], np.asarray(ex, dtype=float)]),
                         np.concatenate([dec[win], np.ones(len(ex))]))
    # KV use: blocks × seconds of the iterations ending in the window, over the window's capacity
    blocks = np.asarray(log.it_blocks, dtype=float)
    kv_reps = [r for r in replicas if r.cap > 0 and r.role != "expert"]
    cap = sum(r.cap for r in kv_reps)
    kv_mean = float(np.dot(blocks[win], dur[win]) / (cap * span)) if cap else 0.0
    kv_peak = max((r.peak_blocks / r.cap for r in kv_reps if r.cap), default=0.0)
    makespan = log.makespan
    pools = []
    for meta in pools_meta:
        reps = meta["replicas"]
        its = sum(r.iterations for r in reps)
        pools.append(PoolStats(
            role=meta["role"], replicas=len(reps), iterations=its,
            busy_share=sum(r.busy_s for r in reps) / (len(reps) * makespan) if makespan > 0 else 0.0,
            mean_decode_batch=sum(r.dec_total for r in reps) / its if its else 0.0,
            preemptions=sum(r.preemptions for r in reps), kv_capacity_tokens=int(meta["kv_tokens"]),
            kv_peak_share=max((r.peak_blocks / r.cap for r in reps if r.cap), default=0.0)))
    rps = done / span
    arrived = bisect_right(arrival.tolist(), t1) - bisect_left(arrival.tolist(), t0)
    saturated = rate is not None and done < SATURATION_SHARE * arrived
    out_tps = tokens / span
    return ServingSimulation(
        mode=mode, mix=mix, n_requests=n, warmup=warmup, measured=n - warmup, seed=seed,
        ttft_s=Percentiles.of(ttft), tpot_s=Percentiles.of(tpot), itl_s=itl, e2e_s=Percentiles.of(e2e),
        output_tokens_per_s=out_tps, requests_per_s=rps,
        output_tokens_per_s_per_device=out_tps / n_devices if n_devices else 0.0, n_devices=n_devices,
        window_s=(t0, t1), makespan_s=makespan, kv_util_mean=kv_mean, kv_util_peak=float(kv_peak),
        preemptions=sum(r.preemptions for r in replicas),
        preempted_requests=int(sum(1 for x in reqs.preempted if x)), saturated=bool(saturated),
        events=log.events, iterations=len(it_end), output_tokens=int(sum(log.it_tokens)),
        pools=tuple(pools), notes=tuple(notes))

