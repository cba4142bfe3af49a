"""A family with its own verbs gets the options it reads; any other option the user set is an error (exit 2) that
names it, never silently dropped."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.cli.family_verbs import given, unread
from parplan.errors import SpecError

runner = CliRunner()


def test_given_keeps_only_set_options():
    assert given(a=None, b=False, c=[], d=0, e="x") == {"d": 0, "e": "x"}


def test_unread_names_the_cli_flag():
    with pytest.raises(SpecError, match="--min-tokens-per-s, --global-batch do not apply to fam"):
        unread({"min_throughput": 3.0, "global_batch": 8, "seq_len": None}, "fam")
    unread({"x": None, "y": False})


@pytest.mark.parametrize("args", [
    ["suggest", "examples/stencil.yaml", "--hw", "examples/epyc-2s.yaml", "--global-batch", "8"],
    ["estimate", "examples/stencil.yaml", "--hw", "examples/epyc-2s.yaml", "--precision", "bf16"],
    ["check", "examples/stencil.yaml", "--hw", "examples/epyc-2s.yaml", "--min-mfu", "0.5"],
    ["simulate", "examples/stencil.yaml", "--hw", "examples/epyc-2s.yaml", "--schedule", "gpipe"],
    ["suggest", "examples/stencil.yaml", "--hw", "examples/epyc-2s.yaml", "--objective", "memory"],
    ["simulate", "examples/stencil.yaml", "--hw", "examples/epyc-2s.yaml", "--mode", "bogus"],  # (were dropped)
    ["simulate", "examples/stencil.yaml", "--hw", "examples/epyc-2s.yaml", "--p2p", "async"],
])
def test_task_graph_verbs_refuse_options_they_do_not_read(root, monkeypatch, args):
    monkeypatch.chdir(root)
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
