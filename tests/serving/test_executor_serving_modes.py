"""Disaggregated and af-disaggregated serving, the ping-pong formula, request laws, determinism, work budgets."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.errors import SpecError
from parplan.executor.budget import EventBudgetError
from parplan.executor.serving import PoolSpec, affine_in_kv, ping_pong_s, simulate_pools
from parplan.executor.serving_linear import LinearPoolCost
from parplan.executor.serving_mix import Length, RequestMix

QUIET = dict(arrival_rate_per_s=1e-3)


def test_disaggregated_zero_load_adds_the_transfer_to_ttft():
    pre = LinearPoolCost(a=0.01, b=2e-5, chunk_tokens=8192, transfer_s_per_token=1e-5)
    dec = LinearPoolCost(a=0.008, c=1e-4)
    isl, osl = 1000, 20
    s = simulate_pools([PoolSpec("prefill", 1, pre), PoolSpec("decode", 1, dec)],
                       RequestMix(Length.fixed(isl), Length.fixed(osl), **QUIET), n_requests=4, warmup=0)
    ttft = 0.01 + 2e-5 * isl + 1e-5 * isl
    assert s.mode == "disaggregated"
    assert s.ttft_s.p50 == pytest.approx(ttft, rel=1e-12)
    assert s.e2e_s.mean == pytest.approx(ttft + (osl - 1) * 0.0081, rel=1e-12)
    assert s.itl_s.p99 == pytest.approx(0.0081, rel=1e-9)


def test_disaggregated_under_load_balances_decode_replicas():
    pre = LinearPoolCost(a=0.01, b=1e-5, max_batch=8, chunk_tokens=8192, transfer_s_per_token=1e-6)
    dec = LinearPoolCost(a=0.01, c=1e-4, d=1e-8, max_batch=128)
    s = simulate_pools([PoolSpec("prefill", 2, pre), PoolSpec("decode", 3, dec, devices_per_replica=8)],
                       RequestMix(Length.lognormal(1500, 5000), Length.fixed(200), arrival_rate_per_s=40),
                       n_requests=4000, seed=1)
    assert not s.saturated and s.requests_per_s == pytest.approx(40, rel=0.05)
    assert s.n_devices == 2 + 24
    assert [p.role for p in s.pools] == ["prefill", "decode"] and s.pools[1].replicas == 3


def test_ping_pong_formula():
    assert ping_pong_s(1.0, 1.0, 0.1, 1) == pytest.approx(2.2)  # one micro-batch: the round trip
    assert ping_pong_s(1.0, 1.0, 0.1, 3) == pytest.approx(3.0)  # m ≥ 2(1 + c/f): both pools busy, m·f
    assert ping_pong_s(1.0, 1.0, 0.6, 3) == pytest.approx(3.2)  # m < 2(1 + 0.6): the round trip bounds
    assert ping_pong_s(1.0, 2.0, 0.0, 2) == pytest.approx(4.0)  # the slower pool bounds
    assert ping_pong_s(1.0, 1.0, 0.1, 3, layers=10) == pytest.approx(3.0 + 0.22)  # + fill/drain per iteration


def test_af_disaggregated_zero_load_uses_the_ping_pong_of_the_two_costs():
    att = LinearPoolCost(a=0.004, c=1e-4, m2n_s_per_token=1e-5, max_batch=64)
    exp = LinearPoolCost(a=0.006, c=2e-4)
    s = simulate_pools([PoolSpec("attention", 2, att), PoolSpec("expert", 1, exp)],
                       RequestMix(Length.fixed(64), Length.fixed(10), **QUIET), n_requests=3, warmup=0,
                       micro_batches=2)
    assert s.mode == "af-disaggregated"
    # one decoding sequence: micro-batches of ⌈1/2⌉ = 1 sequence, expert side (0.006 + 2e-4)/2
    it = ping_pong_s(0.004 + 1e-4, (0.006 + 2e-4) / 2, 1e-5, 2)
    assert s.tpot_s.mean == pytest.approx(it, rel=1e-12)


def test_af_attention_cost_that_prices_the_pair_is_used_as_given():
    class Pair:
        kv_capacity_tokens, max_batch, chunk_tokens = 1 << 20, 32, 2048

        def iteration_s(self, p, d, kv):
            return 0.01

        def kv_transfer_s(self, tokens):
            return 0.0

    s = simulate_pools([PoolSpec("attention", 1, Pair()), PoolSpec("expert", 1, LinearPoolCost())],
                       RequestMix(Length.fixed(64), Length.fixed(5), **QUIET), n_requests=2, warmup=0)
    assert s.tpot_s.mean == pytest.approx(0.01) and any("used as given" in n for n in s.notes)


def test_same_seed_same_run_and_another_seed_another():
    c = LinearPoolCost(a=0.01, b=1e-5, c=1e-4, d=1e-7, max_batch=32, kv_capacity_tokens=30_000)
    mix = RequestMix(Length.lognormal(800, 3000), Length.uniform(10, 400), arrival_rate_per_s=12)
    a = simulate_pools([PoolSpec("mixed", 2, c)], mix, n_requests=1500, seed=7).to_dict()
    b = simulate_pools([PoolSpec("mixed", 2, c)], mix, n_requests=1500, seed=7).to_dict()
    other = simulate_pools([PoolSpec("mixed", 2, c)], mix, n_requests=1500, seed=8).to_dict()
    assert a == b and a != other


def test_lognormal_law_has_its_mean_and_p99():
    x = Length.lognormal(1000, 4000).sample(np.random.default_rng(0), 400_000)
    assert x.mean() == pytest.approx(1000, rel=0.01)
    assert np.percentile(x, 99) == pytest.approx(4000, rel=0.02)


def test_affine_memo_gives_the_same_run():
    mix = RequestMix(Length.lognormal(800, 3000), Length.uniform(10, 400), arrival_rate_per_s=12)
    kw = dict(a=0.01, b=1e-5, c=1e-4, d=1e-7, max_batch=32)
    assert affine_in_kv(LinearPoolCost(**kw))
    memo = simulate_pools([PoolSpec("mixed", 1, LinearPoolCost(**kw))], mix, n_requests=800, seed=1)
    plain = simulate_pools([PoolSpec("mixed", 1, LinearPoolCost(**kw, kv_affine=False))], mix, n_requests=800,
                           seed=1)
    assert memo.e2e_s.p99 == pytest.approx(plain.e2e_s.p99, rel=1e-9)
    assert memo.ttft_s.mean == pytest.approx(plain.ttft_s.mean, rel=1e-9)


def test_event_budget_refusals_are_one_line_and_name_the_cap():
    c = LinearPoolCost(a=0.01, c=1e-4, max_batch=8)
    mix = RequestMix(Length.fixed(100), Length.fixed(500), concurrency=8)
    with pytest.raises(EventBudgetError) as lower:  # refused before the run: ≥ n·(osl − 1)/batch iterations
        simulate_pools([PoolSpec("mixed", 1, c)], mix, n_requests=1000, max_events=10_000)
    long_prompts = RequestMix(Length.fixed(4000), Length.fixed(2), concurrency=8)  # 16 chunks each: not in the bound
    with pytest.raises(EventBudgetError) as during:  # refused during the run
        simulate_pools([PoolSpec("mixed", 1, LinearPoolCost(chunk_tokens=256))], long_prompts, n_requests=1000,
                       max_events=5_000)
    for e in (lower, during):
        assert "--max-events" in str(e.value) and "\n" not in str(e.value) and "raise --max-events" in str(e.value)
    assert "10,000" in str(lower.value) and "5,000" in str(during.value)
    with pytest.raises(SpecError, match="above the cap"):
        simulate_pools([PoolSpec("mixed", 1, c)], mix, n_requests=5000, max_requests=4000)


def test_bad_input_is_refused():
    c = LinearPoolCost(kv_capacity_tokens=1000)
    with pytest.raises(SpecError, match="KV tokens"):
        simulate_pools([PoolSpec("mixed", 1, c)], RequestMix(Length.fixed(900), Length.fixed(200), **QUIET))
    with pytest.raises(SpecError, match="roles"):
        simulate_pools([PoolSpec("prefill", 1, c)], RequestMix(Length.fixed(9), Length.fixed(2), **QUIET))
    with pytest.raises(SpecError, match="lognormal"):
        RequestMix(Length.lognormal(100, 90), Length.fixed(2), **QUIET).check()
    with pytest.raises(SpecError, match="not both"):
        RequestMix(Length.fixed(9), Length.fixed(2), arrival_rate_per_s=1.0, concurrency=3).check()
