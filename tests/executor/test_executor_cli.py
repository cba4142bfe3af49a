"""`parplan simulate` and `parplan validate` through typer's CliRunner: outputs and exit codes."""
from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
SMALL = ("llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "32")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_simulate_table():
    r = invoke("simulate", *SMALL, "--plan", "tp=2,pp=2,mbs=1,zero=1")
    assert r.exit_code == 0, r.output
    for text in ("simulated step", "step time", "analytical", "exposed comm", "bubble", "per device", "stage 1",
                 "links"):
        assert text in r.stdout


def test_simulate_json_and_trace(tmp_path):
    trace = tmp_path / "trace.json"
    r = invoke("simulate", *SMALL, "--plan", "tp=2,pp=2,mbs=1,zero=1", "--format", "json", "--trace", trace)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    # the JSON envelope (issue 11): the simulated step beside the plan's analytical object
    assert d["kind"] == "simulate" and d["plans"][0]["simulated_step_time_s"] == d["simulated_step_time_s"]
    assert d["schedule"] == "1f1b" and d["simulated_step_time_s"] > 0 and len(d["devices"]) == 2
    assert set(d["exposed_comm_s"]) == {"tp", "pp_p2p", "dp"}
    t = json.loads(trace.read_text())
    assert any(e["ph"] == "X" for e in t["traceEvents"])


def test_simulate_csv_per_device():
    r = invoke("simulate", *SMALL, "--plan", "tp=1,pp=4,mbs=1,zero=0", "--format", "csv", "--schedule", "gpipe")
    assert r.exit_code == 0, r.output
    df = pd.read_csv(io.StringIO(r.stdout))
    assert list(df.stage) == [0, 1, 2, 3] and {"bubble_s", "peak_activation_bytes", "busy_s"} <= set(df.columns)


def test_simulate_slowdown_slows_the_step():
    def step(*extra):
        r = invoke("simulate", *SMALL, "--plan", "tp=1,pp=4,mbs=1,zero=0", "--format", "json", *extra)
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["simulated_step_time_s"]  # the JSON envelope (issue 11)

    base = step()
    assert step("--slowdown", "stage:1=2") > 1.5 * base
    assert step("--slowdown", "3=1.5,stage:0=1.0") > base  # rank 3 = stage 1 of replica 0 (tp=1)


@pytest.mark.parametrize("args,fragment", [
    (("--plan", "tp=1,pp=4,mbs=1", "--slowdown", "stage:9=2"), "stage 9 out of range"),
    (("--plan", "tp=1,pp=4,mbs=1", "--slowdown", "fast"), "expected DEVICE=FACTOR"),
    (("--plan", "tp=1,pp=4,mbs=1", "--slowdown", "1=-2"), "positive"),
    (("--plan", "tp=1,pp=4,mbs=1", "--schedule", "pipedream"), "unknown schedule"),
    (("--plan", "tp=1,pp=4,vpp=2,mbs=1", "--schedule", "1f1b"), "vpp=2"),
    (("--plan", "tp=3,pp=1"), "does not divide"),
    (("--plan", "tp=1,pp=4,mbs=1", "--mode", "sideways"), "unknown mode"),
])
def test_simulate_errors_are_one_line_exit_2(args, fragment):
    r = invoke("simulate", *SMALL, *args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0]


def test_full_mode_limited_to_64_devices():
    r = invoke("simulate", "llama3-405b", "--hw", "h100-16384", "--plan", "tp=8,pp=16,mbs=1", "--mode", "full")
    assert r.exit_code == 2 and "64 devices" in r.stderr


def test_validate_agreement_exit_0():
    r = invoke("validate", *SMALL, "--plan", "tp=2,pp=2,mbs=1,zero=1", "--plan", "tp=1,pp=1,mbs=1,zero=2")
    assert r.exit_code == 0, r.output
    assert "analytical vs simulated" in r.stdout and r.stdout.count("ok") >= 2


def test_validate_beyond_tolerance_exit_1():
    r = invoke("validate", *SMALL, "--plan", "tp=1,pp=4,mbs=1,zero=0", "--tolerance", "0.000001", "--format", "json")
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert d["ok"] is False and d["plans"][0]["ok"] is False
    assert {"analytical_step_s", "simulated_step_s", "step_diff", "analytical_memory_bytes",
            "simulated_memory_bytes", "memory_diff"} <= set(d["plans"][0])


def test_validate_csv():
    r = invoke("validate", *SMALL, "--plan", "tp=2,pp=2,mbs=1,zero=1", "--format", "csv")
    assert r.exit_code == 0, r.output
    df = pd.read_csv(io.StringIO(r.stdout))
    assert len(df) == 1 and abs(df.step_diff[0]) < 0.05


@pytest.mark.parametrize("args,fragment", [
    ((), "either --plan"),
    (("--plan", "tp=2", "--top", "3"), "either --plan"),
    (("--plan", "tp=2", "--tolerance", "2"), "tolerance"),
    (("--top", "0"), "must be ≥ 1"),
])
def test_validate_usage_errors_exit_2(args, fragment):
    r = invoke("validate", *SMALL, *args)
    assert r.exit_code == 2, r.output
    assert fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_validate_top_uses_the_planner():
    r = invoke("validate", *SMALL, "--top", "2", "--format", "json")
    try:
        import parplan

        parplan.suggest  # noqa: B018
    except (ImportError, AttributeError):
        assert r.exit_code == 2 and "planner" in r.stderr
        return
    assert r.exit_code in (0, 1), r.output
    d = json.loads(r.stdout)
    assert 1 <= len(d["plans"]) <= 2
