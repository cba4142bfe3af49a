"""check without --plan, for the families with their own verbs: --fix pins the plans it searches, and the plan it
judges is the best one that meets every bound (a plan that passes is found, as the transformer check finds one)."""
from __future__ import annotations

import yaml
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()


def invoke(*args):
    r = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    return r


def test_check_honours_fix(root):
    kv, smr = root / "examples/kv-store.yaml", "smr-3x-16c-10gbe"
    # no SMR plan sustains the offered load: --fix scheme=smr was dropped and a PSMR plan PASSed
    r = invoke("check", kv, "--hw", smr, "--fix", "scheme=smr")
    assert r.exit_code == 1 and "scheme=smr" in r.stdout, r.output
    assert invoke("check", kv, "--hw", smr, "--fix", "scheme=bogus").exit_code == 2
    r = invoke("check", root / "examples/mandelbrot-offload.yaml", "--hw", "caf-k40-phi", "--fix", "place=cpu")
    assert "place=cpu" in r.stdout, r.output
    r = invoke("check", root / "examples/dit-flux-64k.yaml", "--hw", "h100-sxm-80gb:2x8", "--fix", "sp=ring")
    assert r.exit_code == 0 and "sp=ring" in r.stdout, r.output
    r = invoke("check", root / "examples/stencil.yaml", "--hw", root / "examples/epyc-2s.yaml", "--fix", "threads=4")
    assert r.exit_code == 0 and "threads=4" in r.stdout, r.output


def test_fix_and_plan_together_exit_2(root):
    r = invoke("check", root / "examples/kv-store.yaml", "--hw", "smr-3x-16c-10gbe", "--plan",
               "scheme=psmr,threads=16,rings=4,batch=1", "--fix", "scheme=smr")
    assert r.exit_code == 2 and "--fix" in r.stderr


def test_check_finds_a_plan_that_meets_the_bound(root, tmp_path):
    # the best-throughput plan (batch 32) answers in 0.51 ms; a batch-1 plan answers in 0.17 ms: check FAILed
    doc = yaml.safe_load((root / "examples/kv-store.yaml").read_text(encoding="utf-8"))
    doc["clients"]["offered_load"] = 100000
    doc["search"].update(rings=[1], batch=[1, 32])
    f = tmp_path / "kv.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = invoke("check", f, "--hw", "smr-3x-16c-10gbe", "--max-step-time-s", "250e-6")
    assert r.exit_code == 0 and "batch=1" in r.stdout, r.output
    r = invoke("check", f, "--hw", "smr-3x-16c-10gbe", "--max-step-time-s", "1e-6")
    assert r.exit_code == 1, r.output  # none does: the best is reported, failing
    w = root / "examples/stencil.yaml"
    assert invoke("check", w, "--hw", root / "examples/epyc-2s.yaml", "--max-step-time-s", "100").exit_code == 0
