"""Load imbalance between the barriers of parallel state-machine replication (P-SMR), in closed form.

Between two consecutive dependent ("all"-thread) commands a replica's n threads execute the independent commands
delivered to them; every thread then waits at the barrier for the busiest one.  With a dependent fraction d the
number m of independent commands between two barriers is geometric, P(m) = (1 − d)^m · d, and each goes to one of
the n threads uniformly (the client proxy hashes keys to threads).  A segment lasts t_i · max_j L_j + t_d + t_sync,
so by renewal–reward the execution throughput is (1/d) / (t_i · E[max_j L_j] + t_d + t_sync) — the SEEDS.md S01(b)
formula plus d · t_i · (E[max L] − E[m]/n), the imbalance term (ours).

E[max_j L_j | m] for L ~ Multinomial(m; 1/n, …, 1/n) is exact for m ≤ ``EXACT_M``:
P(max ≤ x | m) = P(Σ Y_j = m, Y_j ≤ x) / P(Σ Y_j = m) for iid Y_j ~ Poisson(s) (the multinomial is the
Poisson vector conditioned on its sum, for any s), computed by polynomial powers of the truncated Poisson pmf with
s chosen per bucket of m so that no coefficient underflows; above ``EXACT_M`` the Gaussian extreme value
E[max] ≈ m/n + sqrt(m/n) · e_n (e_n = expected maximum of n iid standard normals; the multinomial's −1/(n−1)
correlation cancels the (1 − 1/n) variance factor exactly).

Scheduler-based parallel SMR hands commands to threads round-robin: a segment's busiest thread has ⌈m/n⌉.

``ring_classes`` groups the ordering rings of many plans into the four classes their command shares fall in, so the
latency model prices each ring station once per class instead of once per ring.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

EXACT_M = 512  # exact multinomial maxima up to this many commands per segment
MAX_TERMS = 2_000_000  # geometric sums are cut where the tail is below TAIL (and at this many terms)
TAIL = 1e-10


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=float)))])


def _trunc_power(a: np.ndarray, n: int, deg: int) -> np.ndarray:
    """a(z)^n with coefficients above z^deg dropped (binary exponentiation)."""
    out = np.zeros(deg + 1)
    out[0] = 1.0
    base = a[:deg + 1].copy()
    while n:
        if n & 1:
            out = np.convolve(out, base)[:deg + 1]
        n >>= 1
        if n:
            base = np.convolve(base, base)[:deg + 1]
    return out


@lru_cache(maxsize=64)
def expected_max_exact(n: int) -> np.ndarray:
    """E[max_j L_j | m] for m = 0..EXACT_M (index m), n threads, uniform multinomial."""
    out = np.zeros(EXACT_M + 1)
    if n == 1:
        return np.arange(EXACT_M + 1, dtype=float)
    lf = _log_factorials(EXACT_M + 1)
    lo = 1
    while lo <= EXACT_M:
        hi = min(2 * lo - 1, EXACT_M)  # bucket [lo, hi]
        s = 0.5 * (lo + hi) / n  # Poisson parameter for this bucket
        ms = np.arange(lo, hi + 1)
        i = np.arange(hi + 1)
        logp = -s + i * math.log(s) - lf[:hi + 1]
        # P(Σ Y = m) for Y ~ Poisson(s) iid ×n: Poisson(n s) at m
        log_sum = -n * s + ms * math.log(n * s) - lf[ms]
        emax = np.zeros(len(ms))
        xmax = int(min(hi, math.ceil(hi / n + 12 * math.sqrt(hi / n) + 12)))
        for x in range(0, xmax + 1):
            a = np.where(i <= x, np.exp(logp), 0.0)
            p = _trunc_power(a, n, hi)[ms]
            cdf = np.clip(p / np.exp(log_sum), 0.0, 1.0)  # P(max ≤ x | m)
            emax += np.where(ms > x, 1.0 - cdf, 0.0)  # E[max] = Σ_{x ≥ 0} P(max > x)
        out[lo:hi + 1] = emax
        lo = hi + 1
    return out


@lru_cache(maxsize=64)
def normal_max(n: int) -> float:
    """e_n = E[max of n iid N(0, 1)] by quadrature of n·z·φ(z)·Φ(z)^(n−1)."""
    z = np.linspace(-9.0, 9.0, 6001)
    phi = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    f = n * z * phi * cdf ** (n - 1)
    return float(np.sum(f) * (z[1] - z[0]))


def expected_max(n: int, m: np.ndarray) -> np.ndarray:
    """E[max_j L_j | m] for an array of segment sizes m (exact ≤ EXACT_M, Gaussian extreme value above)."""
    m = np.asarray(m)
    ex = expected_max_exact(n)
    small = np.minimum(m, EXACT_M).astype(int)
    mu = m / n
    big = mu + np.sqrt(mu) * normal_max(n) if n > 1 else m.astype(float)
    return np.where(m <= EXACT_M, ex[small], big)


def _geometric(d: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and weights of P(m) = (1 − d)^m d, cut where the tail is below TAIL (renormalized)."""
    if d >= 1.0:
        return np.zeros(1, dtype=np.int64), np.ones(1)
    cut = int(min(MAX_TERMS, math.ceil(math.log(TAIL) / math.log1p(-d)) + 1))
    m = np.arange(cut, dtype=np.int64)
    w = d * np.exp(m * math.log1p(-d))
    return m, w / w.sum()


@lru_cache(maxsize=4096)
def imbalance_commands(n: int, d: float, scheme: str) -> float:
    """E[max_j L_j] − E[m]/n per barrier segment, in commands (0 without dependent commands or with one thread)."""
    if d <= 0.0 or n <= 1 or d >= 1.0:
        return 0.0
    m, w = _geometric(d)
    if scheme == "sched-psmr":
        busiest = np.ceil(m / n)  # round-robin hand-out
    else:
        busiest = expected_max(n, m)
    return float(np.sum(w * busiest) - np.sum(w * m) / n)


def imbalance_array(n: np.ndarray, d: float, scheme: np.ndarray) -> np.ndarray:
    """``imbalance_commands`` over arrays of thread counts and scheme names (cached per distinct thread count and
    hand-out: round-robin for sched-psmr, by key hash for the others)."""
    n = np.asarray(n, dtype=int)
    nb, sb = np.broadcast_arrays(n, np.asarray(scheme))
    if not nb.size:
        return np.zeros(nb.shape)
    key = nb.ravel().astype(np.int64) * 2 + (sb.ravel() == "sched-psmr")
    seen = np.zeros(int(key.max()) + 1, dtype=bool)
    seen[key] = True
    keys = np.flatnonzero(seen)
    vals = np.array([imbalance_commands(int(k // 2), float(d), "sched-psmr" if k % 2 else "psmr")
                     for k in keys.tolist()])
    return vals[(np.cumsum(seen) - 1)[key]].reshape(nb.shape)


def ring_classes(n, g, d: float, r: int) -> dict:
    """The rings of every plan (thread counts ``n``, ring counts ``g``: equal-shape int arrays) by class: thread j's
    group goes to ring j mod g and the "all" group to ring n mod g, so ring q carries (1−d)·⌈n/g⌉/n of the commands
    for q < n mod g (class 0), (1−d)·⌊n/g⌋/n + d at q = n mod g (class 2), (1−d)·⌊n/g⌋/n above it (class 1) and
    nothing at q ≥ g (class 3: the padding to the largest ring count G).  Per distinct (threads, rings), row ``inv``
    of each plan: ``share`` [U, G] (as if dealt ring by ring), ``cls`` [U, G], ``class_share`` and ``class_weight``
    [U, 4] (a class's share and its share of the row's sum: the weight of a random command's ring), ``s_max``,
    ``used`` (rings with commands), ``nic`` [U, min(r, G)] (share of the rings each replica leads: ring q's leader
    sits on replica q mod r) and ``nic_max``."""
    n = np.asarray(n, dtype=np.int64).ravel()
    g = np.asarray(g, dtype=np.int64).ravel()
    G = int(g.max()) if g.size else 1
    key = n * (G + 1) + g
    seen = np.zeros(int(key.max()) + 1 if key.size else 1, dtype=bool)
    seen[key] = True
    ukeys = np.flatnonzero(seen)
    inv = (np.cumsum(seen) - 1)[key]
    un, ug = ukeys // (G + 1), ukeys % (G + 1)
    rem, low = un % ug, un // ug
    q = np.arange(G)
    cls = np.where(q < rem[:, None], 0, np.where(q == rem[:, None], 2, 1))
    cls = np.where(q < ug[:, None], cls, 3)
    nf = un.astype(float)
    s_low = (1 - d) * low.astype(float) / nf  # (1−d)·count/n, the count of threads whose ring is q
    cs = np.stack([(1 - d) * (low + 1).astype(float) / nf, s_low, s_low + d, np.zeros(len(un))], axis=1)
    share = np.take_along_axis(cs, cls, axis=1)
    total = np.maximum(share.sum(axis=-1), 1e-300)
    cw = cs / total[:, None]
    rp = min(int(r), G)
    nic = np.zeros((len(un), rp))
    for k in range(rp):
        nic[:, k] = share[:, k::int(r)].sum(axis=-1)
    return {"inv": inv, "G": G, "share": share, "cls": cls, "class_share": cs, "class_weight": cw,
            "s_max": share.max(axis=-1), "used": (share > 0).sum(axis=-1), "nic": nic,
            "nic_max": nic.max(axis=-1) if rp else np.zeros(len(un))}
