"""Issue 11: tables that fit the terminal, one JSON schema for every verb, integers as integers, equal outcomes
grouped, the default memory headroom, sizing messages, and every API call on ids and on mixed clusters."""
from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import parplan
from parplan.cli.app import app
from parplan.cli.json_out import check_document
from parplan.errors import SpecError

SMALL = ("llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "64")
MIXED = ("llama2-13b", "--hw", "mixed-a100-v100-32", "--precision", "fp16", "--global-batch", "448", "--seq-len",
         "4096")
PLAN_FILE = ("tp: 4\nzero: 1\nsp: true\npipelines:\n"
             "  - micro_batches: 64\n    replicas: 2\n    stages:\n"
             "      - {device: a100-sxm-80gb, layers: [0, 26]}\n      - {device: v100-sxm-32gb, layers: [26, 40]}\n"
             "  - micro_batches: 96\n    replicas: 2\n    stages:\n"
             "      - {device: a100-sxm-80gb, layers: [0, 40]}\n"
             "  - micro_batches: 128\n    replicas: 1\n    stages:\n"
             "      - {group: 1, layers: [0, 20]}\n      - {group: 1, layers: [20, 40]}\n")


def invoke(*args, columns: int | None = None, monkeypatch=None):
    if monkeypatch is not None:
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", str(columns))
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def plan_file(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text(PLAN_FILE)
    return f


# --- terminal-aware tables ---------------------------------------------------------------------------------------
def _verbs(plan_file):
    return {
        "suggest": ("suggest", *SMALL, "--quiet"),
        "estimate": ("estimate", *SMALL, "--plan", "tp=2,zero=1,sp=true"),
        "simulate": ("simulate", *SMALL, "--plan", "tp=1,pp=4,mbs=1,zero=1", "--quiet"),
        "validate": ("validate", *SMALL, "--plan", "tp=1,pp=4,mbs=1,zero=1", "--plan", "tp=2,pp=2,mbs=1,zero=1",
                     "--quiet"),
        "check": ("check", *SMALL, "--min-tokens-per-s", "1000", "--quiet"),
        "estimate-hetero": ("estimate", *MIXED, "--plan-file", plan_file),
    }


@pytest.mark.parametrize("width", [80, 120, 200])
def test_every_table_fits_the_terminal(width, monkeypatch, plan_file):
    for name, argv in _verbs(plan_file).items():
        r = invoke(*argv, columns=width, monkeypatch=monkeypatch)
        assert r.exit_code == 0, (name, r.output)
        lines = r.stdout.splitlines()
        assert lines and max(len(x) for x in lines) <= width, (name, width, max(len(x) for x in lines))


def test_hetero_suggest_table_fits_80_columns(monkeypatch):
    r = invoke("suggest", *MIXED, "--top", "2", "--quiet", columns=80, monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert max(len(x) for x in r.stdout.splitlines()) <= 80
    assert "uniform (equal" in r.stdout and "pipelines" in r.stdout


def test_narrow_terminal_drops_the_least_important_columns_and_says_so(monkeypatch):
    narrow = invoke("suggest", *SMALL, "--quiet", columns=80, monkeypatch=monkeypatch).stdout
    wide = invoke("suggest", *SMALL, "--quiet", columns=200, monkeypatch=monkeypatch).stdout
    assert "not shown (terminal too narrow): " in narrow and "--format csv or --format json has every column" in narrow
    dropped = narrow.split("not shown (terminal too narrow): ")[1].split(";")[0].replace("\n", " ").split(", ")
    assert "opt" in dropped and "tp" not in dropped and "mem GiB" not in dropped
    wide_head = next(x for x in wide.splitlines() if x.lstrip().startswith("#"))
    assert "not shown" not in wide and "opt" in wide_head.split()
    head = next(x for x in narrow.splitlines() if x.lstrip().startswith("#"))
    for essential in ("tp", "pp", "dp", "mbs", "zero", "recomp", "step", "tokens/s", "mem GiB", "equiv"):
        assert essential in head.split() or essential in head, essential


def test_one_time_unit_per_column(monkeypatch):
    r = invoke("suggest", *SMALL, "--quiet", columns=200, monkeypatch=monkeypatch)
    head = next(x for x in r.stdout.splitlines() if x.lstrip().startswith("#"))
    assert "step s" in head or "step ms" in head
    body = r.stdout.split(head)[1]
    assert " ms " not in body and " µs " not in body  # the unit is in the header, not in the cells


def test_output_file_is_confirmed_on_stderr(tmp_path):
    out = tmp_path / "p.csv"
    r = invoke("suggest", *SMALL, "--top", "3", "--format", "csv", "-o", out, "--quiet")
    assert r.exit_code == 0 and r.stdout == ""
    size = len(out.read_bytes())
    assert r.stderr.splitlines()[-1] == f"wrote 3 plans as CSV ({size:,} bytes) to {out}"
    r = invoke("estimate", *SMALL, "--plan", "tp=2,zero=1,sp=true", "-o", tmp_path / "e.txt")
    assert "wrote 1 plan as a table (" in r.stderr and "e.txt" in r.stderr


# --- one JSON schema ---------------------------------------------------------------------------------------------
def test_every_verb_writes_the_same_envelope(plan_file):
    docs = {name: invoke(*argv, "--format", "json") for name, argv in _verbs(plan_file).items()}
    docs["suggest-hetero"] = invoke("suggest", *MIXED, "--top", "2", "--quiet", "--format", "json")
    docs["simulate-hetero"] = invoke("simulate", *MIXED, "--plan-file", plan_file, "--format", "json")
    docs["validate-hetero"] = invoke("validate", *MIXED, "--plan-file", plan_file, "--format", "json",
                                     "--tolerance", "0.5")
    kinds = set()
    for name, r in docs.items():
        assert r.exit_code == 0, (name, r.output)
        d = json.loads(r.stdout)
        assert check_document(d) == [], (name, check_document(d))
        assert d["plans"], name
        kinds.add(d["kind"])
    assert kinds == {"estimate", "suggest", "check", "simulate", "validate"}
    # the homogeneous verbs share the per-plan object: the export columns, in order
    est = json.loads(docs["estimate"].stdout)["plans"][0]
    sug = json.loads(docs["suggest"].stdout)["plans"][0]
    n = len(sug)
    assert list(est)[:n] == list(sug)


def test_check_document_finds_what_is_wrong():
    d = json.loads(invoke("estimate", *SMALL, "--plan", "tp=2,zero=1,sp=true", "--format", "json").stdout)
    assert check_document(d) == []
    bad = dict(d, schema_version="0", plans=[dict(d["plans"][0], memory_peak_bytes=1.5)])
    problems = check_document(bad)
    assert any("schema_version" in p for p in problems) and any("memory_peak_bytes" in p for p in problems)


def test_byte_counts_are_integers_in_csv_and_json():
    r = invoke("suggest", *SMALL, "--top", "3", "--format", "csv", "--quiet")
    assert "e+" not in r.stdout
    df = pd.read_csv(io.StringIO(r.stdout))
    for col in ("memory_peak_bytes", "memory_capacity_bytes", "params_bytes", "activations_bytes", "micro_batches",
                "equivalent_plans"):
        assert df[col].dtype.kind == "i", col
    d = json.loads(invoke("suggest", *SMALL, "--top", "1", "--format", "json", "--quiet").stdout)
    assert isinstance(d["plans"][0]["memory_peak_bytes"], int) and isinstance(d["plans"][0]["grads_bytes"], int)
    r = invoke("estimate", *SMALL, "--plan", "tp=2,zero=1,sp=true", "--format", "csv")
    assert "e+" not in r.stdout.split("\n")[1]


# --- equal outcomes grouped --------------------------------------------------------------------------------------
def test_equal_outcome_plans_are_one_row_with_the_simplest_first():
    args = ("llama2-13b", "dgx-h100-64")
    flat = parplan.suggest(*args, top=12, objective="memory", group_ties=False)
    grouped = parplan.suggest(*args, top=10, objective="memory")
    outcomes = [(e.step_time_s, e.memory_peak_bytes) for e in flat]
    assert len(set(outcomes)) < len(outcomes)  # this search has ties
    assert len({(e.step_time_s, e.memory_peak_bytes) for e in grouped}) == len(grouped) == 10
    i = int((grouped.equivalent > 1).nonzero()[0][0])
    twins = [e.plan for e in flat if (e.step_time_s, e.memory_peak_bytes) == (grouped[i].step_time_s,
                                                                             grouped[i].memory_peak_bytes)]
    assert len(twins) == grouped.equivalent[i] and grouped[i].plan in twins
    assert grouped[i].plan.cp == min(p.cp for p in twins)  # the simplest: less context parallelism
    df = grouped.to_frame()
    assert df["equivalent_plans"].iloc[i] == grouped.equivalent[i]


# --- defaults and sizing -----------------------------------------------------------------------------------------
def test_default_memory_headroom_is_five_percent_and_explained():
    ps = parplan.suggest(*SMALL[:1], "dgx-a100-8", top=3, global_batch=64)
    assert ps.evaluated.options.memory_headroom == 0.05
    assert all(e.memory_peak_bytes <= 0.95 * e.memory_capacity_bytes for e in ps)
    h = invoke("suggest", "--help").stdout
    assert "--memory-headroom" in h and "fragmentation" in " ".join(h.split())


def test_max_nodes_alone_is_an_error():
    r = invoke("suggest", *SMALL, "--max-nodes", "4")
    assert r.exit_code == 2 and r.stderr == (
        "error: --max-nodes: --max-nodes bounds the sizing search: it needs a target to size for; add "
        "--target-tokens-per-s, or --deadline with --token-budget\n")


def test_deadline_without_max_nodes_searches_beyond_the_cluster():
    r = invoke("suggest", "llama2-13b", "--hw", "dgx-h100-64", "--deadline", "30d", "--token-budget", "2T", "--quiet",
               "--top", "1", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["sizing"]["n_nodes"] > 8 and d["sizing"]["node_counts_searched"]  # more than the cluster's 8 nodes
    assert "nan" not in r.stderr and "searched 0 node counts" not in r.stderr


# --- one API surface ---------------------------------------------------------------------------------------------
def test_plan_hetero_accepts_catalog_ids():
    from parplan.planner.hetero import plan_hetero

    hp = plan_hetero("llama2-13b", "mixed-a100-v100-32", baselines=False, mbs_options=(1,))
    assert hp.best is not None and hp.best.result.step_time_s > 0


def test_api_on_a_mixed_cluster(plan_file):
    over = dict(precision="fp16", global_batch=448, seq_len=4096)
    hp = parplan.suggest("llama2-13b", "mixed-a100-v100-32", top=2, **over)
    assert hp.best is not None and hp.uniform is not None  # the heterogeneous planner's plan set
    with pytest.raises(SpecError, match="--fix not supported on a multi-group cluster"):
        parplan.suggest("llama2-13b", "mixed-a100-v100-32", fix="tp=8", **over)
    res = parplan.estimate("llama2-13b", "mixed-a100-v100-32", str(plan_file), **over)
    sim = parplan.simulate("llama2-13b", "mixed-a100-v100-32", str(plan_file), **over)
    assert res.step_time_s > 0 and sim.analytical_step_time_s == pytest.approx(res.step_time_s, rel=1e-12)
    with pytest.raises(SpecError, match="a plan string or dict describes a homogeneous plan"):
        parplan.estimate("llama2-13b", "mixed-a100-v100-32", "tp=4", **over)
    with pytest.raises(SpecError, match="check searches and gates homogeneous plans") as err:
        parplan.check("llama2-13b", "mixed-a100-v100-32", min_tokens_per_s=1, **over)
    assert "parplan suggest" in str(err.value) and "--plan-file" in str(err.value)


def test_cli_on_a_mixed_cluster_says_what_to_do(plan_file):
    r = invoke("check", *MIXED, "--min-tokens-per-s", "1")
    assert r.exit_code == 2 and r.stderr.startswith("error: --hw: cluster 'mixed-a100-v100-32' has 2 device groups")
    assert len(r.stderr.splitlines()) == 1
    r = invoke("simulate", *MIXED, "--plan", "tp=4")
    assert r.exit_code == 2 and "give a heterogeneous plan with --plan-file" in r.stderr
    r = invoke("simulate", *MIXED, "--plan-file", plan_file, "--schedule", "gpipe")
    assert r.exit_code == 2 and r.stderr.startswith("error: --schedule: --schedule not supported on a multi-group")
    r = invoke("simulate", *MIXED, "--plan-file", plan_file)
    assert r.exit_code == 0 and "analytical" in r.stdout and "per pipeline" in r.stdout
    r = invoke("validate", *MIXED, "--plan-file", plan_file, "--tolerance", "0.5")
    assert r.exit_code == 0 and "ok" in r.stdout
