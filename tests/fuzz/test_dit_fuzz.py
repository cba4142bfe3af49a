"""Malformed DiT inference inputs through the CLI: each exits 2 with one ``error: …`` line naming the culprit (the
key, option or value at fault); never a traceback."""
from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
HW = "h100-sxm-80gb:2x8"
BASE = {"family": "dit-inference", "name": "fz", "model": "dit-12b", "tokens": 16384}


def _with(**kw):
    d = copy.deepcopy(BASE)
    for k, v in kw.items():
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return d


ARCH = {"hidden": 3072, "heads": 24, "single_blocks": 4, "source": "test"}
FILES = [
    (_with(bogus=1), "bogus"),
    (_with(tokens=0), "tokens"),
    (_with(tokens=10 ** 12), "tokens"),
    (_with(tokens="many"), "tokens"),
    (_with(batch=-2), "batch"),
    (_with(steps=0), "steps"),
    (_with(precision="fp4"), "precision"),
    (_with(model="flux-nine"), "flux-nine"),
    (_with(model=None), "model"),
    (_with(model=None, architecture={**ARCH, "heads": 0}), "heads"),
    (_with(model=None, architecture={**ARCH, "hidden": 3000, "heads": 7}), "head_dim"),
    (_with(model=None, architecture={**ARCH, "single_blocks": 0}), "single_blocks"),
    (_with(model=None, architecture={**ARCH, "mlp_ratio": float("nan")}), "mlp_ratio"),
    (_with(tokens=None, latent={"height": 64}), "width"),
    (_with(latent={"height": 64, "width": 64}), "tokens"),
    (_with(search={"sp": ["zigzag"]}), "sp"),
    (_with(search={"tp": [0]}), "tp"),
    (_with(search={"chunks": []}), "chunks"),
]
OPTIONS = [
    (("estimate", "--plan", "sp=torus,chunks=5,u=2,r=8"), "chunks"),
    (("estimate", "--plan", "speed=2"), "speed"),
    (("estimate", "--plan", "u=1.5"), "u"),
    (("suggest", "--fix", "comm=both"), "comm"),
    (("suggest", "--objective", "energy"), "objective"),
    (("check", "--max-step-time-s", "-1"), "max-step-time-s"),
    (("validate", "--tolerance", "nan"), "tolerance"),
    (("simulate", "--seq-len", "4"), "seq-len"),
]


def _one_line(r, culprit):
    assert "Traceback" not in r.output
    assert r.exit_code == 2, (r.exit_code, r.output[-500:])
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    assert culprit in r.stderr, r.stderr


@pytest.mark.parametrize("doc,culprit", FILES, ids=[c for _, c in FILES])
def test_bad_file(tmp_path, doc, culprit):
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    _one_line(runner.invoke(app, ["estimate", str(f), "--hw", HW]), culprit)


@pytest.mark.parametrize("args,culprit", OPTIONS, ids=[c for _, c in OPTIONS])
def test_bad_option(root, args, culprit):
    _one_line(runner.invoke(app, [args[0], str(root / "examples/dit-flux-64k.yaml"), "--hw", HW, *args[1:]]),
              culprit)
