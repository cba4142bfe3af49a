"""Shared pieces of the sweep tests: a CliRunner, the one-line-error check, the small sweep's inputs."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
# small catalog workloads on H100 nodes: each cell's search takes a fraction of a second
MODELS = ("llama2-7b", "llama3-8b")
SIZES = (8, 16)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(r, code: int = 2, starts: str = "error: ") -> str:
    """The run failed with ``code`` and exactly one `error:` line on stderr, no traceback; returns the line."""
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(starts), lines[0]
    return lines[0]


@pytest.fixture(scope="session")
def small_sweep():
    """2 models × 2 sizes on dgx-h100-64, best plan of each, in this process (import it into a test module to
    use it)."""
    from parplan.planner.sweep import sweep

    return sweep(list(MODELS), ["dgx-h100-64"], sizes=list(SIZES), workers=1)
