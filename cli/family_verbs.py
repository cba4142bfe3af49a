"""The contract between the shared verbs and a family that brings its own (``FamilyInfo.verbs``, e.g. task graphs,
dataflow kernels, layer chains, replicated services, offloads).

The verbs call the family's handlers with the options every family may read::

    estimate(model, hw, *, plan, fmt, output)
    suggest(model, hw, *, fix, top, objective, fmt, output)
    check(model, hw, *, plan, max_time_s, min_throughput, fmt, output)     # --max-step-time-s, --min-tokens-per-s
    simulate(model, hw, *, plan, seed, fmt, output)
    validate(model, hw, *, plan (a list), top, tolerance, fmt, output)

and pass every other option the user set under its own name; a handler hands those to :func:`unread`, which makes
any of them an error naming the option — an option that does not apply is never silently dropped.
"""
from __future__ import annotations

from parplan.errors import SpecError


def _given(value: object) -> bool:
    return not (value is None or value is False or (isinstance(value, (list, tuple)) and not value))


def given(**options) -> dict:
    """The options the user set (not None / False / empty), to pass on to a family handler."""
    return {k: v for k, v in options.items() if _given(v)}


_FLAGS = {"min_throughput": "--min-tokens-per-s", "max_time_s": "--max-step-time-s"}  # handler name → CLI flag


def _flag(name: str) -> str:
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def unread(extra: dict, family: str = "this family") -> None:
    """Options a family handler does not read: an error when any was set (exit 2), naming them."""
    bad = [_flag(k) for k, v in extra.items() if _given(v)]
    if bad:
        raise SpecError(f"{', '.join(bad)} {'does' if len(bad) == 1 else 'do'} not apply to {family} workloads",
                        hint="the family reads --plan, --fix, --top, --objective, --max-step-time-s, "
                             "--min-tokens-per-s (its own throughput unit), --tolerance, --format, --output — "
                             "see docs/families.md")


# --- what every family's handlers print alike ----------------------------------------------------------------------
def fmt_name(fmt) -> str:
    """``table`` | ``json`` | ``csv`` from a ``Format`` or a string (default table)."""
    from parplan.cli.common import Format

    return fmt.value if isinstance(fmt, Format) else str(fmt or "table")


def csv_text(rows: list) -> str:
    """Rows (dicts) as CSV, floats to 6 significant digits (as the other verbs write them)."""
    import io

    import pandas as pd

    buf = io.StringIO()
    pd.DataFrame(rows).to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


def fix_pairs(fix, allowed, ints=(), sep_hint: str = "key=value") -> dict:
    """``--fix key=value`` items as a mapping: keys among ``allowed``, the ``ints`` ones whole numbers; anything
    else is a one-line error naming the key."""
    out = {}
    for item in fix or []:
        if "=" not in item:
            raise SpecError(f"bad --fix {item!r}: write {sep_hint}", key="--fix")
        k, v = (x.strip() for x in item.split("=", 1))
        if allowed is not None and k not in allowed:
            raise SpecError(f"unknown key {k!r}", key="--fix", allowed=list(allowed))
        if k in ints:
            try:
                v = int(v)
            except ValueError:
                raise SpecError(f"bad value {v!r}: {k} is a whole number", key="--fix") from None
        out[k] = v
    return out


def finish_check(fmt, output, head: str, plan: str, results: list, notes=(), extra_json=None) -> None:
    """Print a check (PASS/FAIL head line, one line per requirement ``(metric, actual, required, ok, op)`` with op
    ``≤`` or ``≥``, then ``notes``) or its JSON, and exit 1 when a requirement is not met."""
    import typer

    from parplan.cli.common import EXIT_CHECK_FAILED, emit, to_json

    ok = all(r[3] for r in results)
    if fmt_name(fmt) == "json":
        emit(to_json({"ok": ok, "plan": plan, **(extra_json or {}), "requirements": [
            {"metric": m, "actual": a, "required": q, "ok": o} for m, a, q, o, _ in results]}), output,
             "check as JSON")
    else:
        lines = [f"{'PASS' if ok else 'FAIL'}  {head}"]
        lines += [f"  {'ok  ' if o else 'FAIL'} {m}: {a:.6g} (required {op} {q:.6g})" for m, a, q, o, op in results]
        lines += list(notes)
        emit("\n".join(lines), output, "check")
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def finish_validate(kind: str, fmt, output, rows: list, tolerance: float, line, digits: int = 1) -> None:
    """Print a validation (``line(row)`` per case, then "N/M within ±tol") as a table, JSON or CSV, and exit 1 when
    a case disagrees beyond ``tolerance``."""
    import typer

    from parplan.cli.common import EXIT_CHECK_FAILED, emit, to_json

    bad = [r for r in rows if abs(r["error"]) > tolerance]
    f = fmt_name(fmt)
    if f == "json":
        emit(to_json({"kind": kind, "tolerance": tolerance, "cases": rows}), output, "validation as JSON")
    elif f == "csv":
        emit(csv_text(rows), output, "validation as CSV")
    else:
        lines = [line(r) for r in rows]
        lines.append(f"{len(rows) - len(bad)}/{len(rows)} within ±{100 * tolerance:.{max(0, digits - 1)}f} %")
        emit("\n".join(lines), output, "validation")
    if bad:
        raise typer.Exit(EXIT_CHECK_FAILED)
