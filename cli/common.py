"""Shared CLI plumbing: one-line errors with exit code 2, output formats, writing to stdout or ``-o FILE``.

Every error is one line on stderr, ``error: <where>: <what is wrong> (allowed: …)``: bad input files and values
(``SpecError``, via ``handle_errors``) and usage errors that typer/click detect before a command runs (a bad
``--format`` choice, an unknown option, a missing argument, a bad number), which ``GuardedGroup`` formats instead
of click's multi-line boxes.  Usage errors exit 2, like bad input.
"""
from __future__ import annotations

import functools
import json
import math
import re
import sys
import traceback
import warnings
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, Sequence

import typer
from typer.core import TyperGroup

from parplan.errors import SpecError, did_you_mean, short, tame

try:  # typer ≥ 0.2x ships its own copy of click
    from typer._click import exceptions as _click_exc
    from typer._click.globals import get_current_context as _current_context
except ImportError:  # typer on top of click
    from click import exceptions as _click_exc
    from click import get_current_context as _current_context

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
ImbalanceOpt = Annotated[Optional[float], typer.Option(
    "--expert-imbalance", help="override training.expert_imbalance (mixture-of-experts workloads): max/mean tokens per "
                               "expert-parallel rank, ≥ 1 (1 = forced balancing; default from measured routing)")]
FormatOpt = Annotated[Format, typer.Option("--format", help="table | json | csv")]
OutputOpt = Annotated[Optional[Path], typer.Option("-o", "--output", help="write the result to this file")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="show a traceback on errors")]

def err_console() -> "Console":  # noqa: F821  (rich.console, imported here: not at start-up)
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def out_console(width: int | None = None) -> Console:
    """The console tables are rendered on: ``width`` when given (a file: ``table_width``), else rich's detection —
    ``COLUMNS``, then the terminal, 80 when neither is known (cli/tables.py)."""
    from parplan.cli.tables import console

    return console(width)


def table_width(output: "Path | None") -> int | None:
    """Tables written to a file (``-o``) are not squeezed to a terminal; on stdout they fit the terminal."""
    from parplan.cli.tables import WIDE

    return WIDE if output is not None else None


def one_line(message: object) -> str:
    """``message`` as one terminal-safe line: whitespace runs collapsed, controls escaped, over-long values cut."""
    return tame(" ".join(str(message).split()), 2000)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> "typer.Exit":
    """One line on stderr (never wrapped), then exit with ``code``."""
    sys.stderr.write(f"error: {one_line(message)}\n")
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


def _option_name(ctx: Any, name: str) -> str:
    for p in getattr(getattr(ctx, "command", None), "params", ()) or ():
        if p.name == name:
            return _param_label(p)
    return "--" + name.replace("_", "-")


def check_finite_options(kwargs: dict) -> None:
    """A float option given on the command line must be finite (``nan``, ``inf`` are no quantities)."""
    ctx = _current_context(silent=True)
    for name, value in kwargs.items():
        if isinstance(value, float) and not math.isfinite(value):
            source = ctx.get_parameter_source(name) if ctx is not None else None
            if source is not None and source.name in ("DEFAULT", "DEFAULT_MAP"):
                continue
            raise SpecError(f"bad value {short(value)}: must be a finite number", key=_option_name(ctx, name))


def handle_errors(fn: Callable) -> Callable:
    """Turn ``SpecError`` (and missing files) into one line on stderr and exit code 2; ``--debug`` adds the traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = bool(kwargs.get("debug"))
        try:
            check_finite_options(kwargs)
            return fn(*args, **kwargs)
        except SpecError as exc:
            if debug:
                traceback.print_exc(file=sys.stderr)
            raise fail(str(exc)) from None
        except OSError as exc:
            if debug:
                traceback.print_exc(file=sys.stderr)
            name = getattr(exc, "filename", "") or ""
            raise fail(f"{name}: {exc.strerror or exc}" if name else str(exc.strerror or exc)) from None

    return wrapper


def emit(text: str, output: Path | None, what: str | None = None) -> None:
    """Data goes to stdout, or to ``output`` with one line on stderr saying what was written: ``what`` (e.g.
    "10 plans as CSV"), its size and the file."""
    body = text if text.endswith("\n") else text + "\n"
    if output is None:
        sys.stdout.write(body)
    else:
        try:
            output.write_text(body, encoding="utf-8")
        except ValueError:  # a NUL byte in the path
            raise SpecError(f"bad file name {short(str(output))}", key="--output") from None
        except OSError as exc:  # a full disk reports no file name ("error: : No space left on device")
            raise SpecError(f"cannot write {short(str(output))}: {exc.strerror or exc}", key="--output") from None
        size = len(body.encode("utf-8"))
        sys.stderr.write(f"wrote {one_line(what) + ' ' if what else ''}({size:,} bytes) to {one_line(output)}\n")


def what_written(fmt: "Format", n: int, noun: str = "plan") -> str:
    """``10 plans as CSV`` / ``1 plan as a table``: the ``what`` of ``emit``."""
    how = {"table": "as a table", "json": "as JSON", "csv": "as CSV"}[fmt.value]
    return f"{n:,} {noun}{'' if n == 1 else 's'} {how}"


def to_json(obj) -> str:
    """JSON text; NaN and infinities (no JSON numbers) become null."""
    return json.dumps(_finite(obj), indent=2, sort_keys=False, default=float, allow_nan=False)


def _finite(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        try:
            return _finite(obj.item())
        except (TypeError, ValueError):
            return obj
    return obj


def gib(x: float) -> str:
    return f"{x / 2**30:.1f}"


def human_s(x: float) -> str:
    if x >= 1.0:
        return f"{x:.3f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.2f} ms"
    if x >= 1e-6 or x == 0.0:
        return f"{x * 1e6:.1f} µs"
    return f"{x * 1e9:.1f} ns"  # DSP kernels, per-task overheads: 48 ns is not "0.0 µs"


# --- usage errors (typer / click) -----------------------------------------------------------------------------
# numpy's floating-point warnings ("overflow encountered in multiply", …): the input ranges rule them out, and a
# stray one is noise on stderr (the results themselves are checked finite by construction of the inputs)
_NUMPY_FP_WARNING = r"(overflow|invalid value|divide by zero|underflow) encountered"


def _param_label(param: Any) -> str:
    """``--global-batch`` for an option, ``MODEL`` for an argument."""
    if getattr(param, "param_type_name", "") == "argument":
        return str(param.name or "argument").upper()
    opts = list(getattr(param, "opts", ()) or ())
    longs = [o for o in opts if o.startswith("--")]
    return (longs or opts or [str(param.name)])[0]


def _param_choices(param: Any) -> list[str] | None:
    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(ann, type) and issubclass(ann, Enum):
        return [str(m.value) for m in ann]
    choices = getattr(getattr(param, "type", None), "choices", None)  # click.Choice
    return [str(getattr(c, "value", c)) for c in choices] if choices else None


def _param_kind(param: Any) -> str | None:
    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    name = getattr(getattr(param, "type", None), "name", None)  # click's INT / FLOAT / BOOL
    if ann is int or name == "integer":
        return "a whole number"
    if ann is float or name == "float":
        return "a number"
    if ann is bool or name == "boolean":
        return "true or false"
    return None


def _given_value(args: Sequence[str], param: Any) -> str | None:
    """The last value given on the command line for option ``param`` (None when it cannot be told)."""
    opts = list(getattr(param, "opts", ()) or ()) + list(getattr(param, "secondary_opts", ()) or ())
    if getattr(param, "param_type_name", "") != "option" or not opts:
        return None
    found = None
    for i, tok in enumerate(args):
        if tok in opts and i + 1 < len(args):
            found = args[i + 1]
        else:
            for o in opts:
                if o.startswith("--") and tok.startswith(o + "="):
                    found = tok[len(o) + 1:]
    return found


def _command_path(ctx: Any, args: Sequence[str] = (), root: Any = None, prog: str | None = None) -> str:
    """``parplan estimate`` for the context of a command (or, without one, from the command names in ``args``)."""
    if ctx is not None and getattr(ctx, "command_path", ""):
        return str(ctx.command_path)
    group: Any = root
    path = [prog or getattr(root, "name", None) or "parplan"]
    for tok in args:
        if tok.startswith("-"):
            continue
        sub = group.commands.get(tok) if hasattr(group, "commands") else None
        if sub is None:
            break
        path.append(tok)
        group = sub
    return " ".join(path)


def _option_names(ctx: Any) -> list[str]:
    names: list[str] = []
    for p in getattr(getattr(ctx, "command", None), "params", ()) or ():
        if getattr(p, "param_type_name", "") == "option" and not getattr(p, "hidden", False):
            names.append(_param_label(p))
    return names + ["--help"]


def usage_error(exc: Exception, args: Sequence[str], root: Any = None, prog: str | None = None) -> SpecError:
    """The one-line form of a click/typer usage error (``root``: the top command, for errors without a context)."""
    ctx = getattr(exc, "ctx", None)
    where = _command_path(ctx, args, root, prog)
    help_hint = f"see '{where} --help'"
    message = str(getattr(exc, "message", "") or exc)
    if isinstance(exc, _click_exc.MissingParameter):
        param = exc.param
        label = _param_label(param) if param is not None else "argument"
        what = "argument" if getattr(param, "param_type_name", "") == "argument" else "option"
        return SpecError(f"required {what} is missing", key=label, hint=help_hint)
    if isinstance(exc, _click_exc.BadParameter):
        param = exc.param
        label = _param_label(param) if param is not None else (str(exc.param_hint or "") or None)
        value = _given_value(args, param) if param is not None else None
        if value is None:  # an argument: click quotes the value first ("'x' is not one of …")
            m = re.match(r"(?:Value error, )?'(.*?)' is not", message, re.S)
            value = m.group(1) if m else None
        choices = _param_choices(param) if param is not None else None
        if choices is not None:
            bad = f"bad value {short(value)}" if value is not None else "bad value"
            return SpecError(bad, key=label, allowed=choices,
                             hint=did_you_mean(value, choices) if value is not None else None)
        kind = _param_kind(param) if param is not None else None
        if kind is not None and value is not None:
            return SpecError(f"bad value {short(value)}: expected {kind}", key=label)
        return SpecError(_first_lower(message.removeprefix("Value error, ")), key=label)
    if isinstance(exc, _click_exc.NoSuchOption):
        options = _option_names(ctx)
        listed = ", ".join(options)
        hint = did_you_mean(exc.option_name, [o for o in options if o != "--help"])
        return SpecError(f"no such option of '{where}'", key=exc.option_name,
                         allowed=options if len(listed) <= 160 else None,
                         hint=hint if len(listed) <= 160 else (f"{hint} " if hint else "") + help_hint)
    if isinstance(exc, _click_exc.BadOptionUsage):
        if re.search(r"requires (an|\d+) arguments?", message):
            return SpecError("needs a value", key=exc.option_name, hint=help_hint)
        return SpecError(_first_lower(message), key=exc.option_name)
    m = re.match(r"No such command '(.*?)'\.", message, re.S)
    if m is not None:
        group = getattr(ctx, "command", None)
        commands = sorted(group.list_commands(ctx)) if hasattr(group, "list_commands") else []
        return SpecError(f"no such command of '{where}'", key=m.group(1), allowed=commands,
                         hint=did_you_mean(m.group(1), commands))
    m = re.match(r"Got unexpected extra arguments?(?:\(s\))? \((.*)\)", message, re.S)
    if m is not None:
        return SpecError(f"unexpected extra argument {short(m.group(1))}", key=where,
                         hint="quote a value that holds spaces; " + help_hint)
    return SpecError(_first_lower(message.rstrip(".")), key=where)


def _first_lower(text: str) -> str:
    text = text.strip()
    return text[:1].lower() + text[1:]


class GuardedGroup(TyperGroup):
    """The root command: typer/click usage errors become one ``error:`` line (exit 2) instead of a rich box, and
    numpy floating-point warnings stay off stderr.  ``--help`` is untouched (fast and pretty)."""

    def main(self, args: Optional[Sequence[str]] = None, prog_name: Optional[str] = None,
             complete_var: Optional[str] = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_NUMPY_FP_WARNING, category=RuntimeWarning)
                rv = super().main(args=argv, prog_name=prog_name, complete_var=complete_var,
                                  standalone_mode=False, **extra)
        except _click_exc.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # click ≥ 8.2: help printed for a bare command
                if not standalone_mode:
                    raise
                if str(getattr(exc, "message", "") or "").strip():
                    exc.show()
                sys.exit(exc.exit_code)
            if not standalone_mode:
                raise
            sys.stderr.write(f"error: {one_line(usage_error(exc, argv, self, prog_name))}\n")
            sys.exit(exc.exit_code)
        except _click_exc.ClickException as exc:
            if not standalone_mode:
                raise
            sys.stderr.write(f"error: {one_line(exc.format_message())}\n")
            sys.exit(exc.exit_code)
        except _abort_types():
            if not standalone_mode:
                raise
            sys.stderr.write("error: aborted\n")
            sys.exit(1)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)


def _abort_types() -> tuple:
    found = [getattr(_click_exc, "Abort", None), getattr(typer, "Abort", None)]
    return tuple({t for t in found if isinstance(t, type)}) or (KeyboardInterrupt,)
