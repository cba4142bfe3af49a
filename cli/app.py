"""The ``parplan`` command: a thin typer layer over the public API."""
from __future__ import annotations

import typer

from parplan import __version__
from parplan.cli import (calibrate_cmd, catalog_cmd, check_cmd, estimate_cmd, export_cmd, plot_cmd, simulate_cmd,
                         suggest_cmd, sweep_cmd, validate_cmd)
from parplan.cli.common import GuardedGroup

app = typer.Typer(
    cls=GuardedGroup,  # usage errors as one `error:` line, exit 2 (README), not click's boxes
    name="parplan",
    help="Plan, predict and validate parallel configurations for large-model training.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (typer, for bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"parplan {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """parplan: which parallel configuration should I run, how fast, will it fit?"""


# each command module registers its commands on the app
for _module in (estimate_cmd, catalog_cmd, suggest_cmd, check_cmd, simulate_cmd, validate_cmd, export_cmd, plot_cmd,
                sweep_cmd, calibrate_cmd):
    _module.register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
