"""Start-up stays light: ``parplan --help`` loads no numpy, pandas or pydantic (structural, not timed), and the
help texts' figures come from the light budget modules."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile

HEAVY = ("numpy", "pandas", "pydantic", "pyarrow", "scipy", "matplotlib", "parplan.api", "parplan.planner.search",
         "parplan.executor.engine", "parplan.executor.simulate", "parplan.models")
# light on purpose: parplan.executor (a lazy package face) and parplan.executor.budget (the help texts' figures)

_PROBE = """
import contextlib, json, sys
sys.argv = ["parplan"] + json.loads(sys.argv[1])
from parplan.cli.app import main
with contextlib.suppress(SystemExit):  # the command exits; the modules it imported are what is read
    main()
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _modules_after(*argv: str) -> set[str]:
    # run outside the checkout: `python -c` puts the working folder first on sys.path, and the checkout's parplan/
    # would shadow an installed wheel (CI tests the installed package)
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(argv))], capture_output=True, text=True,
                       timeout=120, cwd=tempfile.gettempdir())
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


def test_help_figures_come_from_light_budget_modules():
    """The help texts' figures are imported from the budget modules themselves (light: no numpy), not copied."""
    from parplan.cli import simulate_cmd, suggest_cmd, sweep_cmd
    from parplan.executor import budget as executor_budget
    from parplan.planner import budget as planner_budget

    assert simulate_cmd.MAX_EVENTS_HELP is executor_budget.MAX_EVENTS_HELP
    assert suggest_cmd.DEFAULT_SIZING_REACH == planner_budget.DEFAULT_SIZING_REACH
    assert sweep_cmd.DEFAULT_MAX_CELLS == planner_budget.DEFAULT_MAX_CELLS
