"""DiT inference family: workloads and catalog, hand-derivable terms (FLOPs, Ulysses bytes, ring steps), the schedule
recurrence, physics invariants, the planner, and the executor's agreement."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parplan.errors import SpecError
from parplan.executor.dit import simulate_plan
from parplan.hardware.catalog import load_cluster
from parplan.models import dit_terms as T
from parplan.models.dit import (PARTS, estimate_plan, layer_terms, parse_plan, plan_arrays, section_s)
from parplan.planner.spaces.dit import search
from parplan.workloads.dit import catalog_ids, load_dit
from parplan.workloads.registry import family_info, verbs_for

W = {"family": "dit-inference", "name": "t", "model": "dit-12b", "tokens": 16384}
HW2 = "h100-sxm-80gb:2x8"


def ctx(spec, hw=HW2):
    cl = load_cluster(hw)
    return cl, T.dit_context(spec, cl)


def test_catalog_and_example(root):
    assert {"flux1-dev", "wan2.1-t2v-14b", "hunyuanvideo", "dit-12b"} <= set(catalog_ids())
    s = load_dit(root / "examples/dit-flux-64k.yaml")
    assert s.arch.layers == 57 and s.arch.hidden == 3072 and s.tokens == 65536 + 512
    # FLUX.1's weights from its block counts (h = 3072, f = 4h): 38 single blocks of 4h² + 2hf + 3h² (adaLN) and 19
    # double blocks of two streams with 6h² adaLN each = 38·15h² + 19·36h² = 1254h² ≈ 11.8 B (the card's 12B)
    assert s.arch.params == 1254 * 3072 ** 2
    assert family_info("dit-inference").verbs == "parplan.cli.dit_out"
    assert verbs_for(str(root / "examples/dit-flux-64k.yaml")).__name__ == "parplan.cli.dit_out"


@pytest.mark.parametrize("bad,key", [({"bogus": 1}, "bogus"), ({"tokens": 0}, "tokens"), ({"steps": -1}, "steps"),
                                     ({"model": "flux-9"}, "model"), ({"precision": "fp4"}, "precision")])
def test_bad_workloads(bad, key):
    with pytest.raises(SpecError, match=key):
        load_dit({**W, **bad})


def test_flops_match_24sh2_plus_4s2h():
    """One device holding the whole sequence at full efficiency: GEMM FLOPs 24·s·h² and attention 4·s²·h per layer."""
    spec = load_dit(W)
    s, h = spec.tokens, spec.arch.hidden
    gemm = 2 * s * (h * 3 * h + h * h + 2 * h * spec.arch.ffn)
    assert gemm == pytest.approx(24 * s * h * h)
    attn = 4 * s * s * spec.arch.heads * spec.arch.head_dim
    assert attn == pytest.approx(4 * s * s * h)


def test_ulysses_bytes_and_ring_steps():
    spec = load_dit(W)
    cl, c = ctx(spec)
    p = plan_arrays([parse_plan("sp=usp,u=8,r=2", spec, c)])
    t = layer_terms(spec, c, p)
    s, h = spec.tokens, spec.arch.hidden
    m = s / 16
    assert t["m"][0] == m and t["heads"][0] == 3
    # flat in-node all-to-all of the m·h·2 bytes a device holds: (u−1)/u of them over the measured NVLink curve
    n = m * h * 2
    bw = c.hw.curve_intra("alltoall").busbw(n, c.hw.intra_rate)
    assert t["a1"][0] == pytest.approx(7 / 8 * n / bw + c.hw.intra_lat + c.t_k)  # + two-sided sync bound
    # one ring hop across nodes: K and V of s/r tokens × 3 heads × 128 × 2 bytes
    hop = 2 * (s / 2) * 3 * 128 * 2
    assert t["x_t"][0] == pytest.approx(hop / c.hw.curve_inter("p2p").busbw(hop, c.hw.inter_rate))


def test_section_recurrence_hand_cases():
    one = np.array([1.0])
    # ring of r blocks, no all-to-all: max(r·c, (r − 1)·x + c)
    assert section_s(0 * one, 0 * one, 2 * one, 1 * one, one, 4 * one)[0] == pytest.approx(7.0)
    assert section_s(0 * one, 0 * one, 0.5 * one, 1 * one, one, 4 * one)[0] == pytest.approx(4.0)
    # blocking Ulysses: 3 in + c + out
    assert section_s(3 * one, 1 * one, 0 * one, 5 * one, one, one)[0] == pytest.approx(9.0)
    # k chunks pipelined (a3 in, c compute, o out on one queue after every in): in k·a3, then the outs
    assert section_s(one, one, 0 * one, one, 4 * one, one)[0] == pytest.approx(4 + 4)
    assert section_s(one, 0.1 * one, 0 * one, 3 * one, 4 * one, one)[0] == pytest.approx(1 + 12 + 0.1)


def _est(spec, plan, hw=HW2):
    cl, c = ctx(spec, hw)
    return estimate_plan(spec, cl, parse_plan(plan, spec, c), c)


@pytest.mark.parametrize("plan", ["sp=usp,u=8,r=2", "sp=torus,u=2,r=8,chunks=2,comm=one-sided", "sp=ring,r=16",
                                  "sp=ulysses,u=4,tp=2,dp=1"])
def test_breakdown_sums_and_finite(plan):
    e = _est(load_dit(W), plan)
    assert set(e.parts) == set(PARTS)
    assert sum(e.parts.values()) == pytest.approx(e.step_s)
    assert all(np.isfinite(v) and v >= 0 for v in e.parts.values())
    assert 0 <= e.hidden_fraction <= 1 and e.latency_s == pytest.approx(50 * e.step_s)


def _scaled(hw, **kw):
    cl = load_cluster(hw)
    g = cl.group
    dev, intra, inter = g.device, g.intra_node, g.inter_node
    if "flops" in kw:
        dev = dataclasses.replace(dev, peak_flops_per_s={k: v * kw["flops"] for k, v in dev.peak_flops_per_s.items()})
    if "mem" in kw:
        dev = dataclasses.replace(dev, memory_bytes=dev.memory_bytes * kw["mem"])
    if "link" in kw:
        intra = dataclasses.replace(intra, bandwidth_bytes_per_s=intra.bandwidth_bytes_per_s * kw["link"])
        inter = dataclasses.replace(inter, bandwidth_bytes_per_s=inter.bandwidth_bytes_per_s * kw["link"])
    return dataclasses.replace(cl, groups=(dataclasses.replace(g, device=dev, intra_node=intra, inter_node=inter),))


@pytest.mark.parametrize("plan", ["sp=usp,u=8,r=2", "sp=torus,u=2,r=8,chunks=4", "sp=ring,r=16,comm=one-sided"])
@pytest.mark.parametrize("knob", ["flops", "link"])
def test_faster_hardware_never_slower(plan, knob):
    spec = load_dit(W)
    base, fast = (_scaled(HW2, **{knob: f}) for f in (1.0, 2.0))
    pb = parse_plan(plan, spec, T.dit_context(spec, base))
    assert estimate_plan(spec, fast, pb).step_s <= estimate_plan(spec, base, pb).step_s * (1 + 1e-12)


def test_more_memory_never_unfits():
    spec = load_dit({**W, "tokens": 262144, "batch": 4})
    cl_small, cl_big = _scaled("h100-sxm-80gb:1x8", mem=0.25), _scaled("h100-sxm-80gb:1x8", mem=4.0)
    plan = parse_plan("sp=ulysses,u=8", spec, T.dit_context(spec, cl_small))
    small, big = estimate_plan(spec, cl_small, plan), estimate_plan(spec, cl_big, plan)
    assert not small.fits and big.fits and small.reasons


def test_one_sided_never_slower_and_bad_plans():
    spec = load_dit(W)
    for p in ("sp=usp,u=8,r=2", "sp=torus,u=2,r=8,chunks=2"):
        assert _est(spec, p + ",comm=one-sided").step_s <= _est(spec, p).step_s
    cl, c = ctx(spec)
    for bad in ("sp=ulysses,u=16", "sp=torus,u=2,r=8,chunks=5", "sp=ring,u=2,r=8", "tp=3", "sp=zz", "u=0", "x=1",
                "sp=usp,u=8,r=2,chunks=2"):
        with pytest.raises(SpecError):
            parse_plan(bad, spec, c)


def test_search_ranks_and_matches_estimate():
    spec = load_dit(W)
    cl, c = ctx(spec)
    ps = search(spec, cl, top=5)
    assert ps.n_plans > 50 and [r["rank"] for r in ps.rows] == [1, 2, 3, 4, 5]
    steps = [r["latency_s"] for r in ps.rows]
    assert steps == sorted(steps)
    best = ps.rows[0]
    e = _est(spec, ",".join(f"{k}={best[k]}" for k in ("sp", "u", "r", "tp", "dp", "comm", "chunks")))
    assert e.step_s == pytest.approx(best["step_s"], rel=1e-12)
    tp = search(spec, cl, top=3, objective="throughput").rows
    assert tp[0]["samples_per_s_per_gpu"] >= tp[-1]["samples_per_s_per_gpu"]


@pytest.mark.parametrize("plan", ["sp=usp,u=8,r=2", "sp=torus,u=2,r=8,chunks=2,comm=one-sided", "sp=ring,r=8",
                                  "sp=ulysses,u=16,tp=1"])
def test_executor_agrees(plan):
    spec = load_dit({**W, "model": "flux1-dev"}) if "u=16" not in plan else None
    if spec is None:
        with pytest.raises(SpecError, match="heads"):
            parse_plan(plan, load_dit(W), ctx(load_dit(W))[1])
        return
    cl, c = ctx(spec)
    p = parse_plan(plan, spec, c)
    sim = simulate_plan(spec, cl, p, c)
    assert estimate_plan(spec, cl, p, c).step_s == pytest.approx(sim.step_s, rel=0.05)
