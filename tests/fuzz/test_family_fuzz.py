"""Hostile inputs for the families with their own verbs (task-graph, dataflow, layer-chain, layer-training,
process-network, replicated-service, offload): hypothesis mutations of each family's example workload and hardware
files (a key deleted, an unknown key, a wrong type, negative / zero / huge / NaN / infinite numbers, empty lists,
10¹² counts, unicode, deep nesting, long lists) through the CLI (typer's CliRunner) and the public API, and bad
``--plan`` / ``--fix`` / ``--objective`` / ``--top`` / ``--tolerance`` / check bounds per family.

Every run: exit code 0, 1 or 2; never a traceback; exit 2 is one ``error: …`` line on stderr; ``--format json``
output is strict JSON whose numbers are finite; the public API raises nothing but ``SpecError``.  Huge inputs are
refused by the input limits (counts, list lengths, search and simulation budgets) or capped with a note: the alarm
below only turns a hang into a failure, it is not a timing assertion.  The family table and the strategies that
break its inputs are in ``family_inputs.py``.
"""
from __future__ import annotations

import importlib
import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from family_inputs import (ALL_OBJECTIVES, BY_ID, DOCS, FAMS, TOKENS, Fam, bad_plan, dump,
                           mutated)  # tests/fuzz is on sys.path (pytest's rootdir-relative import)
from parplan.cli.app import app
from parplan.errors import SpecError
from test_fuzz_cli import time_limit

runner = CliRunner()
# PARPLAN_FUZZ_SCALE=N: N times the examples, freshly drawn (a longer hunt); unset: the same small set each run
SCALE = int(os.environ.get("PARPLAN_FUZZ_SCALE", "0") or 0)
SETTINGS = dict(deadline=None, derandomize=not SCALE,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def examples(n: int) -> int:
    return n * max(SCALE, 1)


# --- the contract every run is held to ----------------------------------------------------------------------------
def _no_constant(name: str):
    raise AssertionError(f"{name} in JSON output")


def _finite(x, where="") -> None:  # json.loads reads 1e400 as inf: every number is checked
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    assert not isinstance(x, float) or math.isfinite(x), where
    for k, v in items:
        _finite(v, f"{where}/{k}")


def alarm(seconds: float = 60.0):
    """A safety net: a run past ``seconds`` (a missing input limit) fails instead of hanging the suite."""
    return time_limit(seconds)


def invoke(*argv: str):
    """One CLI run held to the contract; returns the result."""
    with alarm():
        r = runner.invoke(app, [str(a) for a in argv])
    assert "Traceback" not in r.output, r.output[-3000:]
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code in (0, 1, 2), (r.exit_code, r.output[-1000:])
    if r.exit_code == 2:
        assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr[:1000]
        assert len(r.stderr) <= 400, r.stderr[:1000]
    elif "json" in argv and r.stdout.strip():
        _finite(json.loads(r.stdout, parse_constant=_no_constant))
    return r


def api_call(fam: Fam, w: Path, h: Path) -> None:
    """The family's public API on the same files: a result or a SpecError, nothing else."""
    mod = importlib.import_module(fam.api)
    with alarm():
        try:
            if fam.id == "offload-heritage":
                mod.heritage(str(w), str(h))
            else:
                mod.suggest(str(w), str(h), top=2)
                mod.estimate(str(w), str(h))
        except SpecError as e:
            assert str(e) and "\n" not in str(e), str(e)


def error_line(r, *culprit: str) -> str:
    assert r.exit_code == 2, (r.exit_code, r.output[-800:])
    for c in culprit:
        assert c in r.stderr, (c, r.stderr)
    return r.stderr


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Each family's documents written once (the unmutated side of every example), as ``<id>-w.yaml`` and
    ``<id>-h.yaml``; the runs use names relative to it, so error lines are short and comparable."""
    d = tmp_path_factory.mktemp("family-fuzz")
    for f in FAMS:
        w, h = DOCS[f.id]
        (d / f"{f.id}-w.yaml").write_text(dump(w), encoding="utf-8")
        (d / f"{f.id}-h.yaml").write_text(dump(h), encoding="utf-8")
    return d


@pytest.fixture
def base(folder, monkeypatch) -> dict:
    monkeypatch.chdir(folder)
    return {f.id: (Path(f"{f.id}-w.yaml"), Path(f"{f.id}-h.yaml")) for f in FAMS}


def test_the_unmutated_examples_run(base):
    for f in FAMS:
        w, h = base[f.id]
        assert invoke("estimate", w, "--hw", h, "--format", "json").exit_code == 0, f.id


def _mutation_test(fam: Fam, side: str):
    doc = DOCS[fam.id][0 if side == "workload" else 1]

    @settings(max_examples=examples(6), **SETTINGS)
    @given(d=mutated(doc), verb=st.sampled_from(fam.verbs))
    def run(base, d, verb):
        w, h = base[fam.id]
        m = Path("m.yaml")
        m.write_text(dump(d), encoding="utf-8")
        w, h = (m, h) if side == "workload" else (w, m)
        invoke(verb, w, "--hw", h, "--format", "json")
        api_call(fam, w, h)

    return run


@pytest.mark.parametrize("side", ["workload", "hardware"])
@pytest.mark.parametrize("fid", [f.id for f in FAMS])
def test_mutated_files(fid, side, base):
    _mutation_test(BY_ID[fid], side)(base)


# --- bad --plan / --fix / --objective strings ------------------------------------------------------------------
PLAN_FAMS = [f for f in FAMS if f.plan]


@pytest.mark.parametrize("fid", [f.id for f in PLAN_FAMS])
def test_bad_plan_strings(fid, base):
    fam = BY_ID[fid]
    w, h = base[fid]
    verbs = [v for v in ("estimate", "check", "simulate", "validate") if v in fam.verbs]

    @settings(max_examples=examples(8), **SETTINGS)
    @given(plan=bad_plan(fam.plan), verb=st.sampled_from(verbs))
    def run(plan, verb):
        invoke(verb, w, "--hw", h, "--plan", plan, "--format", "json")

    run()


@pytest.mark.parametrize("fid", [f.id for f in FAMS if f.fix])
def test_bad_fix_strings(fid, base):
    fam = BY_ID[fid]
    w, h = base[fid]
    fix = st.one_of(st.builds(lambda k, v: f"{k}={v}", st.sampled_from(fam.fix), TOKENS),
                    st.sampled_from(["", "=", "threads", "bogus=1", "=1", "a=b=c"]), st.text(max_size=12))

    @settings(max_examples=examples(8), **SETTINGS)
    @given(fixes=st.lists(fix, min_size=1, max_size=3))
    def run(fixes):
        invoke("suggest", w, "--hw", h, *[a for x in fixes for a in ("--fix", x)], "--format", "json", "--top", "2")

    run()


@pytest.mark.parametrize("fid", [f.id for f in FAMS])
def test_objectives(fid, base):
    """Every family's own objectives run; every other string is one error line naming --objective."""
    fam = BY_ID[fid]
    w, h = base[fid]

    @settings(max_examples=examples(5), **SETTINGS)
    @given(obj=st.one_of(st.sampled_from(ALL_OBJECTIVES + ["", "🚀", "x" * 5000, "LATENCY", " time"]),
                         st.text(max_size=8)))
    def run(obj):
        r = invoke("suggest", w, "--hw", h, "--objective", obj, "--top", "2", "--format", "json")
        if obj in fam.objectives:
            assert r.exit_code in (0, 1), r.output[-500:]
        elif r.exit_code == 2 and obj not in ALL_OBJECTIVES:
            assert "--objective" in r.stderr, r.stderr

    run()


# --- what the fuzzing found, pinned ------------------------------------------------------------------------------
@pytest.mark.parametrize("fid,objective", [("layer-chain", "time"), ("layer-chain", "edp"),
                                           ("layer-chain-dag", "🚀"), ("layer-chain-dag", "x" * 5000)])
def test_layerchain_unknown_objective_is_refused(fid, objective, base):
    w, h = base[fid]
    error_line(invoke("suggest", w, "--hw", h, "--objective", objective), "error: --objective: bad value",
               "allowed: latency, throughput, energy, availability")
    with pytest.raises(SpecError, match="--objective"):
        importlib.import_module("parplan.layerchain").suggest(str(w), str(h), objective=objective)


@pytest.mark.parametrize("fid,fix,culprit", [
    ("layer-training-admm", "workers=0", "--fix workers: bad value 0: workers is a whole number in 1..8"),
    ("layer-training", "workers=-3", "--fix workers: bad value -3"),
    ("layer-training", "workers=" + "9" * 40, "--fix workers"),
    ("layer-training-admm", "bits=0", "--fix bits: bad value 0: bits is a whole number in 1..32"),
    ("replicated-service", "rings=0", "--fix rings: bad value 0: rings is a whole number in 1..64"),
    ("replicated-service", "batch=-1", "--fix batch: bad value -1"),
    ("replicated-service", "threads=" + "9" * 40, "--fix threads"),
])
def test_fix_values_out_of_range_are_refused(fid, fix, culprit, base):
    w, h = base[fid]
    error_line(invoke("suggest", w, "--hw", h, "--fix", fix), culprit)


@pytest.mark.parametrize("api,fix", [("parplan.replication", {"rings": 0}), ("parplan.replication", {"threads": 10**9}),
                                     ("parplan.layertrain", {"workers": 0}), ("parplan.layertrain", {"bits": 99})])
def test_api_fix_values_out_of_range_are_refused(api, fix, base):
    w, h = base["replicated-service" if "replication" in api else "layer-training-admm"]
    with pytest.raises(SpecError, match="--fix"):
        importlib.import_module(api).suggest(str(w), str(h), fix=fix)


@pytest.mark.parametrize("value", ["-1", "0", "1", "nan", "inf"])
@pytest.mark.parametrize("fid", ["task-graph", "dataflow-nest", "layer-chain", "layer-training", "process-network",
                                 "replicated-service", "offload"])
def test_validate_tolerance_out_of_range_is_refused(fid, value, base):
    w, h = base[fid]
    error_line(invoke("validate", w, "--hw", h, "--tolerance", value), "error: --tolerance: bad value")


@pytest.mark.parametrize("option,value", [("--max-step-time-s", "-1"), ("--max-step-time-s", "0"),
                                          ("--min-tokens-per-s", "-5"), ("--min-tokens-per-s", "0")])
@pytest.mark.parametrize("fid", ["task-graph", "dataflow-nest", "layer-chain", "layer-training", "process-network",
                                 "replicated-service", "offload"])
def test_check_bounds_must_be_positive(fid, option, value, base):
    w, h = base[fid]
    r = invoke("check", w, "--hw", h, option, value)
    if option == "--min-tokens-per-s" and fid in ("task-graph", "offload"):
        error_line(r, "--min-tokens-per-s does not apply")  # these families have no throughput requirement
    else:
        error_line(r, f"error: {option}: bad value {value}: must be > 0")


@pytest.mark.parametrize("fid,top,culprit", [
    ("layer-chain-dag", "100000000000000000000", "--top: bad value 100000000000000000000: must be between 1 and 20"),
    ("layer-chain", "0", "--top: bad value 0: must be between 1 and 20"),
    ("process-network", "51", "--top: bad value 51: must be between 1 and 50"),
    ("replicated-service", "3", "--top does not apply"),
    ("offload", "3", "--top does not apply"),
    ("dataflow-nest", "3", "--top does not apply"),
    ("layer-training", "3", "--top does not apply"),
    ("task-graph", "3", "--top does not apply"),
])
def test_validate_top_is_bounded_or_refused(fid, top, culprit, base):
    w, h = base[fid]
    error_line(invoke("validate", w, "--hw", h, "--top", top), culprit)


def _space(name: str, fid: str, base) -> tuple:
    """(search, spec, hardware) of a family's planner on its base files."""
    w, h = (str(p) for p in base[fid])
    if name == "layerchain":
        from parplan.hardware.edge import load_edge_cluster
        from parplan.planner.spaces.layerchain import search
        from parplan.workloads.layerchain import load_layerchain

        return search, load_layerchain(w), load_edge_cluster(h)
    if name == "layertrain":
        from parplan.layertrain import load
        from parplan.planner.spaces.layertrain import search

        return (search, *load(w, h))
    from parplan.hardware.cpu import load_cpu_machine
    from parplan.planner.spaces.replication import search
    from parplan.workloads.replication import load_replication

    return search, load_replication(w), load_cpu_machine(h)


@pytest.mark.parametrize("name,fid,kw,culprit", [
    ("layerchain", "layer-chain-dag", {"objective": "edp"}, "--objective: bad value 'edp' (allowed: latency"),
    ("layerchain", "layer-chain", {"objective": "latenc"}, "did you mean 'latency'?"),
    ("layertrain", "layer-training-admm", {"fix": {"workers": 0}}, "--fix workers: bad value 0: workers is a whole"),
    ("layertrain", "layer-training", {"fix": {"bits": 99}}, "--fix bits: bad value 99"),
    ("replication", "replicated-service", {"fix": {"rings": 0}}, "--fix rings: bad value 0: rings is a whole"),
    ("replication", "replicated-service", {"fix": {"threads": True}}, "--fix threads: bad value True"),
])
def test_planner_searches_refuse_what_their_api_refuses(name, fid, kw, culprit, base):
    """The guards live in the searches themselves: a direct call is refused as the public API's is."""
    search, spec, hw = _space(name, fid, base)
    with pytest.raises(SpecError) as err:
        search(spec, hw, top=1, **kw)
    assert culprit in str(err.value), str(err.value)
