"""The serving executor against closed forms, with the closed-form test double ``LinearPoolCost``: one prefill at
zero load, M/D/1 waiting (Pollaczek–Khinchine), Little's law in a closed loop, saturation throughput."""
from __future__ import annotations

import math

import pytest

from parplan.executor.serving import PoolSpec, simulate_pools
from parplan.executor.serving_linear import LinearPoolCost
from parplan.executor.serving_mix import Length, RequestMix


def one(cost, mix, n=2000, **kw):
    return simulate_pools([PoolSpec("mixed", 1, cost)], mix, n_requests=n, **kw)


def test_zero_load_ttft_is_one_prefill_and_e2e_adds_the_decodes():
    c = LinearPoolCost(a=0.01, b=2e-5, c=3e-4, d=1e-7, chunk_tokens=4096)
    isl, osl = 1000, 50
    s = one(c, RequestMix(Length.fixed(isl), Length.fixed(osl), arrival_rate_per_s=1e-3), n=5, warmup=0)
    ttft = 0.01 + 2e-5 * isl + 1e-7 * isl
    assert s.ttft_s.p50 == pytest.approx(ttft, rel=1e-12) and s.ttft_s.p99 == pytest.approx(ttft, rel=1e-12)
    decodes = sum(0.01 + 3e-4 + 1e-7 * (isl + j) for j in range(1, osl))
    assert s.e2e_s.mean == pytest.approx(ttft + decodes, rel=1e-12)
    assert s.tpot_s.mean == pytest.approx(decodes / (osl - 1), rel=1e-12)
    assert s.preemptions == 0 and s.output_tokens == 5 * osl


def test_zero_load_chunked_prefill_takes_ceil_isl_over_chunk_iterations():
    c = LinearPoolCost(a=0.01, b=1e-5, chunk_tokens=512)
    s = one(c, RequestMix(Length.fixed(1300), Length.fixed(1), arrival_rate_per_s=1e-3), n=3, warmup=0)
    assert s.ttft_s.p50 == pytest.approx(3 * 0.01 + 1300 * 1e-5, rel=1e-12)  # chunks 512 + 512 + 276


@pytest.mark.parametrize("rho", [0.2, 0.5])
def test_md1_waiting_time(rho):
    """One server, one request at a time, a deterministic prefill D: TTFT = W + D, W = ρD / (2(1 − ρ))."""
    D = 0.02
    c = LinearPoolCost(a=D, max_batch=1)
    s = one(c, RequestMix(Length.fixed(100), Length.fixed(1), arrival_rate_per_s=rho / D), n=40000, seed=3)
    W = rho * D / (2 * (1 - rho))
    assert s.ttft_s.mean == pytest.approx(W + D, rel=0.03)
    assert s.ttft_s.p50 >= D * (1 - 1e-9) and not s.saturated


def test_littles_law_closed_loop():
    """N clients with no think time: requests/s = N / mean E2E (Little's law)."""
    c = LinearPoolCost(a=0.008, b=1e-5, c=2e-4, d=1e-8, max_batch=64)
    mix = RequestMix(Length.uniform(200, 1800), Length.uniform(20, 300), concurrency=24)
    s = one(c, mix, n=6000, seed=5)
    assert s.requests_per_s == pytest.approx(24 / s.e2e_s.mean, rel=0.03)


def test_saturation_throughput_is_max_batch_over_the_iteration():
    a, cc, B = 0.01, 1e-3, 32
    c = LinearPoolCost(a=a, c=cc, max_batch=B)
    s = one(c, RequestMix(Length.fixed(64), Length.fixed(400), concurrency=256), n=3000)
    lo, hi = B / (a + cc * B), B / (a + cc * (B - 1))  # an admission iteration has one decode fewer
    assert lo * 0.999 <= s.output_tokens_per_s <= hi * 1.001
    assert s.pools[0].mean_decode_batch == pytest.approx(B, rel=0.01)


def test_saturated_serving_plays_a_full_closed_loop():
    c = LinearPoolCost(a=0.01, c=1e-3, max_batch=16)
    s = one(c, RequestMix(Length.fixed(64), Length.fixed(200)), n=800)
    assert s.output_tokens_per_s == pytest.approx(16 / (0.01 + 0.016), rel=0.01)
    assert any("saturated load" in n for n in s.notes)


def test_overload_is_flagged_saturated():
    c = LinearPoolCost(a=0.02, max_batch=1)
    s = one(c, RequestMix(Length.fixed(10), Length.fixed(1), arrival_rate_per_s=80.0), n=2000)
    assert s.saturated and s.requests_per_s == pytest.approx(50.0, rel=0.02)


def test_percentiles_are_ordered_and_itl_matches_tpot_without_stalls():
    c = LinearPoolCost(a=0.01, b=1e-5, c=1e-4, d=1e-8, max_batch=64)
    s = one(c, RequestMix(Length.lognormal(800, 3000), Length.lognormal(150, 600), arrival_rate_per_s=6), n=4000)
    for p in (s.ttft_s, s.tpot_s, s.itl_s, s.e2e_s):
        assert p.p50 <= p.p90 <= p.p99 and math.isfinite(p.mean)
    assert s.itl_s.mean == pytest.approx(s.tpot_s.mean, rel=0.1)
    assert s.measured == 3600 and s.warmup == 400
