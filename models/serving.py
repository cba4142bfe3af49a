"""Serving estimate of deployments (vectorized over a list of them: one formula for ``estimate_serving`` and the
planner): memory and KV capacity per pool, the steady decode batch under the load, TTFT and TPOT percentiles,
throughput and goodput under the SLOs, with an 80 % interval.

Load and latency: ``models/serving_agg.py`` (aggregated and attention pools under chunked prefill, open and closed
loops; disaggregated prefill/decode), closed forms in ``models/serving_queue.py``; the executor's ``PoolCost`` in
``models/serving_pool.py`` (re-exported here).
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from parplan.errors import SpecError
from parplan.models import serving_memory as sm
from parplan.models.serving_plan import Deployment, parse_deployment
from parplan.models.serving_af import af_iteration_parts
from parplan.models.serving_terms import (PARTS, PoolShape, iteration_parts, kv_transfer_fn, serving_context,
                                          serving_file, total)
from parplan.models.serving_agg import solve_aggregated, solve_disaggregated
from parplan.models.serving_pool import PoolCost, pool_cost  # noqa: F401  (the executor's interface)
from parplan.workloads.serving import Z99, load_serving

GiB = float(2**30)


class _Pools:
    """Arrays over deployments of one mode: the pool of ``role`` of each."""

    def __init__(self, deps, role):
        ps = [d.pool(role) for d in deps]
        a = lambda k: np.array([getattr(p, k) for p in ps], dtype=np.float64)  # noqa: E731
        self.role = role
        self.tp, self.pp, self.ep, self.dp = a("tp"), a("pp"), a("ep"), a("attn_dp")
        self.R, self.B, self.C = a("replicas"), a("max_batch"), a("chunk_tokens")
        self.per = np.array([p.devices_per_replica for p in ps], dtype=np.float64)
        self.shape = PoolShape(self.tp, self.pp, self.ep, self.dp, self.tp * self.dp)


def _iter_fn(c, P: _Pools, deps, af=None):
    spd = np.array([d.spd_drop for d in deps], dtype=np.float64)
    fused = np.array([d.fused_ar_a2a for d in deps], dtype=bool)
    if af is None:
        return lambda p, b, kv, **kw: iteration_parts(c, P.shape, p, b, kv, spd_drop=spd, fused=fused, **kw)
    E, mb, cross = af
    per = P.R / E.R
    return lambda p, b, kv, **kw: af_iteration_parts(c, P.shape, E.ep, E.tp, per, mb, p, b, kv, fused=fused,
                                                     cross_node=cross)


def _check(workload, cluster, dep: Deployment) -> None:
    m = workload.model
    if dep.n_devices > cluster.n_devices:
        raise SpecError(f"deployment uses {dep.n_devices} devices, the cluster has {cluster.n_devices}",
                        key="deployment")
    dpn = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    for p in dep.pools:
        if p.role == "expert":
            if not hasattr(m, "experts") or m.experts % p.ep:
                raise SpecError(f"ep={p.ep} must divide the experts of an MoE model", key="deployment.ep")
            continue
        if m.heads % p.tp:
            raise SpecError(f"tp={p.tp} does not divide heads={m.heads}", key="deployment.tp")
        if p.tp > dpn:
            raise SpecError(f"tp={p.tp} spans scale-up domains ({dpn} devices each)", key="deployment.tp",
                            hint="use pp or more replicas across nodes")
        if p.pp > m.layers:
            raise SpecError(f"pp={p.pp} exceeds the {m.layers} layers", key="deployment.pp")
        if p.ep > 1 and (not hasattr(m, "experts") or m.experts % p.ep):
            raise SpecError(f"ep={p.ep} needs an MoE model whose experts it divides", key="deployment.ep")
    if dep.mode == "af-disaggregated" and not hasattr(m, "experts"):
        raise SpecError("af-disaggregated deployments need an MoE model", key="deployment")


def evaluate_serving(workload, cluster, serving, deps: list[Deployment], *, engine_terms: dict | None = None) -> dict:
    """Arrays (one entry per deployment, in order) of every estimate quantity; deployments of any modes
    (``engine_terms``: fitted engine-profile values, see ``serving_terms.serving_context``)."""
    n = len(deps)
    out: dict = {}
    for mode in ("aggregated", "disaggregated", "af-disaggregated"):
        idx = [i for i, d in enumerate(deps) if d.mode == mode]
        if not idx:
            continue
        res = _evaluate_mode(workload, cluster, serving, [deps[i] for i in idx], mode, engine_terms)
        for k, v in res.items():
            v = np.asarray(v)
            if k not in out:
                shape = (n,) + v.shape[1:]
                out[k] = np.full(shape, np.nan) if v.dtype.kind == "f" else np.zeros(shape, dtype=v.dtype)
            out[k][idx] = v
    return out


def _evaluate_mode(workload, cluster, serving, deps, mode, engine_terms=None) -> dict:
    c = serving_context(workload, cluster, serving, engine_terms)
    cap = float(c.hw.memory_capacity_bytes)
    I, O = float(serving.isl_mean), float(serving.osl_mean)
    ctx = I + O / 2.0
    I50, I99 = serving.isl.quantile(0.5), serving.isl.quantile(0.99)
    cv2 = serving.isl.cv2
    n_dev = np.array([d.n_devices for d in deps], dtype=np.float64)
    roles = {"aggregated": ("mixed", None), "disaggregated": ("prefill", "decode"),
             "af-disaggregated": ("attention", "expert")}[mode]
    main = _Pools(deps, roles[0] if mode != "disaggregated" else "decode")
    mem = sm.pool_memory(c, None, serving, main, cap)
    reasons = [[] for _ in deps]
    extra_mem_ok = np.ones(len(deps), dtype=bool)
    xfer = np.zeros(len(deps))
    if mode == "af-disaggregated":
        E = _Pools(deps, "expert")
        emem = sm.pool_memory(c, None, serving, E, cap)
        extra_mem_ok = emem[0] + emem[3] <= cap
        mb = np.array([d.micro_batches for d in deps], dtype=np.float64)
        it = _iter_fn(c, main, deps, af=(E, mb, n_dev > c.hw.devices_per_node))
    else:
        it = _iter_fn(c, main, deps)
    K = mem[4]
    b_mem = K / ctx
    b_cap = np.minimum(main.B, b_mem)
    R = main.R
    if mode != "disaggregated":
        C = main.C
        b_cap = np.where(C > 0, np.minimum(b_cap, C), b_cap)  # every running sequence decodes within the budget
        slots = np.where(C > 0, np.minimum(main.B, C), main.B)
        # the af attention pool's iteration prices its ranks evenly (its micro-batches ping-pong as a whole)
        st = solve_aggregated(it, C, R, b_cap, serving, slots, dp=main.dp if mode == "aggregated" else 1.0)
        b, rho, bad_q = st["b"], st["rho"], st["overload"]
        r_tot = R * st["lam"]
        ttft50, ttft99 = st["ttft50"], st["ttft99"]
        tpot50, tpot_sd = st["tpot50"], st["tpot_sd"]
        theta, Kt, fixed = st["theta"], st["K"], st["fixed"]
    else:
        Pf = _Pools(deps, "prefill")
        pmem = sm.pool_memory(c, None, serving, Pf, cap)
        extra_mem_ok = pmem[4] >= I99
        pit = _iter_fn(c, Pf, deps)
        # one iteration of a replica: a prompt on every attention-DP rank at once
        t_p1 = total(pit(Pf.dp * I, 0.0, 0.0, prefill_seqs=Pf.dp))
        mu_p = Pf.R * Pf.dp / t_p1
        xf = kv_transfer_fn(c, serving, Pf, n_dev)
        st = solve_disaggregated(serving, it, ctx, R, b_cap, t_p1, mu_p, Pf.R, xf, cv2, I50, I99, pit, dp=Pf.dp)
        b, rho, bad_q, r_tot = st["b"], st["rho"], st["overload"], st["r_tot"]
        ttft50, ttft99, tpot50, tpot_sd = st["ttft50"], st["ttft99"], st["tpot50"], st["tpot_sd"]
        theta, Kt, fixed = st["theta"], st["K"], st["fixed"]
        xfer = xf(I)
    tpot99 = tpot50 + Z99 * tpot_sd
    tput = r_tot * O
    # --- memory, fits, SLOs --------------------------------------------------------------------------------
    w, kvb, act, res, _, _ = mem
    need = serving.isl.quantile(0.99) + serving.osl.quantile(0.99)
    fits = (w + act + res < cap) & (K >= need) & extra_mem_ok
    for i in range(len(deps)):
        if w[i] + act[i] + res[i] >= cap:
            reasons[i].append(f"weights {w[i] / GiB:.1f} GiB + activations {act[i] / GiB:.1f} GiB + reserve "
                              f"{res[i] / GiB:.1f} GiB exceed the {cap / GiB:.0f} GiB of a device: try larger tp/pp "
                              "or lower-precision weights")
        elif K[i] < need:
            reasons[i].append(f"the KV cache holds {K[i]:,.0f} tokens, less than one request ({need:,.0f}): try "
                              "larger tp/pp, an fp8 KV cache or smaller chunks")
        if not extra_mem_ok[i]:
            reasons[i].append("the " + ("expert" if mode == "af-disaggregated" else "prefill")
                              + " pool does not fit in device memory: give it more devices")
        if bad_q[i]:
            reasons[i].append("the load exceeds what the deployment serves: queues grow without bound")
    lo, hi = serving_file().interval.low, serving_file().interval.high
    decode = it(np.zeros_like(R), b, b * ctx)
    prefill = (pit if mode == "disaggregated" else it)(np.full_like(R, I), 0.0, 0.0, **(  # one prompt, one rank
        {"prefill_seqs": 1.0, "prefill_rank_tokens": I} if mode != "af-disaggregated" else {}))
    slo = serving.slos()
    fails = np.zeros((len(deps), 4), dtype=bool)
    checks = [("ttft_p50_s", ttft50), ("ttft_p99_s", ttft99), ("tpot_s", tpot50), ("min_tokens_per_s", tput)]
    for j, (k, v) in enumerate(checks):
        if k in slo:
            fails[:, j] = (v < slo[k]) if k == "min_tokens_per_s" else ~(v <= slo[k])
    # goodput: throughput × the share of requests meeting the latency SLOs (exponential TTFT tail, normal TPOT)
    att = np.ones(len(deps))
    if "ttft_p99_s" in slo:  # the wait's tail K·e^(−θt) beyond what the rest of the first token takes
        slack = slo["ttft_p99_s"] - fixed
        att = att * np.where(slack < 0, 0.0, 1.0 - Kt * np.exp(-np.clip(theta * slack, 0.0, 700.0)))
    if "tpot_s" in slo:
        att = att * normal_cdf((slo["tpot_s"] - tpot50) / np.maximum(tpot_sd, 1e-30))
    att = np.where(bad_q | ~fits, 0.0, att)
    out = {"ttft_p50_s": ttft50, "ttft_p99_s": ttft99, "tpot_p50_s": tpot50, "tpot_p99_s": tpot99,
           "output_tokens_per_s": np.where(fits, tput, 0.0), "requests_per_s": np.where(fits, r_tot, 0.0),
           "goodput_tokens_per_s": tput * att, "n_devices": n_dev, "batch_per_replica": b, "batch_cap": b_cap,
           "kv_capacity_tokens": K, "weights_bytes": w, "kv_cache_bytes": kvb, "activations_bytes": act,
           "reserved_bytes": res, "memory_capacity_bytes": np.full_like(R, cap), "kv_transfer_s": xfer,
           "fits": fits, "overloaded": bad_q, "prefill_utilization": rho, "interval_low": np.full_like(R, lo),
           "interval_high": np.full_like(R, hi), "slo_fail": fails, "reasons": np.array(
               ["; ".join(r) for r in reasons], dtype=object)}
    out["output_tokens_per_s_per_device"] = out["output_tokens_per_s"] / n_dev
    out["slo_ok"] = fits & ~bad_q & ~fails.any(axis=1)
    for k in PARTS:
        out["decode_" + k] = np.broadcast_to(decode[k], R.shape).astype(float)
        out["prefill_" + k] = np.broadcast_to(prefill[k], R.shape).astype(float)
    return out


def as_deployment(deployment, n_devices: int) -> Deployment:
    return deployment if isinstance(deployment, Deployment) else parse_deployment(str(deployment), n_devices)


SLO_KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_s", "min_tokens_per_s")


@dataclass(frozen=True)
class ServingEstimate:
    """One deployment's predicted latencies (s), throughput (tokens/s), memory per device (bytes), time breakdowns
    of a decode iteration and of one prompt's prefill (named parts summing to their totals), fits and SLOs."""

    deployment: Deployment
    workload: str
    cluster: str
    n_devices: int
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_device: float
    requests_per_s: float
    goodput_tokens_per_s: float
    batch_per_replica: float
    kv_capacity_tokens: int
    kv_transfer_s: float
    memory_bytes: dict
    memory_capacity_bytes: float
    decode_breakdown_s: dict
    prefill_breakdown_s: dict
    fits: bool
    reasons: tuple
    slo_ok: bool
    slo_failures: tuple
    interval: tuple  # (low, high) multipliers of the latencies (80 %)
    provenance_class: str = "defaults"

    @property
    def tpot_s(self) -> float:
        return self.tpot_p50_s

    @property
    def decode_iteration_s(self) -> float:
        return float(sum(self.decode_breakdown_s.values()))

    @property
    def prefill_s(self) -> float:
        return float(sum(self.prefill_breakdown_s.values()))

    def bounds(self, key: str) -> tuple[float, float]:
        """80 % interval of a latency (``ttft_p99_s`` …) or of ``output_tokens_per_s`` (inverse)."""
        lo, hi = self.interval
        v = getattr(self, key)
        return (v / hi, v / lo) if "tokens_per_s" in key else (v * lo, v * hi)

    def to_dict(self) -> dict:
        keys = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "output_tokens_per_s",
                "output_tokens_per_s_per_device", "requests_per_s", "goodput_tokens_per_s", "batch_per_replica",
                "kv_capacity_tokens", "kv_transfer_s", "memory_capacity_bytes", "fits", "slo_ok")
        d = {"deployment": self.deployment.to_string(), "mode": self.deployment.mode, "workload": self.workload,
             "cluster": self.cluster, "n_devices": self.n_devices, **{k: getattr(self, k) for k in keys}}
        d.update({"tpot_s": self.tpot_s, "reasons": list(self.reasons), "slo_failures": list(self.slo_failures),
                  "memory_bytes": dict(self.memory_bytes), "memory_peak_bytes": sum(self.memory_bytes.values()),
                  "decode_iteration_s": self.decode_iteration_s, "prefill_s": self.prefill_s,
                  "decode_breakdown_s": dict(self.decode_breakdown_s),
                  "prefill_breakdown_s": dict(self.prefill_breakdown_s),
                  "pools": [p.as_dict() for p in self.deployment.pools],
                  "provenance_class": self.provenance_class})
        for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "output_tokens_per_s"):
            d[k + "_low"], d[k + "_high"] = self.bounds(k)
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in d.items()}


def estimate_at(res: dict, i: int, dep: Deployment, workload, cluster, serving) -> ServingEstimate:
    """The ``ServingEstimate`` of row ``i`` of ``evaluate_serving``'s arrays."""
    f = lambda k: float(res[k][i])  # noqa: E731
    slo = serving.slos()
    fails = tuple(k for j, k in enumerate(SLO_KEYS) if k in slo and bool(res["slo_fail"][i, j]))
    reasons = tuple(r for r in str(res["reasons"][i]).split("; ") if r)
    return ServingEstimate(
        deployment=dep, workload=workload.name, cluster=cluster.name, n_devices=int(dep.n_devices),
        ttft_p50_s=f("ttft_p50_s"), ttft_p99_s=f("ttft_p99_s"), tpot_p50_s=f("tpot_p50_s"),
        tpot_p99_s=f("tpot_p99_s"), output_tokens_per_s=f("output_tokens_per_s"),
        output_tokens_per_s_per_device=f("output_tokens_per_s_per_device"), requests_per_s=f("requests_per_s"),
        goodput_tokens_per_s=f("goodput_tokens_per_s"), batch_per_replica=f("batch_per_replica"),
        kv_capacity_tokens=int(f("kv_capacity_tokens")), kv_transfer_s=f("kv_transfer_s"),
        memory_bytes={k: f(k) for k in sm.MEMORY_PARTS}, memory_capacity_bytes=f("memory_capacity_bytes"),
        decode_breakdown_s={k: f("decode_" + k) for k in PARTS}, prefill_breakdown_s={k: f("prefill_" + k) for k in PARTS},
        fits=bool(res["fits"][i]), reasons=reasons, slo_ok=bool(res["slo_ok"][i]), slo_failures=fails,
        interval=(f("interval_low"), f("interval_high")))


def estimate_serving(workload, cluster, serving, deployment, *, engine_terms: dict | None = None) -> ServingEstimate:
    """Estimate one deployment (a ``Deployment`` or its string) — ``evaluate_serving`` on a list of one."""
    serving = load_serving(serving)
    if not cluster.is_homogeneous:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups; serving plans one group",
                        key="--hw")
    dep = as_deployment(deployment, cluster.n_devices)
    _check(workload, cluster, dep)
    res = evaluate_serving(workload, cluster, serving, [dep], engine_terms=engine_terms)
    return estimate_at(res, 0, dep, workload, cluster, serving)


_ERF = np.frompyfunc(math.erf, 1, 1)


def normal_cdf(x) -> np.ndarray:
    """Φ(x), the standard normal CDF, elementwise: (1 + erf(x/√2))/2 (no SciPy dependency)."""
    return 0.5 * (1.0 + _ERF(np.asarray(x, dtype=float) / math.sqrt(2.0)).astype(float))
