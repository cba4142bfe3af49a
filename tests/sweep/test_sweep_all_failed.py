"""A sweep whose every cell errors exits 2 with the first message (it exited 0 with an answerless table)."""
from __future__ import annotations

from typer.testing import CliRunner

from parplan.cli.app import app


def test_every_cell_failing_exits_2(tmp_path):
    out = tmp_path / "s.csv"
    r = CliRunner().invoke(app, ["sweep", "--workers", "1", "--quiet", "--models", "llama3-8b", "--hw", "dgx-h100-64",
                                 "--sizes", "8", "--objective", "cost", "-o", str(out)])
    assert r.exit_code == 2 and "every cell of the sweep failed" in r.output and "price" in r.output, r.output
    assert out.exists()
