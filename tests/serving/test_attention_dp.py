"""Attention-DP ranks (``dp=``): each rank is its own scheduler over 1/dp of the replica's sequences, chunk and KV
cache, and a prompt lives on one rank — so a prompt alone is prefilled by one rank, never split over them (the
model: ``serving_terms.iteration_parts(prefill_rank_tokens=…)``, ``serving_queue.chunk_costs(dp=…)``; the
executor: ``executor/serving_ranks.py``, ranks in lock-step)."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.executor.serving import simulate_serving
from parplan.models.serving import _iter_fn, _Pools, as_deployment, estimate_serving
from parplan.models.serving_terms import serving_context, total
from parplan.serving import _inputs

ONE_USER = {"isl": 4096, "osl": 8, "concurrency": 1}


def _run(model, dep, serve=ONE_USER, n=8):
    w, c, s = _inputs(model, "dgx-h100-64", serve)
    d = as_deployment(dep, c.n_devices)
    return estimate_serving(w, c, s, d), simulate_serving(w, c, s, d, n_requests=n, seed=0, warmup=1)


def _ttft(model, dep, serve=ONE_USER, n=8):
    e, sim = _run(model, dep, serve, n)
    return e.ttft_p50_s, sim.ttft_s.p50


def test_a_lone_prompt_takes_one_rank_of_a_dense_replica():
    # dense: two ranks of tp=1 with a 2048-token replica budget are, for one user, one tp=1 replica of chunk 1024
    e2, sim2 = _run("llama3-8b", "tp=1,dp=2,batch=64,chunk=2048")
    e1, sim1 = _run("llama3-8b", "tp=1,batch=32,chunk=1024")
    assert e2.ttft_p50_s == pytest.approx(e1.ttft_p50_s, rel=1e-4)
    assert sim2.ttft_s.p50 == pytest.approx(sim1.ttft_s.p50, rel=1e-4)
    assert e2.ttft_p50_s == pytest.approx(sim2.ttft_s.p50, rel=1e-3)  # the model and the lock-step executor agree
    # its decode is one whole sequence on one rank, not half a sequence on each
    assert sim2.tpot_s.p50 == pytest.approx(sim1.tpot_s.p50, rel=1e-6)
    assert e2.tpot_p50_s == pytest.approx(e1.tpot_p50_s, rel=0.01)


def test_moe_lone_prompt_is_not_spread_over_the_ranks():
    # before the ranks were modelled, dp=4 priced one prompt at a quarter of its tokens per rank
    w, c, s = _inputs("mixtral-8x7b", "dgx-h100-64", ONE_USER)
    d = as_deployment("tp=2,dp=4,ep=8,batch=64,chunk=0", c.n_devices)
    it = _iter_fn(serving_context(w, c, s), _Pools([d], "mixed"), [d])
    I = np.array([4096.0])
    lp = it(I, 0.0, 0.0, prefill_seqs=1.0, prefill_rank_tokens=I)
    sp = it(I, 0.0, 0.0, prefill_seqs=1.0)
    lone, spread = float(total(lp)[0]), float(total(sp)[0])
    # the rank's attention core is linear in its prompt tokens (4× the spread share, less the launch); the routed
    # experts see the replica's tokens either way
    t_k = serving_context(w, c, s).t_k * 32
    assert lp["attention_prefill_s"][0] - t_k == pytest.approx(4.0 * (sp["attention_prefill_s"][0] - t_k), rel=1e-9)
    assert lp["expert_gemm_s"][0] == sp["expert_gemm_s"][0]
    assert lone > 1.5 * spread
    e = estimate_serving(w, c, s, d)
    assert sum(e.prefill_breakdown_s.values()) == pytest.approx(lone, rel=1e-9)
    m, sim = _ttft("mixtral-8x7b", "tp=2,dp=4,ep=8,batch=64,chunk=0")
    assert m == pytest.approx(sim, rel=1e-3) and m >= lone


def test_ranks_split_the_budget_and_pack_under_load():
    # many users: every rank prefills, the replica's throughput is the spread iteration's (within the executor's 10 %)
    serve = {"isl": 1024, "osl": 64, "concurrency": 64}
    w, c, s = _inputs("mixtral-8x7b", "dgx-h100-64", serve)
    d = as_deployment("tp=2,dp=4,ep=8,batch=128,chunk=4096,replicas=1", c.n_devices)
    e = estimate_serving(w, c, s, d)
    sim = simulate_serving(w, c, s, d, n_requests=256, seed=0)
    assert e.output_tokens_per_s == pytest.approx(sim.output_tokens_per_s, rel=0.10)
    reps = sim.pools[0]
    assert reps.replicas == 1 and reps.iterations > 0
