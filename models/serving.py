"""Serving estimate of deployments (vectorized over a list of them: one formula for ``estimate_serving`` and the
planner): memory and KV capacity per pool, the steady decode batch under the load, TTFT and TPOT percentiles,
throughput and goodput under the SLOs, with an 80 % interval.

Load and latency (derived; SI units):
* steady decode batch b per replica: saturated b = b_cap; closed loop (N users) b = min(N/R, b_cap); open loop
  (Poisson λ) the fixed point b = (λ/R)·osl·t_iter(b) (Little's law), found by bisection; b_cap = min(max batch,
  KV tokens / mean context (isl + osl/2), chunk·osl/(isl+osl) with chunked prefill);
* chunked prefill (Agrawal et al. 2024, Sarathi-Serve): each iteration carries b·isl/osl prompt tokens on average;
  a prompt of i tokens takes ⌈i/(chunk − b)⌉ iterations; without chunking a prefill stalls decoding for its time;
* TTFT queueing: M/G/1 per replica (Pollaczek–Khinchine, Wq = ρ·S·(1 + cv²)/(2(1 − ρ)), cv² of the prompt length),
  its tail approximated as P(W > t) = ρ·exp(−ρ·t/Wq); closed loop adds the users beyond b_cap (Little's law);
* TPOT p99: the request's mean over osl iterations, binomial (chunked) or Poisson (stalls) in the prefill
  iterations it shares, normal approximation (z = 2.326).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import math

import numpy as np

from parplan.errors import SpecError
from parplan.models import serving_memory as sm
from parplan.models.serving_plan import Deployment, parse_deployment
from parplan.models.serving_terms import (PARTS, PoolShape, af_iteration_parts, expert_busy_s, iteration_parts,
                                          kv_transfer_fn, mg1_wait, serving_context, serving_file, total,
                                          wait_quantile)
from parplan.workloads.serving import Z99, load_serving

GiB = float(2**30)


def _bisect(f, hi, iters=48):
    """Largest b in [0, hi] with f(b) ≥ 0 for f decreasing through 0 (vectorized); hi where f(hi) ≥ 0."""
    lo, up = np.zeros_like(hi), hi.copy()
    for _ in range(iters):
        mid = 0.5 * (lo + up)
        ok = f(mid) >= 0
        lo, up = np.where(ok, mid, lo), np.where(ok, up, mid)
    return np.where(f(hi) >= 0, hi, lo)


@dataclass
class PoolCost:
    """What the executor needs of one pool (one replica): see docs/serving.md."""

    role: str
    max_batch: int
    chunk_tokens: int
    kv_capacity_tokens: int
    _iter: object = field(repr=False, default=None)
    _kv: object = field(repr=False, default=None)

    def iteration_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int) -> float:
        return float(self._iter(prefill_tokens, decode_seqs, kv_tokens))

    def kv_transfer_s(self, tokens: int) -> float:
        return float(self._kv(tokens)) if self._kv is not None else 0.0


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
        b_cap = np.where(C > 0, np.minimum(b_cap, C * O / (I + O)), b_cap)
        t_p1 = total(it(np.full_like(R, I), 0.0, 0.0, prefill_seqs=1.0) if mode == "aggregated"
                     else it(np.full_like(R, I), 0.0, 0.0))

        def cycle(b):
            t = total(it(b * I / O, b, b * ctx))
            t0 = total(it(0.0, b, b * ctx))
            return np.where(C > 0, t, t0 + b / O * t_p1)
    else:
        Pf = _Pools(deps, "prefill")
        pmem = sm.pool_memory(c, None, serving, Pf, cap)
        extra_mem_ok = pmem[4] >= I99
        pit = _iter_fn(c, Pf, deps)
        t_p1 = total(pit(np.full_like(R, I), 0.0, 0.0, prefill_seqs=1.0))
        mu_p = Pf.R / t_p1
        xf = kv_transfer_fn(c, serving, Pf, n_dev)

        def cycle(b):
            return total(it(0.0, b, b * ctx))
    # --- the steady decode batch under the load ------------------------------------------------------------
    load = serving.load
    t_cap = cycle(np.maximum(b_cap, 1e-9))
    if mode == "disaggregated":
        mu_d = R * b_cap / (O * t_cap)
        if load == "open":
            r = np.full_like(R, serving.arrival_rate_per_s)
        elif load == "closed":
            b0 = np.minimum(serving.concurrency / R, b_cap)
            r = np.minimum(R * b0 / (O * cycle(np.maximum(b0, 1e-9))), mu_p * 0.999)
        else:
            r = np.minimum(mu_d, mu_p * 0.999)
        overload = (r >= mu_p) | (r > mu_d * 1.000001)
        b = _bisect(lambda x: r / R * O * cycle(np.maximum(x, 1e-9)) - x, b_cap)
        b = np.where(overload, b_cap, np.minimum(b, b_cap))
    else:
        if load == "open":
            lam = serving.arrival_rate_per_s / R
            overload = lam * O * t_cap > b_cap
            b = _bisect(lambda x: lam * O * cycle(np.maximum(x, 1e-9)) - x, b_cap)
            b = np.where(overload, b_cap, b)
        else:
            b = b_cap if load == "saturated" else np.minimum(serving.concurrency / R, b_cap)
            overload = np.zeros(len(deps), dtype=bool)
    b = np.maximum(b, 1e-9)
    t_it = cycle(b)
    # a closed loop's arriving request sees the system as it is with the other N − 1 users (arrival theorem of
    # closed networks, Lavenberg & Reiser 1980): its prefill queues behind their work only — none when N = 1
    seen = (serving.concurrency - 1.0) / serving.concurrency if load == "closed" else 1.0
    r_rep = b / (O * t_it)
    if mode == "disaggregated":
        r_tot = np.where(overload, np.minimum(mu_p, mu_d), R * r_rep)
        rho = r_tot * t_p1 / Pf.R
        rho_w = rho * seen
        Wq = mg1_wait(rho_w, t_p1, cv2)
        S50, S99 = t_p1 * I50 / I, t_p1 * I99 / I
        xfer50, xfer99 = xf(I50), xf(I99)
        extra = np.zeros_like(R)
        if load == "closed":  # a closed loop queues at most its users: prefill-bound rows wait by Little's law
            Wq = np.where(r_tot >= mu_p * 0.998, 0.0, np.minimum(Wq, serving.concurrency / r_tot))
            extra = np.maximum(serving.concurrency - R * b - r_tot * (t_p1 + Wq), 0.0) / r_tot
        tpot_sd = np.zeros_like(R)
        xfer = xf(I)
    else:
        r_tot = R * r_rep
        beta = np.maximum(C - b, 1.0)
        t0 = total(it(0.0, b, b * ctx))
        tfull = total(it(beta, b, b * ctx))
        rho = np.where(C > 0, b * I / O / beta, r_rep * t_p1)
        rho_w = rho * seen
        # unchunked: the prompt waits for the decode iteration in flight (half of one, if any other user decodes)
        S = lambda i: np.where(C > 0, np.maximum(1.0, np.ceil(i / beta)) * t_it,  # noqa: E731
                               t_p1 * i / I + seen * t0 / 2.0)
        S50, S99 = S(I50), S(I99)
        Wq = mg1_wait(rho_w, S(I), cv2)
        if load == "closed":
            Wq = np.minimum(Wq, serving.concurrency / r_tot)
        extra = np.maximum(serving.concurrency / R - b_cap, 0.0) / r_rep if load == "closed" else np.zeros_like(R)
        phi = np.clip(rho, 0.0, 1.0)
        tpot_sd = np.where(C > 0, (tfull - t0) * np.sqrt(phi * (1.0 - phi) / O), t_p1 * np.sqrt(b) / O)
        xfer50 = xfer99 = 0.0
    bad_q = overload | ((rho >= 1.0) & (load != "closed"))
    ttft50 = np.where(bad_q, np.inf, wait_quantile(Wq, rho_w, 0.5) + extra + S50 + xfer50)
    ttft99 = np.where(bad_q, np.inf, wait_quantile(Wq, rho_w, 0.99) + extra + S99 + xfer99)
    tpot50, tpot99 = t_it, t_it + Z99 * tpot_sd
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
    prefill = (pit if mode == "disaggregated" else it)(np.full_like(R, I), 0.0, 0.0, **(
        {"prefill_seqs": 1.0} if mode != "af-disaggregated" else {}))
    slo = serving.slos()
    fails = np.zeros((len(deps), 4), dtype=bool)
    checks = [("ttft_p50_s", ttft50), ("ttft_p99_s", ttft99), ("tpot_s", tpot50), ("min_tokens_per_s", tput)]
    for j, (k, v) in enumerate(checks):
        if k in slo:
            fails[:, j] = (v < slo[k]) if k == "min_tokens_per_s" else ~(v <= slo[k])
    # goodput: throughput × the share of requests meeting the latency SLOs (exponential TTFT tail, normal TPOT)
    att = np.ones(len(deps))
    if "ttft_p99_s" in slo:
        slack = slo["ttft_p99_s"] - extra - S(I) if mode != "disaggregated" else slo["ttft_p99_s"] - extra - t_p1 - xfer
        expo = np.clip(np.minimum(rho_w, 1.0) * slack / np.maximum(Wq, 1e-30), 0.0, 700.0)
        att = att * np.where(slack < 0, 0.0, 1.0 - np.minimum(rho_w, 1.0) * np.exp(-expo))
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


def pool_cost(workload, cluster, serving, deployment: Deployment, pool_index: int) -> PoolCost:
    """The executor's view of one pool of ``deployment`` (see the interface in docs/serving.md)."""
    serving = load_serving(serving)
    _check(workload, cluster, deployment)
    pool = deployment.pools[pool_index]
    c = serving_context(workload, cluster, serving)
    deps = [deployment]
    P = _Pools(deps, pool.role)
    mem = sm.pool_memory(c, None, serving, P, float(c.hw.memory_capacity_bytes))
    n_dev = np.array([float(deployment.n_devices)])
    if pool.role == "attention":
        E = _Pools(deps, "expert")
        mb = np.array([float(deployment.micro_batches)])
        it = _iter_fn(c, P, deps, af=(E, mb, n_dev > c.hw.devices_per_node))
    elif pool.role == "expert":
        A = _Pools(deps, "attention")
        per = float(A.R[0] / P.R[0])
        mb = float(deployment.micro_batches)

        def it(p, b, kv, **kw):  # expert-side busy time for the tokens of the attention replicas it serves
            return {"expert": expert_busy_s(c, P.ep, P.tp, (np.asarray(p) + np.asarray(b)) * per / mb, mb)}
    else:
        it = _iter_fn(c, P, deps)

    def iteration(p, b, kv):
        parts = it(np.array([float(p)]), np.array([float(b)]), np.array([float(kv)]))
        return max(float(np.sum([np.asarray(v).sum() for v in parts.values()])), 1e-9)
    kvf = kv_transfer_fn(c, serving, P, n_dev) if pool.role == "prefill" else None
    return PoolCost(role=pool.role, max_batch=pool.max_batch, chunk_tokens=pool.chunk_tokens,
                    kv_capacity_tokens=int(mem[4][0]), _iter=iteration,
                    _kv=(lambda t: float(kvf(t)[0])) if kvf is not None else None)


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
