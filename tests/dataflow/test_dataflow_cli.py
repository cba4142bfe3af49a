"""Dataflow family through the shared verbs (typer CliRunner on parplan.cli.app): the issue's done-when (a Cholesky
planned on a DSP with a breakdown), JSON/CSV, check exit codes, simulate/validate, and bad input → exit 2."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.models.dataflow_terms import TIME_PARTS
from parplan.workloads.registry import verbs_for

runner = CliRunner()


def invoke(*args):
    r = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output
    return r


def test_verbs_for_sniffs_dataflow_files(root):
    assert verbs_for(str(root / "examples/cholesky-dsp.yaml")).__name__ == "parplan.cli.dataflow_out"


def test_done_when_suggest_cholesky_on_c6678(root):
    r = invoke("suggest", root / "examples/cholesky-dsp.yaml", "--hw", "c6678")
    assert r.exit_code == 0, r.output
    for word in ("cholesky-64 on c6678", "cores", "sync", "ctrl", "dep", "latency"):
        assert word in r.stdout
    j = invoke("suggest", root / "examples/cholesky-dsp.yaml", "--hw", "c6678", "--format", "json", "--top", "4")
    rows = json.loads(j.stdout)["plans"]
    assert len(rows) == 4 and rows[0]["total_s"] <= rows[-1]["total_s"]
    for row in rows:
        assert sum(row[k] for k in TIME_PARTS) == pytest.approx(row["total_s"], rel=1e-9)
    e = invoke("suggest", root / "examples/cholesky-dsp.yaml", "--hw", "c6678", "--objective", "energy",
               "--format", "csv")
    assert e.exit_code == 0 and e.stdout.startswith("rank,")


def test_estimate_breakdown_and_json(root):
    r = invoke("estimate", root / "examples/cholesky-dsp.yaml", "--hw", "revel-8lane", "--plan", "cores=8,unroll=2")
    assert r.exit_code == 0 and "latency breakdown" in r.stdout and "energy breakdown" in r.stdout
    j = json.loads(invoke("estimate", root / "examples/cholesky-dsp.yaml", "--hw", "c6678", "--format",
                          "json").stdout)
    assert sum(j["breakdown_s"].values()) == pytest.approx(j["total_s"])
    assert sum(j["energy_breakdown_j"].values()) == pytest.approx(j["energy_j"])


def test_t1_through_the_cli(root):
    j = json.loads(invoke("estimate", root / "examples/dataflow-conv1d-t1.yaml", "--hw",
                          root / "examples/dataflow-t1-arch.yaml", "--format", "json").stdout)
    assert j["cycles"] == 48 and round(j["energy_j"] * 1e12, 2) == 102.86


def test_check_simulate_validate(root):
    w = root / "examples/cholesky-dsp.yaml"
    assert invoke("check", w, "--hw", "c6678", "--max-step-time-s", "1").exit_code == 0
    assert invoke("check", w, "--hw", "c6678", "--max-step-time-s", "1e-7").exit_code == 1
    assert invoke("check", w, "--hw", "c6678", "--min-tokens-per-s", "1e9").exit_code == 1
    s = invoke("simulate", w, "--hw", "c6678", "--plan", "cores=4")
    assert s.exit_code == 0 and "simulated" in s.stdout
    v = invoke("validate", w, "--hw", "revel-8lane")
    assert v.exit_code == 0 and "12/12 within" in v.stdout


@pytest.mark.parametrize("args, needle", [
    (("--hw", "c6679"), "did you mean 'c6678'"),
    (("--hw", "eyeriss-256"), "vector-core"),
    (("--hw", "hexagon-680-hvx"), "no fp32 datapath"),
    (("--hw", "c6678", "--objective", "cost"), "--objective"),
    (("--hw", "c6678", "--fix", "cores=99"), "cores"),
    (("--hw", "c6678", "--fix", "lanes=2"), "unknown key"),
    (("--hw", "c6678", "--fix", "unroll=0"), "--fix unroll"),  # was priced: a row of nan
    (("--hw", "c6678", "--fix", "unroll=-3"), "--fix unroll"),  # was priced: a plan unrolled −3 times
    (("--hw", "c6678", "--fix", "unroll=999999999999999999999"), "--fix unroll"),
    (("--hw", "c6678", "--global-batch", "8"), "does not apply"),
])
def test_bad_input_exits_2(root, args, needle):
    r = invoke("suggest", root / "examples/cholesky-dsp.yaml", *args)
    assert r.exit_code == 2 and needle in r.stderr


def test_bad_plan_and_workload_exit_2(root, tmp_path):
    w = root / "examples/cholesky-dsp.yaml"
    for plan, needle in (("cores=0", "cores"), ("vector=maybe", "vector"), ("sync=stream", "no 'stream'"),
                         ("unroll=99", "unroll"), ("foo=1", "unknown plan key")):
        r = invoke("estimate", w, "--hw", "c6678", "--plan", plan)
        assert r.exit_code == 2 and needle in r.stderr, (plan, r.stderr)
    f = tmp_path / "bad.yaml"
    f.write_text("family: dataflow\nname: b\nkernel: {name: cholesky, n: -3}\n")
    assert invoke("estimate", f, "--hw", "c6678").exit_code == 2
    f.write_text("family: dataflow\nname: b\nkernel: {name: lu, n: 8}\n")
    r = invoke("estimate", f, "--hw", "c6678")
    assert r.exit_code == 2 and "cholesky" in r.stderr


def _arch(root, tmp_path, edit) -> "Path":
    import yaml

    doc = yaml.safe_load((root / "examples/dataflow-t1-arch.yaml").read_text(encoding="utf-8"))
    edit(doc)
    f = tmp_path / "arch.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return f


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d.update(clock_ghz=5e-324), "clock_ghz"),  # the latency was inf s, and check PASSed it
    (lambda d: d["storage"][0].update(read_bandwidth=5e-324), "read_bandwidth"),
    (lambda d: d["storage"].append(dict(d["storage"][0])), "'Buffer' is used 2 times"),  # one level's energy was lost
])
def test_architectures_the_model_cannot_price_exit_2(root, tmp_path, edit, needle):
    hw = _arch(root, tmp_path, edit)
    for verb in ("estimate", "check"):
        r = invoke(verb, root / "examples/dataflow-conv1d-t1.yaml", "--hw", hw)
        assert r.exit_code == 2 and needle in r.stderr, (verb, r.output)


def test_a_level_mapped_twice_exits_2(root, tmp_path):
    import yaml

    doc = yaml.safe_load((root / "examples/dataflow-conv1d-t1.yaml").read_text(encoding="utf-8"))
    doc["mapping"] = [{"level": "Buffer", "temporal": {"P": 4}}, {"level": "Buffer", "temporal": {"P": 4, "R": 3}}]
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = invoke("estimate", f, "--hw", root / "examples/dataflow-t1-arch.yaml")
    assert r.exit_code == 2 and "two mapping entries" in r.stderr, r.output


def test_a_problem_dtype_the_words_do_not_match_is_noted(tmp_path):
    # fp64 on the 16-bit Eyeriss priced exactly like int8, silently
    f = tmp_path / "p.yaml"
    f.write_text("family: dataflow\nname: p\nproblem: {shape: conv2d, dims: {C: 4, K: 4}, dtype: fp64}\n")
    r = invoke("estimate", f, "--hw", "eyeriss-168")
    assert r.exit_code == 0 and "fp64 is priced in the architecture's words (16-bit)" in r.stdout, r.output
