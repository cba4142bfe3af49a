"""DiT inference verbs through the CLI (typer's CliRunner): estimate, suggest, check, simulate, validate on the
example workload; bad input exits 2 with one line."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
HW = "h100-sxm-80gb:2x8"


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def ex(root):
    return root / "examples/dit-flux-64k.yaml"


def test_estimate_table_and_json(ex):
    r = run("estimate", ex, "--hw", HW, "--plan", "sp=usp,u=8,r=2")
    assert r.exit_code == 0, r.output
    assert "one denoising step" in r.stdout and "sp_comm" in r.stdout
    j = json.loads(run("estimate", ex, "--hw", HW, "--plan", "sp=torus,u=2,r=8,chunks=2", "--format", "json").stdout)
    assert j["kind"] == "dit-estimate" and j["step_s"] == pytest.approx(sum(j["breakdown_s"].values()))


def test_suggest_check_simulate_validate(ex):
    r = run("suggest", ex, "--hw", HW, "--top", "3")
    assert r.exit_code == 0 and "best plans by latency" in r.stdout
    r = run("suggest", ex, "--hw", HW, "--fix", "sp=torus", "--format", "csv")
    assert r.exit_code == 0 and r.stdout.startswith("rank,sp")
    assert run("check", ex, "--hw", HW).exit_code == 0
    assert run("check", ex, "--hw", HW, "--max-step-time-s", "1e-6").exit_code == 1
    r = run("simulate", ex, "--hw", HW, "--plan", "sp=usp,u=8,r=2")
    assert r.exit_code == 0 and "closed form" in r.stdout
    r = run("validate", ex, "--hw", HW, "--plan", "sp=usp,u=8,r=2", "--plan", "sp=torus,u=2,r=8,chunks=2")
    assert r.exit_code == 0 and "2/2 within" in r.stdout


@pytest.mark.parametrize("args", [("estimate", "--plan", "sp=nope"), ("estimate", "--seq-len", "5"),
                                  ("suggest", "--objective", "energy"), ("suggest", "--fix", "u=abc"),
                                  ("validate", "--tolerance", "2")])
def test_bad_input_exit_2(ex, args):
    r = run(args[0], ex, "--hw", HW, *args[1:])
    assert r.exit_code == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.output
