"""Hostile inputs for the families with their own verbs (task-graph, dataflow, layer-chain, layer-training,
process-network, replicated-service, offload): hypothesis mutations of each family's example workload and hardware
files (a key deleted, an unknown key, a wrong type, negative / zero / huge / NaN / infinite numbers, empty lists,
10¹² counts, unicode, deep nesting, long lists) through the CLI (typer's CliRunner) and the public API, and bad
``--plan`` / ``--fix`` / ``--objective`` / ``--top`` / ``--tolerance`` / check bounds per family.

Every run: exit code 0, 1 or 2; never a traceback; exit 2 is one ``error: …`` line on stderr; ``--format json``
output is strict JSON whose numbers are finite; the public API raises nothing but ``SpecError``.  Huge inputs are
refused by the input limits (counts, list lengths, search and simulation budgets) or capped with a note: the alarm
below only turns a hang into a failure, it is not a timing assertion.
"""
from __future__ import annotations

import copy
import importlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from test_fuzz_cli import time_limit  # tests/fuzz is on sys.path (pytest's rootdir-relative import)

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
# PARPLAN_FUZZ_SCALE=N: N times the examples, freshly drawn (a longer hunt); unset: the same small set each run
SCALE = int(os.environ.get("PARPLAN_FUZZ_SCALE", "0") or 0)
SETTINGS = dict(deadline=None, derandomize=not SCALE,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def examples(n: int) -> int:
    return n * max(SCALE, 1)


def _yaml(path: str):
    return yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))


def _seed(module: str):
    return importlib.import_module(module)  # benchmarks/ is on sys.path (tests/conftest.py)


@dataclass(frozen=True)
class Fam:
    """One family scenario: its workload and hardware documents, the verbs cheap enough to fuzz on it, a valid plan
    string, its --fix keys and --objective values, and the public API module."""
    id: str
    workload: object  # a repository path or a callable returning the document
    hardware: object
    verbs: tuple
    plan: str | None
    fix: tuple
    objectives: tuple
    api: str

    def docs(self) -> tuple:
        return tuple(x() if callable(x) else _yaml(x) for x in (self.workload, self.hardware))


CHEAP = ("estimate", "suggest", "check", "simulate", "validate")
FAMS = [
    Fam("task-graph", "examples/stencil.yaml", "examples/epyc-2s.yaml", ("estimate", "suggest", "check", "simulate"),
        "runtime=libgomp,threads=64,sockets=2,grain=32,ranks=1", ("runtime", "threads", "sockets", "grain", "ranks"),
        ("time",), "parplan.tasks"),
    Fam("dataflow-nest", "examples/cholesky-dsp.yaml", "catalogs/hardware/dsps/c6678.yaml", CHEAP,
        "cores=8,vector=on,unroll=1,sync=barrier", ("cores", "vector", "unroll", "sync"),
        ("latency", "energy", "edp"), "parplan.dataflow"),
    Fam("dataflow-mapping", "examples/dataflow-conv1d-t1.yaml", "examples/dataflow-t1-arch.yaml",
        ("estimate", "suggest", "check"), None, (), ("latency", "energy", "edp"), "parplan.dataflow"),
    Fam("layer-chain", "examples/vit-edge.yaml", "examples/edge-4pi-server.yaml", CHEAP, "stages=server:1-48", (),
        ("latency", "throughput", "energy"), "parplan.layerchain"),
    Fam("layer-chain-dag", lambda: _seed("seed_cecpa").workload(), lambda: _seed("seed_cecpa").cluster(50),
        ("estimate", "suggest", "check", "simulate"),
        "place=prior:edge-0/cls_mlp:edge-1/cls_dae:cloud/cls_tcn:cloud/fusion:edge-1", (),
        ("latency", "throughput", "availability"), "parplan.layerchain"),
    Fam("layer-chain-training", lambda: _seed("seed_pipar").workload("vgg16"),
        lambda: _seed("seed_pipar").cluster(50), ("estimate", "suggest", "check", "simulate"), None, (),
        ("latency", "throughput"), "parplan.layerchain"),
    Fam("layer-training", "examples/vgg16-splitbrain.yaml", "catalogs/clusters/v100-eth10-4.yaml", CHEAP,
        "method=hybrid,workers=4,modes=13D3M", ("method", "workers", "bits"), ("time", "memory"),
        "parplan.layertrain"),
    Fam("layer-training-admm", "examples/gamlp-admm.yaml", "catalogs/clusters/v100-pcie3-8.yaml", CHEAP,
        "method=admm,workers=8,bits=8", ("method", "workers", "bits"), ("time", "memory"), "parplan.layertrain"),
    Fam("process-network", "examples/subtitling.yaml", "catalogs/platforms/odroid-xu4.yaml", CHEAP,
        "decode=ffmpegx1@a15,speech-to-text=dnn-largex1@a15,translate=nmtx1@a15,render=overlayx1@a15",
        ("decode", "speech-to-text", "translate", "render"), ("pareto", "throughput", "energy", "quality"),
        "parplan.variants"),
    Fam("replicated-service", "examples/kv-store.yaml", "catalogs/cpu_clusters/smr-3x-16c-10gbe.yaml",
        ("estimate", "suggest", "check"), "scheme=psmr,threads=16,rings=1,batch=1",
        ("scheme", "threads", "rings", "batch"), ("throughput", "latency"), "parplan.replication"),
    Fam("offload", "examples/mandelbrot-offload.yaml", "catalogs/offload_nodes/caf-k40-phi.yaml", CHEAP,
        "place=tesla-k40,resident=true,chunks=1,api=actor,n=1e+08", ("place", "resident", "chunks", "api", "n"),
        ("time",), "parplan.offload"),
    Fam("offload-chain", "examples/offload-chain.yaml", "catalogs/offload_nodes/caf-k40-phi.yaml", CHEAP, None,
        ("place", "resident", "chunks", "api", "n"), ("time",), "parplan.offload"),
    Fam("offload-heritage", "examples/offload-heritage.yaml", "catalogs/offload_nodes/heritage-rtx4090.yaml",
        ("estimate", "suggest"), None, (), ("time",), "parplan.offload"),
]
BY_ID = {f.id: f for f in FAMS}
DOCS = {f.id: f.docs() for f in FAMS}


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


# --- mutations of the documents -----------------------------------------------------------------------------------
def _deep(n: int):
    v: object = 1
    for _ in range(n):
        v = {"k": v}
    return v


SPECIAL = [None, True, False, 0, -1, 1, 0.5, -0.0, 10**6, 10**12, 10**30, 1e300, -1e300, math.nan, math.inf,
           -math.inf, "", "x", "模型-α 🚀 \u202eÜ", "\x1b[31mred", "1e999 GB", "-5 us", "nan s", "inf GB/s",
           "0 GB/s", "x" * 2000, [], {}, [1, 2], [[[]]], {"k": "v"}, _deep(30), _deep(80)]
VALUES = st.one_of(st.sampled_from(SPECIAL), st.integers(-10**13, 10**13),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                   st.lists(st.integers(-3, 10**6), max_size=4))


def paths(d, pre=()) -> list:
    out = [pre]
    if isinstance(d, dict):
        for k, v in d.items():
            out += paths(v, pre + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d[:4]):
            out += paths(v, pre + (i,))
    return out


def _at(d, path):
    for k in path:
        d = d[k]
    return d


@st.composite
def mutated(draw, doc):
    """``doc`` with one to three mutations at random places (every value inserted is a copy: a drawn value is
    never changed in place by a later mutation)."""
    d = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        ps = paths(d)
        p = draw(st.sampled_from(ps))
        try:
            node = _at(d, p)
        except (KeyError, IndexError, TypeError):
            continue
        op = draw(st.sampled_from(["set", "set", "set", "delete", "unknown-key", "repeat", "empty"]))
        if not p:  # the document itself
            if isinstance(node, dict):
                key = draw(st.sampled_from(["bogus", "Family", "ünïcødé", "name ", "kind2"]))
                node[key] = copy.deepcopy(draw(VALUES))
            continue
        parent, last = _at(d, p[:-1]), p[-1]
        if op == "delete":
            del parent[last]
        elif op == "unknown-key" and isinstance(node, dict):
            node[draw(st.sampled_from(["bogus", "extra_field", "🚀"]))] = copy.deepcopy(draw(VALUES))
        elif op == "repeat" and isinstance(node, list) and node:
            parent[last] = copy.deepcopy(node * draw(st.sampled_from([50, 600])))  # long lists (caps name their limit)
        elif op == "empty":
            parent[last] = [] if isinstance(node, list) else {} if isinstance(node, dict) else ""
        else:
            parent[last] = copy.deepcopy(draw(VALUES))
    return d


def _dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=10**6)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Each family's documents written once (the unmutated side of every example), as ``<id>-w.yaml`` and
    ``<id>-h.yaml``; the runs use names relative to it, so error lines are short and comparable."""
    d = tmp_path_factory.mktemp("family-fuzz")
    for f in FAMS:
        w, h = DOCS[f.id]
        (d / f"{f.id}-w.yaml").write_text(_dump(w), encoding="utf-8")
        (d / f"{f.id}-h.yaml").write_text(_dump(h), encoding="utf-8")
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
        m.write_text(_dump(d), encoding="utf-8")
        w, h = (m, h) if side == "workload" else (w, m)
        invoke(verb, w, "--hw", h, "--format", "json")
        api_call(fam, w, h)

    return run


@pytest.mark.parametrize("side", ["workload", "hardware"])
@pytest.mark.parametrize("fid", [f.id for f in FAMS])
def test_mutated_files(fid, side, base):
    _mutation_test(BY_ID[fid], side)(base)


# --- bad --plan / --fix / --objective strings ------------------------------------------------------------------
BAD_VALUES = ["", "-1", "0", "1" + "0" * 30, "9" * 5000, "nan", "inf", "-inf", "1e999", "1.5", "0x10", "🚀",
              "\x1b[2J", " ", "true", "x" * 3000, "1e-300", "=", ",", "a=b=c"]
TOKENS = st.one_of(st.sampled_from(BAD_VALUES), st.text(max_size=10), st.integers(-10**20, 10**20).map(str))


@st.composite
def bad_plan(draw, plan: str):
    """A family's valid plan string, broken: an item dropped, duplicated, a bad value, an unknown key, a bare key,
    truncated, or noise."""
    items = [p.split("=", 1) for p in plan.split(",")]
    i = draw(st.integers(0, len(items) - 1))
    op = draw(st.sampled_from(["value", "value", "drop", "dup", "unknown", "bare", "cut", "noise"]))
    if op == "value":
        items[i][1] = draw(TOKENS)
    elif op == "drop":
        del items[i]
    elif op == "dup":
        items.append(list(items[i]))
    elif op == "unknown":
        items.append([draw(st.sampled_from(["bogus", "tp", "THREADS", "ünï"])), draw(TOKENS)])
    elif op == "bare":
        items[i] = [items[i][0]]
    text = ",".join("=".join(kv) for kv in items)
    if op == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif op == "noise":
        text = draw(st.sampled_from([text * 200, "", ",,,", "=" * 10, draw(st.text(max_size=30))]))
    return text


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


ALL_OBJECTIVES = sorted({o for f in FAMS for o in f.objectives} | {"edp", "availability", "cost", "mfu"})


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
