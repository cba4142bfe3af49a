"""Grouped GEMM efficiency: never above the equivalent dense GEMM, non-decreasing in tokens per group, the measured
grouped-vs-dense factor interpolated on log2(M), and an explicit example."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parplan.hardware.catalog import get_device
from parplan.models.primitives.calibration import kernel_profile, kernels_file
from parplan.models.primitives.kernels import gemm_efficiency, grouped_gemm_efficiency, grouped_gemm_factor

DEVICES = ("h100-sxm-80gb", "a100-sxm-80gb", "b200", "mi300x", "gaudi3", "l40s", "tpu-v5p")
PROFILES = {d: kernel_profile(get_device(d)) for d in DEVICES}


def test_grouped_section_is_cited_and_monotone():
    g = kernels_file().grouped_gemm
    assert "DeepGEMM" in g.source and len(g.source) > 100
    fs = [f for _, f in g.points]
    assert all(b >= a for a, b in zip(fs, fs[1:])) and fs[-1] == 1.0


def test_factor_interpolates_on_log2_and_holds_at_the_ends():
    assert float(grouped_gemm_factor(256)) == pytest.approx(0.819)
    assert float(grouped_gemm_factor(512)) == pytest.approx(0.917)
    # halfway between 256 and 512 on log2(M): sqrt(256·512)
    assert float(grouped_gemm_factor(np.sqrt(256 * 512))) == pytest.approx((0.819 + 0.917) / 2)
    assert float(grouped_gemm_factor(8)) == pytest.approx(0.819)  # held below the smallest measured M
    assert float(grouped_gemm_factor(1e6)) == 1.0


def test_explicit_example_h100_bf16():
    """32 experts x 1024 tokens, (1024 x 7168)·(7168 x 2048) each, H100 bf16, by hand."""
    prof = PROFILES["h100-sxm-80gb"]
    frac, (m0, n0, k0) = prof.gemm_for("bf16")
    M, K, N, G, U = 1024.0, 7168.0, 2048.0, 32.0, float(prof.compute_units)

    def q_dense_best(m, n, k):  # the library's exact quantization at the measured best shape
        best = 0.0
        for r, c, rel in prof.tiles:
            tm, tn = np.ceil(m / r), np.ceil(n / c)
            tiles = tm * tn
            best = max(best, rel * (m * n) / (tm * r * tn * c) * tiles / (np.ceil(tiles / U) * U))
        return best * k / (k + prof.k_half)

    best = 0.0
    for r, c, rel in prof.tiles:
        tn = np.ceil(N / c)
        slots = max(G * (M / r + 0.5) * tn + U / 2, (G * M / r + 1) * tn + U) * r * c
        best = max(best, rel * G * M * N / slots)
    q = best * K / (K + prof.k_half)
    expect = min(frac * q / q_dense_best(m0, n0, k0) * 1.0, 1.0)  # factor(1024) = 1.0
    got = float(grouped_gemm_efficiency(M, K, N, G, prof, "bf16"))
    assert got == pytest.approx(expect, rel=1e-12)
    assert 0.6 < got < float(gemm_efficiency(G * M, K, N, prof, "bf16")) <= 0.81


@settings(max_examples=300, deadline=None)
@given(st.floats(1, 20000), st.sampled_from([128, 512, 1536, 2048, 4096, 7168]),
       st.sampled_from([256, 1024, 2048, 7168, 14336]), st.integers(1, 512), st.sampled_from(DEVICES),
       st.sampled_from(["bf16", "fp8"]))
def test_never_above_the_equivalent_dense_gemm(m, k, n, groups, dev, dtype):
    prof = PROFILES[dev]
    g = float(grouped_gemm_efficiency(m, k, n, groups, prof, dtype))
    d = float(gemm_efficiency(groups * m, k, n, prof, dtype))
    assert 0.0 < g <= d * (1 + 1e-12) and g <= 1.0


@settings(max_examples=300, deadline=None)
@given(st.floats(0.5, 20000), st.floats(1.0, 3.0), st.sampled_from([128, 1536, 7168]),
       st.sampled_from([256, 2048, 7168]), st.integers(1, 256), st.sampled_from(DEVICES))
def test_monotone_non_decreasing_in_tokens_per_group(m, grow, k, n, groups, dev):
    prof = PROFILES[dev]
    a = float(grouped_gemm_efficiency(m, k, n, groups, prof, "bf16"))
    b = float(grouped_gemm_efficiency(m * grow, k, n, groups, prof, "bf16"))
    assert b >= a * (1 - 1e-12)


def test_vectorized_and_zero_for_an_empty_group():
    prof = PROFILES["h100-sxm-80gb"]
    M = np.array([[0.0], [64.0], [4096.0]])
    G = np.array([1, 8, 64])
    out = grouped_gemm_efficiency(M, 4096, 1024, G, prof, "bf16")
    assert out.shape == (3, 3) and np.all(out[0] == 0.0) and np.all(out[2] > out[1])
    dense_cmp = gemm_efficiency(M[1:] * G, 4096, 1024, prof, "bf16")
    assert np.all(out[1:] <= dense_cmp * (1 + 1e-12))
