"""Heterogeneous planning: the ILPs against brute force, memory explanations, determinism, plan files."""
from __future__ import annotations

import itertools
import math

import pytest

from parplan.errors import SpecError
from parplan.hardware import load_cluster
from parplan.models.hetero import HeteroPlan, PipelineSpec, StageSpec, evaluate_hetero
from parplan.models.hetero_planfile import load_plan_file, plan_to_yaml
from parplan.planner.hetero import (ShapeCosts, _shape_costs, _state_bytes_per_param, block_orders,
                                    build_data_ilp, build_layer_ilp, decode_layers, make_solver, plan_hetero, solve,
                                    uniform_baseline)
from parplan.models.training import FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES
from parplan.workloads import load_workload

MIXED = {"name": "mini-mixed", "inter_group": "roce-100", "groups": [
    {"device": "a100-sxm-80gb", "nodes": 1, "devices_per_node": 8, "intra_node": "nvlink3", "inter_node": "ib-hdr200"},
    {"device": "v100-sxm-32gb", "nodes": 1, "devices_per_node": 8, "intra_node": "nvlink2", "inter_node": "ib-edr100"},
]}
SMALL = {"name": "small", "architecture": {"layers": 8, "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "ffn": "gelu",
                                           "vocab": 32000}, "training": {"seq_len": 2048, "global_batch": 16,
                                                                         "precision": "fp16"}}


@pytest.fixture(scope="module")
def setup():
    return load_workload(SMALL), load_cluster(MIXED)


def brute_force_layers(workload, sc: ShapeCosts, zero):
    """Every stage-to-group order and every composition of L into S positive parts; same objective and memory."""
    L = workload.model.layers
    bpp = _state_bytes_per_param(workload, zero, sc.owners)
    best = math.inf
    for order in block_orders(sc):
        S = len(order)
        for cuts in itertools.combinations(range(1, L), S - 1):
            n = [b - a for a, b in zip((0,) + cuts, cuts + (L,))]
            taus, ok = [], True
            for i, (g, k) in enumerate(zip(order, n)):
                c = sc.costs[g]
                taus.append(c.layer_s * k + 2 * sc.p2p_s + (c.emb_s if i == 0 else 0) + (c.out_s if i == S - 1 else 0))
                inflight = max(1, min(S - i, sc.micro_batches))
                fixed = c.transient_bytes + (c.emb_params * bpp if i == 0 else 0) + \
                    ((c.out_params * bpp + c.logits_bytes) if i == S - 1 else 0)
                mem = (k * (c.layer_params * bpp + c.act_bytes_per_layer * inflight) + fixed) * \
                    (1 + FRAGMENTATION_FRACTION) + FRAMEWORK_RESERVED_BYTES
                ok &= mem <= c.capacity_bytes * (1 + 1e-9)
            if ok:
                best = min(best, (sc.micro_batches - 1) * max(taus) + sum(taus))
    return best


@pytest.mark.parametrize("counts,m", [(((0, 1), (1, 1)), 4), (((0, 2), (1, 1)), 8), (((0, 1), (1, 2)), 2)])
def test_layer_ilp_optimum_equals_brute_force(setup, counts, m):
    w, c = setup
    sc = _shape_costs(w, c, counts, 2, 1, "none", m, 2)
    solver = make_solver("cbc", 30)
    best = math.inf
    for order in block_orders(sc):
        prob, v = build_layer_ilp(w, sc, 1, order)
        status, _ = solve(prob, solver)
        if status == "Optimal":
            best = min(best, prob.objective.value())
            assert sum(k for _, k in decode_layers(sc, v)) == w.model.layers
    # CBC proves optimality up to its feasibility tolerance (~1e-9 absolute on the continuous bottleneck z)
    assert best == pytest.approx(brute_force_layers(w, sc, 1), rel=1e-6)


@pytest.mark.parametrize("z,f,M", [([1.0, 2.0], [0.5, 1.0], 9), ([1.0, 1.5, 3.0], [0.2, 0.3, 0.9], 11),
                                   ([2.0, 2.0], [0.0, 0.0], 7)])
def test_data_ilp_optimum_equals_brute_force(z, f, M):
    prob, v = build_data_ilp(z, f, M)
    status, _ = solve(prob, make_solver("cbc", 30))
    assert status == "Optimal"
    brute = min(max(zk * mk + fk for zk, mk, fk in zip(z, ms, f))
                for ms in itertools.product(range(1, M + 1), repeat=len(z)) if sum(ms) == M)
    assert v["T"].value() == pytest.approx(brute, rel=1e-9)
    assert sum(int(round(x.value())) for x in v["m"]) == M


def test_balanced_plan_beats_uniform_and_gives_faster_replicas_more_data(setup):
    w, c = setup
    ps = plan_hetero(w, c, baselines=False)
    uni = uniform_baseline(w, c, [1, 2, 4, 8], [1, 2, 4], ["none", "full"], [1])
    assert ps.best is not None and uni is not None
    assert ps.best.result.step_time_s <= uni.step_time_s
    best = ps.best.result.plan
    if len({tuple(s.group for s in p.stages) for p in best.pipelines}) > 1:  # per-group replicas: data balanced
        by_group = {}
        for p in best.pipelines:
            by_group.setdefault(p.stages[0].group, []).append(p.micro_batches)
        assert max(by_group[0]) >= max(by_group[1])  # A100 replicas get at least the V100 replicas' share


def test_planner_is_deterministic(setup):
    w, c = setup
    a = plan_hetero(w, c, baselines=False)
    b = plan_hetero(w, c, baselines=False)
    assert a.best.result.plan == b.best.result.plan
    assert [x.result.step_time_s for x in a.candidates] == [x.result.step_time_s for x in b.candidates]


def test_infeasible_memory_is_explained():
    w = load_workload("llama2-70b", global_batch=64, precision="fp16")
    c = load_cluster({**MIXED, "groups": [{**MIXED["groups"][1]}]})  # one V100 node: 70B cannot fit
    ps = plan_hetero(w, c, baselines=False)
    assert ps.best is None
    assert any("v100-sxm-32gb alone cannot hold the model" in k for k in ps.infeasible)


def test_plan_file_round_trip_and_errors(setup, tmp_path):
    w, c = setup
    plan = HeteroPlan(pipelines=(PipelineSpec((StageSpec(0, 0, 5), StageSpec(1, 5, 8)), 10),
                                 PipelineSpec((StageSpec(0, 0, 5), StageSpec(1, 5, 8)), 6)), tp=4, mbs=1, zero=1)
    f = tmp_path / "p.yaml"
    f.write_text(plan_to_yaml(plan, c))
    back = load_plan_file(str(f), c)
    assert back.pipelines == plan.pipelines
    assert evaluate_hetero(w, c, back).step_time_s == pytest.approx(evaluate_hetero(w, c, plan).step_time_s)
    f.write_text("tp: 4\npipelines:\n  - micro_batches: 16\n    stages:\n      - {device: h100-sxm-80gb, layers: [0, 8]}\n")
    with pytest.raises(SpecError, match=r"p.yaml:5:\d+: pipelines\[0\].stages\[0\].device: no group of device "
                                        r"'h100-sxm-80gb' in cluster 'mini-mixed' \(allowed: a100-sxm-80gb, v100-sxm-32gb\)"):
        load_plan_file(str(f), c)
    gap = HeteroPlan(pipelines=(PipelineSpec((StageSpec(0, 0, 4), StageSpec(1, 5, 8)), 16),), tp=4)
    with pytest.raises(SpecError, match="contiguous"):
        evaluate_hetero(w, c, gap)


@pytest.mark.parametrize("z,f,R,M", [([1.0, 2.0], [0.5, 1.0], [2, 3], 17), ([1.0, 1.5, 3.0], [0.2, 0.3, 0.9], [1, 2, 2], 23),
                                     ([2.0], [0.0], [4], 10)])
def test_typed_data_ilp_equals_the_per_replica_ilp(z, f, R, M):
    from parplan.planner.hetero import build_typed_data_ilp, decode_typed_shares

    solver = make_solver("cbc", 30)
    zz = [zk for zk, r in zip(z, R) for _ in range(r)]
    ff = [fk for fk, r in zip(f, R) for _ in range(r)]
    p1, v1 = build_data_ilp(zz, ff, M)
    p2, v2 = build_typed_data_ilp(z, f, R, M)
    assert solve(p1, solver)[0] == solve(p2, solver)[0] == "Optimal"
    assert v2["T"].value() == pytest.approx(v1["T"].value(), rel=1e-9)
    shares = decode_typed_shares(v2, R)
    assert sum(shares) == M and max(zk * m + fk for zk, m, fk in zip(zz, shares, ff)) == pytest.approx(v1["T"].value())


@pytest.mark.parametrize("workload,cluster,gbs,seq", [
    ("llama2-13b", "dgx-a100-8", 64, 4096),
    ("llama2-70b", {"name": "a100-32", "groups": [{"device": "a100-sxm-80gb", "nodes": 4, "devices_per_node": 8,
                                                   "intra_node": "nvlink3", "inter_node": "ib-hdr200"}]}, 128, 4096),
])
def test_homogeneous_cluster_gives_the_homogeneous_planners_plan(workload, cluster, gbs, seq):
    """On one device group the ILP planner finds the homogeneous planner's best plan (over the knobs both search:
    no CP, no interleaving, ZeRO-1) and prices it within 1 %."""
    from parplan.api import suggest

    w = load_workload(workload, global_batch=gbs, seq_len=seq)
    c = load_cluster(cluster)
    # both at full memory (the test predates the 5 % default headroom; at 5 % the ILP's uneven layer split finds a
    # faster tp=4,pp=8 plan that the homogeneous search's even split cannot fit)
    hp = plan_hetero(w, c, baselines=False, memory_headroom=0.0)
    ps = suggest(w, c, top=1, fix=["cp=1", "vpp=1", "zero=1"], memory_headroom=0.0)
    b, h = hp.best.result.plan, ps.best.plan
    assert (b.tp, len(b.pipelines[0].stages), len(b.pipelines), b.mbs, b.recompute) == (h.tp, h.pp, h.dp, h.mbs,
                                                                                        h.recompute)
    assert hp.best.result.step_time_s == pytest.approx(ps.best.step_time_s, rel=0.01)


def test_heuristic_fallbacks_split_in_proportion():
    from parplan.planner.hetero import heuristic_data, proportional_split

    assert proportional_split([1.0, 1.0, 2.0], 8) == [2, 2, 4]
    assert sum(proportional_split([3.0, 1.0, 1.0], 7)) == 7 and min(proportional_split([100.0, 1.0], 5)) == 1
    assert heuristic_data([1.0, 2.0], 9) == [6, 3]  # twice as fast → twice the micro-batches


def test_solver_timeout_falls_back_to_a_flagged_heuristic(setup, monkeypatch):
    import parplan.planner.hetero as H

    w, c = setup
    monkeypatch.setattr(H, "solve", lambda prob, solver: ("Not Solved", 0.0))  # every ILP times out
    ps = H.plan_hetero(w, c, baselines=False, solver="cbc")  # the ILP solvers have a time limit; exact has none
    assert ps.best is not None and all(x.heuristic for x in ps.candidates)
    assert ps.best.result.plan.label == "balanced (heuristic)"
    assert sum(p.micro_batches for p in ps.best.result.plan.pipelines) * ps.best.result.plan.mbs == 16


def test_highs_and_cbc_find_the_same_plan(setup):
    import pulp

    if not pulp.HiGHS(msg=False).available():
        pytest.skip("highspy not installed (pip install '.[highs]')")
    w, c = setup
    a = plan_hetero(w, c, baselines=False, solver="cbc")
    b = plan_hetero(w, c, baselines=False, solver="highs")
    assert b.best.result.step_time_s == pytest.approx(a.best.result.step_time_s, rel=1e-9)


def test_unknown_solver_is_a_clear_error():
    with pytest.raises(SpecError, match=r"--solver: unknown solver 'gurobi' \(allowed: exact, cbc, highs\)"):
        make_solver("gurobi")


def test_memory_headroom_limits_every_stage_and_both_baselines():
    """The heterogeneous planner ranks under the same headroom as the homogeneous search: every stage of every
    candidate and of the uniform baseline stays within (1 − headroom) of its device's memory."""
    from parplan.planner.hetero import within_headroom

    w = load_workload("llama2-13b", global_batch=64, seq_len=4096)
    hp = plan_hetero(w, "mixed-h100-a100-64", memory_headroom=0.2)
    assert hp.candidates
    for cand in hp.candidates:
        assert within_headroom(cand.result, 0.2)
    if hp.uniform is not None:
        assert within_headroom(hp.uniform, 0.2)
    with pytest.raises(SpecError):
        plan_hetero(w, "mixed-h100-a100-64", memory_headroom=0.9)
