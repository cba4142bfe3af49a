"""`parplan suggest/estimate/check --serve` through typer's CliRunner."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
HW = "h100-sxm-80gb:1x8"


def invoke(*args):
    return runner.invoke(app, list(args))


def test_suggest_serve_table_done_when(root):
    r = invoke("suggest", "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"), "--top", "5")
    assert r.exit_code == 0, r.output
    for text in ("TTFT p99 ms", "TPOT p50 ms", "tok/s/GPU", "80 % interval", "Pareto"):
        assert text in r.stdout


def test_suggest_serve_json_envelope(root):
    r = invoke("suggest", "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"),
               "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "suggest" and doc["plans"] and doc["pareto"] and doc["serving"]["isl"]["mean"] == 2048
    p = doc["plans"][0]
    assert p["rank"] == 1 and p["slo_ok"] and p["ttft_p99_s"] <= 1.0 and p["tpot_p50_s"] <= 0.05
    assert isinstance(p["memory_peak_bytes"], int)


def test_suggest_serve_csv(root):
    r = invoke("suggest", "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"),
               "--format", "csv", "--quiet")
    assert r.exit_code == 0 and r.stdout.startswith("rank,plan,")


def test_suggest_serve_infeasible_says_why(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("isl: 2048\nosl: 256\nconcurrency: 64\nslo: {ttft_p99_s: 0.001}\n")
    r = invoke("suggest", "llama3-70b", "--hw", HW, "--serve", str(p))
    assert r.exit_code == 1
    assert "ttft_p99_s 0.001 is out of reach" in r.stderr


def test_estimate_serve(root):
    r = invoke("estimate", "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"),
               "--deployment", "tp=8,batch=64,chunk=2048")
    assert r.exit_code == 0, r.output
    for text in ("TTFT p50 / p99", "decode iteration", "prefill of one prompt", "kv_cache", "tp_comm"):
        assert text in r.stdout


def test_check_serve_exit_codes(root, tmp_path):
    serve = str(root / "examples/serve-chat.yaml")
    assert invoke("check", "llama3-70b", "--hw", HW, "--serve", serve).exit_code == 0
    r = invoke("check", "llama3-70b", "--hw", HW, "--serve", serve, "--deployment", "tp=8,batch=512")
    assert r.exit_code in (0, 1) and ("PASS" in r.stdout or "FAIL" in r.stdout)
    p = tmp_path / "s.yaml"
    p.write_text("isl: 2048\nosl: 256\nslo: {tpot_s: 0.0001}\n")
    r = invoke("check", "llama3-70b", "--hw", HW, "--serve", str(p), "--deployment", "tp=8")
    assert r.exit_code == 1 and "FAIL tpot_s" in r.stdout


def test_bad_serve_yaml_exit_2_one_line(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("isl: 2048\nosl: 256\nslo: {ttft_p99: 1}\n")
    r = invoke("suggest", "llama3-70b", "--hw", HW, "--serve", str(p))
    assert r.exit_code == 2
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "ttft_p99" in lines[0] and "unknown key" in lines[0]
    r = invoke("estimate", "llama3-70b", "--hw", HW, "--serve", str(p.parent / "missing.yaml"), "--deployment", "tp=8")
    assert r.exit_code == 2
    r = invoke("estimate", "llama3-70b", "--hw", HW, "--serve", str(p), "--deployment", "tp=3")
    assert r.exit_code == 2
