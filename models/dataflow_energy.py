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
    g = {d: B[..., i] for i, d in enumerate(DIMS)}
    if t == "weights":
        return g["K"] * g["C"] * g["R"] * g["S"]
    if t == "outputs":
        return g["N"] * g["K"] * g["P"] * g["Q"]
    w = (g["P"] - 1) * stride + (g["R"] - 1) * dilation + 1
    h = (g["Q"] - 1) * stride + (g["S"] - 1) * dilation + 1
    return g["N"] * g["C"] * w * h


def _tile_changes(T, perm, l: int, rel: np.ndarray, *, distinct: bool = False) -> np.ndarray:
    """N_l(t): temporal iterations above level l that change t's tile (the innermost irrelevant run reuses it);
    ``distinct``: only t-relevant factors (distinct tiles)."""
    M, L, _ = T.shape
    acc = np.ones(M)
    run = np.ones(M, bool)
    rows = np.arange(M)
    for j in range(l + 1, L):
        for p in range(len(DIMS)):
            d = perm[:, j, p]
            f = T[rows, j, d]
            r = rel[d]
            if distinct:
                acc *= np.where(r, f, 1.0)
                continue
            run &= ~((f > 1) & r)
            acc *= np.where(run, 1.0, f)
    return acc


def evaluate_mappings(problem, levels, mac_instances: int, mac_energy_j: float, T, S, perm) -> dict:
    """Access counts, cycles and energy of M mappings; ``valid`` says which fit (fan-out, capacity)."""
    T = np.asarray(T, float)
    S = np.asarray(S, float)
    M, L, _ = T.shape
    if L != len(levels):
        raise SpecError(f"a mapping has {L} levels, the architecture {len(levels)}", key="mapping")
    B = np.cumprod(T * S, axis=1)  # bounds covered at each level
    spat = np.prod(S, axis=2)  # fan-out used at each level
    util = np.ones((M, L))  # utilized instances of each level: spatial fan-outs above it
    for l in range(L - 2, -1, -1):
        util[:, l] = util[:, l + 1] * spat[:, l + 1]
    mac_util = util[:, 0] * spat[:, 0]
    macs = problem.macs
    fan = fanouts(levels, mac_instances)
    valid = np.all(spat <= fan[None, :] + 1e-9, axis=1)
    reads = np.zeros((M, L))
    writes = np.zeros((M, L))
    per_tensor = {}
    for t in TENSORS:
        rel = RELEVANT[t]
        held = [l for l, lv in enumerate(levels) if t in lv.holds]
        tile = {l: footprint(B[:, l, :], t, problem.stride, problem.dilation) for l in held}
        changes = {l: _tile_changes(T, perm, l, rel) for l in held}
        acc = {}
        child = -1
        for l in held:
            between = S[:, child + 1:l + 1, :]  # fan-outs on the way from level l down to the child
            irrelevant_spatial = np.prod(np.where(rel[None, None, :], 1.0, between), axis=(1, 2))
            if child < 0:
                traffic = macs / (util[:, l] * irrelevant_spatial)
            else:
                traffic = changes[child] * tile[child] * (util[:, child] / util[:, l]) / irrelevant_spatial
            outer = l == held[-1]
            if t == "outputs":
                distinct = _tile_changes(T, perm, l, rel, distinct=True) * tile[l]
                fills = 0.0 if outer else changes[l] * tile[l]  # Timeloop counts every tile visit as a fill
                r, u = np.maximum(0.0, traffic - distinct), traffic
            else:
                r, u = traffic, 0.0
                fills = 0.0 if outer else changes[l] * tile[l]
            acc[l] = (r + 0.0 * traffic, fills + 0.0 * traffic, u + 0.0 * traffic)
            reads[:, l] += acc[l][0]
            writes[:, l] += acc[l][1] + acc[l][2]
            child = l
        per_tensor[t] = acc
    for l, lv in enumerate(levels):
        if lv.words is not None:
            used = sum(footprint(B[:, l, :], t, problem.stride, problem.dilation) for t in TENSORS if t in lv.holds)
            valid &= used <= lv.words
    rbw = np.array([lv.read_bw for lv in levels])
    wbw = np.array([lv.write_bw for lv in levels])
    level_cycles = np.maximum(reads / rbw[None, :], writes / wbw[None, :])
    compute_cycles = macs / mac_util
    cycles = np.maximum(compute_cycles, level_cycles.max(axis=1))
    e_access = np.array([lv.access_energy_j for lv in levels])
    level_energy = util * (reads + writes) * e_access[None, :]
    out = {"valid": valid, "cycles": cycles, "compute_cycles": compute_cycles, "level_cycles": level_cycles,
           "reads": reads, "writes": writes, "util": util, "utilized_macs": mac_util,
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
