"""The ``parplan`` command: a thin typer layer over the public API.

Start-up: a command line whose first word names a command builds that command alone (``parplan suggest …`` neither
imports the estimate, simulate, plot … modules nor builds their options: benchmarks/startup.py); ``--help`` and a
bare ``parplan`` draw the root help from the commands' summaries (``SUMMARIES``) without building any; shell
completion and anything else build every command.  ``app``, the full command (typer's CliRunner,
``python -m parplan``), is built on first use.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Any, Iterable, Optional

# the command modules in the order they register (the order of `parplan --help`), with the commands each registers
# (tests/cli/test_startup_imports.py checks these names against what the modules register)
COMMANDS: dict[str, tuple[str, ...]] = {
    "estimate_cmd": ("estimate",), "catalog_cmd": ("catalog",), "suggest_cmd": ("suggest",),
    "check_cmd": ("check",), "simulate_cmd": ("simulate",), "validate_cmd": ("validate",),
    "export_cmd": ("export",), "plot_cmd": ("plot",), "sweep_cmd": ("sweep",), "calibrate_cmd": ("calibrate",),
}


# what the bare root help (`parplan`, `parplan --help`) lists, in its order: each command's summary, the first
# paragraph of its own help with its line breaks (tests/cli/test_startup_imports.py checks both and that the screen is
# the full command's), so that drawing it imports no command module and converts no command's options
SUMMARIES: dict[str, str] = {
    "estimate": "Predict step time, throughput, MFU and memory of one parallel plan (--serve: of a serving deployment).",
    "suggest": "Search every valid parallel plan and print the best ones (multi-group clusters: ILP-balanced\n"
               "heterogeneous plans beside the uniform and fastest-group baselines; --serve: serving deployments).",
    "check": "Exit 0 when a plan (or the given plan) meets every requirement, 1 when none does, 2 on bad input.",
    "simulate": "Simulate one training step of a plan, op by op (reference executor); --serve: a serving deployment,\n"
                "request by request.",
    "validate": "Analytical estimate vs simulated step: step time and peak memory; exit 1 beyond the tolerance (--serve:\n"
                "TTFT p50/p99, TPOT and throughput of serving deployments).",
    "export": "Write a plan as a framework's launch arguments or config (Megatron-LM script, NeMo YAML, torchtitan TOML,\n"
              "DeepSpeed config + launcher, MaxText YAML), or a serving deployment (--serve, --deployment) as a vLLM,\n"
              "SGLang or TensorRT-LLM launch script.",
    "sweep": "Search every model × cluster (× size) and write the best plans of each as one tidy table (resumable;\n"
             "locally in parallel, or on a Dask cluster).",
    "catalog": "List, show and add catalog entries (bundled and user: PARPLAN_CATALOG_PATH).",
    "plot": "Write a figure (PNG or SVG): pareto | breakdown | timeline | scaling.",
    "calibrate": "Measure this machine into a hardware file that --hw accepts.",
}


def _version(value: bool) -> None:
    if value:
        import typer

        from parplan import __version__

        typer.echo(f"parplan {__version__}")
        raise typer.Exit(0)


def build_app(modules: Iterable[str] = tuple(COMMANDS)):
    """The ``parplan`` typer app with the commands of ``modules`` (``parplan.cli.<module>``) registered."""
    import typer

    from parplan.cli.common import GuardedGroup

    app = typer.Typer(
        cls=GuardedGroup,  # usage errors as one `error:` line, exit 2 (README), not click's boxes
        name="parplan",
        help="Plan, predict and validate parallel configurations for large-model training.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion (typer, for bash, zsh, fish, PowerShell)
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                           help="print the version and exit")) -> None:
        """parplan: which parallel configuration should I run, how fast, will it fit?"""

    # each command module registers its commands on the app
    for module in modules:
        importlib.import_module(f"parplan.cli.{module}").register(app)
    return app


def root_help_command():
    """The root command as ``parplan`` and ``parplan --help`` show it: its own options, and every command as a
    help-only entry carrying its summary (the screen is the full command's; ``main`` uses it for those two
    command lines only, every other one builds the real commands)."""
    import typer
    from typer.core import TyperCommand

    group = typer.main.get_command(build_app(()))
    for name, summary in SUMMARIES.items():
        group.add_command(TyperCommand(name=name, help=summary))
    return group


def root_help_only(argv: "list[str]") -> bool:
    """Whether ``argv`` asks for the root help screen and nothing else (no shell-completion request)."""
    return argv in ([], ["--help"]) and not _completing()


def _completing() -> bool:
    return any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)


def command_module(argv: "list[str]") -> Optional[str]:
    """The module of the command named by the first word of ``argv``; None (build every command) for an option,
    an unknown word, nothing, or a shell-completion request (``_PARPLAN_COMPLETE`` and the like)."""
    if not argv or _completing():
        return None
    return next((m for m, names in COMMANDS.items() if argv[0] in names), None)


_full: Any = None


def __getattr__(name: str) -> Any:
    if name == "app":  # the full command, built once
        global _full
        if _full is None:
            _full = build_app()
        return _full
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(prog_name: Optional[str] = None) -> None:
    """The console script: one command, then the process exits (typer raises ``SystemExit``)."""
    # parplan's schemas use no pydantic plugin; without this, the first schema built scans every installed
    # distribution's entry points for one (importlib.metadata, ~10 ms of each command; pydantic docs, "Plugins":
    # PYDANTIC_DISABLE_PLUGINS=__all__).  A value the user set is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    argv = sys.argv[1:]
    if root_help_only(argv):
        app = root_help_command()
    else:
        module = command_module(argv)
        app = build_app([module]) if module is not None else __getattr__("app")
    try:
        if prog_name is None:
            app()
        else:
            app(prog_name=prog_name)
    finally:
        # what the command built lives until the exit; frozen, the collector's passes over it at interpreter
        # shutdown (~65 ms after a suggest: benchmarks/startup.py) are skipped and the process frees it at once
        gc.freeze()


if __name__ == "__main__":
    main()
