"""``parplan calibrate cpu``: measure this machine into a ``cpu-socket`` file that ``--hw`` accepts (the measurement
itself: ``parplan.hardware.cpu_probe``)."""
from __future__ import annotations

from pathlib import Path

import typer

from parplan.cli.common import DebugOpt, emit, handle_errors, OutputOpt
from parplan.errors import SpecError


def register(app: typer.Typer) -> None:
    cal = typer.Typer(help="Measure this machine into a hardware file that --hw accepts.", no_args_is_help=True)
    app.add_typer(cal, name="calibrate")

    @cal.command("cpu")
    @handle_errors
    def cpu_cmd(output: OutputOpt = None,
                reps: int = typer.Option(5, "--reps", help="repetitions per measurement (min time / max rate)"),
                debug: DebugOpt = False) -> None:
        """Task overhead, STREAM bandwidth, DRAM latency and per-core GEMM of this machine → a cpu-socket file
        (default mycpu.yaml) and a one-node cpu-cluster file beside it."""
        if not 1 <= reps <= 100:
            raise SpecError(f"--reps {reps}: 1..100", key="--reps")
        out = output or Path("mycpu.yaml")
        if out.suffix not in (".yaml", ".yml"):
            raise SpecError(f"{out}: write a .yaml file", key="-o")
        from parplan.hardware.cpu_probe import calibrate_cpu, write_files

        sock, machine, notes = calibrate_cpu(reps=reps, log=lambda s: typer.echo(s, err=True))
        node = write_files(sock, machine, out)
        for n in notes:
            typer.echo(f"note: {n}", err=True)
        emit(f"wrote {out} (cpu-socket) and {node} (cpu-cluster): use --hw {node}", None)
