"""Every serving verb's JSON (suggest / estimate / check / simulate / validate ``--serve``) follows the document
schema: ``check_document``'s serving branch (envelope with a ``serving`` object, plan objects with the core keys
first and the serving keys), and the branch finds what is wrong with a serving document."""
from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.cli.json_out import check_document

runner = CliRunner()
HW = "h100-sxm-80gb:1x8"
SMALL = ("llama3-8b", "--hw", HW)


def _doc(*args):
    r = runner.invoke(app, [str(a) for a in args] + ["--format", "json"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def docs(tmp_path_factory, root):
    serve = str(root / "examples/serve-chat.yaml")
    small = tmp_path_factory.mktemp("s") / "serve.yaml"
    small.write_text("isl: 512\nosl: 32\narrival_rate_per_s: 2.0\n")
    dep = "tp=1,batch=32,chunk=1024,replicas=1"
    return {
        "suggest": _doc("suggest", "llama3-70b", "--hw", HW, "--serve", serve, "--quiet"),
        "estimate": _doc("estimate", "llama3-70b", "--hw", HW, "--serve", serve, "--deployment",
                         "tp=8,batch=64,chunk=2048"),
        "check": _doc("check", "llama3-70b", "--hw", HW, "--serve", serve),
        "check-deployment": _doc("check", "llama3-70b", "--hw", HW, "--serve", serve, "--deployment", "tp=8,batch=64"),
        "simulate": _doc("simulate", *SMALL, "--serve", small, "--deployment", dep, "--requests", 100),
        "validate": _doc("validate", *SMALL, "--serve", small, "--deployment", dep, "--requests", 100,
                         "--tolerance", 0.99),
    }


@pytest.mark.parametrize("verb", ["suggest", "estimate", "check", "check-deployment", "simulate", "validate"])
def test_every_serving_verb_passes_check_document(docs, verb):
    d = docs[verb]
    assert "serving" in d and d["plans"]
    assert check_document(d) == [], check_document(d)


def test_the_serving_branch_finds_what_is_wrong(docs):
    d = copy.deepcopy(docs["estimate"])
    p = d["plans"][0]
    del p["ttft_p99_s"]
    p["kv_capacity_tokens"] = "many"
    p["memory_bytes"] = {"weights_bytes": 1.5}
    d["serving"].pop("engine")
    problems = check_document(d)
    assert "plans[0]: missing ttft_p99_s" in problems
    assert "plans[0].kv_capacity_tokens: mistyped" in problems
    assert "plans[0].memory_bytes: a byte count, not an integer" in problems
    assert "serving: missing or mistyped engine" in problems
    d = copy.deepcopy(docs["estimate"])
    p = d["plans"][0]
    d["plans"][0] = {"plan": p.pop("plan"), **p}
    assert "plans[0]: not the core keys first, in order" in check_document(d)
    # an unbounded latency is null, and still a valid document
    d = copy.deepcopy(docs["estimate"])
    d["plans"][0]["ttft_p99_s"] = None
    assert check_document(d) == []
