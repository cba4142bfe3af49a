"""`parplan estimate` and `parplan catalog` through typer's CliRunner: outputs, exit codes, exact error lines."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_estimate_table_shows_breakdowns(root):
    r = invoke("estimate", str(root / "examples/llama3-70b.yaml"), "--hw", str(root / "examples/cluster-h100-64.yaml"),
               "--plan", "tp=8,pp=2,mbs=1,zero=1,recompute=selective,sp=true")
    assert r.exit_code == 0, r.output
    for text in ("step time", "MFU / HFU", "pipeline_bubble", "tp_comm_exposed", "activations", "optimizer", "fits"):
        assert text in r.stdout


def test_estimate_json_contract_keys(root):
    r = invoke("estimate", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=8,pp=2,mbs=1,zero=1", "--format",
               "json", "--global-batch", "128")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # the JSON envelope (issue 11): the estimate is its one plan
    assert doc["schema_version"] == "1" and doc["kind"] == "estimate" and len(doc["plans"]) == 1
    d = doc["plans"][0]
    for key in ("fits", "step_time_s", "tokens_per_s", "mfu", "memory_peak_bytes", "breakdown", "plan"):
        assert key in d
    assert d["dp"] == 4 and d["micro_batches"] == 32 and d["plan"].startswith("dp=4,")
    assert sum(d["breakdown"]["time_s"].values()) == pytest.approx(d["step_time_s"], rel=1e-9)


def test_estimate_csv_writes_file(tmp_path):
    out = tmp_path / "e.csv"
    r = invoke("estimate", "llama2-7b", "--hw", "dgx-a100-8", "--plan", "tp=1,mbs=1,zero=1", "--format", "csv",
               "-o", str(out), "--global-batch", "64")
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out)
    assert list(df.columns[:4]) == ["workload", "cluster", "n_devices", "dp"]
    assert {"step_time_s", "tokens_per_s", "mfu", "memory_peak_bytes", "pipeline_bubble_s", "params_bytes"} <= set(df.columns)


def test_estimate_hf_config_example(root):
    r = invoke("estimate", str(root / "examples/hf-model.yaml"), "--hw", "dgx-a100-8", "--plan", "tp=2,zero=1,sp=true",
               "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["workload"] == "example-llama-7b-shape"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


ARCH = "architecture:\n  layers: 8\n  hidden: 1024\n  heads: 8\n  vocab: 1000\ntraining: {seq_len: 128, global_batch: 8}\n"


@pytest.mark.parametrize("name,text,plan,expected", [
    ("malformed.yaml", "model: llama3-70b\ntraining:\n  seq_len: [1\n", "tp=8",
     "{f}:4:1: malformed YAML: expected ',' or ']', but got '<stream end>'"),
    ("misspelled.yaml", ARCH.replace("hidden", "hiden"), "tp=8",
     "{f}:3:3: architecture: unknown key 'hiden' (allowed: bias, dropout, family, ffn, ffn_hidden, head_dim, heads, "
     "hidden, kv_heads, layers, max_position, norm, position, tied_embeddings, vocab); did you mean 'hidden' or "
     "'ffn_hidden'?"),
    ("wrongtype.yaml", ARCH.replace("layers: 8", "layers: eight"), "tp=8",
     "{f}:2:3: architecture.layers: bad value 'eight': input should be a valid integer"),
    ("zero.yaml", ARCH.replace("layers: 8", "layers: 0"), "tp=8",
     "{f}:2:3: architecture.layers: bad value 0: input should be greater than 0"),
    ("negative.yaml", ARCH.replace("global_batch: 8", "global_batch: -8"), "tp=8",
     "{f}:6:26: training.global_batch: bad value -8: input should be greater than 0"),
    ("kv.yaml", ARCH.replace("heads: 8", "heads: 8\n  kv_heads: 3"), "tp=8",
     "{f}:5:3: architecture.kv_heads: kv_heads=3 does not divide heads=8; kv_heads must divide heads "
     "(GQA groups of equal size)"),
    ("id.yaml", "model: lama3-70b\ntraining: {seq_len: 128, global_batch: 8}\n", "tp=8",
     "{f}:1:1: model: unknown workload id 'lama3-70b'; did you mean 'llama3-70b' or 'llama2-70b' or 'llama3-405b'?"),
    ("heads.yaml", ARCH.replace("heads: 8", "heads: 12").replace("hidden: 1024", "hidden: 1536"), "tp=8",
     "plan.tp: tp=8 does not divide heads=12; choose tp among 1, 2, 3, 4, 6, 12"),
])
def test_bad_workload_input_gets_one_line_and_exit_2(tmp_path, name, text, plan, expected):
    f = write(tmp_path, name, text)
    r = invoke("estimate", f, "--hw", "dgx-h100-64", "--plan", plan)
    assert r.exit_code == 2
    assert r.stderr == "error: " + expected.format(f=f) + "\n"
    assert "Traceback" not in r.output


@pytest.mark.parametrize("hw,plan,expected", [
    ("dgx-h100-64", "dp=3,tp=8",
     "plan: dp×tp×pp×cp = 3×8×1×1 = 24 but the cluster has 64 devices; omit dp to derive it from the device count"),
    ("dgx-h100-64", "tp=3", "plan: tp×pp×cp = 3 does not divide the 64 devices; choose degrees whose product divides "
                            "the device count"),
    ("dgx-h100-64", "tp=8,mbs=3", "training.global_batch: global_batch=2048 is not divisible by dp×mbs=8×3=24; "
                                  "change mbs, dp or the global batch"),
    ("dgx-h100-64", "tp=8,pipeline=2",
     "plan: unknown plan key 'pipeline' (allowed: dp, tp, pp, cp, ep, etp, mbs, vpp, zero, recompute, sp, reshard, shard, first_layers, last_layers, embed_as_layer, loss_as_layer, cp_kind, helix, rotate)"),
    ("dgx-h100-64", "tp=8,recompute=ful",
     "plan.recompute: bad value 'ful' (allowed: none, selective, full, modules); did you mean 'full'?"),
    ("dgx-h100-64", "tp=16", "plan.tp: tp=16 does not divide kv_heads=8; choose tp among 1, 2, 4, 8"),
    ("dgx-h100-64", ",", "plan: no key=value in plan ','; write e.g. \"tp=8,pp=4\""),
    ("dgx-h100-65", "tp=8",
     "no cluster file or catalog id 'dgx-h100-65'; did you mean 'dgx-h100-64' or 'dgx-h100-256' or 'dgx-a100-8'?"),
])
def test_bad_plan_or_cluster_gets_one_line_and_exit_2(hw, plan, expected):
    r = invoke("estimate", "llama3-70b", "--hw", hw, "--plan", plan)
    assert r.exit_code == 2
    assert r.stderr == f"error: {expected}\n"


def test_unknown_link_in_cluster_file_names_line_and_closest(tmp_path):
    f = write(tmp_path, "c.yaml", "name: x\ngroups:\n  - device: h100-sxm-80gb\n    nodes: 2\n    devices_per_node: 8\n"
                                  "    intra_node: nvlink9\n    inter_node: ib-ndr400\n")
    r = invoke("estimate", "llama3-70b", "--hw", f, "--plan", "tp=8")
    assert r.exit_code == 2
    assert r.stderr == (f"error: {f}:6:5: groups[0].intra_node: unknown link id 'nvlink9'; "
                        "did you mean 'nvlink5' or 'nvlink4' or 'nvlink3'?\n")


def test_not_fitting_is_not_an_error():
    r = invoke("estimate", "llama3-70b", "--hw", "dgx-h100-64", "--plan",
               "tp=1,pp=1,mbs=1,vpp=1,zero=0,recompute=none,sp=false", "--format", "json",
               "--global-batch", "64")
    assert r.exit_code == 0
    d = json.loads(r.stdout)["plans"][0]  # the JSON envelope (issue 11)
    assert d["fits"] is False and d["reasons"][0].startswith("memory ")


def test_debug_shows_traceback():
    r = invoke("estimate", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=3", "--debug")
    assert r.exit_code == 2 and "Traceback" in r.stderr


def test_catalog_list_and_show():
    for section in ("hardware", "links", "workloads", "clusters"):
        r = invoke("catalog", "list", section)
        assert r.exit_code == 0, r.output
    r = invoke("catalog", "list", "hardware")
    assert "h100-sxm-80gb" in r.stdout and "989.4" in r.stdout
    r = invoke("catalog", "show", "nvlink4")
    assert r.exit_code == 0 and "source:" in r.stdout
    r = invoke("catalog", "show", "h100-sxm-81gb")
    assert r.exit_code == 2
    assert r.stderr.startswith("error: unknown catalog id 'h100-sxm-81gb'; did you mean 'h100-sxm-80gb'")


def _hardware_loader(kind: str):
    """The loader of a hardware file by its ``kind:`` (each family's hardware layer), or None for a GPU/TPU device."""
    import importlib

    table = {"cpu-socket": "cpu:load_cpu_machine", "cpu-cluster": "cpu:load_cpu_machine",
             "dsp": "dsp:load_dsp", "spatial": "dsp:load_dsp", "edge-cluster": "edge:load_edge_cluster",
             "offload-node": "offload:load_offload_node", "embedded-platform": "platform:load_platform"}
    if kind not in table:
        return None
    mod, fn = table[kind].split(":")
    return getattr(importlib.import_module(f"parplan.hardware.{mod}"), fn)


def test_every_example_file_loads(root):
    """Every file in examples/ loads with the loader of what it is: a cluster, a serving job, a family workload
    (top-level ``family:``, through ``FamilyInfo.load``), a hardware file of a family (``kind:``), a custom device,
    or a transformer workload."""
    from parplan.hardware import load_cluster
    from parplan.hardware.catalog import check_entry_file
    from parplan.spec import load_yaml_file
    from parplan.workloads import load_workload
    from parplan.workloads.registry import family_info

    for f in sorted((root / "examples").glob("*.yaml")):
        data = load_yaml_file(f)
        if "groups" in data:
            assert load_cluster(f).n_devices > 0
        elif f.name.startswith("serve-"):  # a serving job (examples/serve-chat.yaml): request mix and SLOs
            from parplan.workloads.serving import load_serving

            assert load_serving(f).isl.mean > 0
        elif "family" in data:  # a family's own workload file (examples/stencil.yaml, vit-edge.yaml, …)
            info = family_info(data["family"], key="family")
            assert info.load is not None, f"{info.name}: FamilyInfo.load is not set"
            assert isinstance(info.load(f), info.spec_type), f
        elif _hardware_loader(str(data.get("kind"))) is not None:  # a CPU machine, DSP, edge cluster, …
            assert _hardware_loader(data["kind"])(f) is not None, f
        elif "peak_flops" in data:  # a custom device (examples/h100-nvl.yaml), as `parplan catalog add` checks it
            check_entry_file("device", f, f.stem)
        else:
            assert load_workload(f).model.total_params > 0
