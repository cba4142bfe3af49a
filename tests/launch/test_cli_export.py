"""`parplan export` through typer's CliRunner: stdout, -o FILE with the note on stderr, partial plans completed as
`estimate` completes them, and a refused plan as exit 2 with one error line."""
from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.cli.export_cmd import write_launch
from parplan.launch.deepspeed import config_json
from parplan.models.plan import parse_plan
from launch_cases import DENSE

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_export_megatron_to_stdout():
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", DENSE, "--to", "megatron")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("#!/usr/bin/env bash")
    assert "--tensor-model-parallel-size 8" in r.stdout and "torchrun --nnodes 8 --nproc-per-node 8" in r.stdout


def test_export_writes_file_and_confirms_on_stderr(tmp_path):
    out = tmp_path / "job.toml"
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan",
               "tp=8,pp=4,vpp=5,mbs=1,zero=3,recompute=full,sp=true", "--to", "torchtitan", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    assert r.stderr.startswith(f"wrote {out}: torchtitan launch config for dp=2,tp=8,pp=4")
    assert "[parallelism]" in out.read_text()


def test_script_output_is_executable(tmp_path):
    out = tmp_path / "run.sh"
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=8,pp=4,mbs=1,zero=1,recompute=full",
               "--to", "deepspeed", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert out.stat().st_mode & 0o100
    assert config_json(out.read_text())["zero_optimization"]["stage"] == 1


def test_partial_plan_is_completed_for_the_target_framework():
    # torchtitan has zero 0 / 3 only: the completion picks among what it can launch (the estimate's rule)
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=8,pp=4", "--to", "torchtitan")
    assert r.exit_code == 0, r.output
    plan_line = next(line for line in r.stdout.splitlines() if line.startswith("# parplan plan:"))
    assert "zero=3" in plan_line or "zero=0" in plan_line


def test_overrides_reach_the_config():
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", DENSE, "--to", "nemo", "--seq-len", "4096",
               "--global-batch", "512")
    assert r.exit_code == 0, r.output
    d = yaml.safe_load(r.stdout)
    assert d["data"]["seq_length"] == 4096 and d["data"]["global_batch_size"] == 512


def test_refused_plan_is_one_line_exit_2():
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=8,pp=1,cp=2,mbs=1,zero=1",
               "--to", "deepspeed")
    assert r.exit_code == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    # DeepSpeed's cp is Ulysses (cp_kind=ulysses by default), which Megatron-DeepSpeed runs only with tp = pp = 1
    assert len(lines) == 1 and lines[0].startswith("error: plan: no plan with tp=8, pp=1, cp=2")
    assert "DeepSpeed-Ulysses sequence parallelism is incompatible with Megatron-LM's tensor" in lines[0]


def test_catalog_refusal_is_one_line_exit_2():
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=8,pp=4,vpp=5,mbs=1,zero=1,sp=false",
               "--to", "deepspeed")
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "vpp=5" in r.stderr


def test_bad_target_is_a_usage_error():
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=8", "--to", "jax")
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --to: bad value 'jax'") and len(r.stderr.strip().splitlines()) == 1


def test_write_launch_for_suggest(tmp_path, monkeypatch):
    from parplan.hardware.catalog import load_cluster
    from parplan.workloads.loader import load_workload

    monkeypatch.chdir(tmp_path)
    w, c = load_workload("llama3-70b"), load_cluster("dgx-h100-64")
    cfg = write_launch(w, c, parse_plan(DENSE, 64), "maxtext")
    written = tmp_path / cfg.filename
    assert written.read_text() == cfg.text
    assert yaml.safe_load(cfg.text)["ici_tensor_sequence_parallelism"] == 8
    out = tmp_path / "m.json"
    cfg2 = write_launch(w, c, parse_plan("tp=8,pp=4,mbs=1,zero=1,recompute=full", 64), "deepspeed", out)
    assert json.loads(json.dumps(cfg2.mapping["ds_config"]))["train_batch_size"] == 2048


def test_suggest_export_writes_the_best_plan_the_framework_can_launch(tmp_path):
    """`suggest --export torchtitan`: the search ranks under torchtitan's launchable plans and its best plan is
    written as a torchtitan TOML; the plan in the file is the table's first row."""
    import tomllib

    out = tmp_path / "best.toml"
    r = invoke("suggest", "llama3-8b", "--hw", "dgx-h100-64", "--format", "json", "--top", "1", "--quiet",
               "--export", "torchtitan", "--export-output", str(out))
    assert r.exit_code == 0, r.output
    best = json.loads(r.stdout)["plans"][0]
    assert best["framework"] == "torchtitan"
    cfg = tomllib.loads(out.read_text())
    assert f"# parplan plan: {best['plan']}" in out.read_text()
    assert cfg["parallelism"]["context_parallel_degree"] == best["cp"]
    assert cfg["parallelism"]["tensor_parallel_degree"] == best["tp"]
    assert f"wrote {out}: torchtitan launch config" in r.stderr


def test_suggest_export_refuses_a_conflicting_framework_and_mixed_clusters():
    r = invoke("suggest", "llama3-8b", "--hw", "dgx-h100-64", "--export", "torchtitan", "--framework", "nemo")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "--export" in r.stderr
    r = invoke("suggest", "llama2-13b", "--hw", "mixed-h100-a100-64", "--export", "megatron")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "cannot be exported" in r.stderr
    r = invoke("suggest", "llama3-8b", "--hw", "dgx-h100-64", "--export-output", "x.sh")
    assert r.exit_code == 2 and "--export-output without --export" in r.stderr
