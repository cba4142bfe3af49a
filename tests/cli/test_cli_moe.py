"""Mixture-of-experts workloads through the CLI (CliRunner): estimates and searches with expert parallelism, and
one clear line with exit code 2 for every new error."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
SHAPE = ("--global-batch", "256", "--seq-len", "4096")


def invoke(*args):
    return runner.invoke(app, list(args))


def test_estimate_moe_plan_reports_the_all_to_all():
    r = invoke("estimate", "mixtral-8x7b", "--hw", "dgx-h100-64", "--plan",
               "tp=2,pp=1,ep=8,etp=1,mbs=1,vpp=1,zero=1,recompute=full,sp=true", "--format", "json", *SHAPE)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)["plans"][0]  # the JSON envelope (issue 11)
    assert d["ep"] == 8 and d["etp"] == 1 and d["chosen"] == {}
    assert "ep_comm_exposed_s" in d["breakdown"]["time_s"]
    assert sum(d["breakdown"]["time_s"].values()) == pytest.approx(d["step_time_s"], rel=1e-9)


def test_partial_moe_plan_chooses_ep():
    r = invoke("estimate", "mixtral-8x7b", "--hw", "dgx-h100-64", "--plan", "tp=2,pp=2", "--format", "json", *SHAPE)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)["plans"][0]  # the JSON envelope (issue 11)
    assert "ep" in d["chosen"] and "etp" in d["chosen"] and d["fits"]


def test_suggest_moe_lists_expert_axes():
    r = invoke("suggest", "mixtral-8x7b", "--hw", "dgx-h100-64", "--top", "5", *SHAPE)
    assert r.exit_code == 0, r.output
    assert " ep " in r.stdout.splitlines()[2] or "ep" in r.stdout
    r = invoke("suggest", "mixtral-8x7b", "--hw", "dgx-h100-64", "--top", "50", "--format", "csv", *SHAPE)
    df = pd.read_csv(__import__("io").StringIO(r.stdout))
    assert (df.ep > 1).any() and {"etp", "ep_comm_exposed_s"} <= set(df.columns)
    assert all(f"ep={e}" in p for e, p in zip(df.ep, df.plan))


def test_suggest_fix_ep_pins_it():
    r = invoke("suggest", "mixtral-8x7b", "--hw", "dgx-h100-64", "--fix", "ep=4", "--format", "csv", *SHAPE)
    assert r.exit_code == 0, r.output
    assert set(pd.read_csv(__import__("io").StringIO(r.stdout)).ep) == {4}


@pytest.mark.parametrize("model, plan, expected", [
    ("mixtral-8x7b", "tp=2,ep=3,sp=true", "plan.ep: ep=3 does not divide the 8 experts; choose ep among 1, 2, 4, 8"),
    ("mixtral-8x7b", "tp=1,ep=8,etp=3,mbs=1,vpp=1,zero=1,recompute=full,sp=false",
     "plan.ep: ep×etp = 8×3 does not divide dp×cp×tp = 64; the experts are laid out over the attention ranks of a "
     "stage (MoE parallel folding)"),
    ("mixtral-8x7b", "tp=2,ep=8,mbs=1,vpp=1,zero=1,recompute=full,sp=false",
     "plan.sp: an MoE layer with tp > 1 needs sequence parallelism (sp=true); Megatron-Core requires "
     "--sequence-parallel with tensor and expert parallelism"),
    ("llama3-8b", "tp=1,ep=2", "plan.ep: ep=2 needs a mixture-of-experts workload; Llama 3 8B is dense (allowed: 1)"),
    ("llama3-8b", "tp=1,etp=2",
     "plan.etp: etp=2 needs a mixture-of-experts workload; Llama 3 8B is dense (allowed: 1)"),
])
def test_bad_moe_plan_is_one_line_and_exit_2(model, plan, expected):
    r = invoke("estimate", model, "--hw", "dgx-h100-64", "--plan", plan, *SHAPE)
    assert r.exit_code == 2, r.output
    assert r.stderr == f"error: {expected}\n"


def test_fix_ep_on_a_dense_workload_is_one_line_and_exit_2():
    r = invoke("suggest", "llama3-8b", "--hw", "dgx-h100-64", "--fix", "ep=2", *SHAPE)
    assert r.exit_code == 2
    assert r.stderr == "error: --fix ep: ep=2 needs a mixture-of-experts workload; Llama 3 8B is dense (allowed: 1)\n"


@pytest.mark.parametrize("training, expected", [
    ({"expert_imbalance": 0.5}, "training.expert_imbalance"),
    ({"mtp_layers": -1}, "training.mtp_layers"),
])
def test_bad_moe_training_keys_are_errors(tmp_path, training, expected):
    f = tmp_path / "m.yaml"
    f.write_text(json.dumps({"model": "deepseek-v3", "training": {"seq_len": 4096, "global_batch": 256, **training}}))
    r = invoke("estimate", str(f), "--hw", "dgx-h100-256", "--plan", "tp=1,ep=8")
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"error: {f}") and expected in r.stderr and "\n" == r.stderr[-1]
    assert r.stderr.count("\n") == 1


def test_moe_training_key_on_a_dense_workload_is_an_error(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text(json.dumps({"model": "llama3-8b", "training": {"seq_len": 4096, "global_batch": 256,
                                                              "expert_imbalance": 1.2}}))
    r = invoke("estimate", str(f), "--hw", "dgx-h100-64", "--plan", "tp=1")
    assert r.exit_code == 2
    assert "training.expert_imbalance: expert_imbalance applies to moe-transformer workloads; Llama 3 8B is " \
           "dense-transformer; remove the key" in r.stderr


def test_unknown_moe_architecture_key_is_an_error(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text(json.dumps({"name": "tiny-moe", "architecture": {
        "family": "moe-transformer", "layers": 4, "hidden": 1024, "heads": 8, "ffn_hidden": 4096, "ffn": "swiglu",
        "vocab": 32000, "experts": 8, "top_k": 2, "moe_ffn_hidden": 1024, "expert_capacity": 1.25},
        "training": {"seq_len": 2048, "global_batch": 64}}))
    r = invoke("estimate", str(f), "--hw", "dgx-h100-64", "--plan", "tp=1,ep=8")
    assert r.exit_code == 2
    assert "architecture: unknown key 'expert_capacity'" in r.stderr and r.stderr.count("\n") == 1


def test_moe_on_a_multi_group_cluster_is_a_clear_error():
    r = invoke("suggest", "mixtral-8x7b", "--hw", "mixed-h100-a100-64", *SHAPE)
    assert r.exit_code == 2
    assert r.stderr == ("error: groups: moe-transformer workloads have no heterogeneous (multi-group) planner yet; "
                        "use a cluster with one device group\n")


def test_simulate_moe_with_a_framework_shows_the_exposed_all_to_all():
    plan = "tp=2,pp=4,ep=8,etp=1,mbs=1,vpp=1,zero=1,recompute=selective,sp=true"
    r = invoke("simulate", "mixtral-8x7b", "--hw", "dgx-h100-64", "--plan", plan, "--framework", "nemo", *SHAPE)
    assert r.exit_code == 0, r.output
    assert "all-to-all" in r.stdout and "expert imbalance" in r.stdout
    r = invoke("validate", "mixtral-8x7b", "--hw", "dgx-h100-64", "--plan", plan, "--framework", "nemo", *SHAPE)
    assert r.exit_code == 0, r.output


def test_expert_imbalance_flag_sets_and_checks_it():
    plan = "tp=2,pp=2,ep=8,etp=1,mbs=1,vpp=1,zero=1,recompute=selective,sp=true"
    base = invoke("estimate", "mixtral-8x7b", "--hw", "dgx-h100-64", "--plan", plan, "--format", "json", *SHAPE)
    hot = invoke("estimate", "mixtral-8x7b", "--hw", "dgx-h100-64", "--plan", plan, "--format", "json",
                 "--expert-imbalance", "1.5", *SHAPE)
    assert base.exit_code == hot.exit_code == 0
    assert json.loads(hot.stdout)["plans"][0]["step_time_s"] > json.loads(base.stdout)["plans"][0]["step_time_s"]
    r = invoke("suggest", "mixtral-8x7b", "--hw", "dgx-h100-64", "--expert-imbalance", "0.5", *SHAPE)
    # the option is named (it was reported at training.expert_imbalance, a key the user did not write)
    assert r.exit_code == 2 and r.stderr == "error: --expert-imbalance: bad value 0.5: must be a number from 1 to 64\n"
    r = invoke("simulate", "llama3-8b", "--hw", "dgx-h100-64", "--plan", "tp=1", "--expert-imbalance", "1.2", *SHAPE)
    assert r.exit_code == 2 and "expert_imbalance applies to moe-transformer workloads" in r.stderr
