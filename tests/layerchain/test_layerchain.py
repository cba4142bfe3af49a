"""Layer-chain family: catalogs, generators (architecture arithmetic), the closed form (parts sum, Neurosurgeon sweep =
the stage evaluator, physics), PipeEdge's DP golden case (ANCHORS.md P1), the engine's agreement, the seeds, the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.hardware.edge import (cluster_ids, cluster_from_dict, device_ids, get_device, load_edge_cluster,
                                   network_ids, get_network)
from parplan.models.edge import chain_estimate, estimate_plan, neurosurgeon_sweep, parse_plan, split_stages
from parplan.planner.spaces.layerchain import pipeedge_dp, search
from parplan.workloads.layerchain import load_layerchain
from parplan.workloads.layerchain_nets import generate
from parplan.workloads.registry import verbs_for

runner = CliRunner()
PE = {"family": "layer-chain", "name": "pe", "chain": "pipeedge-vit-base", "inference": {"microbatch": 8}}


def test_catalogs_have_boards_networks_clusters():
    assert len(device_ids()) >= 9 and len(network_ids()) >= 6 and len(cluster_ids()) >= 4
    for i in device_ids():
        d = get_device(i)
        assert d.peak("fp32") > 0 and d.memory_bytes > 0 and d.active_w >= d.idle_w and len(d.source) > 8
    for i in network_ids():
        assert get_network(i).up_bytes_per_s > 0
    for i in cluster_ids():
        assert len(load_edge_cluster(i)) >= 2


def test_architecture_arithmetic():
    vit, inp = generate("vit-base")
    assert inp == 150528 and len(vit) == 48
    assert sum(l.params for l in vit) == pytest.approx(86.57e6, rel=2e-3)  # ViT-B/16: 86.6 M parameters
    assert [l.out_elements for l in vit[:3]] == [302592, 302592, 756480]  # PipeEdge's parameters_out
    assert sum(l.params for l in generate("vgg16")[0]) == pytest.approx(138.36e6, rel=1e-3)
    assert sum(l.params for l in generate("resnet18")[0]) == pytest.approx(11.69e6, rel=2e-3)
    assert sum(l.flops for l in generate("mobilenetv2")[0]) == pytest.approx(0.6e9, rel=0.03)  # ~300 M MACs


def test_pipeedge_golden_p1():
    """ANCHORS.md Part B §3.2 P1: DP → 1.548 s (5.17 img/s); README schedule → 1.752 s (4.57 img/s)."""
    spec, cl = load_layerchain(PE), load_edge_cluster("pipeedge-4mb-4rcc")
    stages, bott, _ = pipeedge_dp(spec, cl)
    assert round(bott, 3) == 1.548
    e = chain_estimate(spec, cl, stages)
    assert e.metrics["bottleneck_s"] == pytest.approx(bott, rel=1e-12)
    assert round(8 / bott, 2) == 5.17
    rd = estimate_plan(spec, cl, parse_plan("stages=mb-0:1-6/mb-1:7-12/mb-2:13-18/mb-3:19-24/rcc-0:25-30/"
                                            "rcc-1:31-36/rcc-2:37-42/rcc-3:43-48", spec, cl))
    assert round(rd.metrics["bottleneck_s"], 3) == 1.752


def test_neurosurgeon_sweep_equals_stage_evaluator_and_parts_sum():
    spec = load_layerchain({"family": "layer-chain", "name": "m", "dnn": {"arch": "mobilenetv2"},
                            "inference": {"microbatch": 1, "requests": 1, "source": "pi-0"}})
    cl = load_edge_cluster("edge-4pi-server")
    sw = neurosurgeon_sweep(spec, cl, 0, 4)
    for k in range(len(spec.layers) + 1):
        e = chain_estimate(spec, cl, split_stages(spec, cl, 0, k, 4))
        assert e.metrics["latency_s"] == pytest.approx(sw["total_s"][k], rel=1e-9)
        assert e.metrics["energy_j"] == pytest.approx(sw["energy_j"][k], rel=1e-9)
        assert sum(e.parts.values()) == pytest.approx(e.total_s, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(1.0, 50.0), k=st.integers(0, 20))
def test_faster_device_never_slower(scale, k):
    spec = load_layerchain({"family": "layer-chain", "name": "m", "dnn": {"arch": "mobilenetv2"},
                            "inference": {"microbatch": 2, "requests": 5, "source": "b-0"}})
    base = {"id": "b", "name": "b", "kind": "edge", "vendor": "x", "compute": {"fp32": "10 GFLOP/s"},
            "efficiency": 0.3, "memory": "1 GiB", "memory_bandwidth": "5 GB/s", "power": {"idle": 1, "active": 3},
            "network": "wifi6", "source": "test device (assumed)"}
    fast = {**base, "compute": {"fp32": f"{10 * scale} GFLOP/s"}, "memory_bandwidth": f"{5 * scale} GB/s"}
    times = []
    for dev in (base, fast):
        cl = cluster_from_dict({"name": "c", "kind": "edge-cluster", "source": "test cluster",
                                "devices": [{"device": dev, "ids": ["b-0"]}, {"device": "gpu-server-a100"}]})
        e = chain_estimate(spec, cl, split_stages(spec, cl, 0, k, 1))
        assert np.isfinite(e.total_s)
        times.append(e.total_s)
    assert times[1] <= times[0] * (1 + 1e-12)


@settings(max_examples=20, deadline=None)
@given(mib=st.integers(64, 4096))
def test_more_memory_never_unfits(mib):
    spec = load_layerchain(PE)
    fits = []
    for m in (mib, mib * 2):
        cl = cluster_from_dict({"name": "c", "kind": "edge-cluster", "source": "test cluster", "devices": [
            {"device": {**dict(id="mb", name="mb", kind="edge", vendor="x", compute={"fp32": "61 GFLOP/s"},
                               efficiency=0.35, memory=f"{m} MiB", memory_bandwidth="8 GB/s",
                               power={"idle": 3, "active": 10}, network="pipeedge-1000mbps",
                               source="test (minnowboard-like)")}}]})
        fits.append(chain_estimate(spec, cl, [(0, 0, 48)]).fits)
    assert fits[1] or not fits[0]


def test_pipar_beats_fl_and_engine_agrees():
    from parplan.executor.edge_pipeline import play_pipar
    from parplan.models.edge import pipar_estimate

    spec = load_layerchain({"family": "layer-chain", "name": "v", "dnn": {"arch": "vgg16", "image": 32,
                                                                          "classes": 10},
                            "training": {"batch": 16, "batches": 40}})
    cl = load_edge_cluster("pipar-4pi4-server")
    ps = search(spec, cl, top=0)
    best = {t: next(e for e in ps.rows if e.technique == t) for t in ("fl", "split-learning", "pipar")}
    assert best["pipar"].total_s < best["split-learning"].total_s < best["fl"].total_s
    for e in (best["pipar"], best["fl"]):
        p = parse_plan(e.plan, spec, cl)
        sim = play_pipar(spec, cl, p.get("mode"), int(p.get("split", 0)), int(p.get("inflight", 1)))
        assert abs(sim / e.total_s - 1) <= 0.05
    with pytest.raises(SpecError, match="split"):
        pipar_estimate(spec, cl, "pipar", 0, 2)


def test_seeds_reach_what_they_claim(capsys):
    import seed_cecpa
    import seed_pipeedge

    assert seed_pipeedge.main() == 0
    assert "reached: the DP gives 1.548 s" in capsys.readouterr().out
    rows = seed_cecpa.run(links=(100,))
    assert rows[0]["A"] / rows[0]["C"] > 5 and abs(rows[0]["C_sim"] / rows[0]["C"] - 1) < 0.05
    m = rows[0]["est"].metrics
    assert m["availability"] > m["availability_standalone"]


def test_pipar_seed_direction():
    import seed_pipar

    rows = seed_pipar.run(nets=("resnet18",), links=(10, 100), play=False)
    assert rows[1]["fl"] / rows[1]["pipar"] > rows[0]["fl"] / rows[0]["pipar"] > 1  # gains shrink at 10 Mb/s


def test_verbs_and_cli_suggest(root):
    ex = str(root / "examples/vit-edge.yaml")
    assert verbs_for(ex).__name__ == "parplan.cli.layerchain_out"
    r = runner.invoke(app, ["suggest", ex, "--hw", "edge-4pi-server", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    best = doc["plans"][0]
    assert sum(best["breakdown"].values()) == pytest.approx(best["total_s"], rel=1e-9)
    t = runner.invoke(app, ["suggest", ex, "--hw", str(root / "examples/edge-4pi-server.yaml")])
    assert t.exit_code == 0 and "best plan" in t.stdout and "Traceback" not in t.output
    for obj in ("latency", "energy"):
        assert runner.invoke(app, ["suggest", ex, "--hw", "edge-4pi-server", "--objective", obj]).exit_code == 0


def test_cli_estimate_check_simulate_validate_and_errors(root):
    ex = str(root / "examples/vit-edge.yaml")
    args = ["--hw", "edge-4pi-server"]
    assert runner.invoke(app, ["estimate", ex, *args, "--plan", "split=pi-0:12"]).exit_code == 0
    assert runner.invoke(app, ["check", ex, *args, "--max-step-time-s", "1e4"]).exit_code == 0
    assert runner.invoke(app, ["check", ex, *args, "--max-step-time-s", "1e-6"]).exit_code == 1
    s = runner.invoke(app, ["simulate", ex, *args, "--plan", "stages=pi-0:1-20/pi-1:21-48"])
    assert s.exit_code == 0 and "closed form" in s.stdout
    assert runner.invoke(app, ["validate", ex, *args]).exit_code == 0
    for bad in (["--plan", "stages=pi-0:1-20/pi-9:21-48"], ["--plan", "split=pi-0:99"], ["--plan", "bogus=1"]):
        r = runner.invoke(app, ["estimate", ex, *args, *bad])
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    r = runner.invoke(app, ["estimate", ex, "--hw", "edge-4pi-servr"])
    assert r.exit_code == 2 and "did you mean" in r.stderr


def test_bad_inputs_are_spec_errors(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("family: layer-chain\nname: x\ndnn: {arch: vit-base, bogus: 1}\ninference: {}\n")
    with pytest.raises(SpecError, match="bogus"):
        load_layerchain(f)
    with pytest.raises(SpecError, match="exactly one"):
        load_layerchain({"family": "layer-chain", "name": "x", "dnn": {"arch": "vgg16"}})
    with pytest.raises(SpecError, match="cycle"):
        load_layerchain({"family": "layer-chain", "name": "x", "input_elements": 1, "inference": {},
                         "modules": [{"name": "a", "flops": 1, "out_elements": 1, "after": ["b"]},
                                     {"name": "b", "flops": 1, "out_elements": 1, "after": ["a"]}]})
    with pytest.raises(SpecError, match="rtt"):
        cluster_from_dict({"name": "c", "kind": "edge-cluster", "source": "test cluster", "devices": [
            {"device": "raspberry-pi-5", "network": {"bandwidth": "1 Mb/s", "rtt": "1 h"}}]})


def test_vit_on_four_boards_and_a_server_lists_the_edge_pipeline_and_splits(root):
    """The issue's done-when: a ViT planned across 4 edge boards + a server — the DP's best, the same DP on the
    boards alone (a 4-stage pipeline), and the best Neurosurgeon split points, each with its breakdown."""
    from parplan.layerchain import suggest

    ps = suggest(root / "examples/vit-edge.yaml", "edge-4pi-server", top=0)
    techniques = [e.technique for e in ps.rows]
    assert techniques.count("split") >= 3 and "single" in techniques
    boards = [e for e in ps.rows if e.technique == "pipeline" and "server" not in e.plan]
    assert boards and boards[0].plan.count("pi-") == 4
    for e in ps.rows:
        assert e.total_s == pytest.approx(sum(e.parts.values()), rel=1e-9)
