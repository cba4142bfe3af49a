"""Heterogeneous planning through the CLI: `suggest` on a multi-group cluster, `estimate --plan-file`."""
from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.cli.hetero_out import HETERO_COLUMNS

runner = CliRunner()
ARGS = ["suggest", "llama2-13b", "--hw", "mixed-a100-v100-32", "--precision", "fp16", "--global-batch", "512",
        "--seq-len", "4096", "--top", "3", "--quiet"]


def test_suggest_on_mixed_cluster_json_carries_speedups_and_baselines():
    r = runner.invoke(app, ARGS + ["--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["heterogeneous"] is True and len(d["plans"]) == 3
    best = d["plans"][0]
    for key in ("step_time_s", "tokens_per_s", "memory_peak_bytes", "fits", "plan", "speedup_vs_uniform",
                "speedup_vs_fastest_group"):
        assert key in best
    assert best["speedup_vs_uniform"] > 1.2 and best["speedup_vs_fastest_group"] > 1.0
    assert d["baselines"]["uniform"]["step_time_s"] == best["step_time_s"] * best["speedup_vs_uniform"]
    # the JSON envelope (issue 11): "plan" is the plan's string, "layout" its pipelines of stages
    assert d["kind"] == "suggest" and isinstance(best["plan"], str) and best["plan"].startswith(f"tp={best['tp']},")
    stages = best["layout"]["pipelines"][0]["stages"]
    assert {s["device"] for p in best["layout"]["pipelines"] for s in p["stages"]} == {"a100-sxm-80gb", "v100-sxm-32gb"}
    assert stages[0]["layers"][0] == 0 and stages[-1]["layers"][1] == 40


def test_suggest_on_mixed_cluster_table_and_csv(tmp_path):
    r = runner.invoke(app, ARGS)
    assert r.exit_code == 0, r.output
    assert "uniform (equal layers, equal data)" in r.stdout and "fastest group only" in r.stdout
    out = tmp_path / "p.csv"
    r = runner.invoke(app, ARGS + ["--format", "csv", "-o", str(out)])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out)
    assert list(df.columns) == HETERO_COLUMNS and len(df) == 3


def test_options_the_hetero_planner_does_not_take_are_errors():
    r = runner.invoke(app, ARGS + ["--fix", "tp=8"])
    assert r.exit_code == 2
    assert r.stderr == ("error: --fix: --fix not supported on a multi-group cluster (2 device groups); "
                        "the heterogeneous planner maximizes throughput\n")


def test_estimate_plan_file(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text("tp: 4\nzero: 1\nsp: true\npipelines:\n"
                 "  - micro_batches: 64\n    replicas: 2\n    stages:\n"
                 "      - {device: a100-sxm-80gb, layers: [0, 26]}\n      - {device: v100-sxm-32gb, layers: [26, 40]}\n"
                 "  - micro_batches: 96\n    replicas: 2\n    stages:\n"
                 "      - {device: a100-sxm-80gb, layers: [0, 40]}\n"
                 "  - micro_batches: 128\n    replicas: 1\n    stages:\n"
                 "      - {group: 1, layers: [0, 20]}\n      - {group: 1, layers: [20, 40]}\n")
    base = ["estimate", "llama2-13b", "--hw", "mixed-a100-v100-32", "--precision", "fp16", "--global-batch", "448",
            "--seq-len", "4096", "--plan-file", str(f)]
    r = runner.invoke(app, base + ["--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)["plans"][0]  # the JSON envelope (issue 11)
    assert len(d["layout"]["pipelines"]) == 5 and d["step_time_s"] > 0
    r = runner.invoke(app, base)
    assert r.exit_code == 0 and "chunked gradient sync" in r.stdout
    r = runner.invoke(app, base[:-2] + ["--plan", "tp=4"])
    assert r.exit_code == 2  # a multi-group cluster needs a plan file
    r = runner.invoke(app, base + ["--plan", "tp=4"])
    assert r.exit_code == 2 and r.stderr == "error: --plan: give exactly one of --plan or --plan-file\n"
