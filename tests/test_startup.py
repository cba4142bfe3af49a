"""Start-up stays light: ``parplan --help`` loads no numpy, pandas or pydantic (structural, not timed), and the
help figures the CLI keeps beside it (cli/common.py) equal their sources in the heavy modules."""
from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "pandas", "pydantic", "pyarrow", "scipy", "matplotlib", "parplan.api", "parplan.planner.search",
         "parplan.executor", "parplan.models")

_PROBE = """
import json, sys
sys.argv = ["parplan"] + json.loads(sys.argv[1])
from parplan.cli.app import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _modules_after(*argv: str) -> set[str]:
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(argv))], capture_output=True, text=True,
                       timeout=120)
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line, r.stderr
    return set(json.loads(line[-1][len("MODULES "):]))


def _loaded(mods: set[str]) -> list[str]:
    return [h for h in HEAVY if h in mods or any(m.startswith(h + ".") for m in mods)]


def test_help_imports_nothing_heavy():
    assert _loaded(_modules_after("--help")) == []


def test_command_help_imports_nothing_heavy():
    # pydantic aside: typer itself (typer._adapters) imports it, when installed, as soon as a command is resolved
    for cmd in ("suggest", "simulate", "estimate", "sweep", "catalog"):
        assert [h for h in _loaded(_modules_after(cmd, "--help")) if h != "pydantic"] == [], cmd


def test_catalog_list_hardware_skips_numpy_and_pandas():
    mods = _modules_after("catalog", "list")
    assert "numpy" not in mods and "pandas" not in mods


def test_help_figures_equal_their_sources():
    from parplan.cli import common
    from parplan.executor import budget
    from parplan.planner import planset, sweep, sweep_run

    assert common.DEFAULT_SIZING_REACH == planset.DEFAULT_SIZING_REACH
    assert common.DEFAULT_MAX_EVENTS == budget.DEFAULT_MAX_EVENTS
    assert common.TRACE_SHARE == budget.TRACE_SHARE
    assert common.MAX_EVENTS_HELP == budget.MAX_EVENTS_HELP
    assert common.DEFAULT_MAX_CELLS == sweep.DEFAULT_MAX_CELLS
    assert common.DEFAULT_CONNECT_TIMEOUT_S == sweep_run.DEFAULT_CONNECT_TIMEOUT_S
