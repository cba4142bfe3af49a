"""`parplan simulate --serve` and `parplan validate --serve` through typer's CliRunner: outputs and exit codes."""
from __future__ import annotations

import io
import json

import pandas as pd
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.cli.json_out import check_document

runner = CliRunner()
HW = ("llama3-8b", "--hw", "dgx-h100-64")
DEP = "tp=1,batch=64,chunk=2048,replicas=1"


def serve_file(tmp_path, **kw):
    p = tmp_path / "serve.yaml"
    body = {"isl": 1024, "osl": 64, "arrival_rate_per_s": 2.0, **kw}
    p.write_text("\n".join(f"{k}: {json.dumps(v)}" for k, v in body.items()) + "\n")
    return p


def envelope_problems(doc) -> list[str]:
    """``check_document`` less the training export columns (serving plan objects carry serving keys instead)."""
    return [b for b in check_document(doc) if "export columns" not in b]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_simulate_serve_table_json_csv(tmp_path):
    sv = serve_file(tmp_path)
    r = invoke("simulate", *HW, "--serve", sv, "--deployment", DEP, "--requests", 200)
    assert r.exit_code == 0, r.output
    for text in ("simulated serving", "TTFT p50 / p90 / p99", "TPOT", "ITL", "warm-up 20", "per pool", "KV cache"):
        assert text in r.stdout
    r = invoke("simulate", *HW, "--serve", sv, "--deployment", DEP, "--requests", 200, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert envelope_problems(doc) == [] and doc["kind"] == "simulate"
    sim = doc["plans"][0]["simulated"]
    assert sim["n_requests"] == 200 and sim["ttft_s"]["p99"] >= sim["ttft_s"]["p50"] > 0
    r = invoke("simulate", *HW, "--serve", sv, "--deployment", DEP, "--requests", 200, "--format", "csv")
    assert r.exit_code == 0, r.output
    assert pd.read_csv(io.StringIO(r.stdout))["ttft_s_p99"].iloc[0] > 0


def test_validate_serve_exit_codes_and_json(tmp_path):
    sv = serve_file(tmp_path)
    r = invoke("validate", *HW, "--serve", sv, "--deployment", DEP, "--deployment",
               "prefill:1x(tp=1)+decode:1x(tp=1,batch=64)", "--requests", 200, "--tolerance", 0.99, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    assert envelope_problems(doc) == [] and doc["kind"] == "validate" and len(doc["plans"]) == 2
    assert {"diff_tpot_s", "simulated_ttft_p99_s", "analytical_ttft_p99_s"} <= set(doc["plans"][0])
    assert (r.exit_code == 0) == doc["ok"]
    r = invoke("validate", *HW, "--serve", sv, "--deployment", DEP, "--requests", 200, "--tolerance", 0.001)
    assert r.exit_code == 1 and "DIFFERS" in r.stdout


def test_serve_refusals_are_one_line(tmp_path):
    sv = serve_file(tmp_path)
    for args in (("simulate", *HW, "--serve", sv),  # no --deployment
                 ("simulate", *HW, "--serve", sv, "--deployment", DEP, "--plan", "tp=1"),
                 ("simulate", *HW, "--serve", sv, "--deployment", DEP, "--max-events", 100),
                 ("simulate", *HW, "--serve", sv, "--deployment", DEP, "--requests", 1),
                 ("validate", *HW, "--serve", sv),
                 ("validate", *HW, "--serve", sv, "--top", 100)):
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    r = invoke("simulate", *HW, "--serve", sv, "--deployment", DEP, "--max-events", 100)
    assert "--max-events" in r.stderr and "100" in r.stderr
