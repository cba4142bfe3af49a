"""Invariants of the cost model (hypothesis), each paired with an explicit example."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import cluster_dict
from parplan.errors import SpecError
from parplan.hardware import load_cluster
from parplan.models.estimate import validate_plan
from parplan.models.plan import Plan
from parplan.models.training import MEMORY_PARTS, TIME_PARTS, PlanArrays, evaluate_workload
from parplan.workloads import load_workload

WORKLOADS = {
    "llama2-7b": load_workload("llama2-7b", global_batch=256, seq_len=4096),
    "gpt3-175b": load_workload("gpt3-175b", global_batch=256, seq_len=2048, attention="materialized"),
    "llama3-70b-fp8": load_workload("llama3-70b", global_batch=256, seq_len=8192, precision="fp8"),
}
CLUSTERS = {
    (dev, nodes): load_cluster(cluster_dict(device=dev, nodes=nodes,
                                            intra="nvlink4" if dev.startswith("h100") else "nvlink3",
                                            inter="ib-ndr400" if dev.startswith("h100") else "ib-hdr200"))
    for dev in ("a100-sxm-80gb", "h100-sxm-80gb") for nodes in (1, 2, 4, 8, 16)
}


@st.composite
def scenarios(draw):
    wname = draw(st.sampled_from(sorted(WORKLOADS)))
    w = WORKLOADS[wname]
    dev = "h100-sxm-80gb" if wname.endswith("fp8") else draw(st.sampled_from(["a100-sxm-80gb", "h100-sxm-80gb"]))
    nodes = draw(st.sampled_from([1, 2, 4, 8, 16]))
    c = CLUSTERS[(dev, nodes)]
    n = c.n_devices
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([1, 2, 4, 8]))
    cp = draw(st.sampled_from([1, 1, 2]))
    assume(n % (tp * pp * cp) == 0)
    plan = Plan(dp=n // (tp * pp * cp), tp=tp, pp=pp, cp=cp, mbs=draw(st.sampled_from([1, 2, 4])),
                vpp=draw(st.sampled_from([1, 1, 2])), zero=draw(st.integers(0, 3)),
                recompute=draw(st.sampled_from(["none", "selective", "full"])), sp=draw(st.booleans()) and tp > 1)
    try:
        validate_plan(w, c, plan)
    except SpecError:
        assume(False)
    return w, c, plan


def evaluate_one(w, c, plan):
    r = evaluate_workload(w, c, PlanArrays.from_plans([plan]))
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in r.items()}


def check_sums(r):
    assert sum(r[k] for k in TIME_PARTS) == pytest.approx(r["step_time_s"], rel=1e-9)
    assert sum(r[k] for k in MEMORY_PARTS) == pytest.approx(r["memory_peak_bytes"], rel=1e-9)
    assert all(r[k] >= 0 for k in TIME_PARTS + MEMORY_PARTS)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])


def test_breakdown_sums_to_total_example():
    w, c = WORKLOADS["gpt3-175b"], CLUSTERS[("a100-sxm-80gb", 8)]
    check_sums(evaluate_one(w, c, Plan(dp=2, tp=8, pp=4, mbs=1, vpp=2, zero=1, recompute="selective", sp=True)))


@SETTINGS
@given(scenarios())
def test_breakdown_sums_to_total(sc):
    check_sums(evaluate_one(*sc))


def check_dp_monotone(w, dev, nodes, plan):
    small = evaluate_one(w, CLUSTERS[(dev, nodes)], plan)
    big_plan = Plan(**{**plan.as_dict(), "dp": plan.dp * 2})
    try:
        validate_plan(w, CLUSTERS[(dev, nodes * 2)], big_plan)
    except SpecError:
        return
    big = evaluate_one(w, CLUSTERS[(dev, nodes * 2)], big_plan)
    assert big["optimizer_bytes"] <= small["optimizer_bytes"] * (1 + 1e-12)


def test_more_dp_never_raises_optimizer_memory_example():
    plan = Plan(dp=8, tp=8, pp=1, mbs=1, zero=1)
    w = WORKLOADS["llama2-7b"]
    small = evaluate_one(w, CLUSTERS[("a100-sxm-80gb", 8)], plan)
    big = evaluate_one(w, CLUSTERS[("a100-sxm-80gb", 16)], Plan(dp=16, tp=8, pp=1, mbs=1, zero=1))
    assert big["optimizer_bytes"] == pytest.approx(small["optimizer_bytes"] / 2, rel=1e-12)


@SETTINGS
@given(scenarios())
def test_more_dp_never_raises_optimizer_memory(sc):
    w, c, plan = sc
    assume(plan.zero >= 1)
    g = c.group
    assume(g.nodes <= 8)
    check_dp_monotone(w, g.device.id, g.nodes, plan)


def test_time_never_below_compute_bound_example():
    r = evaluate_one(WORKLOADS["llama2-7b"], CLUSTERS[("h100-sxm-80gb", 1)], Plan(dp=8, mbs=2, zero=1))
    assert r["step_time_s"] >= r["compute_bound_s"] > 0


@SETTINGS
@given(scenarios())
def test_time_never_below_compute_bound(sc):
    r = evaluate_one(*sc)
    assert r["step_time_s"] >= r["compute_bound_s"] > 0


def test_tp1_has_no_tp_communication_example():
    r = evaluate_one(WORKLOADS["gpt3-175b"], CLUSTERS[("a100-sxm-80gb", 8)], Plan(dp=4, tp=1, pp=16, mbs=1, zero=1))
    assert r["tp_comm_exposed_s"] == 0.0
    r8 = evaluate_one(WORKLOADS["gpt3-175b"], CLUSTERS[("a100-sxm-80gb", 8)], Plan(dp=1, tp=8, pp=8, mbs=1))
    assert r8["tp_comm_exposed_s"] > 0.0


@SETTINGS
@given(scenarios())
def test_tp1_has_no_tp_communication(sc):
    w, c, plan = sc
    assume(plan.tp == 1)
    assert evaluate_one(w, c, plan)["tp_comm_exposed_s"] == 0.0
