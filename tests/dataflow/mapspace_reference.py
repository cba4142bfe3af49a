"""The mapspace search as it stood before issue 16 (planner/spaces/dataflow.py at e32bf20), kept verbatim as the
reference ``test_dataflow_search_ref.py`` compares the search with: the same seeded draws, each chunk priced by
``evaluate_mappings`` itself, every array of every priced mapping collected by ``trace`` (the one addition)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.dataflow import mapping_doc, mapping_estimate
from parplan.models.dataflow_energy import evaluate_mappings, fanouts, storage_view
from parplan.planner.spaces.dataflow import DataflowPlans, _key
from parplan.planner.spaces.dataflow_mapspace import _primes, _slot_dtype  # unchanged by issue 16
from parplan.workloads.dataflow import DIMS

MAX_MAPPINGS = 2_000_000
BATCH = 20_000
CHUNK = 8192  # mappings per evaluate_mappings call
ROUNDS = 24  # local-search rounds after the initial sample
ELITE = 128  # mappings kept and mutated per round


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
    def groups(self) -> tuple:
        """(dimension, prime, first, end, powers) of each run of equal primes of a dimension (the columns of ``A``;
        the prime's powers 0 … end − first)."""
        out, j = [], 0
        dim, prime = self.dim.tolist(), self.prime.tolist()
        while j < len(dim):
            k = j
            while k < len(dim) and (dim[k], prime[k]) == (dim[j], prime[j]):
                k += 1
            out.append((dim[j], prime[j], j, k, np.array([float(int(prime[j]) ** e) for e in range(k - j + 1)])))
            j = k
        return tuple(out)

    def arrays(self, A: np.ndarray) -> tuple:
        """(T, S) of the mappings ``A``, shape (M, L, 7), laid out as [level, dimension, mapping] underneath (the
        layout ``evaluate_mappings`` works in).  A slot's factor in a dimension is the product of the primes sent
        there: per distinct prime of the dimension, that prime to the power of how many of its copies went to the
        slot; exact for integers, so the same numbers as multiplying prime by prime."""
        size = A.shape[0]
        K = len(DIMS)
        F = np.ones((self.slots, K, size))
        At = np.ascontiguousarray(A.T)  # (primes, M)
        slot = np.arange(self.slots, dtype=At.dtype)[:, None]
        seen = set()
        for d, p, j0, j1, power in self.groups:
            if j1 - j0 == 1:
                f = 1.0 + (At[j0] == slot) * (p - 1.0)
            else:
                f = power[(At[j0:j1, None, :] == slot).sum(axis=0, dtype=np.intp)]
            if d in seen:
                F[:, d, :] *= f
            else:
                F[:, d, :] = f
                seen.add(d)
        St = np.ones((self.L, K, size))
        for i, l in enumerate(self.spatial_levels):
            St[l] = F[self.L + i]
        return F[:self.L].transpose(2, 0, 1), St.transpose(2, 0, 1)


def _initial(space: _Space, rng, size: int) -> np.ndarray:
    """Each mapping draws its own slot preferences (Dirichlet), so the sample spans tiny and large inner tiles."""
    w = rng.dirichlet(np.full(space.slots, 0.5), size).T
    cum = np.empty(w.shape)  # the running sum over the slots (np.cumsum's additions, one slot at a time)
    cum[0] = w[0]
    for s in range(1, space.slots):
        np.add(cum[s - 1], w[s], out=cum[s])
    u = rng.random((size, len(space.dim)))
    A = np.zeros(u.shape, _slot_dtype(space.slots))  # the slot of each prime: how many cumulative weights u passes
    for s in range(space.slots - 1):
        A += u > cum[s][:, None]
    return A


def _orders(R: np.ndarray) -> np.ndarray:
    """Loop orders (int8) drawn as ``np.argsort(R, axis=2)`` of uniform draws R (M, L, 7), by ranks: loop i's place
    is the number of draws below it (equal draws in index order, as a stable sort puts them), and the order is the
    inverse of the places (packed in 4 bits per place).  One pass per pair of the 7 loops instead of a sort call per
    row."""
    M, L, K = R.shape
    Rt = np.ascontiguousarray(R.reshape(M * L, K).T)
    rank = np.zeros((K, M * L), np.int8)
    for i in range(K):
        for j in range(i + 1, K):
            before = Rt[j] < Rt[i]
            rank[i] += before
            rank[j] += ~before
    packed = np.zeros(M * L, np.int32)
    for i in range(1, K):
        packed |= np.int32(i) << (rank[i] * np.int8(4))
    perm = np.empty((M * L, K), np.int8)
    for p in range(K):
        perm[:, p] = (packed >> np.int32(4 * p)) & np.int32(15)
    return perm.reshape(M, L, K)


def _mutate(space: _Space, A: np.ndarray, perm: np.ndarray, rng) -> tuple:
    A, perm = A.copy(), perm.copy()
    size = A.shape[0]
    rows = np.arange(size)
    if len(space.dim):
        j = rng.integers(0, len(space.dim), size)
        A[rows, j] = rng.integers(0, space.slots, size)
    lvl = rng.integers(0, space.L, size)
    a, b = rng.integers(0, len(DIMS), size), rng.integers(0, len(DIMS), size)
    swap = rng.random(size) < 0.5
    pa, pb = perm[rows, lvl, a].copy(), perm[rows, lvl, b].copy()
    perm[rows[swap], lvl[swap], a[swap]] = pb[swap]
    perm[rows[swap], lvl[swap], b[swap]] = pa[swap]
    return A, perm


def search_mappings(spec, dsp, *, top: int = 10, objective: str = "latency", max_mappings: int = 60_000,
                    seed: int = 0, trace: "list | None" = None) -> DataflowPlans:
    """The best mappings of the workload's problem found in the (enumerated or sampled) mapspace; ``trace`` collects
    every priced chunk's (T, S, perm, valid, val, tie) — the one addition to the code as it stood."""
    key = _key(objective)
    problem = spec.problem
    if problem is None:
        raise SpecError(f"{spec.name} is an inductive kernel: there is no tensor problem to map", key="kernel")
    if not 1 <= max_mappings <= MAX_MAPPINGS:
        raise SpecError(f"max mappings {max_mappings:,} is outside 1..{MAX_MAPPINGS:,}", key="--max-mappings")
    levels, mac_inst, mac_e = storage_view(dsp, problem.dtype)
    L = len(levels)
    fan = fanouts(levels, mac_inst)
    spatial_levels = [l for l in range(L) if fan[l] > 1]
    slots = L + len(spatial_levels)
    rng = np.random.default_rng(seed)
    dims, primes = [], []
    for d, n in enumerate(problem.sizes):
        for p in _primes(n):
            dims.append(d)
            primes.append(p)
    space = _Space(np.array(dims, int), np.array(primes, float), L, tuple(spatial_levels), slots)
    hz = dsp.clock_hz

    def price(A, perm):
        val, tie = np.empty(len(A)), np.empty(len(A))
        for i in range(0, len(A), CHUNK):  # chunks whose arrays stay in cache; each mapping is priced alone
            T, S = space.arrays(A[i:i + CHUNK])
            o = evaluate_mappings(problem, levels, mac_inst, mac_e, T, S, perm[i:i + CHUNK])
            t = o["cycles"] / hz
            v = {"total_s": t, "energy_j": o["energy_j"], "edp_js": t * o["energy_j"]}[key]
            val[i:i + CHUNK] = np.where(o["valid"], v, np.inf)
            tie[i:i + CHUNK] = np.where(o["valid"], o["energy_j"] if key == "total_s" else t, np.inf)
            if trace is not None:
                trace.append((T, S, perm[i:i + CHUNK], o["valid"], val[i:i + CHUNK], tie[i:i + CHUNK]))
        return val, tie

    first = max(1, min(max_mappings // 2, 4 * BATCH))
    A = _initial(space, rng, first)
    perm = _orders(rng.random((first, L, len(DIMS))))
    val, tie = price(A, perm)
    seen = first
    per_round = max(1, (max_mappings - first) // ROUNDS)
    while seen < max_mappings:
        keep = np.lexsort((tie, val))[:ELITE]
        keep = keep[np.isfinite(val[keep])]
        if not len(keep):
            extra = min(BATCH, max_mappings - seen)
            A2 = _initial(space, rng, extra)
            p2 = _orders(rng.random((extra, L, len(DIMS))))
        else:
            reps = max(1, min(per_round, max_mappings - seen) // len(keep))
            A2, p2 = _mutate(space, np.repeat(A[keep], reps, 0), np.repeat(perm[keep], reps, 0), rng)
        v2, t2 = price(A2, p2)
        seen += len(A2)
        A, perm = np.concatenate([A[keep], A2]), np.concatenate([perm[keep], p2])
        val, tie = np.concatenate([val[keep], v2]), np.concatenate([tie[keep], t2])
    if not np.isfinite(val).any():
        raise SpecError(f"none of {seen:,} mappings tried fits {dsp.name} (every one overflows a level or a "
                        "fan-out)", key="problem", hint="a larger device or smaller dimensions fit")
    ok = np.isfinite(val)
    A, perm, val, tie = A[ok], perm[ok], val[ok], tie[ok]
    T, S = space.arrays(A)
    order = np.lexsort((tie, val))
    chosen, fingerprints = [], set()  # the best of each distinct factorization, in rank order
    for i in order:
        fp = (T[i].tobytes(), S[i].tobytes())
        if fp in fingerprints:
            continue
        fingerprints.add(fp)
        chosen.append(int(i))
        if top and len(chosen) >= top:
            break
    o = evaluate_mappings(problem, levels, mac_inst, mac_e, T[chosen], S[chosen], perm[chosen])  # one call for all
    rows = []
    for k, i in enumerate(chosen):
        doc = mapping_doc(levels, T, S, perm, i)
        e = mapping_estimate(spec, dsp, None, None, None, plan_doc={"mapping": doc}, priced=o, i=k)
        rows.append({"rank": len(rows) + 1, "macs_used": e.plan["macs_used"], "cycles": e.cycles,
                     "total_s": e.total_s, "energy_j": e.energy_j, "edp_js": e.edp, "pj_per_mac": e.pj_per_mac,
                     "utilization": e.utilization, **e.parts, **e.energy_parts, "mapping": doc})
    notes = [f"{seen:,} mappings priced: a Dirichlet-spread random sample, then {ROUNDS} rounds of mutating the "
             f"best {ELITE} (seed {seed})"]
    return DataflowPlans(spec.name, dsp.id, "mapping", objective, rows, seen, notes)
