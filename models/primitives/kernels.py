"""Per-op kernel efficiency by shape and dtype (vectorized over numpy arrays of plans).

GEMM: the measured maximum-achievable fraction of dense peak (MAMF, at its best shape) scaled by tile and wave
quantization and the K-loop fill of the actual shape, relative to the same factors at the measured best shape —
so the best shape reproduces the measurement exactly, no shape exceeds it (it is the best of a shape search), and
skinny or odd shapes lose what quantization costs
(NVIDIA "Matrix Multiplication Background User's Guide": tile and wave quantization).
Grouped GEMM (MoE experts): the dense efficiency of the per-group shape with tile and wave quantization taken over
the whole launch (the tiles of all groups share one wave schedule), priced at their expectation over varying tokens
per group, times a measured grouped-vs-dense factor by tokens per group (``grouped_gemm`` in kernels.yaml).
Attention: fused-kernel forward efficiency e_max·s/(s + s½) fitted to the cited kernel's points; backward and
head_dim 64 as measured ratios.  Memory-bound kernels: the measured HBM fraction.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from parplan.models.primitives.calibration import KernelProfile, kernels_file


@lru_cache(maxsize=4096)
def _quantization_scalar(M: float, N: float, K: float, tiles: tuple, units, k_half: float) -> float:
    """``_quantization`` of one shape in Python floats (IEEE doubles: the same results as the array path, bit for
    bit; the serving model prices thousands of single GEMMs, where numpy's per-call cost dominates)."""
    best = None
    for rows, cols, rel in tiles:
        tm = math.ceil(M / rows)
        tn = math.ceil(N / cols)
        n_tiles = float(tm * tn)
        tile_util = (M * N) / (tm * rows * tn * cols)
        wave_util = n_tiles / (math.ceil(n_tiles / units) * units) if units else 1.0
        q = rel * tile_util * wave_util
        best = q if best is None else max(best, q)
    return best * K / (K + k_half)


def _quantization(M, N, K, tiles, units, k_half):
    """Best over the library's tiles of relative·(tile utilization)·(wave utilization), times K/(K + k½)."""
    if np.ndim(M) == 0 and np.ndim(N) == 0 and np.ndim(K) == 0:
        return _quantization_scalar(float(M), float(N), float(K), tuple(tiles), units, float(k_half))
    M = np.asarray(M, dtype=np.float64)
    N = np.asarray(N, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    # every tile at once along a leading axis (the same element-wise arithmetic as one tile at a time; the best
    # over the tiles is a max, exact in any order)
    rows, cols, rel = _tile_axis(tuple(map(tuple, tiles)), max(M.ndim, N.ndim, K.ndim))
    tm = np.ceil(M / rows)
    tn = np.ceil(N / cols)
    n_tiles = tm * tn
    tile_util = (M * N) / (tm * rows * tn * cols)
    if units:
        waves = np.ceil(n_tiles / units)
        wave_util = n_tiles / (waves * units)
    else:
        wave_util = 1.0
    q = rel * tile_util * wave_util
    return q.max(axis=0) * K / (K + k_half)


@lru_cache(maxsize=256)
def _tile_axis(tiles: tuple, ndim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tiles' rows, columns and relative rates as float arrays along a new leading axis (built once)."""
    shape = (len(tiles),) + (1,) * ndim
    return tuple(np.array([t[i] for t in tiles], dtype=np.float64).reshape(shape) for i in range(3))


def _anchor(prof: KernelProfile, dtype: str) -> tuple[float, float]:
    frac, (m, n, k) = prof.gemm_for(dtype)
    q = float(_quantization(m, n, k, prof.tiles, prof.compute_units, prof.k_half))
    return frac, q


def gemm_efficiency(M, K, N, prof: KernelProfile, dtype: str):
    """Fraction of dense peak reached by an (M×K)·(K×N) GEMM: MAMF · min(q(M,N,K) / q(best measured shape), 1).

    Capped at the MAMF: it is the best over a brute-force shape search (ml-engineering mamf-finder.py), so no
    shape reaches more.  Where the measured best shape itself ran a partial last wave by the tile model (H100 fp8
    1024×9216: 288 tiles of 128×256 on 132 SMs, q 0.72; H200 fp8 1280×4096: q 0.60), the library evidently
    avoided that loss (other tiles, stream-K), and the uncapped ratio would price other shapes at 0.94–1.0 of
    the fp8 peak, far above anything measured."""
    frac, q_ref = _anchor(prof, dtype)
    q = _quantization(M, N, K, prof.tiles, prof.compute_units, prof.k_half)
    return frac * np.minimum(q / q_ref, 1.0)


def _grouped_quantization(M, N, K, groups, tiles, units, k_half):
    """Expected quantization of a grouped launch of ``groups`` (M×K)·(K×N) problems, best over the tiles of
    relative·(useful MACs)/(MAC slots of the waves run)·K/(K + k½) (NVIDIA "Matrix Multiplication Background User's
    Guide", tile and wave quantization, applied to the whole launch).  Slots are the larger of (a) the grouped
    launch's expectation — each group padded by half a tile row, the last wave half empty (derived: uniform
    remainders, since tokens per expert vary from step to step) — and (b) the bound of the equivalent dense GEMM of
    M·groups rows (at most one tile row and one wave of padding), so the result is continuous, non-decreasing in M
    and never above the dense GEMM's exact quantization."""
    M = np.asarray(M, dtype=np.float64)
    N = np.asarray(N, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    G = np.maximum(np.asarray(groups, dtype=np.float64), 1.0)
    U = float(units) if units else 0.0
    rows, cols, rel = _tile_axis(tuple(map(tuple, tiles)), max(M.ndim, N.ndim, K.ndim, G.ndim))  # every tile at once
    tn = np.ceil(N / cols)
    grouped = G * (M / rows + 0.5) * tn + 0.5 * U  # expected tiles + half a wave
    dense = (G * M / rows + 1.0) * tn + U  # upper bound of the dense GEMM's tiles + wave padding
    slots = np.maximum(grouped, dense) * rows * cols
    q = rel * G * M * N / slots
    return q.max(axis=0) * K / (K + k_half)


def grouped_gemm_factor(M_per_group):
    """Measured grouped-vs-dense factor at ``M_per_group`` tokens per group: interpolated on log2(M) between the
    ``grouped_gemm`` points of kernels.yaml (DeepGEMM H800 grouped vs dense TFLOP/s), held at the end points."""
    pts = kernels_file().grouped_gemm.points
    lx = np.log2(np.array([m for m, _ in pts], dtype=np.float64))
    fy = np.array([f for _, f in pts], dtype=np.float64)
    m = np.maximum(np.asarray(M_per_group, dtype=np.float64), 1e-30)
    return np.interp(np.log2(m), lx, fy)


def grouped_gemm_efficiency(M_per_group, K, N, groups, prof: KernelProfile, dtype: str):
    """Fraction of dense peak of a grouped GEMM of ``groups`` (M_per_group×K)·(K×N) problems (MoE experts):
    MAMF · q_grouped / q(best measured shape) · grouped factor(M_per_group), ≤ 1.  Never above ``gemm_efficiency``
    of the dense (groups·M_per_group × K)·(K × N) GEMM and non-decreasing in M_per_group (see
    ``_grouped_quantization``); 0 for an empty group."""
    frac, q_ref = _anchor(prof, dtype)
    q = _grouped_quantization(M_per_group, N, K, groups, prof.tiles, prof.compute_units, prof.k_half)
    return frac * np.minimum(q / q_ref, 1.0) * np.minimum(grouped_gemm_factor(M_per_group), 1.0)


def attention_efficiency(seq_kv, head_dim: int, causal: bool, backward: bool, curves):
    """Fraction of 16-bit peak reached by a fused attention kernel (``AttnCurves``) over ``seq_kv`` keys per query
    block: e_max·s/(s + s½) of the measured forward, causal-forward or backward curve; a causal backward scales the
    backward curve by the forward causal/non-causal ratio at the same length."""
    s = np.asarray(seq_kv, dtype=np.float64)

    def sat(c):
        return c[0] * s / (s + c[1])

    if backward:
        e = sat(curves.bwd) * (sat(curves.fwd_causal) / sat(curves.fwd) if causal else 1.0)
    else:
        e = sat(curves.fwd_causal) if causal else sat(curves.fwd)
    if head_dim <= 64:
        e = e * curves.hd64_ratio
    return np.minimum(e, 1.0)


def memory_efficiency(prof: KernelProfile) -> float:
    """Fraction of the datasheet HBM bandwidth reached by streaming (memory-bound) kernels."""
    return prof.memory_fraction
