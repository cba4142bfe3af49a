"""The mapspace search of the dataflow family (``dataflow.search_mappings``): a mapping sends each prime factor of
each dimension to a slot (a level's temporal loop or a fan-out's spatial factor) and orders each level's loops.

The search (seeded, reproducible): a random sample whose slot preferences are drawn per mapping (Dirichlet), then
``ROUNDS`` rounds of mutating the best ``ELITE`` (move one prime factor, swap two loops) up to a budget of priced
mappings.  Its pool is kept in the pricer's layout (mappings last, dimensions in ``dataflow_price.ORDER``): the
slots ``X[prime, m]`` (uint8), the loop places ``pos[l, d, m]`` (int8, the inverse of each level's loop order: the
pairwise ranks of the order's uniform draws, no sort) and, for a round's mutants, the factors ``F[slot, d, m]``
(the elites' factors repeated, the moved prime divided out of its old slot and multiplied into its new one — exact
integers).  Each mapping's random draws are those of the loop-order formulation (``_orders`` / ``_mutate``, kept
for the tests that pin them); a sample's loop draws are ranked only where the mapping fits (the others are never
priced nor kept).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from parplan.models.dataflow_price import AT, FROM_ORDER, TO_ORDER
from parplan.workloads.dataflow import DIMS

ROUNDS = 24  # local-search rounds after the initial sample
ELITE = 128  # mappings kept and mutated per round
BATCH = 20_000
CHUNK = 8192  # mappings per pricer call
DRAW = 4096  # mappings per block of the sample's uniform draws
K = len(DIMS)


def _primes(n: int) -> list[int]:
    out, x, p = [], n, 2
    while p * p <= x:
        while x % p == 0:
            out.append(p)
            x //= p
        p += 1
    if x > 1:
        out.append(x)
    return out


@dataclass(frozen=True)
class _Space:
    """A mapping = each prime factor of each dimension sent to a slot (a level's temporal loop or a spatial
    fan-out) + a loop order per level."""
    dim: np.ndarray  # dimension of each prime factor
    prime: np.ndarray
    L: int
    spatial_levels: tuple
    slots: int

    @functools.cached_property
    def codes(self) -> tuple:
        """Per dimension with primes: (d, parts, table) — a slot's factor is ``table[code]``, code = Σ radix × (how
        many copies of a distinct prime went to the slot) over the dimension's runs of equal primes (``parts``:
        first, end, radix; the rows of ``X``), table = every product of those prime powers (exact integers)."""
        runs, j = {}, 0
        dim, prime = self.dim.tolist(), self.prime.tolist()
        while j < len(dim):
            k = j
            while k < len(dim) and (dim[k], prime[k]) == (dim[j], prime[j]):
                k += 1
            runs.setdefault(dim[j], []).append((int(prime[j]), j, k))
            j = k
        out = []
        for d, rs in runs.items():
            radix, table, parts = 1, np.ones(1), []
            for p, j0, j1 in rs:
                parts.append((j0, j1, radix))
                table = np.concatenate([table * float(p) ** e for e in range(j1 - j0 + 1)])
                radix *= j1 - j0 + 1
            out.append((d, tuple(parts), table))
        return tuple(out)

    def factors(self, X: np.ndarray) -> np.ndarray:
        """``F[slot, d, m]`` of the slots ``X[prime, m]``: a slot's factor in dimension d, the product of the primes
        sent there — the powers of each distinct prime (how many of its copies went to the slot) looked up together
        (``codes``)."""
        F = np.empty((self.slots, K, X.shape[1]))
        F[:, self.unfactored] = 1.0
        slot = np.arange(self.slots, dtype=X.dtype)[:, None]
        for d, parts, table in self.codes:
            code = None
            wide = np.uint8 if len(table) <= 256 else np.int64
            for j0, j1, radix in parts:
                c = (X[j0:j1, None, :] == slot).sum(axis=0, dtype=np.uint8)  # copies in each slot
                if wide is not np.uint8:
                    c = c.astype(wide)
                if radix > 1:
                    c *= wide(radix)
                code = c if code is None else np.add(code, c, out=code)
            table.take(code, mode="clip", out=F[:, AT[DIMS[d]], :])
        return F

    def arrays(self, A: np.ndarray) -> tuple:
        """(T, S) of the mappings ``A[m, prime]``, shape (M, L, 7) (``evaluate_mappings``' arrays)."""
        return self.split(self.factors(np.ascontiguousarray(A.T)))

    @functools.cached_property
    def unfactored(self) -> list:
        """The places in ORDER of the dimensions of size 1 (every slot's factor 1)."""
        return [AT[DIMS[d]] for d in range(K) if d not in set(self.dim.tolist())]

    @functools.cached_property
    def level_of(self) -> np.ndarray:
        """The level of each slot (a fan-out's spatial slot sits at its level)."""
        return np.array(list(range(self.L)) + list(self.spatial_levels), np.uint8)

    def might_fit(self, X: np.ndarray, bound) -> "np.ndarray | None":
        """Indices of the mappings ``X[prime, m]`` that pass ``SearchPricer.bound``, a necessary condition to fit
        (None: all): the product of the bound's dimensions' primes in slots at or below its level, compared in log2
        (an integer above ``words`` is at least words + 1: the sums' rounding, < 1e-12, cannot cross the 1e-9
        margin)."""
        if bound is None or not len(self.dim):
            return None
        level, dims, words = bound
        sel = [j for j, d in enumerate(self.dim.tolist()) if DIMS[d] in dims]
        if not sel:
            return None
        low = self.level_of.take(X[sel]) <= level
        return (np.log2(self.prime[sel]) @ low <= np.log2(words) + 1e-9).nonzero()[0]

    @functools.cached_property
    def dim_at(self) -> np.ndarray:
        """Each prime's dimension as its place in ORDER (the pool's layout)."""
        return TO_ORDER[self.dim]

    def split(self, F: np.ndarray) -> tuple:
        """(T, S), shape (M, L, 7) in DIMS order, of factors ``F[slot, d, m]`` (d in ORDER): S is 1 but at the
        fan-out levels."""
        St = np.ones((self.L,) + F.shape[1:])
        for i, l in enumerate(self.spatial_levels):
            St[l] = F[self.L + i]
        return F[:self.L, TO_ORDER].transpose(2, 0, 1), St[:, TO_ORDER].transpose(2, 0, 1)


def _initial(space: _Space, rng, size: int) -> np.ndarray:
    """The sample's slots ``A[m, prime]`` (``_sample`` transposed)."""
    return _sample(space, rng, size).T


def _sample(space: _Space, rng, size: int) -> np.ndarray:
    """The slots ``X[prime, m]`` of a random sample: each mapping draws its own slot preferences (Dirichlet), so the
    sample spans tiny and large inner tiles, then each prime's slot is how many of the mapping's cumulative weights
    its uniform draw passes.  The uniform draws come a block of mappings at a time (the same stream as one call),
    compared with the primes in rows."""
    w = rng.dirichlet(np.full(space.slots, 0.5), size).T
    cum = np.empty(w.shape)  # the running sum over the slots (np.cumsum's additions, one slot at a time)
    cum[0] = w[0]
    for s in range(1, space.slots):
        np.add(cum[s - 1], w[s], out=cum[s])
    X = np.zeros((len(space.dim), size), _slot_dtype(space.slots))
    for i in range(0, size, DRAW):
        u = np.ascontiguousarray(rng.random((min(DRAW, size - i), len(space.dim))).T)
        x = X[:, i:i + DRAW]
        for s in range(space.slots - 1):
            x += u > cum[s, i:i + DRAW]
    return X


def _slot_dtype(slots: int):
    """The smallest integer type of a slot index (the mapping arrays are copied every round)."""
    return np.uint8 if slots <= 255 else np.int64


def _ranks(R: np.ndarray) -> np.ndarray:
    """``rank[i, row]`` (int8): loop i's place in ``np.argsort(R, axis=2)`` of uniform draws R (M, L, 7), rows
    (mapping, level) flattened — the number of draws below it (equal draws in index order, as a stable sort puts
    them): one pass per pair of the 7 loops instead of a sort call per row."""
    M, L, _ = R.shape
    Rt = np.ascontiguousarray(R.reshape(M * L, K).T)
    rank = np.zeros((K, M * L), np.int8)
    for i in range(K):
        for j in range(i + 1, K):
            before = Rt[j] < Rt[i]
            rank[i] += before
            rank[j] += ~before
    return rank


def _places(R: np.ndarray) -> np.ndarray:
    """The loop places ``pos[l, d, m]`` of the orders ``_orders(R)`` (their inverse; d in ORDER), mappings
    contiguous."""
    M, L, _ = R.shape
    return np.ascontiguousarray(_ranks(R)[FROM_ORDER].reshape(K, M, L).transpose(2, 0, 1))


def _orders(R: np.ndarray) -> np.ndarray:
    """Loop orders (int8) drawn as ``np.argsort(R, axis=2)``: the inverse of the places (packed in 4 bits each)."""
    M, L, _ = R.shape
    rank = _ranks(R)
    packed = np.zeros(M * L, np.int32)
    for i in range(1, K):
        packed |= np.int32(i) << (rank[i] * np.int8(4))
    perm = np.empty((M * L, K), np.int8)
    for p in range(K):
        perm[:, p] = (packed >> np.int32(4 * p)) & np.int32(15)
    return perm.reshape(M, L, K)


def _mutate_pool(space: _Space, X: np.ndarray, pos: np.ndarray, perm: np.ndarray, F: np.ndarray, rng) -> None:
    """``_mutate``'s draws applied in place to fresh copies in the pool's layout: the slots ``X[prime, m]``, the
    places and orders ``pos[l, d, m]``, ``perm[l, place, m]`` (a swap of the loops at places a and b trades those two
    dimensions' places) and the factors ``F[slot, d, m]`` (the moved prime leaves its slot's factor and joins the
    new one's: exact divisions).  Flat indices throughout (one gather or scatter per array)."""
    size = X.shape[1]
    rows = np.arange(size)
    plane = K * size  # one slot's (or level's) [d, m] plane
    if len(space.dim):
        j = rng.integers(0, len(space.dim), size)
        new = rng.integers(0, space.slots, size)
        flat = X.reshape(-1)
        at = j * size + rows
        old = flat[at].astype(np.intp)
        flat[at] = new
        p, col = space.prime[j], space.dim_at[j] * size + rows
        flat = F.reshape(-1)
        at = old * plane + col
        flat[at] = flat[at] / p
        at = new * plane + col
        flat[at] = flat[at] * p
    lvl = rng.integers(0, space.L, size)
    a, b = rng.integers(0, K, size), rng.integers(0, K, size)
    swap = (rng.random(size) < 0.5).nonzero()[0]
    a, b, base = a[swap], b[swap], lvl[swap] * plane + swap
    ia, ib = base + a * size, base + b * size
    order, place = perm.reshape(-1), pos.reshape(-1)
    da, db = order[ia], order[ib]  # the dimensions at places a and b
    order[ia], order[ib] = db, da
    place[base + da.astype(np.intp) * size], place[base + db.astype(np.intp) * size] = b, a


def _best(val: np.ndarray, tie: np.ndarray, n: int) -> np.ndarray:
    """``np.lexsort((tie, val))[:n]``, sorting only the candidates at or below the n-th smallest ``val`` (every one
    of the first n is among them, in the same stable order)."""
    if len(val) > 4 * n:
        kth = np.partition(val, n - 1)[n - 1]
        if kth == kth:  # not NaN
            cand = (val <= kth).nonzero()[0]
            if len(cand) <= len(val) // 2:
                return cand[np.lexsort((tie[cand], val[cand]))][:n]
    return np.lexsort((tie, val))[:n]


def explore(space: _Space, pricer, key: str, hz: float, rng, max_mappings: int, trace: "list | None" = None) -> tuple:
    """The search's final pool (X, pos, val, tie) and how many mappings it priced; ``trace`` collects each priced
    chunk's (T, S, indices that fit, their loop orders, val, tie) in ``evaluate_mappings``' layout.  Loop places
    matter only where a mapping fits (the others are never priced nor kept): the sample ranks its loop draws there
    only."""
    L = space.L

    def price(X, F=None, pos=None):
        """val and tie of a batch: a sample's slots ``X`` (factors made here for the mappings that may fit, loop
        places for those priced, from uniform draws a chunk at a time) or mutants' factors ``F`` and places ``pos``."""
        size = X.shape[1]
        val, tie = np.full(size, np.inf), np.full(size, np.inf)
        drawn = pos is None
        if drawn:
            pos = np.zeros((L, K, size), np.int8)
        for i in range(0, size, CHUNK):  # chunks whose arrays stay in cache; each mapping is priced alone
            n = min(CHUNK, size - i)
            if drawn:
                cand = space.might_fit(X[:, i:i + n], pricer.bound)
                cand = np.arange(n) if cand is None else cand
                fit = pricer.fit(space.factors(X[:, i:i + n].take(cand, axis=1)))
                ok, priced = i + cand[fit.ok], cand if fit.rows is None else cand[fit.rows]
                R = rng.random((n, L, K))
                pos[:, :, i + priced] = pc = _places(R[priced])
            else:
                fit = pricer.fit(F[:, :, i:i + n])
                ok = i + fit.ok
                pc = pos[:, :, i:i + n] if fit.rows is None else pos.take(i + fit.rows, axis=2)
            cycles, energy = pricer.price(fit, pc)
            t = cycles / hz
            val[ok] = t if key == "total_s" else energy if key == "energy_j" else t * energy
            tie[ok] = energy if key == "total_s" else t
            if trace is not None:
                Fc = space.factors(X[:, i:i + n]) if drawn else F[:, :, i:i + n]
                orders = FROM_ORDER[np.argsort(pos[:, :, ok].transpose(2, 0, 1), axis=2)]
                trace.append(space.split(Fc) + (ok - i, orders, val[i:i + n], tie[i:i + n]))
        return val, tie, pos

    first = max(1, min(max_mappings // 2, 4 * BATCH))
    X = _sample(space, rng, first)
    val, tie, pos = price(X)
    F = None  # the pool's factors, where kept: (the elites', the mutants')
    seen = first
    per_round = max(1, (max_mappings - first) // ROUNDS)
    while seen < max_mappings:
        keep = _best(val, tie, ELITE)
        keep = keep[np.isfinite(val[keep])]
        Xe, pe = X.take(keep, axis=1), pos.take(keep, axis=2)
        if not len(keep):
            extra = min(BATCH, max_mappings - seen)
            X2 = _sample(space, rng, extra)
            v2, t2, p2 = price(X2)
            F = None
        else:
            reps = max(1, min(per_round, max_mappings - seen) // len(keep))
            if F is None:
                Fe = space.factors(Xe)
            else:  # gathered from the elites' and the mutants' factors
                Fe, old = np.empty((space.slots, K, len(keep))), keep < F[0].shape[2]
                Fe[:, :, old] = F[0].take(keep[old], axis=2)
                Fe[:, :, ~old] = F[1].take(keep[~old] - F[0].shape[2], axis=2)
            X2, p2, F2 = Xe.repeat(reps, 1), pe.repeat(reps, 2), Fe.repeat(reps, 2)
            o2 = pe.argsort(axis=1).astype(np.int8).repeat(reps, 2)  # the elites' loop orders
            _mutate_pool(space, X2, p2, o2, F2, rng)
            v2, t2, p2 = price(X2, F2, p2)
            F = (Fe, F2)
        seen += X2.shape[1]
        X, pos = np.concatenate([Xe, X2], axis=1), np.concatenate([pe, p2], axis=2)
        val, tie = np.concatenate([val.take(keep), v2]), np.concatenate([tie.take(keep), t2])
    return X, pos, val, tie, seen


def ranked_distinct(space: _Space, X: np.ndarray, pos: np.ndarray, val, tie, top: int) -> tuple:
    """The best mapping of each distinct factorization, in rank order (``top`` of them, 0: all): (T, S, perm) of
    the chosen, shape (n, L, 7).  Factors are built for the ranked candidates a block at a time."""
    order = np.lexsort((tie, val))
    chosen, fps, start, block = [], set(), 0, max(4 * top, 64) if top else len(order)
    while start < len(order) and not (top and len(chosen) >= top):
        idx = order[start:start + block]
        F = space.factors(X[:, idx])
        for c, i in enumerate(idx):
            fp = F[:, :, c].tobytes()
            if fp in fps:
                continue
            fps.add(fp)
            chosen.append((int(i), F[:, :, c]))
            if top and len(chosen) >= top:
                break
        start += block
    F = np.stack([f for _, f in chosen], axis=2)
    T, S = space.split(F)
    perm = FROM_ORDER[np.argsort(pos[:, :, [i for i, _ in chosen]].transpose(2, 0, 1), axis=2)].astype(np.int8)
    return np.ascontiguousarray(T), np.ascontiguousarray(S), perm
