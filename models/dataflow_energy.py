"""Timeloop-style model of a convolution / GEMM mapping on a storage hierarchy (ANCHORS Part B §2.2), vectorized
over mappings: access counts per level from tile sizes and loop order, cycles and energy.

A mapping (arrays over M mappings) gives, per storage level l (innermost first) and dimension d of N K C P Q R S,
a temporal factor ``T[:, l, d]``, a spatial factor ``S[:, l, d]`` (fan-out from level l to the instances below it)
and a loop order ``perm[:, l, :]`` (dimension indices, innermost first).  With B_l = Π_{j≤l} T_j·S_j:

* tile_l(t) = footprint of tensor t under B_l (inputs: (P−1)·stride + (R−1)·dilation + 1 wide — Timeloop's
  projection of the sliding window);
* tile changes N_l(t) = product of the temporal factors of every loop above l except the innermost run of loops
  irrelevant to t (the tile stays: stationarity / temporal reuse);
* traffic a child c (next inner level holding t; the MACs below the innermost) draws: N_c·tile_c per c-instance
  (operands: one per MAC); the level serving it reads that × (c-instances per l-instance) / multicast, multicast =
  spatial factors between l and c on dims irrelevant to t (outputs: spatial reduction);
* outputs: updates_l = the children's write-backs, reads_l = updates_l − D_l·tile_l (no read before a first
  write; D_l = distinct output tiles), fills N_l·tile_l (Timeloop's convention: the drain to the parent is
  the parent's update, not a read here);
* cycles = max(MACs / utilized MACs, max_l max(reads_l / read_bw_l, (fills_l + updates_l) / write_bw_l));
* energy = Σ_l utilized_l · Σ_t accesses_l(t) · E_access(l) + MACs · E_MAC.

Timeloop's own model adds imperfect factorization, halo reuse between neighbouring sliding-window tiles and
network hop energy; those are not modeled.
"""
from __future__ import annotations

import numpy as np

from parplan.errors import SpecError
from parplan.workloads.dataflow import DIMS

TENSORS = ("weights", "inputs", "outputs")
_REL = {"weights": ("K", "C", "R", "S"), "inputs": ("N", "C", "P", "Q", "R", "S"), "outputs": ("N", "K", "P", "Q")}
RELEVANT = {t: np.array([d in _REL[t] for d in DIMS]) for t in TENSORS}
_I = {d: i for i, d in enumerate(DIMS)}
_REL_IDX = {t: [i for i, d in enumerate(DIMS) if d in _REL[t]] for t in TENSORS}
_IRR_IDX = {t: [i for i, d in enumerate(DIMS) if d not in _REL[t]] for t in TENSORS}


def storage_view(dsp, dtype: str) -> tuple:
    """(levels innermost first, MAC instances, energy per MAC in J) of ``dsp`` for ``dtype``: the explicit hierarchy,
    or the one derived from the vector-core view with cores × width(dtype) MAC lanes."""
    if not dsp.derived_storage:
        return dsp.storage, dsp.mac_instances, dsp.mac_energy_storage_j or 0.0
    return dsp.storage, int(dsp.cores * dsp.width(dtype)), dsp.mac_energy_j.get(dtype, 0.0)


def fanouts(levels: tuple, mac_instances: int) -> np.ndarray:
    """Spatial fan-out of each level: instances of the level below (MACs below the innermost) per instance."""
    below = [mac_instances] + [lv.instances for lv in levels[:-1]]
    return np.array([b // lv.instances for b, lv in zip(below, levels)], dtype=float)


def footprint(B: np.ndarray, t: str, stride: int, dilation: int) -> np.ndarray:
    """Words of tensor ``t`` covered by loop bounds ``B[..., 7]``."""
    return _footprint([B[..., i] for i in range(len(DIMS))], t, stride, dilation)


def _footprint(g, t: str, stride: int, dilation: int) -> np.ndarray:
    """``footprint`` of bounds ``g[i]`` (one array per dimension i of DIMS)."""
    if t == "weights":
        return g[_I["K"]] * g[_I["C"]] * g[_I["R"]] * g[_I["S"]]
    if t == "outputs":
        return g[_I["N"]] * g[_I["K"]] * g[_I["P"]] * g[_I["Q"]]
    w = (g[_I["P"]] - 1) * stride + (g[_I["R"]] - 1) * dilation + 1
    h = (g[_I["Q"]] - 1) * stride + (g[_I["S"]] - 1) * dilation + 1
    return g[_I["N"]] * g[_I["C"]] * w * h


def loop_positions(perm, first: int = 0) -> np.ndarray:
    """``pos[l - first, d, m]``: the place of dimension d in mapping m's loop order at level l ≥ ``first``
    (innermost 0), int8 — the inverse of ``perm[m, l, :]``, with the mappings contiguous.  Each level's inverse is
    packed in one int32 (place p in the 4 bits of dimension perm[p]) and unpacked per dimension."""
    M, L, K = perm.shape
    p8 = np.ascontiguousarray(perm[:, first:, :], dtype=np.int8).reshape(M, (L - first) * K)
    pt = p8.T.reshape(L - first, K, M) * np.int8(4)  # bit offset of each loop's dimension
    packed = np.zeros((L - first, M), np.int32)
    for p in range(1, K):
        packed |= np.int32(p) << pt[:, p]
    pos = np.empty((L - first, K, M), np.int8)
    for d in range(K):
        pos[:, d] = (packed >> np.int32(4 * d)) & np.int32(15)
    return pos


def _tile_changes(Tt, pos, keyed, tot, suf, t: str, held: list) -> dict:
    """N_l(t) of each held level l (mappings contiguous: ``Tt[l, d, m]``; ``pos``, ``keyed`` from level 1 up), as
    the per-loop definition gives it: walking the loops above l innermost first, the tile stays until the first
    loop relevant to t with a factor > 1 (``keyed``: each dimension's loop place where its factor is > 1, else 7);
    from there on every factor multiplies.  That loop is found per level (the lowest place among t's relevant
    dimensions), so N_l = (level j's factors from that place on) × (every factor of the levels above j,
    ``suf[j + 1]``) for the first level j > l that has one, else 1.  The factors are integers, so every product
    here is exact (< 2^53) in any order, and so are the 0/1 blends: the same numbers as multiplying loop by loop."""
    K = len(DIMS)
    L = Tt.shape[0]
    lo = held[0] + 1  # levels lo.. are above the innermost held level; pos and keyed start at level 1
    out, cur = {}, np.ones(Tt.shape[2])
    if lo < L:
        rel, irr = _REL_IDX[t], _IRR_IDX[t]
        fb = keyed[lo - 1:, rel[0]].copy()  # place of the first changing loop of each level
        for d in rel[1:]:
            np.minimum(fb, keyed[lo - 1:, d], out=fb)
        has = fb < K
        # the loops placed below it are irrelevant to t or have factor 1: their product is that of t's irrelevant
        # factors placed lower, and level j's factors from the place on are tot[j] / that (exact for integers)
        below = None
        for d in irr:
            f = 1.0 + (pos[lo - 1:, d] < fb) * (Tt[lo:, d] - 1.0)
            below = f if below is None else below * f
        from_first = tot[lo:] / below * suf[lo + 1:L + 1]
    for l in range(L - 1, held[0] - 1, -1):
        if l < L - 1:
            cur = cur + has[l + 1 - lo] * (from_first[l + 1 - lo] - cur)  # the first level above with a change
        if l in held:
            out[l] = cur
    return out


def evaluate_mappings(problem, levels, mac_instances: int, mac_energy_j: float, T, S, perm) -> dict:
    """Access counts, cycles and energy of M mappings; ``valid`` says which fit (fan-out, capacity).  Integer
    factors (a factorization of the problem's sizes) make every product of factors exact, so the loop-by-loop
    definitions above are computed per level and per tensor in whole-array passes with the mappings contiguous
    (``[level, dimension, mapping]``); the per-level results are returned as (M, L) arrays."""
    T = np.asarray(T, float)
    S = np.asarray(S, float)
    M, L, K = T.shape
    if L != len(levels):
        raise SpecError(f"a mapping has {L} levels, the architecture {len(levels)}", key="mapping")
    Tt = np.ascontiguousarray(T.transpose(1, 2, 0))  # no copy for the search's arrays (built in this layout)
    St = np.ascontiguousarray(S.transpose(1, 2, 0))
    Bt = Tt * St  # bounds covered at each level: the running product over the levels
    for l in range(1, L):
        Bt[l] *= Bt[l - 1]
    spat = St.prod(axis=1)  # fan-out used at each level (L, M)
    util = np.ones((L, M))  # utilized instances of each level: spatial fan-outs above it
    for l in range(L - 2, -1, -1):
        util[l] = util[l + 1] * spat[l + 1]
    mac_util = util[0] * spat[0]
    macs = problem.macs
    fan = fanouts(levels, mac_instances)
    valid = np.all(spat <= fan[:, None] + 1e-9, axis=0)
    spread = np.flatnonzero((spat != 1).any(axis=1)).tolist()  # levels with a spatial fan-out in some mapping
    pos = loop_positions(perm, 1)
    keyed = np.maximum(pos, (Tt[1:] <= 1).view(np.int8) * np.int8(K))  # a loop's place, 7 where its factor is 1
    tot = Tt.prod(axis=1)  # every factor of a level (L, M)
    suf = np.ones((L + 1, M))  # every factor of the levels from j up
    for j in range(L - 1, -1, -1):
        suf[j] = tot[j] * suf[j + 1]
    reads = np.zeros((L, M))
    writes = np.zeros((L, M))
    per_tensor, tiles = {}, {}
    for t in TENSORS:
        held = [l for l, lv in enumerate(levels) if t in lv.holds]
        tile = tiles[t] = {l: _footprint(Bt[l], t, problem.stride, problem.dilation) for l in held}
        changes = _tile_changes(Tt, pos, keyed, tot, suf, t, held)
        irr = _IRR_IDX[t]
        sirr = {j: St[j, irr].prod(axis=0) if irr else 1.0 for j in spread}  # fan-out on dims irrelevant to t
        if t == "outputs":  # distinct tiles above each level: t's relevant factors of the levels above
            d0, d1, d2, d3 = _REL_IDX[t]
            rel_tot = Tt[:, d0] * Tt[:, d1] * Tt[:, d2] * Tt[:, d3]
            rel_above = {L - 1: np.ones(M)}
            for l in range(L - 2, held[0] - 1, -1):
                rel_above[l] = rel_above[l + 1] * rel_tot[l + 1]
        acc = {}
        child = -1
        for l in held:
            irrelevant_spatial = 1.0  # on the way from level l down to the child (the MACs below the innermost)
            for j in spread:
                if child < j <= l:
                    irrelevant_spatial = irrelevant_spatial * sirr[j]
            if child < 0:
                traffic = macs / (util[l] * irrelevant_spatial)
            else:
                traffic = changes[child] * tile[child] * (util[child] / util[l]) / irrelevant_spatial
            # fills: Timeloop counts every tile visit as a fill (none at the outermost holder)
            fills = np.zeros(M) if l == held[-1] else changes[l] * tile[l]
            if t == "outputs":
                r, u = np.maximum(0.0, traffic - rel_above[l] * tile[l]), traffic.copy()
            else:
                r, u = traffic, np.zeros(M)
            acc[l] = (r, fills, u)  # traffic is finite and ≥ 0: the same arrays as adding 0 × traffic
            reads[l] += r
            writes[l] += fills + u
            child = l
        per_tensor[t] = acc
    for l, lv in enumerate(levels):
        if lv.words is not None:
            used = sum(tiles[t][l] for t in TENSORS if t in lv.holds)
            valid &= used <= lv.words
    rbw = np.array([lv.read_bw for lv in levels])
    wbw = np.array([lv.write_bw for lv in levels])
    level_cycles = np.maximum(reads / rbw[:, None], writes / wbw[:, None])
    compute_cycles = macs / mac_util
    cycles = np.maximum(compute_cycles, level_cycles.max(axis=0))
    e_access = np.array([lv.access_energy_j for lv in levels])
    level_energy = np.ascontiguousarray((util * (reads + writes) * e_access[:, None]).T)  # (M, L): sums per row
    out = {"valid": valid, "cycles": cycles, "compute_cycles": compute_cycles, "level_cycles": level_cycles.T,
           "reads": reads.T, "writes": writes.T, "util": util.T, "utilized_macs": mac_util,
           "utilization": mac_util / mac_instances,
           "mac_j": np.full(M, macs * mac_energy_j), "level_j": level_energy, "per_tensor": per_tensor}
    out["energy_j"] = out["mac_j"] + level_energy.sum(axis=1)
    return out


def mapping_arrays(problem, levels, mapping) -> tuple:
    """(T, S, perm) arrays of one user mapping (``MappingLevel`` entries, outermost first, named by level); the
    factor left over in each dimension goes to the outermost level's temporal loop."""
    L = len(levels)
    names = [lv.name for lv in levels]
    T = np.ones((1, L, len(DIMS)))
    S = np.ones((1, L, len(DIMS)))
    perm = np.tile(np.arange(len(DIMS)), (1, L, 1))
    for e in mapping:
        if e.level not in names:
            raise SpecError(f"unknown level {e.level!r} in mapping", key="mapping", allowed=names)
        l = names.index(e.level)
        for d, f in e.temporal.items():
            T[0, l, _I[d]] = f
        for d, f in e.spatial.items():
            S[0, l, _I[d]] = f
        order = [_I[c] for c in e.order] + [i for i in range(len(DIMS)) if DIMS[i] not in e.order]
        perm[0, l, :] = order
    for i, d in enumerate(DIMS):
        have = float(np.prod(T[0, :, i] * S[0, :, i]))
        size = problem.sizes[i]
        if size % have:
            raise SpecError(f"the mapping's factors of {d} multiply to {have:g}, which does not divide {size}",
                            key="mapping")
        T[0, L - 1, i] *= size / have
    return T, S, perm
