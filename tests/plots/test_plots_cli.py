"""`parplan plot …` through typer's CliRunner: the files written (PNG / SVG magic, size), the `wrote` line, and
one-line errors with exit code 2 (bad suffix, matplotlib missing, bad plan, bad sweep table, unknown kind)."""
from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app
from plot_cases import SMALL, TIMELINE_PLAN, sweep_frame  # noqa: F401 (fixture)

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"  # PNG signature: https://www.w3.org/TR/png/#5PNG-file-signature
MIN_BYTES = 10_000  # a figure with axes, text and data is tens of kB in either format


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_error_line(r, *needles):
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert "Traceback" not in r.output


def check_written(r, path, fmt):
    assert r.exit_code == 0, r.output
    assert r.stderr.strip() == f"wrote {path}"
    data = path.read_bytes()
    assert len(data) > MIN_BYTES
    if fmt == "png":
        assert data.startswith(PNG_MAGIC)
    else:
        head = data[:400].decode("utf-8")
        assert head.startswith("<?xml") and "<svg" in head


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_pareto_writes_the_figure(tmp_path, fmt):
    out = tmp_path / f"pareto.{fmt}"
    r = invoke("plot", "pareto", SMALL[0], "--hw", SMALL[1], "--global-batch", 64, "--labels", 3, "-o", out)
    check_written(r, out, fmt)


def test_breakdown_writes_the_figure(tmp_path):
    out = tmp_path / "breakdown.png"
    r = invoke("plot", "breakdown", SMALL[0], "--hw", SMALL[1], "--global-batch", 64, "--top", 3,
               "--fix", "pp=1", "-o", out)
    check_written(r, out, "png")


def test_timeline_writes_the_figure(tmp_path):
    out = tmp_path / "timeline.svg"
    r = invoke("plot", "timeline", SMALL[0], "--hw", SMALL[1], "--global-batch", 16, "--plan", TIMELINE_PLAN,
               "--schedule", "gpipe", "--slowdown", "stage:1=1.5", "-o", out)
    check_written(r, out, "svg")


def test_scaling_writes_the_figure(tmp_path, sweep_frame):
    table = tmp_path / "sweep.csv"
    sweep_frame.to_csv(table, index=False)
    out = tmp_path / "scaling.png"
    r = invoke("plot", "scaling", table, "-o", out, "--title", "a small sweep")
    check_written(r, out, "png")


def test_bad_suffix(tmp_path):
    r = invoke("plot", "pareto", SMALL[0], "--hw", SMALL[1], "-o", tmp_path / "x.pdf")
    one_error_line(r, "--output", "allowed: .png, .svg")
    assert not (tmp_path / "x.pdf").exists()


def test_output_is_required():
    one_error_line(invoke("plot", "pareto", SMALL[0], "--hw", SMALL[1]), "--output", "required")


def test_unknown_kind():
    one_error_line(invoke("plot", "paretto", "x"), "no such command", "did you mean 'pareto'")


def test_matplotlib_missing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    out = tmp_path / "p.png"
    r = invoke("plot", "pareto", SMALL[0], "--hw", SMALL[1], "-o", out)
    one_error_line(r, "matplotlib is not installed", 'pip install "parplan[plot]"')
    assert not out.exists()


@pytest.mark.parametrize("args, needles", [
    (("timeline", SMALL[0], "--hw", SMALL[1], "--plan", "tp=3"), ("tp",)),
    (("timeline", SMALL[0], "--hw", SMALL[1], "--plan", TIMELINE_PLAN, "--schedule", "1f2b"), ("--schedule",)),
    (("pareto", SMALL[0], "--hw", SMALL[1], "--memory-headroom", "0.9"), ("--memory-headroom",)),
    (("pareto", SMALL[0], "--hw", SMALL[1], "--precision", "fp9"), ("--precision",)),
    (("breakdown", SMALL[0], "--hw", SMALL[1], "--top", "0"), ("--top",)),
    (("breakdown", SMALL[0], "--hw", SMALL[1], "--objective", "speed"), ("--objective",)),
    (("pareto", "no-such-model", "--hw", SMALL[1]), ("no-such-model",)),
])
def test_bad_input_is_one_line(tmp_path, args, needles):
    one_error_line(invoke("plot", *args, "-o", tmp_path / "x.png"), *needles)


def test_bad_sweep_tables(tmp_path, sweep_frame):
    out = tmp_path / "s.png"
    one_error_line(invoke("plot", "scaling", tmp_path / "none.csv", "-o", out), "no sweep file")
    lacking = tmp_path / "lacking.csv"
    sweep_frame.drop(columns=["tokens_per_s"]).to_csv(lacking, index=False)
    one_error_line(invoke("plot", "scaling", lacking, "-o", out), str(lacking), "tokens_per_s")
    failed = tmp_path / "failed.csv"
    sweep_frame.assign(status="timeout").to_csv(failed, index=False)
    one_error_line(invoke("plot", "scaling", failed, "-o", out), "no ok row")
    assert not out.exists()
