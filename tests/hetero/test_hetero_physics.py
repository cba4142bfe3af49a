"""Physics of the heterogeneous model (hypothesis over plan files of random stage splits, with an explicit
example): a faster device group, faster links or less latency never predict a slower step; more device memory
never turns a fitting plan into one that does not fit; the step is finite."""
from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from parplan.hardware import load_cluster
from parplan.models.hetero import HeteroPlan, PipelineSpec, StageSpec, evaluate_hetero
from parplan.workloads import load_workload

MIXED = {"name": "mixed", "inter_group": "roce-200", "groups": [
    {"device": "h100-sxm-80gb", "nodes": 1, "devices_per_node": 8, "intra_node": "nvlink4", "inter_node": "ib-ndr400"},
    {"device": "a100-sxm-80gb", "nodes": 1, "devices_per_node": 8, "intra_node": "nvlink3", "inter_node": "ib-hdr200"},
]}
SMALL = {"name": "small", "architecture": {"layers": 8, "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "ffn": "gelu",
                                           "vocab": 32000}, "training": {"seq_len": 2048, "global_batch": 32,
                                                                         "precision": "fp16"}}
W, C = load_workload(SMALL), load_cluster(MIXED)


def scaled(c, g: int, flops=1.0, hbm=1.0, link=1.0, latency=1.0, memory=1.0):
    grp = c.groups[g]
    d = grp.device
    dev = replace(d, peak_flops_per_s={k: v * flops for k, v in d.peak_flops_per_s.items()},
                  memory_bandwidth_bytes_per_s=d.memory_bandwidth_bytes_per_s * hbm, memory_bytes=d.memory_bytes * memory)
    il = replace(grp.intra_node, bandwidth_bytes_per_s=grp.intra_node.bandwidth_bytes_per_s * link,
                 latency_s=grp.intra_node.latency_s * latency)
    xl = replace(grp.inter_node, bandwidth_bytes_per_s=grp.inter_node.bandwidth_bytes_per_s * link,
                 latency_s=grp.inter_node.latency_s * latency)
    groups = list(c.groups)
    groups[g] = replace(grp, device=dev, intra_node=il, inter_node=xl)
    return replace(c, groups=tuple(groups))


def plan_of(cut: int, m1: int, m2: int, tp: int) -> HeteroPlan:
    stages = (StageSpec(0, 0, cut), StageSpec(1, cut, 8))
    return HeteroPlan(pipelines=(PipelineSpec(stages, m1), PipelineSpec(stages, m2)), tp=tp, mbs=1, zero=1)


def check(plan, g, k):
    base = evaluate_hetero(W, C, plan)
    fast = evaluate_hetero(W, scaled(C, g, *k), plan)
    assert math.isfinite(base.step_time_s) and math.isfinite(fast.step_time_s)
    assert fast.step_time_s <= base.step_time_s * (1 + 1e-9), (k, base.step_time_s, fast.step_time_s)
    roomy = evaluate_hetero(W, scaled(C, g, memory=2.0), plan)
    assert roomy.fits >= base.fits


def test_example():
    check(plan_of(5, 20, 12, 4), 1, (2.0, 1.5, 2.0, 0.5))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 7), st.integers(1, 31), st.sampled_from([1, 2, 4]), st.integers(0, 1),
       st.tuples(st.floats(1.0, 4.0), st.floats(1.0, 4.0), st.floats(1.0, 4.0), st.floats(0.1, 1.0)))
def test_faster_group_never_slower_and_more_memory_never_unfits(cut, m1, tp, g, k):
    check(plan_of(cut, m1, 32 - m1, tp), g, k)
