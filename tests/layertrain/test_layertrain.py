"""Layer-training family: architecture arithmetic, the SplitBrain memory saving, parts summing, physics, the exact
DP against brute force, the engine's agreement, the ADMM exchange, the seeds and the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.executor.layertrain import agreement
from parplan.layertrain import estimate, load
from parplan.models.layertrain import estimate_plan, evaluate_hybrid, parse_plan
from parplan.models.layertrain_terms import HYBRID_PARTS
from parplan.planner.spaces.layertrain import evaluate_all, exact_dp
from parplan.workloads.layertrain import load_layertrain

runner = CliRunner()
TOY = {"family": "layer-training", "name": "toy", "job": {"batch_per_worker": 32}, "layers": [
    {"name": f"l{i}", "kind": k, "params": p, "flops_per_sample": f, "in_elems": a, "out_elems": b}
    for i, (k, p, f, a, b) in enumerate([("conv", 1e5, 2e9, 1.5e5, 8e5), ("conv", 2e6, 3e9, 8e5, 2e5),
                                         ("fc", 5e7, 1e8, 2e5, 4096), ("fc", 1.6e7, 3e7, 4096, 4096),
                                         ("conv", 1e6, 5e8, 4096, 6e4), ("fc", 4e6, 8e6, 6e4, 1000)])]}


def test_vgg16_and_resnet50_parameter_arithmetic(root):
    v = load_layertrain(root / "examples/vgg16-splitbrain.yaml")
    assert v.total_params == 138_357_544 and v.params_of("fc") == 123_642_856  # 123.6M of 138.4M
    assert v.params_of("conv") == 14_714_688
    r = load_layertrain({"family": "layer-training", "name": "r", "network": {"arch": "resnet50"}})
    assert r.total_params == 25_557_032  # torchvision ResNet-50
    assert sum(x[3] for x in r.rows) == pytest.approx(8.18e9, rel=0.01)  # 4.09 GMAC forward


def test_splitbrain_memory_saving_falls_out_of_the_arithmetic(root):
    for k, want in ((4, 1 - (14_714_688 + 123_642_856 / 4) / 138_357_544),
                    (8, 1 - (14_714_688 + 123_642_856 / 8) / 138_357_544)):
        e = estimate(root / "examples/vgg16-splitbrain.yaml", "v100-eth25-8", f"workers={k},modes=hybrid")
        assert e.extra["state_saving_vs_dp"] == pytest.approx(want, rel=1e-9)
    assert want == pytest.approx(0.782, abs=1e-3)


@settings(max_examples=25, deadline=None)
@given(bits=st.lists(st.booleans(), min_size=16, max_size=16), k=st.sampled_from([2, 4]),
       hw=st.sampled_from(["v100-eth10-4", "v100-nvlink-8"]))
def test_parts_sum_and_finite(root, bits, k, hw):
    spec, h = load(root / "examples/vgg16-splitbrain.yaml", hw)
    modes = "".join("M" if b else "D" for b in bits)
    e = estimate_plan(spec, h, parse_plan(f"workers={k},modes={modes}", spec, h))
    assert sum(e.parts.values()) == pytest.approx(e.total_s, rel=1e-9)
    assert all(np.isfinite(v) and v >= 0 for v in e.parts.values())
    assert sum(e.memory.values()) == pytest.approx(e.memory_bytes)


@settings(max_examples=20, deadline=None)
@given(scale=st.floats(1.0, 100.0), bits=st.lists(st.booleans(), min_size=16, max_size=16))
def test_faster_network_never_slower(root, scale, bits):
    spec = load_layertrain(root / "examples/vgg16-splitbrain.yaml")
    base = {"name": "c", "groups": [{"device": "v100-sxm-32gb", "nodes": 4, "devices_per_node": 1,
                                     "intra_node": "nvlink2", "inter_node": {"bandwidth": 1.25e9, "latency": 3e-5}}]}
    fast = json.loads(json.dumps(base))
    fast["groups"][0]["inter_node"]["bandwidth"] = 1.25e9 * scale
    modes = "".join("M" if b else "D" for b in bits)
    slow_e = estimate(spec, base, f"workers=4,modes={modes}")
    fast_e = estimate(spec, fast, f"workers=4,modes={modes}")
    assert fast_e.total_s <= slow_e.total_s * (1 + 1e-12)
    assert fast_e.memory_bytes == slow_e.memory_bytes


@pytest.mark.parametrize("hw", ["v100-eth10-4", "v100-nvlink-8"])
@pytest.mark.parametrize("k", [2, 4])
def test_exact_dp_equals_brute_force(hw, k):
    spec, h = load(TOY, hw)
    mp, T, M = evaluate_all(spec, h, k)
    labels, exact = exact_dp(spec, h, k)
    assert exact and min(x[0] for x in labels) == pytest.approx(T.min(), rel=1e-12)
    cap = float(np.median(M))
    capped, _ = exact_dp(spec, h, k, memory_cap=cap)
    assert min(x[0] for x in capped) == pytest.approx(T[M <= cap].min(), rel=1e-12)
    for t, m, v in labels:  # every label is a real plan priced by the closed form
        out = evaluate_hybrid(spec, h, v[None], k)
        assert out["total_s"][0] == pytest.approx(t, rel=1e-12) and out["memory_bytes"][0] == pytest.approx(m)


def test_more_memory_never_makes_a_plan_not_fit(root):
    spec, h = load(root / "examples/vgg16-splitbrain.yaml", "v100-eth10-4")
    small, _ = exact_dp(spec, h, 4, memory_cap=4.0 * 2**30)
    big, _ = exact_dp(spec, h, 4, memory_cap=6.0 * 2**30)
    assert small, "the 4 GiB cap still admits a sharded plan"
    assert min(x[0] for x in big) <= min(x[0] for x in small)


def test_engine_agrees_within_5_percent(root):
    rows = agreement(root / "examples/vgg16-splitbrain.yaml", "v100-eth10-4",
                     plans=["workers=4,modes=dp", "workers=4,modes=hybrid", "workers=4,modes=12DMDMD"])
    rows += agreement(root / "examples/gamlp-admm.yaml", "v100-pcie3-8")
    assert len(rows) >= 7 and all(abs(r["error"]) <= 0.05 for r in rows)


def test_admm_quantized_exchange(root):
    e = estimate(root / "examples/gamlp-admm.yaml", "v100-pcie3-8", "method=admm,bits=8")
    assert e.extra["comm_reduction"] == pytest.approx(0.5)  # p and q at 8 of 32 bits, the dual in fp32: (2/4 + 1)/3
    f = estimate(root / "examples/gamlp-admm.yaml", "v100-pcie3-8", "method=admm,bits=32")
    assert e.parts["compute_s"] == f.parts["compute_s"] and e.total_s < f.total_s
    assert f.speedup > 1  # layer-parallel beats layer-serial backprop per iteration here


def test_seeds_reach_their_claims(root, monkeypatch):
    monkeypatch.chdir(root)
    import seed_pdadmm
    import seed_splitbrain

    r = seed_splitbrain.run()
    assert 0.60 <= r[("v100-eth10-4", 4)]["saving"] <= 0.70
    slow = r[("v100-eth10-4", 4)]
    # on 10 GbE the FC gradients dominate pure DP's all-reduce: the hybrid is faster (SEEDS S23(d): 1.0–1.4), in
    # the closed form (1.19 today) and in the executor alike
    assert slow["ratio"] == pytest.approx(1.19, abs=0.02)  # inside S23's 1.0–1.4
    assert slow["sim_ratio"] > 1.0
    assert abs(r[("v100-nvlink-8", 8)]["ratio"] - 1.0) < 0.03
    pq = seed_pdadmm.run()[1]
    assert 0.40 <= pq["exchange_cut"] <= 0.75


def test_bad_input_is_a_spec_error(root):
    with pytest.raises(SpecError):
        load_layertrain({"family": "layer-training", "name": "x", "network": {"arch": "vgg16", "hidden": 3}})
    with pytest.raises(SpecError):
        estimate(root / "examples/vgg16-splitbrain.yaml", "v100-eth10-4", "modes=DM")
    with pytest.raises(SpecError):
        estimate(root / "examples/vgg16-splitbrain.yaml", "v100-eth10-4", "method=admm")


@pytest.mark.parametrize("args,code", [
    (["suggest", "examples/vgg16-splitbrain.yaml", "--hw", "v100-eth10-4", "--format", "json"], 0),
    (["estimate", "examples/gamlp-admm.yaml", "--hw", "v100-pcie3-8"], 0),
    (["validate", "examples/vgg16-splitbrain.yaml", "--hw", "v100-nvlink-8"], 0),
    (["check", "examples/vgg16-splitbrain.yaml", "--hw", "v100-eth10-4", "--max-step-time-s", "0.1"], 1),
    (["estimate", "examples/vgg16-splitbrain.yaml", "--hw", "v100-eth10-4", "--plan", "workers=99"], 2),
    (["suggest", "examples/vgg16-splitbrain.yaml", "--hw", "v100-eth10-4", "--seq-len", "9"], 2),
])
def test_cli(root, monkeypatch, args, code):
    monkeypatch.chdir(root)
    r = runner.invoke(app, args)
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output
    if args[0] == "suggest" and code == 0:
        rows = json.loads(r.stdout)["plans"]
        assert rows[0]["plan"].endswith("13D3M") and rows[0]["workers"] == 4
        for row in rows:
            assert sum(row[k] for k in HYBRID_PARTS) == pytest.approx(row["iteration_s"], rel=1e-9)
