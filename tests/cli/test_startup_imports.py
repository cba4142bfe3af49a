"""Issue 16 start-up: ``parplan suggest`` and ``parplan catalog list`` build only their own command and draw their
tables without rich's console (structural checks, no wall-clock figures), with the same output as before."""
from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile

import pytest
import typer
from typer.testing import CliRunner

from parplan.cli import app as app_module

# what the suggest and catalog-list paths no longer import: the other commands' modules, rich's console, table and
# text machinery; and what they never needed (dataframes, masked arrays, plotting, the executor)
OTHER_COMMANDS = [f"parplan.cli.{m}" for m in app_module.COMMANDS]
RICH = ["rich.console", "rich.table", "rich.text", "rich.markup", "rich.progress"]
NEVER = ["pandas", "scipy", "matplotlib", "pyarrow", "numpy.ma", "parplan.executor.engine", "parplan.executor.simulate"]

_PROBE = """
import contextlib, io, json, sys
sys.argv = ["parplan"] + json.loads(sys.argv[1])
from parplan.cli.app import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main()
import gc
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
sys.stderr.write("FROZEN " + str(gc.get_freeze_count()) + "\\n")
"""


def _modules_after(*argv: str) -> set[str]:
    # outside the checkout (an installed wheel is not shadowed by the working folder: tests/test_startup.py)
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(argv))], capture_output=True, text=True,
                       timeout=300, cwd=tempfile.gettempdir(), env={**_env(), "COLUMNS": "160"})
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line, r.stderr
    return set(json.loads(line[-1][len("MODULES "):]))


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}


def test_command_map_is_what_the_modules_register():
    """``COMMANDS`` (which module a command line needs) names exactly the commands each module registers."""
    for module, names in app_module.COMMANDS.items():
        built = typer.main.get_command(app_module.build_app([module]))
        assert sorted(built.commands) == sorted(names), module
    full = typer.main.get_command(app_module.app)
    assert sorted(full.commands) == sorted(n for names in app_module.COMMANDS.values() for n in names)


def test_command_module_of_a_command_line(monkeypatch):
    for k in [k for k in os.environ if k.startswith("_") and k.endswith("_COMPLETE")]:
        monkeypatch.delenv(k)
    assert app_module.command_module(["suggest", "llama3-405b"]) == "suggest_cmd"
    assert app_module.command_module(["catalog", "list"]) == "catalog_cmd"
    for argv in ([], ["--help"], ["--version"], ["sugest"], ["llama3-405b", "suggest"]):
        assert app_module.command_module(argv) is None, argv  # every command is built
    monkeypatch.setenv("_PARPLAN_COMPLETE", "complete_bash")
    assert app_module.command_module(["suggest"]) is None


def test_main_freezes_what_lives_until_the_exit():
    """main() ends the process: the objects of the command are frozen (no collector passes at shutdown)."""
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(["catalog", "list"])], capture_output=True,
                       text=True, timeout=300, cwd=tempfile.gettempdir(), env={**_env(), "COLUMNS": "160"})
    frozen = [int(ln.split()[1]) for ln in r.stderr.splitlines() if ln.startswith("FROZEN ")]
    assert frozen and frozen[-1] > 10_000, r.stderr


def test_suggest_imports_only_its_command_and_no_rich_console():
    mods = _modules_after("suggest", "llama3-405b", "--hw", "h100-16384", "--quiet")
    assert "parplan.cli.suggest_cmd" in mods and "parplan.planner.planset" in mods  # it did run
    unwanted = [m for m in OTHER_COMMANDS if m not in ("parplan.cli.suggest_cmd", "parplan.cli.export_cmd")]
    assert [m for m in unwanted + RICH + NEVER if m in mods] == []


def test_catalog_list_imports_only_its_command_and_no_rich_console():
    mods = _modules_after("catalog", "list")
    assert "parplan.cli.catalog_cmd" in mods
    unwanted = [m for m in OTHER_COMMANDS if m != "parplan.cli.catalog_cmd"]
    assert [m for m in unwanted + RICH + NEVER + ["numpy"] if m in mods] == []


@pytest.mark.parametrize("argv", [
    ("suggest", "llama3-405b", "--hw", "h100-16384", "--quiet"),
    ("suggest", "llama3-405b", "--hw", "h100-16384", "--quiet", "--price-per-hour", "2.5"),
    ("catalog", "list"), ("catalog", "list", "workloads"), ("catalog", "list", "clusters"),
])
@pytest.mark.parametrize("columns", ["80", "160"])
def test_plain_tables_print_what_rich_prints(argv, columns, monkeypatch):
    """The command's whole output, drawn as plain text and drawn by rich, is the same."""
    from parplan.cli import plain_table

    monkeypatch.setenv("COLUMNS", columns)
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    drew_plain = []
    real = plain_table.render_plain

    def spy(*a, **k):
        text = real(*a, **k)
        drew_plain.append(text is not None)
        return text

    with monkeypatch.context() as m:
        m.setattr(plain_table, "render_plain", spy)
        plain = CliRunner().invoke(app_module.app, list(argv))
    with monkeypatch.context() as m:
        m.setattr(plain_table, "render_plain", lambda *a, **k: None)  # rich draws every table
        drawn = CliRunner().invoke(app_module.app, list(argv))
    assert plain.exit_code == drawn.exit_code == 0, plain.output
    assert plain.stdout == drawn.stdout
    if columns == "160":
        assert drew_plain and all(drew_plain)  # these tables fit 160 columns: drawn as plain text


def test_main_runs_one_command_as_the_full_app_does(monkeypatch, capsys):
    """``main()`` with a command line that names a command (only that command built) prints what the full app
    prints."""
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(sys, "argv", ["parplan", "catalog", "list", "links"])
    try:
        with contextlib.suppress(SystemExit):
            app_module.main()
    finally:
        gc.unfreeze()  # main() freezes what lives until the process exits (this test process goes on)
    alone = capsys.readouterr().out
    full = CliRunner().invoke(app_module.app, ["catalog", "list", "links"])
    assert full.exit_code == 0 and alone == full.stdout


@pytest.mark.parametrize("width", ["60", "200"])
@pytest.mark.parametrize("rich", ["1", "0"])
@pytest.mark.parametrize("argv", [[], ["--help"]])
def test_root_help_from_summaries_is_the_full_commands_screen(argv, rich, width):
    """``parplan`` and ``parplan --help`` draw the root help from ``SUMMARIES`` with no command built: the same
    screen (and exit code) as the full command, rich or plain, and the summaries are the commands' own."""
    code = ("import sys, json; how = sys.argv[2]; sys.argv = ['parplan'] + json.loads(sys.argv[1]); "
            "from parplan.cli import app as a; a.main() if how == 'summaries' else a.app()")
    env = {**_env(), "COLUMNS": width, "TYPER_USE_RICH": rich}
    outs = [subprocess.run([sys.executable, "-c", code, json.dumps(argv), how], capture_output=True, text=True,
                           timeout=300, cwd=tempfile.gettempdir(), env=env) for how in ("summaries", "full")]
    assert outs[0].returncode == outs[1].returncode and "Traceback" not in outs[0].stderr
    assert outs[0].stdout == outs[1].stdout and outs[0].stderr == outs[1].stderr
    screen = outs[0].stdout + outs[0].stderr  # a bare `parplan` prints it on stderr where click draws it
    assert "Commands" in screen and all(name in screen for name in app_module.SUMMARIES)
    full = typer.main.get_command(app_module.app)
    assert list(full.list_commands(None)) == list(app_module.SUMMARIES)
    for name, summary in app_module.SUMMARIES.items():
        assert full.commands[name].help.split("\n\n")[0] == summary, name


def test_root_help_builds_no_command():
    mods = _modules_after("--help")
    assert not [m for m in OTHER_COMMANDS if m in mods]
