"""A chain that would take no time is refused at load (it priced an infinite throughput that check PASSed, or
divided by zero in every verb)."""
from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
BASE = {"family": "layer-chain", "name": "lc-zero", "input_elements": 1000,
        "layers": [{"name": "a", "flops": 1e9, "params": 10, "out_elements": 1000},
                   {"name": "b", "flops": 1e9, "params": 10, "out_elements": 1000}],
        "inference": {"microbatch": 1, "dtype": "fp32", "requests": 10}}


def _run(tmp_path, root, doc, verb="estimate"):
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return runner.invoke(app, [verb, str(f), "--hw", str(root / "examples/edge-4pi-server.yaml")])


@pytest.mark.parametrize("verb", ["estimate", "suggest", "check"])
def test_a_profile_of_zero_seconds_exits_2(tmp_path, root, verb):
    doc = dict(BASE, profiles=[{"device": "raspberry-pi-5", "batch": 1, "time_s": [0, 0]}])
    r = _run(tmp_path, root, doc, verb)
    assert r.exit_code == 2 and "profiles[0].time_s" in r.output and "Traceback" not in r.output, r.output


def test_layers_without_flops_or_profiles_exit_2(tmp_path, root):
    doc = dict(BASE, layers=[dict(l, flops=0) for l in BASE["layers"]])
    r = _run(tmp_path, root, doc, "check")
    assert r.exit_code == 2 and "0 FLOPs" in r.output, r.output


def test_the_valid_chain_still_prices(tmp_path, root):
    r = _run(tmp_path, root, BASE)
    assert r.exit_code == 0, r.output
