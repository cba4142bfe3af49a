"""RTP in the reference executor (``executor/rotation.py``): the shard rings are played (hops on the ring's link,
two shard buffers), the event budget counts them exactly, and model and executor agree within 5 %."""
from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import cluster_dict
from parplan.executor.agreement import compare_plan
from parplan.executor.budget import estimate_events
from parplan.executor.costs import PipelineCosts
from parplan.executor.dense import model_costs
from parplan.executor.program import DP_GRAD, DP_PARAM, build_program
from parplan.executor.schedules import default_schedule
from parplan.executor.simulate import simulate_costs
from parplan.hardware import load_cluster
from parplan.models.plan import parse_plan
from parplan.workloads import load_workload

W1 = load_workload("mpt-1b", seq_len=1024, global_batch=64)
W7 = load_workload("mpt-7b", seq_len=1024, global_batch=64)
L7 = load_workload("llama2-7b", seq_len=4096, global_batch=512)
A100 = load_cluster("dgx-a100-8")
H64 = load_cluster("dgx-h100-64")
PCIE = load_cluster(cluster_dict(device="a100-pcie-80gb", nodes=1, intra="pcie4-x16", inter="eth-25"))

AGREE = [(W1, A100, "dp=8,zero=3,rotate=true,mbs=4"), (W1, A100, "dp=8,zero=3,rotate=true,mbs=8"),
         (W7, A100, "dp=8,zero=3,rotate=true,mbs=2"), (W7, A100, "dp=8,zero=3,rotate=true,mbs=4,recompute=full"),
         (W7, A100, "dp=4,tp=2,sp=true,zero=3,rotate=true,mbs=4"), (W1, A100, "dp=4,pp=2,zero=3,rotate=true,mbs=2"),
         (W1, PCIE, "dp=8,zero=3,rotate=true,mbs=1"), (W7, PCIE, "dp=4,pp=2,zero=3,rotate=true,mbs=1"),
         (W7, PCIE, "dp=2,pp=4,zero=3,rotate=true,mbs=1,recompute=full"),
         (L7, A100, "dp=8,zero=3,rotate=true,mbs=1,recompute=full"),
         (L7, H64, "dp=64,zero=3,rotate=true,mbs=1"), (L7, H64, "dp=64,zero=3,rotate=true,mbs=2"),
         (L7, H64, "dp=16,pp=4,zero=3,rotate=true,mbs=1"), (L7, H64, "dp=16,pp=2,tp=2,sp=true,zero=3,rotate=true,mbs=1")]


@pytest.mark.parametrize("w,c,plan", AGREE)
def test_model_and_executor_agree_within_5_percent(w, c, plan):
    a = compare_plan(w, c, parse_plan(plan, c.n_devices))
    assert abs(a.step_diff) <= 0.05, (plan, a.analytical_step_s, a.simulated_step_s)
    assert abs(a.memory_diff) <= 0.05
    if a.analytical_dp_exposed_s > 0.01 * a.analytical_step_s:  # where the rotation shows, both see it
        assert a.simulated_dp_exposed_s == pytest.approx(a.analytical_dp_exposed_s, rel=0.10)


def _costs(w, c, plan) -> PipelineCosts:
    return model_costs(w, c, parse_plan(plan, c.n_devices))[0]


def test_rings_are_played_on_the_ring_link():
    costs = _costs(L7, H64, "dp=64,zero=3,rotate=true,mbs=1")
    assert costs.rtp_shards == 64 and not any(costs.dp_param_s) and not any(costs.dp_grad_s)
    b = build_program(costs, default_schedule(costs.vpp), 1, [1.0])
    prog = b.prog
    kinds, links = prog.column("kind"), prog.column("links")
    hops = [i for i, k in enumerate(kinds) if k in (DP_PARAM, DP_GRAD)]
    L, m = int(L7.model.layers), costs.micro_batches
    assert len(hops) == 2 * m * L * 63  # forward and backward: S − 1 hops per layer and pass
    assert {prog.link_name[links[i][0]] for i in hops} == {"nic stage 0"}  # the 64-rank ring spans 8 nodes
    local = _costs(W1, A100, "dp=8,zero=3,rotate=true,mbs=4")
    lp = build_program(local, default_schedule(1), 1, [1.0]).prog
    names = {lp.link_name[ls[0]] for k, ls in zip(lp.column("kind"), lp.column("links")) if k in (DP_PARAM, DP_GRAD)}
    assert names == {"nvlink stage 0"}


def test_two_buffers_bound_the_hops():
    """A slow link: hops run back to back, a layer pass takes (S − 1)·t + c (S12 (b) with the sub-step rule)."""
    costs = _costs(W1, PCIE, "dp=8,zero=3,rotate=true,mbs=1")
    S, t, c = costs.rtp_shards, costs.rtp_xfer_fwd_s[0], costs.rtp_sub_fwd_s
    assert t > c
    fast = simulate_costs(replace(costs, rtp_xfer_fwd_s=(0.0,), rtp_xfer_bwd_s=(0.0,)))
    slow = simulate_costs(costs)
    L, m = int(W1.model.layers), costs.micro_batches
    t_b, c_b = costs.rtp_xfer_bwd_s[0], costs.rtp_sub_bwd_s
    per_mb = L * (S - 1) * ((t - c) + max(0.0, t_b - c_b))
    assert slow.step_time_s - fast.step_time_s == pytest.approx(m * per_mb, rel=1e-6)


@pytest.mark.parametrize("w,c,plan", [(W1, A100, "dp=8,zero=3,rotate=true,mbs=4,recompute=full"),
                                      (W1, A100, "dp=4,pp=2,vpp=2,zero=3,rotate=true,mbs=2"),
                                      (L7, H64, "dp=32,pp=2,zero=3,rotate=true,mbs=2,recompute=full")])
@pytest.mark.parametrize("replicas", [1, 2])
def test_event_budget_counts_the_rings_exactly(w, c, plan, replicas):
    costs = _costs(w, c, plan)
    sched = default_schedule(costs.vpp)
    est = estimate_events(costs, sched, replicas)
    prog = build_program(costs, sched, replicas, [1.0] * (replicas * costs.pp)).prog
    assert est.ops == len(prog)
    assert est.transfers == sum(1 for x in prog.column("links") if x is not None)
