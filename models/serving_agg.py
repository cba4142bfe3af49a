"""Load, first-token latency and inter-token time of the replicas of an aggregated (or attention) pool under
chunked prefill (vectorized over deployments; ``models/serving_queue.py`` derives the closed forms).

* open loop (Poisson λ per replica): the decode batch b solves b = λ·(O − 1)·t̄(b) (Little's law over a request's
  O − 1 decode iterations), by bisection; a decoding request sees 1 + b sequences (itself and, Poisson arrivals
  seeing time averages, b others), a prompt b others;
* closed loop (N users per replica n = N/R; saturated: the executor's 2 × the sequences the replicas batch): an
  arriving user sees the other N − 1 (arrival theorem, Lavenberg & Reiser 1980: the queue's load scales by
  (N − 1)/N, none for one user); the rate λ solves λ·(TTFT(λ) + (O − 1)·t̄(λ)) = n (Little's law over the users'
  cycle) and b = λ·(O − 1)·t̄; users beyond the sequence cap wait for a slot (their wait is what Little's law leaves);
* TTFT = the in-flight decode iteration (half of one, when others decode and no prompt is running) + the M/G/1 wait
  of the prompt queue (Cramér–Lundberg tail) + the prompt's own chunks; p99 combines the parts' excesses
  (``sum_p99``).
"""
from __future__ import annotations

import numpy as np

from parplan.models.serving_arrays import Distinct, on_distinct, unique_rows
from parplan.models.serving_queue import (chunk_costs, chunk_rates, mg1_wait, mgc_wait, prefill_mix,
                                          rank_queues, rank_rates, sum_p99, tpot_spread, wait_quantiles)
from parplan.models.serving_terms import total


POOLED = True


def _bisect(f, lo, hi, iters=48):
    """Where the increasing-then-crossing f changes sign on [lo, hi] (vectorized): the largest x with f(x) ≤ 0."""
    lo, up = lo + 0.0 * hi, hi + 0.0 * lo
    for _ in range(iters):
        mid = 0.5 * (lo + up)
        ok = f(mid) <= 0
        lo, up = np.where(ok, mid, lo), np.where(ok, up, mid)
    return 0.5 * (lo + up)


class _Total:
    """Seconds of one iteration, ``total(it(p, d, kv, **kw))``; ``rows(idx)``: the same of some rows alone (where
    ``it`` can be restricted: ``serving_eval.IterFn``)."""

    def __init__(self, it):
        self.it = it
        if hasattr(it, "take"):
            self.rows = lambda idx: _Total(it.take(idx))

    def __call__(self, p, d, kv, **kw):
        return total(self.it(p, d, kv, **kw))


def solve_aggregated(it, C, R, b_cap, serving, slots, dp=1.0):
    """Arrays of the steady state of every replica: see the module docstring.  ``it(p, d, kv, **kw)``: parts of one
    iteration; ``C``: chunk tokens (0: whole prompts); ``R``: replicas; ``b_cap``: decode-batch cap; ``slots``:
    the sequences a replica runs at once (the executor's cap, min(max batch, chunk)); ``dp``: attention-DP ranks
    sharing a replica's budget (``serving_queue.chunk_costs``)."""
    I, O = float(serving.isl_mean), float(serving.osl_mean)
    O1 = max(O - 1.0, 0.0)
    ctx = I + O / 2.0
    cv2 = serving.isl.cv2
    load = serving.load
    tot = _Total(it)
    cap1 = np.maximum(b_cap, 1.0)
    if load == "open":
        seen, n_u = 1.0, None
        lam0 = serving.arrival_rate_per_s / R
    else:
        N = float(serving.concurrency) if load == "closed" else None
        n_u = N / R if N is not None else 2.0 * slots
        seen = (N - 1.0) / N if N is not None else 1.0 - 1.0 / (2.0 * slots * R)

    dpa = np.asarray(dp, dtype=np.float64)
    lockstep = bool(np.any(dpa > 1.0))

    def rates(lam, k):
        """``chunk_rates``; attention-DP ranks in lock-step: their inter-token time (``rank_rates``)."""
        r = chunk_rates(lam, k)
        if not lockstep:
            return r
        return r[0], r[1], r[2], np.where(dpa > 1.0, rank_rates(lam, k, C, I, dpa)[3], r[3])

    def costs(b):
        """Decode iterations at the batch a decoding request sees (itself + b·seen others); its prompt's
        iterations beside the b·seen others."""
        n_s, n_p = np.minimum(1.0 + b * seen, cap1), b * seen
        k = chunk_costs(tot, C, I, n_p, n_p * ctx, dp=dp, with_t0=False)
        k["t0"] = chunk_costs(tot, C, I, n_s, n_s * ctx, decode_only=True)["t0"]
        return k, n_s

    def ttft_mean(k, busy_b, r):
        """Mean TTFT at the ``rates`` r of a prompt rate (busy_b: 1 − e^(−b·seen), others decoding)."""
        rho, S, _, _ = r
        resid = busy_b * (1.0 - np.clip(rho, 0, 1)) * k["t0"] / 2.0
        return mg1_wait(rho * seen, S, cv2) + resid + k["s_alone"]

    def closed_rate(k, b):
        top = (1.0 - 1e-9) / np.maximum(k["s_pack"], 1e-12)
        busy_b = 1.0 - np.exp(-b * seen)

        def g(lam):
            r = rates(lam, k)
            return lam * (ttft_mean(k, busy_b, r) + O1 * r[3]) - n_u
        return _bisect(g, 0.0 * top, top, iters=22)  # 2^-22 of the rate bound: far below the model's error

    def residual(b):
        k, _ = costs(b)
        lam = lam0 + 0.0 * b if load == "open" else closed_rate(k, b)
        return b - lam * O1 * rates(lam, k)[3]

    top = b_cap if load == "open" else np.minimum(n_u, b_cap)
    b = _bisect(residual, 0.0 * top, top, iters=20)  # 2^-20 of the batch cap
    over_cap = residual(top) < 0
    b = np.where(over_cap, top, b)
    k, n_s = costs(b)
    if load == "open":
        lam = lam0 + 0.0 * b
    else:
        lam = closed_rate(k, b)
        lam = np.where(over_cap, top / np.maximum(O1 * rates(lam, k)[3], 1e-12), lam) if O1 else lam
    rho, S, n_p, tbar = rates(lam, k)
    overload = (load == "open") & (over_cap | (rho >= 1.0))
    rho_w = rho * seen
    Wm, W50, W99, th, K = mgc_wait(R, rho_w, S, cv2) if POOLED else wait_quantiles(rho_w, S, cv2)
    busy = (1.0 - np.exp(-b * seen)) * (1.0 - np.clip(rho, 0, 1))
    resid = busy * k["t0"] / 2.0
    lock = (0.0 * b, 0.0 * b)
    if lockstep:
        Wr, lock = rank_queues(lam, k, C, I, dpa, R, seen, cv2)
        Wm, W50, W99, th, K = (np.where(dpa > 1.0, x, y) for x, y in zip(Wr, (Wm, W50, W99, th, K)))
        lock = tuple(np.where(dpa > 1.0, x, 0.0) for x in lock)
    s50, _ = k["alone"](serving.isl.quantile(0.5))
    s99, _ = k["alone"](serving.isl.quantile(0.99))
    sI = k["s_alone"]
    extra = np.zeros_like(b)
    if load != "open":  # the users' cycle leaves this much to wait (a slot, a deeper queue): Little's law
        extra = np.maximum(n_u / np.maximum(lam, 1e-30) - O1 * tbar - (Wm + resid + lock[0] + sI), 0.0)
    ttft50 = W50 + resid + lock[0] + s50 + extra
    ttft99 = sum_p99([(Wm, W99), (resid, busy * k["t0"]), lock, (sI, s99)]) + extra
    bad = overload | ~np.isfinite(Wm)
    sd = tpot_spread(tbar, k["t0"], S, n_p, lam, O)
    return {"b": b, "lam": lam, "rho": rho, "rho_w": rho_w, "overload": bad & (load == "open"),
            "ttft50": np.where(bad, np.inf, ttft50), "ttft99": np.where(bad, np.inf, ttft99), "tpot50": tbar,
            "tpot_sd": sd, "theta": th, "K": K, "fixed": extra + sI + resid + lock[0], "t0": k["t0"]}


def solve_disaggregated(serving, it, ctx, R, b_cap, t_p1, mu_p, Rp, xf, cv2, I50, I99, pit, dp=None, distinct=None):
    """Disaggregated prefill/decode: the decode batch by Little's law at the decode pool, the prompt queue of the
    prefill pool (``Rp`` replicas behind the least-loaded router: ``mgc_wait``; ``t_p1`` one replica iteration,
    which prefills a prompt on each of its ``dp`` attention-DP ranks), the KV transfer; ``pit``: parts of a prefill
    iteration.  Ranks in lock-step serve in bulk: a prompt waits for the running iteration even where its own rank
    is free, so a replica is one server whose prompts take the lone iteration when alone and 1/dp of the full one
    when queued, mixed by the prefill-busy share (``serving_queue.prefill_mix``).

    ``it``, ``pit``: ``serving_eval.IterFn`` of the decode and prefill pools; a decode iteration (and the batch's
    bisection) is priced once per distinct (decode pool, arguments), a prefill one once per distinct prefill pool
    (``distinct``: its ``serving_arrays.Distinct``) — the same floats as every row, which depends on its own
    inputs alone."""
    I, O = float(serving.isl_mean), float(serving.osl_mean)
    load = serving.load
    key = (unique_rows(*it.key())[1],)  # which distinct decode pool each row has

    def cycle(b):
        return on_distinct(lambda g, x: total(it.take(g)(0.0, x, x * ctx)), key, b)

    def batch(g, r_g, R_g, cap_g):  # b = λ/R·O·t(b) on one row of each distinct (decode pool, λ, R, cap)
        it_g = it.take(g)
        return _bisect(lambda x: x - r_g / R_g * O * total(it_g(0.0, np.maximum(x, 1e-9), np.maximum(x, 1e-9) * ctx)),
                       0.0 * cap_g, cap_g)
    t_cap = cycle(np.maximum(b_cap, 1e-9))
    mu_d = R * b_cap / (O * t_cap)
    if load == "open":
        r = np.full_like(R, serving.arrival_rate_per_s)
    elif load == "closed":
        b0 = np.minimum(serving.concurrency / R, b_cap)
        r = np.minimum(R * b0 / (O * cycle(np.maximum(b0, 1e-9))), mu_p * 0.999)
    else:
        r = np.minimum(mu_d, mu_p * 0.999)
    overload = (r >= mu_p) | (r > mu_d * 1.000001)
    b = on_distinct(batch, key, r, R, b_cap)
    b = np.maximum(np.where(overload, b_cap, np.minimum(b, b_cap)), 1e-9)
    t_it = cycle(b)
    seen = (serving.concurrency - 1.0) / serving.concurrency if load == "closed" else 1.0
    r_tot = np.where(overload, np.minimum(mu_p, mu_d), R * b / (O * t_it))
    # one prompt alone, on one rank
    pdist = distinct if distinct is not None else Distinct(*pit.key())

    def pre(i):  # once per distinct prefill pool
        return pdist.apply(lambda g: total(pit.take(g)(np.full(len(g), i, dtype=np.float64), 0.0, 0.0,
                                                       prefill_seqs=1.0, prefill_rank_tokens=i)))
    s_one = pre(I)
    ranks = np.asarray(dp if dp is not None else 1.0, dtype=np.float64) + 0.0 * R
    rho = r_tot * t_p1 / (Rp * ranks)
    S_w = t_p1
    if np.any(ranks > 1.0):
        lam_r, s_pack = r_tot / Rp, t_p1 / ranks
        mix, _, S_mix = prefill_mix(lam_r, s_one, s_pack)
        rho = np.where(ranks > 1.0, np.maximum(mix, 0.0), rho)
        S_w = np.where(ranks > 1.0, S_mix, t_p1)
    rho_w = rho * seen
    Wm, W50, W99, th, K = mgc_wait(Rp, rho_w, S_w, cv2)
    extra = np.zeros_like(R)
    if load == "closed":  # a closed loop queues at most its users: prefill-bound rows wait by Little's law
        Wm = np.where(r_tot >= mu_p * 0.998, 0.0, np.minimum(Wm, serving.concurrency / r_tot))
        W50, W99 = np.minimum(W50, Wm * 4.0), np.minimum(W99, Wm * 8.0)
        extra = np.maximum(serving.concurrency - R * b - r_tot * (t_p1 + Wm), 0.0) / r_tot
    sx, sx50, sx99 = s_one + xf(I), pre(I50) + xf(I50), pre(I99) + xf(I99)
    bad = overload | ((rho >= 1.0) & (load != "closed"))
    ttft50 = W50 + sx50 + extra
    ttft99 = sum_p99([(Wm, W99), (sx, sx99)]) + extra
    return {"b": b, "r_tot": r_tot, "rho": rho, "rho_w": rho_w, "overload": bad,
            "ttft50": np.where(bad, np.inf, ttft50), "ttft99": np.where(bad, np.inf, ttft99), "tpot50": t_it,
            "tpot_sd": np.zeros_like(R), "theta": th, "K": K, "fixed": extra + sx}
