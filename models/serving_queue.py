"""Queueing of a serving replica (vectorized over deployments): the chunked-prefill iteration mix of an aggregated
replica, the M/G/1 waiting-time tail of a prefill queue, and the quantile of a first-token latency made of several
independent parts.  All closed forms are derived here (sources in each docstring); SI units.

Aggregated replica under vLLM v1's policy (decodes first, then prompt chunks up to the token budget ``C``; the
executor ``executor/serving_sched.py`` plays it): an iteration either carries prompt tokens or only decodes.  A
prompt of ``i`` tokens alone occupies ⌈i/β⌉ iterations (β = C − n tokens left beside ``n`` decodes): ⌈i/β⌉ − 1 full
chunks and one partial chunk; when prompts queue, chunks are packed and the prompt costs i/β full iterations.
With the prefill-busy share ρ the two mix as (1 − ρ)·alone + ρ·packed, which gives ρ in closed form
(ρ = λ·S_alone / (1 + λ·(S_alone − S_packed))).  A decoding sequence sees λ·n_p prefill iterations and (1 − ρ)/t₀
decode-only iterations per second, so its mean inter-token time is t̄ = 1/(λ·n_p + (1 − ρ)/t₀) (derived).
"""
from __future__ import annotations

import numpy as np

from parplan.workloads.serving import Z99


def chunk_costs(total_of, C, I, n, kv, decode_only=False, dp=1.0, with_t0=True):
    """Iteration costs of an aggregated replica at ``n`` decoding sequences over ``kv`` cached tokens:
    ``t0`` (decodes only), ``full`` (a whole chunk beside them), the prompt service alone ``alone(i)`` and its
    iteration count, the packed service and its count per prompt of ``I`` tokens.  ``C = 0``: whole prompts, one
    iteration each (the unchunked prefill stalls the decodes for its time).  ``total_of(p, d, kv, **kw)``: seconds
    of one iteration; ``decode_only``: ``t0`` alone.

    ``dp`` attention-DP ranks share the replica's budget: each rank's scheduler takes (C − n)/dp prompt tokens
    per iteration (SGLang divides ``--chunked-prefill-size`` by the DP size: python/sglang/srt/server_args.py,
    "DP attention is enabled. The chunked prefill size is adjusted"), so a prompt alone on its rank needs dp×
    the iterations, each with its chunk on that one rank; packed, every rank prefills (whole prompts: dp at
    once, one per rank).  ``with_t0=False``: without ``t0`` (nothing else here needs it)."""
    if decode_only:
        return {"t0": total_of(0.0, n, kv)}
    out = {"t0": total_of(0.0, n, kv)} if with_t0 else {}
    chunked = C > 0
    dp = np.asarray(dp, dtype=np.float64)
    ranks = dp > 1.0
    beta = np.where(chunked, np.maximum(C - n, 1.0), 1.0)
    # the chunk iterations, which only chunked rows take (0 elsewhere where ``total_of`` prices rows apart)
    full = _chunked_rows(total_of, chunked, beta, n, kv)
    beta_r = np.where(ranks, np.maximum(beta / dp, 1.0), beta)  # one rank's share of the budget
    full_r = full
    if np.any(ranks):
        full_r = np.where(ranks, _chunked_rows(total_of, chunked, beta_r, n, kv, prefill_rank_tokens=beta_r), full)

    def alone(i):
        i = np.asarray(i, dtype=np.float64) + 0.0 * beta
        k = np.maximum(np.ceil(i / beta_r), 1.0)
        rem = i - (k - 1.0) * beta_r
        p = np.where(chunked, rem, i)
        if np.all(ranks):  # every row's prompt on one of its ranks
            part = np.where(ranks, total_of(p, n, kv, prefill_seqs=1.0, prefill_rank_tokens=p), 0.0)
        else:
            part = total_of(p, n, kv, prefill_seqs=1.0)
            if np.any(ranks):
                part = np.where(ranks, total_of(p, n, kv, prefill_seqs=1.0, prefill_rank_tokens=p), part)
        return np.where(chunked, (k - 1.0) * full_r + part, part), np.where(chunked, k, 1.0)

    s_alone, k_alone = alone(I)
    whole = s_alone
    if np.any(ranks):  # whole prompts, one per rank at once
        whole = np.where(ranks, total_of(dp * I, n, kv, prefill_seqs=dp) / dp, s_alone)
    s_pack = np.where(chunked, I / beta * full, whole)
    k_pack = np.where(chunked, I / beta, np.where(ranks, 1.0 / dp, 1.0))
    return {**out, "full": full, "alone": alone, "s_alone": s_alone, "k_alone": k_alone, "s_pack": s_pack,
            "k_pack": k_pack, "beta_r": beta_r, "full_r": full_r}


def _chunked_rows(total_of, chunked, *args, **kw):
    """``total_of(*args, **kw)`` on the chunked rows, 0 on the others, where ``total_of`` offers ``rows(idx)`` (the
    same function on those rows alone); else on every row."""
    if np.ndim(chunked) == 0 or np.all(chunked) or not hasattr(total_of, "rows"):
        return total_of(*args, **kw)
    n = len(chunked)
    idx = np.flatnonzero(chunked)
    out = np.zeros(n)
    if len(idx):
        pick = lambda a: np.broadcast_to(np.asarray(a, dtype=np.float64), (n,))[idx]  # noqa: E731
        out[idx] = total_of.rows(idx)(*(pick(a) for a in args), **{k: pick(v) for k, v in kw.items()})
    return out


def prefill_mix(lam, s_alone, s_pack, gap=None):
    """A prompt queue at rate ``lam`` whose prompts take ``s_alone`` when alone and ``s_pack`` packed behind others:
    the prefill-busy share ρ = λ·S_alone / (1 + λ·(S_alone − S_packed)) (module docstring), ρ clipped to [0, 1], and
    the mean service (1 − ρ)·alone + ρ·packed (``gap``: S_alone − S_packed, when already at hand)."""
    rho = lam * s_alone / (1.0 + lam * (s_alone - s_pack if gap is None else gap))
    r = np.clip(rho, 0.0, 1.0)
    return rho, r, (1.0 - r) * s_alone + r * s_pack


def chunk_rates(lam, k):
    """Per replica at prompt arrival rate ``lam`` (1/s) and costs ``k`` (``chunk_costs``): the prefill-busy share
    ρ, the mean prompt service S, the prefill iterations per prompt, and the mean inter-token time t̄."""
    lam = np.asarray(lam, dtype=np.float64)
    if "_gap" not in k:  # the same for every rate: once per cost dict
        k["_gap"] = k["s_alone"] - k["s_pack"]
    rho, r, S = prefill_mix(lam, k["s_alone"], k["s_pack"], k["_gap"])
    n_p = (1.0 - r) * k["k_alone"] + r * k["k_pack"]
    tbar = 1.0 / (lam * n_p + (1.0 - r) / k["t0"])
    return rho, S, n_p, tbar


def rank_rates(lam, k, C, I, dp):
    """A replica of ``dp`` attention-DP ranks in lock-step at prompt rate ``lam``: each rank's prefill-busy share
    ρᵣ and its mean prompt service Sᵣ (``prefill_mix`` on one rank's budget, at λ/dp), the share of iterations
    in which some rank prefills, 1 − (1 − ρᵣ)^dp (ranks independent), and the mean inter-token time those
    iterations leave a decoding sequence, t̄ = 1/(ρ_any/T_p + (1 − ρ_any)/t₀) with T_p the mean prefill iteration
    (every rank waits for the prefilling ones; derived)."""
    lam_r = np.asarray(lam, dtype=np.float64) / dp
    s_pr, gap, t_one, span, dp1 = _rank_terms(k, C, I, dp)
    _, rho_r, S_r = prefill_mix(lam_r, k["s_alone"], s_pr, gap)
    any_ = 1.0 - np.power(1.0 - rho_r, dp)
    busy = np.clip((dp * rho_r / np.maximum(any_, 1e-12) - 1.0) / dp1, 0.0, 1.0)
    t_p = t_one + busy * span
    tbar = 1.0 / (any_ / t_p + (1.0 - any_) / k["t0"])
    return rho_r, S_r, any_, tbar


def _rank_terms(k, C, I, dp):
    """``rank_rates``' terms that do not depend on the prompt rate, once per cost dict ``k`` (of one C, I, dp):
    a rank's packed service and its gap to the lone one, the lone prompt's mean iteration t_one, the span up to the
    full iteration t_all − t_one (≥ 0) and max(dp − 1, 1)."""
    if "_rank_terms" not in k:
        s_pr = np.where(C > 0, I / k["beta_r"] * k["full_r"], k["s_alone"])  # its own rank packed
        # a prefill iteration: one rank's chunk (a lone prompt's mean iteration) up to every rank's (the full
        # one), by the ranks prefilling in it, dp·ρᵣ/ρ_any on average (linear between the two; derived)
        t_one = k["s_alone"] / np.maximum(k["k_alone"], 1.0)
        t_all = np.where(C > 0, k["full"], k["s_pack"] * dp)
        k["_rank_terms"] = (s_pr, k["s_alone"] - s_pr, t_one, np.maximum(t_all - t_one, 0.0),
                            np.maximum(dp - 1.0, 1.0))
    return k["_rank_terms"]


def rank_queues(lam, k, C, I, dp, R, seen, cv2):
    """The prompt wait of a replica of ``dp`` attention-DP ranks in lock-step (``executor/serving_ranks.py``): each
    rank queues its own prompts (least-loaded routing over the R·dp ranks, ``mgc_wait``) at its share ρᵣ and
    service Sᵣ (``rank_rates``); and a prompt also waits for the chunk the other ranks are running — 0 with
    probability (1 − ρᵣ)^(dp − 1), else uniform over one iteration L (derived).  Returns the wait's (mean, p50,
    p99, θ, K) and that lock-step residual's (mean, p99)."""
    rho_r, S_r, _, _ = rank_rates(lam, k, C, I, dp)
    others = 1.0 - np.power(1.0 - rho_r * seen, np.maximum(dp - 1.0, 0.0))  # another rank is prefilling
    L = np.where(C > 0, k["full_r"], k["s_alone"])
    lock = (others * L / 2.0, np.where(others > 0.01, L * (1.0 - 0.01 / np.maximum(others, 1e-12)), 0.0))
    return mgc_wait(R * dp, rho_r * seen, S_r, cv2), lock


def mg1_wait(rho, S, cv2):
    """M/G/1 mean wait (Pollaczek–Khinchine): ρ·S·(1 + cv²)/(2(1 − ρ)); ∞ at ρ ≥ 1."""
    return np.where(rho < 1.0, rho * S * (1.0 + cv2) / (2.0 * np.maximum(1.0 - rho, 1e-12)), np.inf)


def mg1_tail(rho, S, cv2, iters: int = 60):
    """Exponential tail of the M/G/1 wait, P(W > t) ≈ K·e^(−θt) (Cramér–Lundberg: θ solves λ(M(θ) − 1) = θ,
    K = (1 − ρ)/(λ·M′(θ) − 1); Asmussen, 'Applied Probability and Queues', 2nd ed., XIII.5), for a gamma-distributed
    service of mean ``S`` and squared coefficient of variation ``cv2`` (M(θ) = (1 − θ·S·cv²)^(−1/cv²); cv² → 0 is the
    deterministic service, M = e^(θS)).  Returns (θ, K)."""
    rho = np.clip(np.asarray(rho, dtype=np.float64), 1e-12, 1.0 - 1e-9)
    S = np.asarray(S, dtype=np.float64) + 0.0 * rho
    c = np.maximum(np.asarray(cv2, dtype=np.float64), 1e-6) + 0.0 * rho
    lam = rho / S

    def mgf(th):
        return np.power(np.maximum(1.0 - th * S * c, 1e-300), -1.0 / c)

    lo, hi = np.zeros_like(rho), 1.0 / (S * c)
    hi = np.minimum(hi, 50.0 / S)  # e^(50) beyond any root for ρ ≥ 1e-12 (derived: λ(M−1) grows like e^(θS)/S)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        above = lam * (mgf(mid) - 1.0) > mid
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    th = 0.5 * (lo + hi)
    dm = S * np.power(np.maximum(1.0 - th * S * c, 1e-300), -1.0 / c - 1.0)
    K = np.clip((1.0 - rho) / np.maximum(lam * dm - 1.0, 1e-12), 0.0, 1.0)
    return th, K


def tail_quantile(theta, K, q):
    """q-quantile of a wait with an atom at 0 and tail K·e^(−θt)."""
    return np.where(K > 1.0 - q, np.log(np.maximum(K / (1.0 - q), 1.0)) / np.maximum(theta, 1e-30), 0.0)


def wait_quantiles(rho, S, cv2):
    """(mean, p50, p99, θ, K) of the M/G/1 wait of a prompt queue (∞ at ρ ≥ 1; θ, K: ``mg1_tail``)."""
    ok = np.asarray(rho) < 1.0
    th, K = mg1_tail(np.where(ok, rho, 0.5), S, cv2)
    K = np.where(np.asarray(rho) > 0, K, 0.0)
    mean = mg1_wait(rho, S, cv2)
    return (mean, np.where(ok, tail_quantile(th, K, 0.5), np.inf), np.where(ok, tail_quantile(th, K, 0.99), np.inf),
            th, K)


def sum_p99(parts):
    """p99 of a sum of independent parts given each part's (mean, p99): the means add, the excesses over the mean
    add in quadrature (a normal-approximation combination; exact for normal parts, derived)."""
    m = sum(p[0] for p in parts)
    with np.errstate(invalid="ignore"):
        ex = sum(np.maximum(np.nan_to_num(p[1] - p[0], nan=np.inf), 0.0) ** 2 for p in parts)
    return m + np.sqrt(ex)


def tpot_spread(tbar, t0, S, n_p, lam, O):
    """Standard deviation of one request's mean inter-token time: the prefill iterations it shares arrive as a
    compound Poisson stream (λ·D prompts in its decode time D = (O − 1)·t̄, n_p iterations each), each longer than a
    decode-only iteration by S/n_p − t₀ (derived)."""
    O1 = np.maximum(O - 1.0, 1.0)
    D = O1 * tbar
    extra = np.maximum(S / np.maximum(n_p, 1e-12) - t0, 0.0)
    return extra * n_p * np.sqrt(np.maximum(lam * D, 0.0)) / O1


__all__ = ["Z99", "chunk_costs", "chunk_rates", "prefill_mix", "rank_rates", "rank_queues", "mg1_wait",
           "mg1_tail", "tail_quantile", "wait_quantiles", "sum_p99", "tpot_spread"]


def erlang_c(c, rho):
    """Probability an arrival waits in M/M/c at per-server utilization ρ (Erlang C; Kleinrock, 'Queueing Systems'
    vol. 1, §3.5), vectorized over integer c ≥ 1."""
    c = np.asarray(c, dtype=np.float64)
    rho = np.clip(np.asarray(rho, dtype=np.float64), 0.0, 1.0 - 1e-12)
    a = c * rho
    shape = a.shape
    c, a = np.broadcast_to(c, shape).ravel(), a.ravel()
    # Σ_{k<c} a^k/k! and a^c/c! by the recurrence term·a/(k + 1), each row for its own k < c: the rows sorted by
    # c (largest first) so that the rows still summing at step k are a prefix
    order = np.argsort(-c, kind="stable")
    cs, a_s = c[order], a[order]
    term = np.ones_like(a_s)
    s = np.zeros_like(a_s)
    for k in range(int(np.max(c)) if c.size else 1):
        m = int(np.searchsorted(-cs, -float(k), side="left"))  # rows with k < c
        s[:m] = s[:m] + term[:m]
        term[:m] = term[:m] * a_s[:m] / (k + 1.0)
    t, sm = np.empty_like(term), np.empty_like(s)
    t[order], sm[order] = term, s
    last = t.reshape(shape) / (1.0 - rho)
    return last / (sm.reshape(shape) + last)


def _one_server(c, rho, S, cv2):
    """``wait_quantiles`` of the rows with c ≤ 1 (the only ones ``mgc_wait`` takes them for; NaN elsewhere)."""
    one = np.asarray(c) <= 1.0
    if np.all(one) or np.ndim(one) == 0:
        return wait_quantiles(rho, S, cv2)
    shape = np.broadcast_shapes(np.shape(c), np.shape(rho), np.shape(S), np.shape(cv2))
    idx = np.flatnonzero(np.broadcast_to(one, shape))
    sub = (np.broadcast_to(np.asarray(a, dtype=np.float64), shape).ravel()[idx] for a in (rho, S, cv2))
    out = []
    for v in wait_quantiles(*sub):
        a = np.full(int(np.prod(shape)), np.nan)
        a[idx] = v
        out.append(a.reshape(shape))
    return tuple(out)


def mgc_wait(c, rho, S, cv2):
    """(mean, p50, p99, θ, K) of the wait of c servers fed by one queue at per-server utilization ρ (the
    least-loaded router of the executor keeps no server idle while another queues): one server — the M/G/1 forms
    above; several — Allen–Cunneen's mean, Erlang C·(1 + cv²)/2·S/(c(1 − ρ)) (Allen, 'Probability, Statistics and
    Queueing Theory', 1990, §6), with the exponential tail Erlang C·e^(−t·C/W)."""
    c = np.asarray(c, dtype=np.float64)
    m1, p50, p99, th1, K1 = _one_server(c, rho, S, cv2)
    ok = np.asarray(rho) < 1.0
    Pw = erlang_c(np.maximum(c, 1.0), np.where(ok, rho, 0.5))
    Wc = np.where(ok, Pw * (1.0 + cv2) / 2.0 * S / (c * np.maximum(1.0 - rho, 1e-12)), np.inf)
    thc = Pw / np.maximum(Wc, 1e-30)
    one = c <= 1.0
    th, K = np.where(one, th1, thc), np.where(one, K1, Pw)
    return (np.where(one, m1, Wc), np.where(one, p50, np.where(ok, tail_quantile(thc, Pw, 0.5), np.inf)),
            np.where(one, p99, np.where(ok, tail_quantile(thc, Pw, 0.99), np.inf)), th, K)
