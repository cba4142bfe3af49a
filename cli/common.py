"""Shared CLI plumbing: one-line errors with exit code 2, output formats, writing to stdout or ``-o FILE``."""
from __future__ import annotations

import functools
import json
import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from rich.console import Console

from parplan.errors import SpecError

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


# options shared by the commands (one definition, one help text)
ModelArg = Annotated[str, typer.Argument(help="workload YAML, Hugging Face config.json, or a catalog id")]
HwOpt = Annotated[str, typer.Option("--hw", help="cluster YAML or a cluster catalog id")]
SeqLenOpt = Annotated[Optional[int], typer.Option("--seq-len", help="override training.seq_len")]
GlobalBatchOpt = Annotated[Optional[int], typer.Option("--global-batch", help="override training.global_batch")]
PrecisionOpt = Annotated[Optional[str], typer.Option("--precision", help="override training.precision")]
FrameworkOpt = Annotated[Optional[str], typer.Option(
    "--framework", help="override training.framework: the training framework whose overlaps and launchable plans "
                        "apply (see `parplan catalog list frameworks`; default megatron-core)")]
FormatOpt = Annotated[Format, typer.Option("--format", help="table | json | csv")]
OutputOpt = Annotated[Optional[Path], typer.Option("-o", "--output", help="write the result to this file")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="show a traceback on errors")]


def err_console() -> Console:
    return Console(stderr=True, highlight=False)


def out_console(width: int | None = None) -> Console:
    return Console(highlight=False, width=width or 120, soft_wrap=False)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> "typer.Exit":
    """One line on stderr (never wrapped), then exit with ``code``."""
    sys.stderr.write(f"error: {' '.join(str(message).split())}\n")
    return typer.Exit(code)


PRECISIONS = ["fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "int8"]


def check_precision(precision: "str | None") -> None:
    """``--precision`` must be one of PRECISIONS (checked before any loading, so the error names the flag)."""
    from parplan.errors import did_you_mean

    if precision is not None and precision not in PRECISIONS:
        raise SpecError(f"bad value {precision!r}", key="--precision", allowed=PRECISIONS,
                        hint=did_you_mean(precision, PRECISIONS))


def check_framework(framework: "str | None") -> None:
    """``--framework`` must be a framework catalog id (checked before any loading, so the error names the flag)."""
    if framework is not None:
        from parplan.models.framework import check_framework_id

        check_framework_id(framework, key="--framework")


def handle_errors(fn: Callable) -> Callable:
    """Turn ``SpecError`` (and missing files) into one line on stderr and exit code 2; ``--debug`` adds the traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = bool(kwargs.get("debug"))
        try:
            return fn(*args, **kwargs)
        except SpecError as exc:
            if debug:
                traceback.print_exc(file=sys.stderr)
            raise fail(str(exc)) from None
        except OSError as exc:
            if debug:
                traceback.print_exc(file=sys.stderr)
            raise fail(f"{getattr(exc, 'filename', '') or ''}: {exc.strerror or exc}") from None

    return wrapper


def emit(text: str, output: Path | None) -> None:
    """Data goes to stdout, or to ``output`` (with a note on stderr)."""
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        err_console().print(f"wrote {output}", markup=False)


def to_json(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=float)


def gib(x: float) -> str:
    return f"{x / 2**30:.1f}"


def human_s(x: float) -> str:
    if x >= 1.0:
        return f"{x:.3f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.2f} ms"
    return f"{x * 1e6:.1f} µs"
