"""The mapping model of ``dataflow_energy.evaluate_mappings`` (Timeloop's access counts, ANCHORS Part B §2.2) cut
down to what the mapspace search ranks by: which mappings fit, and the cycles and energy of those that do — the
same numbers, bit for bit (tests/dataflow/test_dataflow_search_ref.py).

Built once per search (``SearchPricer``): which levels hold which tensor, where the fan-outs are, the constant
tiles of the outermost level (the whole tensor: a search's factorizations are complete), bandwidths and access
energies.  ``fit`` takes the search's arrays, mappings contiguous — the factors ``F[slot, d, m]`` (the temporal
factors of the L levels, then the spatial factors of each fan-out level) — and decides which mappings fit
(fan-outs, then each level's capacity from the tiles); ``price`` prices only those, given their loop places
``pos[l, d, m]`` (int8, the inverse of each level's loop order).  A random sample mostly overflows a register
file (97 % of the Eyeriss example's), so it is never priced.

Every access count is an integer, so the counts are computed as exact integer products and sums in float64 — in
any order while they stay below 2⁵³; each is at most 4 × MACs × (stride + dilation)² (a level's reads or writes of
three tensors, the inputs' halo), so a problem where twice that passes 2⁵³ is priced by ``evaluate_mappings``
itself:

* traffic into a child: MACs / (utilized instances × spatial factors irrelevant to t below) at the innermost
  holder (those factors divide the MACs), else N_c · tile_c × (the spatial factors relevant to t between c and l)
  — the model's N_c · tile_c · (util_c / util_l) / multicast, which is that integer;
* N_l(t) (``dataflow_energy._tile_changes``): at a level j above l whose loops change t's tile (fb, the place of
  its first loop relevant to t with a factor > 1), y_j = (every factor of the levels from j up) / (level j's
  factors placed below fb); N_l is y of the lowest such level above l, else 1 — and y only falls going up
  (y_j ≥ the factors from j + 1 up ≥ y_k, k > j), so N_l is the running maximum of y from the top, levels without
  such a loop counting 0.

The floating-point steps are the model's own operations in its order: reads / read bandwidth and writes / write
bandwidth per level, the largest of those and MACs / utilized MACs; utilized instances × (reads + writes) × access
energy per level, added innermost first (as numpy sums a row shorter than 8 — checked once per level count, else
numpy's own row sum), plus the MACs' energy.  The dimensions are laid out in ``ORDER`` (N P Q K C R S: each
tensor's irrelevant ones adjacent), so a tensor's products and minima over its dimensions are over slices, and
level-by-level loops stand in for numpy's accumulate and ``where``, which are slow on these shapes.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from parplan.models.dataflow_energy import _IRR_IDX, _REL_IDX, TENSORS, _footprint, evaluate_mappings, fanouts
from parplan.workloads.dataflow import DIMS

EXACT = 2.0 ** 53  # integers below this are exact in float64
COMPACT = 0.7  # gather the fitting mappings first where fewer than this share fit
K = len(DIMS)
ORDER = ("N", "P", "Q", "K", "C", "R", "S")  # the pricer's dimension order: each tensor's irrelevant ones adjacent
AT = {d: i for i, d in enumerate(ORDER)}
TO_ORDER = np.array([AT[d] for d in DIMS])  # DIMS index → place in ORDER
FROM_ORDER = np.array([DIMS.index(d) for d in ORDER])  # place in ORDER → DIMS index


def _runs(dims) -> list:
    """The dimensions (names) as slices of ORDER, one per run of adjacent places."""
    at = sorted(AT[d] for d in dims)
    out, start = [], at[0]
    for a, b in zip(at, at[1:] + [None]):
        if b != a + 1:
            out.append(slice(start, a + 1))
            start = b
    return out


REL = {t: _runs(DIMS[i] for i in _REL_IDX[t]) for t in TENSORS}  # as slices of ORDER
IRR = {t: _runs(DIMS[i] for i in _IRR_IDX[t]) for t in TENSORS}
BOUND = {"weights": "KCRS", "inputs": "NCPQ", "outputs": "NKPQ"}  # a tile is at least these dimensions' product


@functools.cache
def _rowsum_in_order(n: int) -> bool:
    """Whether numpy sums a contiguous float64 row of ``n`` (< 8: its pairwise sum starts at 8) left to right."""
    if n >= 8:
        return False
    x = np.random.default_rng(0).random((1024, n)) * 10.0 ** (np.arange(n) - n // 2)
    acc = x[:, 0].copy()
    for i in range(1, n):
        acc = acc + x[:, i]
    return bool(np.array_equal(x.sum(axis=1), acc))


def _tile(B, t: str, stride: int, dilation: int):
    """``dataflow_energy._footprint`` of bounds ``B[..., d, m]`` (d in ORDER; exact integers, so the same numbers):
    an input row is (P − 1)·stride + (R − 1)·dilation + 1 wide, P + R − 1 at stride and dilation 1."""
    g = {d: B[..., AT[d], :] for d in ORDER}
    if t == "weights":
        return g["K"] * g["C"] * g["R"] * g["S"]
    if t == "outputs":
        return g["N"] * g["K"] * g["P"] * g["Q"]
    if stride == dilation == 1:
        w, h = g["P"] + g["R"] - 1.0, g["Q"] + g["S"] - 1.0
    else:
        w = (g["P"] - 1.0) * stride + (g["R"] - 1.0) * dilation + 1.0
        h = (g["Q"] - 1.0) * stride + (g["S"] - 1.0) * dilation + 1.0
    return g["N"] * g["C"] * w * h


def _over(x, runs, ufunc):
    """``ufunc`` reduced over the dimension axis (axis −2) of ``x`` restricted to ``runs`` (slices)."""
    out = ufunc.reduce(x[..., runs[0], :], axis=-2)
    for r in runs[1:]:
        ufunc(out, ufunc.reduce(x[..., r, :], axis=-2), out=out)
    return out


@dataclass
class Fit:
    """Which mappings fit (``ok``) and, of the mappings ``price`` prices (``rows``: ``ok``, gathered, or None: all
    of them), the temporal factors of levels 1.. (of every level for the model), the spatial factors, fan-outs and
    tiles (``tiles[t]``: rows of the levels below the outermost that hold t)."""
    ok: np.ndarray
    rows: "np.ndarray | None"
    T: np.ndarray
    S: np.ndarray
    spat: np.ndarray
    tiles: dict


class SearchPricer:
    """``evaluate_mappings``' valid, cycles and energy_j for complete factorizations whose spatial factors sit at
    ``spatial`` only (the levels with a fan-out > 1)."""

    def __init__(self, problem, levels, mac_instances: int, mac_energy_j: float, spatial: tuple):
        self.problem, self.levels = problem, tuple(levels)
        self.mac_instances, self.mac_energy_j = mac_instances, mac_energy_j
        self.L = L = len(levels)
        self.spatial = sp = tuple(spatial)
        fan = fanouts(levels, mac_instances)
        self.fan_ok = [fan[l] + 1e-9 for l in sp]  # spat ≤ fan + 1e-9, as the model compares
        self.dead = any(1.0 > fan[l] + 1e-9 for l in range(L) if l not in sp)
        self.exact = 8 * problem.macs * (problem.stride + problem.dilation) ** 2 < EXACT
        self.held = {t: [l for l, lv in enumerate(levels) if t in lv.holds] for t in TENSORS}
        self.inner = {t: [l for l in h if l < L - 1] for t, h in self.held.items()}
        full = [np.array([float(s)]) for s in problem.sizes]  # the outermost bounds: the whole problem
        self.full_tile = {t: float(_footprint(full, t, problem.stride, problem.dilation)[0]) for t in TENSORS}
        # the innermost holder's traffic: MACs / (fan-outs above it × its fan-outs' factors irrelevant to t), and
        # the spatial levels (index i) whose factors relevant to t multiply each later holder's traffic
        self.den, self.between = {}, {}
        for t, held in self.held.items():
            if held:
                self.den[t] = [(i, "all" if l > held[0] else "irr") for i, l in enumerate(sp)]
            for c, l in zip(held, held[1:]):
                self.between[t, l] = [i for i, j in enumerate(sp) if c < j <= l]
        self.util_at = []  # (levels, the fan-outs above them): runs of adjacent levels with the same ones
        for l in range(L):
            at = tuple(i for i, j in enumerate(sp) if j > l)
            if at and self.util_at and self.util_at[-1][1] == at and self.util_at[-1][0].stop == l:
                self.util_at[-1] = (slice(self.util_at[-1][0].start, l + 1), at)
            elif at:
                self.util_at.append((slice(l, l + 1), at))
        self.rbw = np.array([[lv.read_bw] for lv in levels])
        self.wbw = np.array([[lv.write_bw] for lv in levels])
        self.e_access = np.array([[lv.access_energy_j] for lv in levels])
        self.mac_j = problem.macs * mac_energy_j
        self.in_order = L < 2 or _rowsum_in_order(L)
        # a necessary condition to fit, cheap on a sample's slots (level, dimensions, words): the smallest capacity
        # below the outermost holds at least one tensor's tile, at least the product of its factors at and below
        # the level in its BOUND dimensions (an input row is (P − 1)·stride + (R − 1)·dilation + 1 ≥ P wide)
        caps = [(lv.words, l, t) for l, lv in enumerate(levels[:-1]) if lv.words is not None for t in lv.holds]
        words, l, t = min(caps, key=lambda c: c[0]) if caps else (None, None, None)
        self.bound = (l, BOUND[t], words) if caps else None

    def __call__(self, F, pos) -> tuple:
        """(indices of the mappings that fit, their cycles, their energy J) for ``F[slot, d, m]``, ``pos[l, d, m]``."""
        fit = self.fit(F)
        return (fit.ok,) + self.price(fit, pos if fit.rows is None else pos.take(fit.rows, axis=2))

    def fit(self, F) -> Fit:
        """Which of the mappings ``F[slot, d, m]`` fit (the fan-outs, every level's capacity), and what ``price``
        needs of those it will price (gathered where fewer than ``COMPACT`` of them fit)."""
        L, M, p = self.L, F.shape[2], self.problem
        T, S = F[:L], F[L:]
        spat = S.prod(axis=1)
        valid = np.full(M, not self.dead)
        for i, ok in enumerate(self.fan_ok):
            valid &= spat[i] <= ok
        B = np.empty((L - 1, K, M))  # bounds covered at each level below the outermost
        for l in range(L - 1):
            np.multiply(B[l - 1], T[l], out=B[l]) if l else np.copyto(B[0], T[0])
            if l in self.spatial:
                B[l] *= S[self.spatial.index(l)]
        tiles = {}
        for t, inner in self.inner.items():
            if inner:
                rows = slice(inner[0], inner[-1] + 1) if inner[-1] - inner[0] == len(inner) - 1 else inner
                tiles[t] = _tile(B[rows], t, p.stride, p.dilation)
        for l, lv in enumerate(self.levels):
            if lv.words is not None:
                used = None
                for t in TENSORS:
                    if t in lv.holds:
                        tile = tiles[t][self.inner[t].index(l)] if l < L - 1 else self.full_tile[t]
                        used = tile if used is None else used + tile
                valid &= used <= lv.words
        ok = valid.nonzero()[0]
        T = T[1:] if self.exact else T  # level 0's factors enter no count but its tiles (the model: all of them)
        if len(ok) >= COMPACT * M:
            return Fit(ok, None, T, S, spat, tiles)
        return Fit(ok, ok, T.take(ok, axis=2), S.take(ok, axis=2), spat.take(ok, axis=1),
                   {t: v.take(ok, axis=1) for t, v in tiles.items()})

    def price(self, fit: Fit, pos) -> tuple:
        """(cycles, energy J) of the mappings that fit; ``pos[l, d, m]``: the loop places of those ``fit`` prices
        (``fit.rows``, or all)."""
        if self.exact:
            cycles, energy = self._price(fit.T, fit.S, pos[1:], fit.spat, fit.tiles)
        else:
            cycles, energy = self._model(fit.T, fit.S, pos)
        if fit.rows is None and len(fit.ok) < len(cycles):
            return cycles[fit.ok], energy[fit.ok]
        return cycles, energy

    def _changes(self, Tm1, pos, keyed, suf, t: str) -> dict:
        """N_l(t) of the levels below the outermost that hold t (module docstring)."""
        L, lo = self.L, self.held[t][0] + 1
        fb = _over(keyed[lo - 1:], REL[t], np.minimum)  # place of the first changing loop of each level (7: none)
        below = None  # level j's factors placed below fb (irrelevant to t, or 1)
        for r in IRR[t]:
            f = (pos[lo - 1:, r] < fb[:, None]) * Tm1[lo - 1:, r]
            f += 1.0
            f = f.prod(axis=1) if f.shape[1] > 1 else f[:, 0]
            below = f if below is None else np.multiply(below, f, out=below)
        y = suf[lo:L] / below
        y *= fb < K
        for k in range(L - lo - 2, -1, -1):
            np.maximum(y[k], y[k + 1], out=y[k])
        np.maximum(y, 1.0, out=y)  # y[k]: N of level lo − 1 + k
        return {l: y[l - lo + 1] for l in self.inner[t]}

    def _price(self, T, S, pos, spat, tiles) -> tuple:
        """(cycles, energy_j); ``T`` and ``pos`` hold levels 1.. (level 0's loops change no count)."""
        L, M, macs = self.L, T.shape[2], self.problem.macs
        keyed = np.maximum(pos, (T <= 1.0).view(np.int8) * np.int8(K))  # a loop's place, 7 where its factor is 1
        Tm1 = T - 1.0
        tot = T.prod(axis=1)  # every factor of level j + 1
        suf = np.empty((L, M))  # every factor of the levels from j up (j ≥ 1)
        if L > 1:
            suf[L - 1] = tot[L - 2]
        for j in range(L - 2, 0, -1):
            np.multiply(tot[j - 1], suf[j + 1], out=suf[j])
        R, W = np.zeros((L, M)), np.zeros((L, M))  # reads and writes per level
        first = {}
        for t in TENSORS:
            held, inner = self.held[t], self.inner[t]
            if not held:
                continue
            N = self._changes(Tm1, pos, keyed, suf, t) if held[0] < L - 1 else {}
            NT = {l: N[l] * tiles[t][k] for k, l in enumerate(inner)}  # words a level's tile changes bring
            key = tuple((i, t if part == "irr" else part) for i, part in self.den[t])
            if key not in first:  # the innermost holder's traffic (the same for tensors with the same fan-outs)
                den = None
                for i, part in self.den[t]:
                    f = spat[i] if part == "all" else _over(S[i], IRR[t], np.multiply)
                    den = f if den is None else den * f
                first[key] = macs / den if den is not None else np.full(M, macs / 1.0)
            if t == "outputs":  # distinct output tiles above each level: the relevant factors of the levels above
                rel_T = _over(T[held[0]:], REL[t], np.multiply)  # levels held[0] + 1 ..
                above = {L - 1: 1.0}
                for l in range(L - 2, held[0] - 1, -1):
                    above[l] = rel_T[l - held[0]] * above[l + 1] if l < L - 2 else rel_T[l - held[0]]
            for k, l in enumerate(held):
                if k == 0:
                    traffic = first[key]
                else:
                    traffic = NT[held[k - 1]]
                    for i in self.between[t, l]:
                        traffic = traffic * _over(S[i], REL[t], np.multiply)
                fills = NT.get(l)
                if t == "outputs":
                    tile = tiles[t][k] if l < L - 1 else self.full_tile[t]
                    R[l] += np.maximum(0.0, traffic - above[l] * tile)
                    W[l] += traffic if fills is None else fills + traffic
                else:
                    R[l] += traffic
                    if fills is not None:
                        W[l] += fills
        compute = macs / _product(spat, range(len(spat)), M)  # MACs / utilized MACs
        cycles = np.maximum(compute, np.maximum(R / self.rbw, W / self.wbw).max(axis=0))
        E = R + W
        for levels, at in self.util_at:  # × utilized instances (the fan-outs' product first, as in the model)
            E[levels] *= _product(spat, at, M)
        E *= self.e_access
        if self.in_order:
            level_sum = E[0].copy()
            for l in range(1, L):
                level_sum += E[l]
        else:
            level_sum = np.ascontiguousarray(E.T).sum(axis=1)
        return cycles, self.mac_j + level_sum

    def _model(self, T, S, pos) -> tuple:
        """``evaluate_mappings`` itself (a problem whose integer products may pass 2⁵³): (cycles, energy)."""
        St = np.ones_like(T)
        for i, l in enumerate(self.spatial):
            St[l] = S[i]
        perm = FROM_ORDER[np.argsort(pos.transpose(2, 0, 1), axis=2)]  # loop orders as DIMS indices
        o = evaluate_mappings(self.problem, self.levels, self.mac_instances, self.mac_energy_j,
                              T[:, TO_ORDER].transpose(2, 0, 1), St[:, TO_ORDER].transpose(2, 0, 1), perm)
        return o["cycles"], o["energy_j"]


def _product(spat, at, M: int):
    """The product of the fan-outs ``spat[i]``, i in ``at`` (1 where there is none)."""
    at = list(at)
    if not at:
        return np.ones(M)
    out = spat[at[0]]
    for i in at[1:]:
        out = out * spat[i]
    return out
