"""`parplan suggest` and `parplan check` through typer's CliRunner: outputs, exit codes, exact messages."""
from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest
from typer.testing import CliRunner

import parplan
from parplan.cli.app import app
from parplan.planner import EXPORT_COLUMNS

runner = CliRunner()
SMALL = ("llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "64")


def invoke(*args):
    r = runner.invoke(app, [str(a) for a in args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception  # a crash is never an exit code
    return r


# --- suggest ---------------------------------------------------------------------------------------------------------
def test_suggest_table_lists_top_plans():
    r = invoke("suggest", *SMALL, "--top", "3")
    assert r.exit_code == 0, r.output
    assert "Llama 2 7B on dgx-a100-8 (8 devices): top 3 of" in r.stdout
    for head in ("tokens/s", "MFU", "mem", "comp", "comm", "bubl", "state", "act"):
        assert head in r.stdout
    assert r.stderr.startswith("searched ")


def test_suggest_csv_columns_are_the_export_columns(tmp_path):
    out = tmp_path / "plans.csv"
    r = invoke("suggest", *SMALL, "--top", "5", "--format", "csv", "-o", out)
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out)
    assert tuple(df.columns) == EXPORT_COLUMNS
    assert len(df) == 5 and list(df["rank"]) == [1, 2, 3, 4, 5]
    assert df.tokens_per_s.is_monotonic_decreasing
    assert r.stdout == ""  # data went to the file


def test_suggest_csv_is_byte_identical_across_runs():
    a = invoke("suggest", "llama3-70b", "--hw", "dgx-h100-64", "--global-batch", "128", "--top", "0", "--format",
               "csv", "--quiet")
    b = invoke("suggest", "llama3-70b", "--hw", "dgx-h100-64", "--global-batch", "128", "--top", "0", "--format",
               "csv", "--quiet")
    assert a.exit_code == 0 and b.exit_code == 0
    assert a.stdout_bytes == b.stdout_bytes
    assert len(pd.read_csv(io.StringIO(a.stdout))) > 1000


def test_suggest_json():
    r = invoke("suggest", *SMALL, "--top", "2", "--format", "json", "--fix", "zero=1")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["objective"] == "throughput" and d["fixed"] == "zero=1"
    assert [p["rank"] for p in d["plans"]] == [1, 2] and all(p["zero"] == 1 for p in d["plans"])
    assert list(d["plans"][0]) == list(EXPORT_COLUMNS)
    assert d["plans"][0]["usd_per_million_tokens"] is None
    assert d["search"]["valid_plans"] >= d["search"]["fitting"] > 0


def test_suggest_explain_names_the_runner_up_and_counts_infeasible_plans():
    r = invoke("suggest", "llama3-70b", "--hw", "dgx-h100-64", "--global-batch", "128", "--explain", "--quiet")
    assert r.exit_code == 0, r.output
    why = [line for line in r.stderr.splitlines() if line.startswith("why: ")]
    assert "than the runner-up" in why[0] or "ties with the runner-up" in why[0]
    assert any("factorizations of 64 devices are excluded: tp does not divide heads=64 and kv_heads=8" in w
               for w in why)
    # the default 5 % memory headroom (issue 11): 80 GiB less 5 % is the limit plans fit in
    assert any("valid plans fit in 76.0 GiB per device" in w for w in why)
    assert any("plans exceed memory at the first stage (model state dominates" in w and "need " in w for w in why)


def test_suggest_nothing_fits_exits_1_with_what_would_fit():
    r = invoke("suggest", "llama3-405b", "--hw", "dgx-a100-8", "--format", "csv", "--quiet")
    assert r.exit_code == 1
    assert r.stdout.strip() == ",".join(EXPORT_COLUMNS)  # header only
    err = r.stderr.splitlines()
    assert "error: no plan fits in 76.0 GiB per device (80.0 GiB less 5 % headroom); what would fit:" in err
    assert any(line.startswith("  more devices: 12 nodes (96 devices) is the smallest node count where a plan fits")
               for line in err)
    assert any("plans exceed memory at the first stage (model state dominates" in line for line in err)


def test_suggest_nothing_fits_suggests_dropping_pins():
    r = invoke("suggest", *SMALL, "--fix", "tp=1", "--fix", "recompute=none", "--fix", "mbs=32", "--quiet")
    assert r.exit_code == 1
    assert "without --fix tp=1,mbs=32,recompute=none:" in r.stderr
    assert "recompute=full:" in r.stderr


@pytest.mark.parametrize("args, message", [
    (("--objective", "speed"), "error: --objective: bad value 'speed' (allowed: throughput, memory, cost, devices, time-to-train)"),
    (("--objective", "cost"), "error: --objective: the cost objective needs a price: device a100-sxm-80gb has no "
                              "cited price_per_hour in the catalog; pass --price-per-hour X (USD per device-hour, "
                              "your own figure)"),
    (("--fix", "tp=3"), "error: plan: no valid plan for Llama 2 7B on 8 devices with tp=3"),
    (("--memory-headroom", "0.9"), "error: --memory-headroom: bad value 0.9: must be between 0.0 and 0.5"),
    (("--deadline", "30d"), "error: --deadline: a deadline needs a token budget; add --token-budget, e.g. 15T"),
    (("--deadline", "soon", "--token-budget", "1T"), "error: --deadline: cannot read duration 'soon'"),
    (("--precision", "fp4"), "error: --precision: bad value 'fp4'"),
])
def test_suggest_bad_input_is_one_line_exit_2(args, message):
    r = invoke("suggest", *SMALL, *args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(message)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_suggest_sizing_finds_the_fewest_nodes():
    r = invoke("suggest", "llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "256", "--target-tokens-per-s",
               "200000", "--max-nodes", "16", "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    n = d["sizing"]["n_nodes"]
    assert d["n_nodes"] == n and d["plans"][0]["tokens_per_s"] >= 200000
    tried = {x["nodes"]: x["best_tokens_per_s"] for x in d["sizing"]["node_counts_searched"]}
    assert all((t or 0) < 200000 for k, t in tried.items() if k < n)
    # brute force: no smaller node count reaches the target
    for k in range(1, n):
        ps = parplan.suggest("llama2-7b", {"name": "x", "groups": [{"device": "a100-sxm-80gb", "nodes": k,
                             "devices_per_node": 8, "intra_node": "nvlink3", "inter_node": "ib-hdr200",
                             "nics_per_node": 8}]}, top=1, global_batch=256)
        assert not ps or ps.best.tokens_per_s < 200000


def test_suggest_sizing_unreachable_exits_1():
    r = invoke("suggest", *SMALL, "--target-tokens-per-s", "1e9", "--quiet")
    assert r.exit_code == 1
    # without --max-nodes, sizing searches up to 4× the 100 %-MFU bound (issue 11), not only the cluster's 1 node
    assert "sizing: no node count up to 73,856 reaches 1,000,000,000 tokens/s" in r.stderr
    assert "up to 4× the 100 %-MFU bound as --max-nodes was not given); raise --max-nodes" in r.stderr


# --- check -----------------------------------------------------------------------------------------------------------
def test_check_passes_and_prints_the_plan(tmp_path):
    junit = tmp_path / "j.xml"
    r = invoke("check", *SMALL, "--min-tokens-per-s", "10000", "--min-mfu", "0.3", "--junit", junit, "--quiet")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("PASS  Llama 2 7B on dgx-a100-8 (8 devices): dp=")
    assert lines[1].startswith("  ok    tokens_per_s ") and lines[1].endswith(" ≥ 10,000")
    assert lines[2].startswith("  ok    memory_fraction ") and lines[2].endswith(" ≤ 1.000")
    assert lines[3].startswith("  ok    mfu ") and lines[3].endswith(" ≥ 0.300")
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "3" and suite.get("failures") == "0"
    assert [c.get("name") for c in suite.iter("testcase")] == ["min_tokens_per_s", "max_memory_fraction", "min_mfu"]


def test_check_fails_with_the_closest_plan_and_shortfalls(tmp_path):
    junit = tmp_path / "j.xml"
    r = invoke("check", *SMALL, "--min-tokens-per-s", "1000000", "--max-memory-fraction", "0.9", "--junit", junit,
               "--quiet")
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith("FAIL  no plan of Llama 2 7B on dgx-a100-8 (8 devices) meets every requirement (")
    assert "searched); closest: dp=" in lines[0]
    res = parplan.check("llama2-7b", "dgx-a100-8", min_tokens_per_s=1e6, max_memory_fraction=0.9, global_batch=64)
    tps = res.estimate.tokens_per_s
    short = 1e6 - tps
    assert lines[1] == f"  FAIL  tokens_per_s {tps:,.0f} < 1,000,000 (short by {short:,.0f}, {100 * short / 1e6:.1f} %)"
    assert lines[2].startswith("  ok    memory_fraction ") and lines[2].endswith(" ≤ 0.900")
    assert not res.ok and [f.name for f in res.failures] == ["min_tokens_per_s"]
    assert res.plan.to_string() in lines[0]
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "1"
    (fail,) = list(suite.iter("failure"))
    assert fail.get("message") == lines[1].strip()[len("FAIL  "):]


def test_check_given_plan_reports_over_by():
    r = invoke("check", *SMALL, "--plan", "tp=8", "--max-step-time-s", "1", "--quiet")
    assert r.exit_code == 1
    e = parplan.estimate("llama2-7b", "dgx-a100-8", "tp=8", global_batch=64)
    lines = r.stdout.splitlines()
    assert lines[0] == f"FAIL  Llama 2 7B on dgx-a100-8 (8 devices): {e.plan.to_string()}"
    over = e.step_time_s - 1
    assert lines[1] == (f"  FAIL  step_time_s {e.step_time_s:.4g} s > 1 s (over by {over:.4g} s, "
                        f"{100 * over:.1f} %)")


def test_check_given_plan_that_does_not_fit_fails_memory():
    r = invoke("check", "llama3-70b", "--hw", "dgx-a100-8", "--plan", "tp=8,zero=0")
    assert r.exit_code == 1
    assert "  FAIL  memory_fraction " in r.stdout and "> 1.000 (over by" in r.stdout


@pytest.mark.parametrize("args, message", [
    (("--plan", "tp=3"), "error: plan: tp×pp×cp = 3 does not divide the 8 devices"),
    (("--min-mfu", "2"), "error: --min-mfu: bad value 2: a fraction of peak, at most 1"),
    (("--min-tokens-per-s", "-5"), "error: --min-tokens-per-s: bad value -5: must be > 0"),
    (("--plan", "tp=8", "--fix", "pp=2"), "error: --fix: --fix pins the search; it cannot be combined with --plan"),
])
def test_check_bad_input_exit_2(args, message):
    r = invoke("check", *SMALL, *args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(message) and len(r.stderr.strip().splitlines()) == 1


def test_check_json():
    r = invoke("check", *SMALL, "--min-mfu", "0.99", "--format", "json", "--quiet")
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert d["ok"] is False and d["plans_passing"] == 0
    mfu = [x for x in d["requirements"] if x["name"] == "min_mfu"][0]
    assert mfu["ok"] is False and mfu["shortfall"] == pytest.approx(0.99 - mfu["actual"])


def test_api_check_result():
    res = parplan.check("llama2-7b", "dgx-a100-8", min_tokens_per_s=1000, global_batch=64)
    assert res.ok and bool(res) and res.failures == [] and res.plan == res.estimate.plan
    best = parplan.suggest("llama2-7b", "dgx-a100-8", top=1, global_batch=64).best
    assert res.plan == best.plan  # the passing plan reported is the fastest one
