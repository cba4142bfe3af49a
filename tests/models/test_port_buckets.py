"""Gradient buckets beside the expert all-to-all under the pair overlap (``port_terms.layer_buckets``,
``port_terms.buckets_beside_a2a``): a layer's bucket (ZeRO-2/3) leaves by the EP port just as the next layer's
backward opens with its combine-gradient transfer; fairly sharing the link, that transfer takes
lead + min(lead, bucket), beyond what the pair leaves free."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from conftest import cluster_dict, faster
from parplan.hardware.catalog import load_cluster
from parplan.models.plan import parse_plan
from parplan.models.port_terms import buckets_beside_a2a, layer_buckets, pair_bucket_delays
from parplan.workloads.loader import load_workload


def kind(lead, slack=0.0):
    return SimpleNamespace(terms=SimpleNamespace(ep_bwd_lead=lead, ep_slack=slack))


def over_kinds(*kinds):
    """``step_terms``' Σ over kinds of n_kind · fn(kind)."""
    return lambda ns, fn: sum(n * fn(k) for n, k in zip(ns, kinds))


def test_a_bucket_halves_the_opening_transfer_by_hand():
    # qwen3-30b-a3b dp=16,tp=2,pp=1,cp=2,ep=4,etp=4, ZeRO-2 on dgx-h100-64: the executor's trace plays the
    # combine gradient's exposed NIC part (1.614 ms alone) in 3.228 ms beside the previous layer's 3.29 ms bucket
    over = over_kinds(kind(1.614e-3), kind(0.0))  # an MoE layer and a dense one (no all-to-all)
    on = np.array([True])
    (x,) = buckets_beside_a2a([([48.0, 2.0], 3.29e-3)], over, on)
    assert x == pytest.approx(48 * 1.614e-3)  # min(lead, bucket) per MoE layer; dense layers open with no transfer
    (y,) = buckets_beside_a2a([([48.0, 2.0], 1.0e-3)], over, on)
    assert y == pytest.approx(48 * 1.0e-3)  # a shorter bucket: both at half rate until it ends
    (z,) = buckets_beside_a2a([([48.0, 2.0], 3.29e-3)], over, ~on)
    assert z == 0.0


@pytest.mark.parametrize("slack,expected", [(0.0, 1.0), (0.4, 0.6), (9.0, 0.0)])
def test_what_the_pair_leaves_free_absorbs_the_delay(slack, expected):
    # a 2 s lead beside a 1 s bucket: min(2, 1) = 1 s, less the compute the pair leaves free beyond its all-to-all
    (x,) = buckets_beside_a2a([([1.0], 1.0)], over_kinds(kind(2.0, slack=slack)), True)
    assert x == pytest.approx(expected)


def test_layer_buckets_by_hand():
    # the layers' share of the reduce-scatter: the experts' 4 s are all layers', half of the other 6 s → 7 s over 4
    assert layer_buckets(np.full(2, 10.0), np.full(2, 4.0), np.full(2, 0.5), np.full(2, 4.0)) == pytest.approx([1.75] * 2)
    assert layer_buckets(10.0, 0.0, 1.0, 0.0) == pytest.approx(10.0)  # no layers: the whole stage's, never ÷ 0


def test_zero01_buckets_go_out_once_in_the_last_backwards():
    # per stage: 4 MoE layers, a 4 s reduce-scatter (1 s per layer), a 2 s lead → 1 s per layer
    over = over_kinds(kind(2.0))
    st = (([4.0], 4.0, 0.0, 1.0, 4.0),) * 5  # first, last, a middle, a middle less a layer, all middles
    zero, single = np.array([0, 1, 2, 3]), np.array([False] * 4)
    windows, slots, once = pair_bucket_delays(st, over, True, zero, single, np.array([2.0, 1.0, 1.0, 1.0]))
    assert [w.tolist() for w in windows] == [[8.0, 4.0, 4.0, 4.0]] * 3  # every stage's backward that has them
    assert slots[0].tolist() == [0.0, 0.0, 4.0, 4.0]  # ZeRO-2/3: every micro-batch
    # ZeRO-0/1: once, the first + last + all middle stages' last backwards; ZeRO-0's all-reduce buckets twice as long
    # (2 s: min(lead, bucket) = 2 s per layer)
    assert once.tolist() == [24.0, 12.0, 0.0, 0.0]
    _, _, once1 = pair_bucket_delays(st, over, True, zero, np.array([True] * 4), np.ones(4))
    assert once1.tolist() == [8.0, 8.0, 0.0, 0.0]  # one stage: the first's only (first is last)


@pytest.mark.parametrize("wid,plan,before,tol", [
    # ZeRO-2, one stage: every layer's bucket beside the next layer's combine gradient
    ("qwen3-30b-a3b", "dp=16,tp=2,pp=1,cp=2,ep=4,mbs=4,vpp=1,zero=2,recompute=selective,sp=true,etp=4", -0.105, 0.03),
    ("qwen3-30b-a3b", "dp=32,tp=2,pp=1,cp=1,ep=16,mbs=4,vpp=1,zero=2,recompute=none,sp=true", -0.039, 0.03),
    # ZeRO-1: the buckets beside the last backwards' opening transfers, once per step (−4.2 / −2.7 % today)
    ("qwen3-30b-a3b", "dp=8,tp=1,pp=2,cp=4,ep=16,mbs=4,vpp=1,zero=1,recompute=none,sp=false", -0.069, 0.045),
    ("qwen3-30b-a3b", "dp=8,tp=2,pp=1,cp=4,ep=32,mbs=4,vpp=1,zero=1,recompute=none,sp=true", -0.052, 0.03),
])
def test_the_executor_agrees(wid, plan, before, tol):
    from parplan.executor.agreement import compare_plan

    w, c = load_workload(wid, seq_len=4096, global_batch=256), load_cluster("dgx-h100-64")
    a = compare_plan(w, c, parse_plan(plan))
    assert abs(a.step_diff) <= tol, (a.analytical_step_s, a.simulated_step_s, before)


def test_faster_compute_never_slows_a_zero3_interleaved_moe_plan():
    """The delay lengthens the pair's window, and so the window ZeRO-3's collectives hide in: charged to the
    slot only, doubling the FLOP/s made this plan 4.1 % slower (benchmarks/physics_search.py)."""
    w = load_workload("mixtral-8x7b", global_batch=128, seq_len=4096)
    c = load_cluster(cluster_dict(device="h100-sxm-80gb", nodes=8, intra="nvlink4", inter="ib-ndr400"))
    from parplan.models.families import cost_model
    from parplan.models.plan_arrays import PlanArrays

    P = PlanArrays.from_plans([parse_plan("dp=4,tp=4,pp=2,cp=2,ep=8,mbs=1,vpp=16,zero=3,recompute=none,sp=true,"
                                          "etp=4")])
    base = float(cost_model(w).evaluate_workload(w, c, P)["step_time_s"][0])
    fast = float(cost_model(w).evaluate_workload(w, faster(c, 2.0, 1.0, 1.0, 1.0), P)["step_time_s"][0])
    assert fast <= base * (1 + 1e-9)
