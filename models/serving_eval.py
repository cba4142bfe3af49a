"""Serving estimate of one block of deployments of one mode (``models/serving_arrays.py``), vectorized over its
rows: memory and KV capacity per pool, the load and latencies (``models/serving_agg.py``), fits and SLOs.

Every quantity of a row depends on that row's inputs alone, so the rows can be priced in any grouping and give the
same floats: the rows that do not fit in memory can be left unpriced (``only_fitting``: the planner never reports
their latencies), aggregated rows with and without attention-DP ranks are priced apart (those without skip the
lock-step terms), and what is reported of a row only — the time breakdowns of its decode iteration and of one
prompt's prefill, its goodput, its reasons — is priced on demand for the rows asked (``BlockLazy``)."""
from __future__ import annotations

import math

import numpy as np

from parplan.models import serving_memory as sm
from parplan.models.serving_af import af_iteration_parts
from parplan.models.serving_agg import solve_aggregated, solve_disaggregated
from parplan.models.serving_arrays import POOL_FIELDS, Distinct, PoolArrays
from parplan.models.serving_terms import PARTS, PoolShape, iteration_parts, kv_transfer_fn, serving_file, total
from parplan.workloads.serving import Z99

GiB = float(2**30)
MAIN_ROLE = {"aggregated": "mixed", "disaggregated": "decode", "af-disaggregated": "attention"}


class _Pools:
    """Float arrays over deployments of one mode: the pool of ``role`` of each (a list of ``Deployment`` objects,
    or a block's ``PoolArrays``)."""

    def __init__(self, deps=None, role=None, *, arrays: "PoolArrays | None" = None):
        if arrays is None:
            ps = [d.pool(role) for d in deps]
            arrays = PoolArrays(role, *(np.array([getattr(p, k) for p in ps], dtype=np.int64) for k in POOL_FIELDS))
        f = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
        self.arrays = arrays
        self.role = arrays.role
        self.tp, self.pp, self.ep, self.dp = f(arrays.tp), f(arrays.pp), f(arrays.ep), f(arrays.attn_dp)
        self.R, self.B, self.C = f(arrays.replicas), f(arrays.max_batch), f(arrays.chunk_tokens)
        self.per = f(arrays.devices_per_replica)
        self.shape = PoolShape(self.tp, self.pp, self.ep, self.dp, self.tp * self.dp)

    def take(self, idx) -> "_Pools":
        return _Pools(arrays=self.arrays.take(idx))


class IterFn:
    """Parts of one iteration of each row's replica, ``it(prefill_tokens, decode_seqs, kv_tokens, **kw)``
    (``serving_terms.iteration_parts``; af-disaggregated: ``serving_af.af_iteration_parts``, which takes no
    keywords), restrictable to some rows (``take``)."""

    def __init__(self, c, P: _Pools, spd, fused, af=None):
        self.c, self.P, self.af = c, P, af
        self.spd = np.asarray(spd, dtype=np.float64)
        self.fused = np.asarray(fused, dtype=bool)

    def __call__(self, p, b, kv, **kw):
        if self.af is None:
            return iteration_parts(self.c, self.P.shape, p, b, kv, spd_drop=self.spd, fused=self.fused, **kw)
        E, mb, cross = self.af
        return af_iteration_parts(self.c, self.P.shape, E.ep, E.tp, self.P.R / E.R, mb, p, b, kv, fused=self.fused,
                                  cross_node=cross)

    def take(self, idx) -> "IterFn":
        af = None if self.af is None else (self.af[0].take(idx), self.af[1][idx], self.af[2][idx])
        return IterFn(self.c, self.P.take(idx), self.spd[idx], self.fused[idx], af)

    def key(self) -> tuple:
        """The columns that set a row's iteration (rows equal in them price equal parts at equal arguments)."""
        P = self.P
        cols = (P.tp, P.pp, P.ep, P.dp, self.spd, self.fused)
        if self.af is not None:
            E, mb, cross = self.af
            cols += (E.ep, E.tp, P.R / E.R, mb, cross)
        return cols


def _iter_fn(c, P: _Pools, deps, af=None) -> IterFn:
    """``IterFn`` of a list of ``Deployment`` objects (their SPD and fused knobs)."""
    return IterFn(c, P, [d.spd_drop for d in deps], [d.fused_ar_a2a for d in deps], af)


def _by_groups(mask, fn) -> dict:
    """``fn(idx)`` (a dict of arrays over the rows idx) on the rows where ``mask`` holds and on the others apart,
    laid back in row order."""
    groups = [g for g in (np.flatnonzero(~mask), np.flatnonzero(mask)) if len(g)]
    if len(groups) < 2:
        return fn(np.arange(len(mask)))
    parts = [(g, fn(g)) for g in groups]
    out = {}
    for k in parts[0][1]:
        vals = [np.broadcast_to(r[k], (len(g),)) for g, r in parts]
        a = np.empty(len(mask), dtype=np.result_type(*vals))
        for (g, _), v in zip(parts, vals):
            a[g] = v
        out[k] = a
    return out


def _solve(c, serving, blk, K, n_dev) -> dict:
    """Load and latencies of every row of ``blk`` (KV tokens K per replica, devices n_dev): the ``serving_agg``
    steady state, the batch cap, the KV transfer and the iteration functions (for the breakdowns)."""
    mode = blk.mode
    I, O = float(serving.isl_mean), float(serving.osl_mean)
    ctx = I + O / 2.0
    main = _Pools(arrays=blk.pool(MAIN_ROLE[mode]))
    if mode == "af-disaggregated":
        E = _Pools(arrays=blk.pool("expert"))
        af = (E, blk.micro_batches.astype(np.float64), n_dev > c.hw.devices_per_node)
        it = IterFn(c, main, blk.spd_drop, blk.fused, af=af)
    else:
        it = IterFn(c, main, blk.spd_drop, blk.fused)
    b_mem = K / ctx
    b_cap = np.minimum(main.B, b_mem)
    R = main.R
    if mode != "disaggregated":
        C = main.C
        b_cap = np.where(C > 0, np.minimum(b_cap, C), b_cap)  # every running sequence decodes within the budget
        slots = np.where(C > 0, np.minimum(main.B, C), main.B)
        if mode == "aggregated":  # rows with attention-DP ranks apart: the others skip the lock-step terms
            st = _by_groups(main.dp > 1.0, lambda g: solve_aggregated(it.take(g), C[g], R[g], b_cap[g], serving,
                                                                      slots[g], dp=main.dp[g]))
        else:  # the af attention pool's iteration prices its ranks evenly (its micro-batches ping-pong as a whole)
            st = solve_aggregated(it, C, R, b_cap, serving, slots, dp=1.0)
        st["r_tot"] = R * st["lam"]
        return {**st, "b_cap": b_cap, "xfer": np.zeros(len(R)), "it": it, "pit": it}
    Pf = _Pools(arrays=blk.pool("prefill"))
    pit = IterFn(c, Pf, blk.spd_drop, blk.fused)
    pre = Distinct(*pit.key())  # the prefill pool's iterations: once per distinct prefill pool
    # one iteration of a replica: a prompt on every attention-DP rank at once
    t_p1 = pre.apply(lambda g: total(pit.take(g)(Pf.dp[g] * I, 0.0, 0.0, prefill_seqs=Pf.dp[g])))
    mu_p = Pf.R * Pf.dp / t_p1
    xf = kv_transfer_fn(c, serving, Pf, n_dev)
    st = solve_disaggregated(serving, it, ctx, R, b_cap, t_p1, mu_p, Pf.R, xf, serving.isl.cv2,
                             serving.isl.quantile(0.5), serving.isl.quantile(0.99), pit, dp=Pf.dp, distinct=pre)
    return {**st, "b_cap": b_cap, "xfer": xf(I), "it": it, "pit": pit}


def evaluate_block(c, serving, blk, only_fitting: bool = False) -> tuple[dict, "BlockLazy"]:
    """Arrays over the rows of ``blk`` of every estimate quantity but those ``BlockLazy`` prices on demand;
    ``only_fitting``: the load and latencies of the rows that fit in memory only (NaN / False elsewhere)."""
    mode = blk.mode
    cap = float(c.hw.memory_capacity_bytes)
    n = len(blk)
    I99 = serving.isl.quantile(0.99)
    n_dev = blk.n_devices.astype(np.float64)
    mem = sm.pool_memory(c, None, serving, _Pools(arrays=blk.pool(MAIN_ROLE[mode])), cap)
    extra_ok = np.ones(n, dtype=bool)
    w_floor = mem[0]  # the largest pool's weights per device (the advice's memory floor)
    if mode == "af-disaggregated":
        emem = sm.pool_memory(c, None, serving, _Pools(arrays=blk.pool("expert")), cap)
        extra_ok = emem[0] + emem[3] <= cap
        w_floor = np.maximum(mem[0], emem[0])
    elif mode == "disaggregated":
        extra_ok = sm.pool_memory(c, None, serving, _Pools(arrays=blk.pool("prefill")), cap)[4] >= I99
    w, kvb, act, res, K, _ = mem
    need = serving.isl.quantile(0.99) + serving.osl.quantile(0.99)
    fits = (w + act + res < cap) & (K >= need) & extra_ok
    rows = np.flatnonzero(fits) if only_fitting else np.arange(n)
    sub = blk if len(rows) == n else blk.take(rows)
    st = _solve(c, serving, sub, K[rows], n_dev[rows])
    O = float(serving.osl_mean)
    f_sub = fits[rows]
    for k in ("ttft50", "ttft99", "tpot50"):  # no latency where the deployment cannot hold its weights and cache
        st[k] = np.where(f_sub, st[k], np.inf)  # (a zero rate divided by its 1e-30 guard read as a TTFT of 8e30 s)
    tpot50, tpot_sd, bad_q, r_tot = st["tpot50"], st["tpot_sd"], st["overload"], st["r_tot"]
    tput = r_tot * O
    slo = serving.slos()
    fails = np.zeros((len(rows), 4), dtype=bool)
    checks = [("ttft_p50_s", st["ttft50"]), ("ttft_p99_s", st["ttft99"]), ("tpot_s", tpot50),
              ("min_tokens_per_s", tput)]
    decodes = float(serving.osl.p99) > 1.0  # with one output token no request has a time per output token
    for j, (k, v) in enumerate(checks):
        if k in slo and (decodes or k != "tpot_s"):
            fails[:, j] = (v < slo[k]) if k == "min_tokens_per_s" else ~(v <= slo[k])
    solved = {"ttft_p50_s": st["ttft50"], "ttft_p99_s": st["ttft99"], "tpot_p50_s": tpot50,
              "tpot_p99_s": tpot50 + Z99 * tpot_sd, "output_tokens_per_s": np.where(f_sub, tput, 0.0),
              "requests_per_s": np.where(f_sub, r_tot, 0.0), "batch_per_replica": st["b"], "batch_cap": st["b_cap"],
              "kv_transfer_s": st["xfer"], "overloaded": bad_q, "prefill_utilization": st["rho"],
              "slo_fail": fails, "_tput": tput, "_fixed": st["fixed"], "_theta": st["theta"], "_Kt": st["K"],
              "_tpot_sd": tpot_sd}
    lo, hi = serving_file().interval.low, serving_file().interval.high
    out = {"n_devices": n_dev, "kv_capacity_tokens": K, "weights_bytes": w, "kv_cache_bytes": kvb,
           "activations_bytes": act, "reserved_bytes": res, "memory_capacity_bytes": np.full(n, cap), "fits": fits,
           "interval_low": np.full(n, lo), "interval_high": np.full(n, hi), "_extra_ok": extra_ok, "_w_floor": w_floor,
           "_evaluated": np.zeros(n, dtype=bool)}
    out["_evaluated"][rows] = True
    for k, v in solved.items():
        v = np.broadcast_to(np.asarray(v), (len(rows),) + np.shape(v)[1:])
        if len(rows) == n:
            out[k] = np.array(v)
            continue
        a = np.full((n,) + v.shape[1:], np.nan) if v.dtype.kind == "f" else np.zeros((n,) + v.shape[1:], v.dtype)
        a[rows] = v
        out[k] = a
    out["output_tokens_per_s_per_device"] = out["output_tokens_per_s"] / n_dev
    out["slo_ok"] = fits & ~out["overloaded"] & ~out["slo_fail"].any(axis=1)
    return out, BlockLazy(mode, rows, st["it"], st["pit"], st["b"], serving, n)


class BlockLazy:
    """The time breakdowns of rows of one block, priced when asked: the decode iteration at the row's steady
    batch, and one prompt's prefill (one prompt on one rank)."""

    def __init__(self, mode, rows, it, pit, b, serving, n):
        self.mode, self.it, self.pit, self.b, self.serving = mode, it, pit, b, serving
        self.pos = np.full(n, -1, dtype=np.int64)
        self.pos[rows] = np.arange(len(rows))

    def breakdowns(self, local) -> dict:
        """``decode_<part>`` and ``prefill_<part>`` arrays over the block rows ``local`` (priced rows only)."""
        pos = self.pos[np.asarray(local, dtype=np.int64)]
        if np.any(pos < 0):
            raise ValueError("breakdowns of rows that were not priced (only_fitting)")
        I = float(self.serving.isl_mean)
        ctx = I + float(self.serving.osl_mean) / 2.0
        b = self.b[pos]
        m = len(pos)
        decode = self.it.take(pos)(np.zeros(m), b, b * ctx)
        kw = {"prefill_seqs": 1.0, "prefill_rank_tokens": I} if self.mode != "af-disaggregated" else {}
        prefill = self.pit.take(pos)(np.full(m, I), 0.0, 0.0, **kw)  # one prompt, one rank
        out = {}
        for k in PARTS:
            out["decode_" + k] = np.broadcast_to(decode[k], (m,)).astype(float)
            out["prefill_" + k] = np.broadcast_to(prefill[k], (m,)).astype(float)
        return out


def goodput(a: dict, serving) -> np.ndarray:
    """Throughput × the share of requests meeting the latency SLOs (exponential TTFT tail, normal TPOT), over the
    rows of the arrays ``a`` (``_tput``, ``_fixed``, ``_theta``, ``_Kt``, ``tpot_p50_s``, ``_tpot_sd`` …)."""
    slo = serving.slos()
    tput = a["_tput"]
    att = np.ones(len(tput))
    if "ttft_p99_s" in slo:  # the wait's tail K·e^(−θt) beyond what the rest of the first token takes
        slack = slo["ttft_p99_s"] - a["_fixed"]
        att = att * np.where(slack < 0, 0.0, 1.0 - a["_Kt"] * np.exp(-np.clip(a["_theta"] * slack, 0.0, 700.0)))
    if "tpot_s" in slo:
        att = att * normal_cdf((slo["tpot_s"] - a["tpot_p50_s"]) / np.maximum(a["_tpot_sd"], 1e-30))
    att = np.where(a["overloaded"] | ~a["fits"], 0.0, att)
    return tput * att


def reasons(a: dict, i: int, mode: str, serving) -> str:
    """Why row ``i`` of the arrays ``a`` does not fit or is overloaded ("; "-joined, empty when neither)."""
    w, act, res = a["weights_bytes"][i], a["activations_bytes"][i], a["reserved_bytes"][i]
    K = a["kv_capacity_tokens"][i]
    cap = float(a["memory_capacity_bytes"][i])
    need = serving.isl.quantile(0.99) + serving.osl.quantile(0.99)
    out = []
    if w + act + res >= cap:
        out.append(f"weights {w / GiB:.1f} GiB + activations {act / GiB:.1f} GiB + reserve {res / GiB:.1f} GiB exceed "
                   f"the {cap / GiB:.0f} GiB of a device: try larger tp/pp or lower-precision weights")
    elif K < need:
        out.append(f"the KV cache holds {K:,.0f} tokens, less than one request ({need:,.0f}): try larger tp/pp, an "
                   "fp8 KV cache or smaller chunks")
    if not a["_extra_ok"][i]:
        out.append("the " + ("expert" if mode == "af-disaggregated" else "prefill")
                   + " pool does not fit in device memory: give it more devices")
    if a["overloaded"][i]:
        out.append("the load exceeds what the deployment serves: queues grow without bound")
    return "; ".join(out)


_ERF = np.frompyfunc(math.erf, 1, 1)


def normal_cdf(x) -> np.ndarray:
    """Φ(x), the standard normal CDF, elementwise: (1 + erf(x/√2))/2 (no SciPy dependency)."""
    return 0.5 * (1.0 + _ERF(np.asarray(x, dtype=float) / math.sqrt(2.0)).astype(float))
