"""Per-op kernel efficiency by shape and dtype (vectorized over numpy arrays of plans).

GEMM: the measured maximum-achievable fraction of dense peak (MAMF, at its best shape) scaled by tile and wave
quantization and the K-loop fill of the actual shape, relative to the same factors at the measured best shape —
so the best shape reproduces the measurement exactly and skinny or odd shapes lose what quantization costs
(NVIDIA "Matrix Multiplication Background User's Guide": tile and wave quantization).
Attention: fused-kernel forward efficiency e_max·s/(s + s½) fitted to the cited kernel's points; backward and
head_dim 64 as measured ratios.  Memory-bound kernels: the measured HBM fraction.
"""
from __future__ import annotations

import numpy as np

from parplan.models.primitives.calibration import KernelProfile


def _quantization(M, N, K, tiles, units, k_half):
    """Best over the library's tiles of relative·(tile utilization)·(wave utilization), times K/(K + k½)."""
    M = np.asarray(M, dtype=np.float64)
    N = np.asarray(N, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    best = None
    for rows, cols, rel in tiles:
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
        best = q if best is None else np.maximum(best, q)
    return best * K / (K + k_half)


def _anchor(prof: KernelProfile, dtype: str) -> tuple[float, float]:
    frac, (m, n, k) = prof.gemm_for(dtype)
    q = float(_quantization(m, n, k, prof.tiles, prof.compute_units, prof.k_half))
    return frac, q


def gemm_efficiency(M, K, N, prof: KernelProfile, dtype: str):
    """Fraction of dense peak reached by an (M×K)·(K×N) GEMM: MAMF · q(M,N,K) / q(best measured shape), ≤ 1."""
    frac, q_ref = _anchor(prof, dtype)
    q = _quantization(M, N, K, prof.tiles, prof.compute_units, prof.k_half)
    return np.minimum(frac * q / q_ref, 1.0)


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
