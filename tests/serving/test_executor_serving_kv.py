"""Paged KV memory and preemption by recompute: the aggregate scheduler against a per-sequence reference of the same
policy (vLLM v1), conservation of tokens, no preemption when KV is ample, preemptions when it is not."""
from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from parplan.executor.serving import PoolSpec, simulate_pools
from parplan.executor.serving_linear import LinearPoolCost
from parplan.executor.serving_loop import play
from parplan.executor.serving_mix import Length, RequestMix, draw_requests
from parplan.executor.serving_sched import Replica, Reqs

BT = 16


def blocks(t):
    return -(-t // BT)


def reference(isl, osl, arrival, cost):
    """vLLM v1's policy on one replica, every sequence tracked on its own: (first-token, last-token) times."""
    n = len(isl)
    cap, B, chunk = cost.kv_capacity_tokens // BT, cost.max_batch, cost.chunk_tokens
    seqs = min(B, chunk)
    comp, gen, blk, decoding = [0] * n, [0] * n, [0] * n, [False] * n
    first, end = [-1.0] * n, [-1.0] * n
    running, waiting = [], deque()
    t, nxt = 0.0, 0
    while nxt < n or running or waiting:
        while nxt < n and arrival[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        if not running and not waiting:
            t = arrival[nxt]
            continue
        used = sum(blk[r] for r in running)
        free = cap - used
        preempted = False

        def pop():
            r = running.pop()
            nonlocal free
            free += blk[r]
            comp[r] = blk[r] = 0
            decoding[r] = False
            waiting.appendleft(r)

        dec = [r for r in running if decoding[r]]  # a prefill (or a recompute) that has finished
        while sum(1 for r in dec if comp[r] % BT == 0) > free:
            pop()
            preempted = True
            dec = [r for r in running if r in dec]
        for r in dec:
            if comp[r] % BT == 0:
                blk[r] += 1
                free -= 1
        left = chunk - len(dec)
        sched = []
        for r in [r for r in running if r not in dec]:
            if left <= 0:
                break
            k = min(isl[r] + gen[r] - comp[r], left)
            add = blocks(comp[r] + k) - blk[r]
            while add > free and r in running:
                if running[-1] in dec:  # a decode scheduled already gives its token back (vLLM v1)
                    left += 1
                pop()
                preempted = True
            if r not in running:
                break
            blk[r] += add
            free -= add
            sched.append((r, k))
            left -= k
        if not preempted:
            while waiting and len(running) < seqs and left > 0:
                r = waiting[0]
                k = min(isl[r] + gen[r] - comp[r], left)
                if blocks(k) > free:
                    break
                waiting.popleft()
                running.append(r)
                blk[r] = blocks(k)
                free -= blk[r]
                sched.append((r, k))
                left -= k
        dec = [r for r in dec if r in running]  # a decode preempted by a prefill's blocks leaves the batch
        kv = sum(comp[r] + 1 for r in dec) + sum(comp[r] + k for r, k in sched)
        p = sum(k for _, k in sched)
        if not dec and not sched:
            continue
        t += cost.iteration_s(p, len(dec), kv)
        for r in dec:
            comp[r] += 1
            gen[r] += 1
        for r, k in sched:
            comp[r] += k
            if comp[r] == isl[r] + gen[r]:
                gen[r] += 1
                decoding[r] = True
                if gen[r] == 1:
                    first[r] = t
        for r in list(running):
            if gen[r] >= osl[r]:
                running.remove(r)
                end[r] = t
    return first, end


@pytest.mark.parametrize("seed", range(6))
def test_aggregate_scheduler_matches_the_per_sequence_reference(seed):
    rng = np.random.default_rng(seed)
    cost = LinearPoolCost(a=0.01, b=1e-5, c=1e-4, d=1e-7, max_batch=int(rng.integers(4, 24)),
                          chunk_tokens=int(rng.integers(64, 600)), kv_capacity_tokens=int(rng.integers(900, 3000)))
    n = 120
    isl = rng.integers(1, 400, n)
    osl = rng.integers(1, 300, n)
    isl = np.minimum(isl, cost.kv_capacity_tokens - osl)
    arrival = np.cumsum(rng.exponential(0.05, n))
    R = Reqs(isl, osl)
    rep = Replica(0, 0, "mixed", cost, cost.iteration_s, R)
    play(R, arrival, None, [rep], [], 10**7)
    first, end = reference(list(isl), list(osl), list(arrival), cost)
    assert R.first == pytest.approx(first, rel=1e-9, abs=1e-12)
    assert R.end == pytest.approx(end, rel=1e-9, abs=1e-12)
    assert rep.used == 0 and rep.n_dec == 0 and not rep.running


def test_no_preemption_when_kv_is_ample_and_preemptions_when_it_is_not():
    mix = RequestMix(Length.uniform(200, 2000), Length.uniform(50, 600), concurrency=64)
    ample = LinearPoolCost(a=0.01, b=1e-5, c=1e-4, d=1e-7, max_batch=64, kv_capacity_tokens=1 << 22)
    tight = LinearPoolCost(a=0.01, b=1e-5, c=1e-4, d=1e-7, max_batch=64, kv_capacity_tokens=24_000)
    s1 = simulate_pools([PoolSpec("mixed", 1, ample)], mix, n_requests=3000, seed=2)
    s2 = simulate_pools([PoolSpec("mixed", 1, tight)], mix, n_requests=3000, seed=2)
    assert s1.preemptions == 0 and s1.preempted_requests == 0 and s1.kv_util_peak < 1.0
    assert s2.preemptions > 0 and s2.preempted_requests > 0 and s2.kv_util_peak == pytest.approx(1.0, abs=0.01)
    assert s2.kv_util_mean > s1.kv_util_mean
    total = int(draw_requests(mix, 3000, 2).osl.sum())
    assert s1.output_tokens == total and s2.output_tokens == total  # recompute never re-emits a token
    assert s2.ttft_s.p99 > s1.ttft_s.p99


def test_peak_blocks_of_one_request():
    c = LinearPoolCost(a=0.01, max_batch=4)
    s = simulate_pools([PoolSpec("mixed", 1, c)], RequestMix(Length.fixed(100), Length.fixed(30),
                                                             arrival_rate_per_s=1e-3), n_requests=2, warmup=0)
    assert s.pools[0].kv_peak_share == pytest.approx(blocks(100 + 30 - 1) / (c.kv_capacity_tokens // BT))
