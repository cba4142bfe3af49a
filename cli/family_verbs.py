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


def serve_door(verb: str, serve, deployment, **options) -> None:
    """--serve reads the serve file (request mix, SLOs, precision, engine) and --deployment; the training options
    a serving ``verb`` does not read are an error naming them (they were dropped, even invalid ones), and so is a
    --deployment without --serve (a training run was priced instead)."""
    if serve is None:
        if deployment is not None:
            raise SpecError("--deployment applies to a serving workload: give --serve serve.yaml too",
                            key="--deployment")
        return
    bad = [_flag(k) for k, v in options.items() if _given(v)]
    if bad:
        raise SpecError(f"{', '.join(bad)} {'does' if len(bad) == 1 else 'do'} not apply to a serving {verb} "
                        "(--serve)", key="--serve", hint="the serve file holds the request mix, SLOs, precision and "
                        "engine; see docs/serving.md")


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
        read = [f for f in ("--plan", "--fix", "--top", "--objective", "--max-step-time-s", "--min-tokens-per-s",
                            "--tolerance", "--format", "--output") if f not in bad]  # (not the one refused here)
        raise SpecError(f"{', '.join(bad)} {'does' if len(bad) == 1 else 'do'} not apply to {family} workloads",
                        hint=f"the family's verbs read {', '.join(read)} (each verb its own; --min-tokens-per-s in "
                             "the family's throughput unit) — see docs/families.md")


# --- what every family's handlers print alike ----------------------------------------------------------------------
def fmt_name(fmt) -> str:
    """``table`` | ``json`` | ``csv`` from a ``Format`` or a string (default table)."""
    from parplan.cli.common import Format

    return fmt.value if isinstance(fmt, Format) else str(fmt or "table")


def csv_text(rows: list, cell=None) -> str:
    """Rows (dicts) as CSV, floats to 6 significant digits (as the other verbs write them); ``cell`` (if given)
    turns each value into what its cell holds (e.g. a list or mapping as one string)."""
    import io

    import pandas as pd

    if cell is not None:
        rows = [{k: cell(v) for k, v in r.items()} for r in rows]
    buf = io.StringIO()
    pd.DataFrame(rows).to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


def finish_result(fmt, output, what: str, kind: str, result, csv, table) -> None:
    """Print an estimate or a search: JSON (``{"schema_version": "1", "kind": kind, **result.to_dict()}``), CSV
    (``csv()``, its text) or a table (``table()``, its text), told on stderr as ``what`` "as JSON" / … with -o."""
    from parplan.cli.common import emit, to_json

    f = fmt_name(fmt)
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": kind, **result.to_dict()}), output, what + " as JSON")
    elif f == "csv":
        emit(csv(), output, what + " as CSV")
    else:
        emit(table(), output, what + " as a table")


def parts_table(parts: dict, total: float, title: str, con) -> str:
    """A time breakdown (seconds per part) as a table: each part in one time unit with its share of ``total``,
    then the total."""
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    scale, unit = time_unit(list(parts.values()) + [total])
    rows = [[k.removesuffix("_s"), fmt_time(v, scale), f"{100 * v / total:.1f} %" if total else "—"]
            for k, v in parts.items()]
    rows.append(["total", fmt_time(total, scale), "100.0 %"])
    return render([Col("part", "left"), Col(unit), Col("share")], rows, title=title, con=con)


def finish_simulate(fmt, output, doc: dict, text: str) -> None:
    """Print a simulation: ``doc`` as JSON, else ``text``."""
    from parplan.cli.common import emit, to_json

    if fmt_name(fmt) == "json":
        emit(to_json(doc), output, "1 simulation as JSON")
    else:
        emit(text, output, "1 simulation")


def fix_pairs(fix, allowed, ints=(), sep_hint: str = "key=value", choices=None) -> dict:
    """``--fix key=value`` items as a mapping: keys among ``allowed``, the ``ints`` ones whole numbers, the
    ``choices`` ones (key → values) one of theirs; anything else is a one-line error naming the key."""
    out = {}
    for item in fix or []:
        if "=" not in item:
            raise SpecError(f"bad --fix {item!r}: write {sep_hint}", key="--fix")
        k, v = (x.strip() for x in item.split("=", 1))
        if allowed is not None and k not in allowed:
            raise SpecError(f"unknown key {k!r}", key="--fix", allowed=list(allowed))
        if k in out:
            raise SpecError(f"--fix {k} is given twice", key=f"--fix {k}", hint="give each key once")
        if k in ints:
            if not (v.isascii() and v.lstrip("+-").isdigit()):  # int() also reads "1_6", "٣" and "１６"
                raise SpecError(f"bad value {v!r}: {k} is a whole number", key="--fix")
            v = int(v)
        elif choices and k in choices and v not in choices[k]:
            raise SpecError(f"bad value {v!r}", key=f"--fix {k}", allowed=list(choices[k]))
        out[k] = v
    return out


def check_failed_nothing_fits(fmt, output, err) -> None:
    """check's FAIL (exit 1) when the search finds no plan that fits: the input is valid, the requirement unmet."""
    import typer

    from parplan.cli.common import EXIT_CHECK_FAILED, emit, to_json

    if fmt_name(fmt) == "json":
        emit(to_json({"ok": False, "plan": None, "reasons": [err.message], "hint": err.hint, "requirements": []}),
             output, "check as JSON")
    else:
        emit(f"FAIL  {err.message}", output, "check")
    raise typer.Exit(EXIT_CHECK_FAILED)


def searched_plan(rows, meets, plan_of) -> str:
    """The plan check judges when no --plan is given: the first of the family's ranked ``rows`` (every plan, --fix
    applied) that ``meets`` every bound, else the best one (which then FAILs, showing by how much) — as the
    transformer check reports the best plan that meets every requirement."""
    if not rows:
        raise SpecError("no plan is left after --fix", key="--fix")
    return plan_of(next((r for r in rows if meets(r)), rows[0]))


def check_bounds(max_time_s=None, min_throughput=None, min_name: str = "--min-tokens-per-s") -> None:
    """check's bounds > 0 and finite, like every verb's: --max-step-time-s and the throughput (``min_name``)."""
    from parplan.planner.budget import check_number

    check_number(max_time_s, "--max-step-time-s", lo=0, lo_open=True)
    check_number(min_throughput, min_name, lo=0, lo_open=True)


def check_tolerance(tolerance) -> None:
    """validate's --tolerance finite in (0, 1), as validate's door checks it."""
    from parplan.planner.budget import check_number

    check_number(tolerance, "--tolerance", lo=0, hi=1, lo_open=True, hi_open=True)


def finish_check(fmt, output, head: str, plan: str, results: list, notes=(), extra_json=None) -> None:
    """Print a check (PASS/FAIL head line, one line per requirement ``(metric, actual, required, ok, op)`` with op
    ``≤`` or ``≥``, or with actual None a pass/fail test printed without figures; then ``notes``) or its JSON, and
    exit 1 when a requirement is not met."""
    import typer

    from parplan.cli.common import EXIT_CHECK_FAILED, emit, to_json

    ok = all(r[3] for r in results)
    if fmt_name(fmt) == "json":
        emit(to_json({"ok": ok, "plan": plan, **(extra_json or {}), "requirements": [
            {"metric": m, "ok": o} if a is None else {"metric": m, "actual": a, "required": q, "ok": o}
            for m, a, q, o, _ in results]}), output, "check as JSON")
    else:
        lines = [f"{'PASS' if ok else 'FAIL'}  {head}"]
        lines += [f"  {'ok  ' if o else 'FAIL'} {m}" + ("" if a is None else f": {a:.6g} (required {op} {q:.6g})")
                  for m, a, q, o, op in results]
        lines += list(notes)
        emit("\n".join(lines), output, "check")
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def finish_validate(kind: str, fmt, output, rows: list, tolerance: float, line, digits: int = 1, cell=None) -> None:
    """Print a validation (``line(row)`` per case, then "N/M within ±tol") as a table, JSON or CSV (``cell`` as in
    :func:`csv_text`), and exit 1 when a case disagrees beyond ``tolerance``."""
    import typer

    from parplan.cli.common import EXIT_CHECK_FAILED, emit, to_json

    bad = [r for r in rows if abs(r["error"]) > tolerance]
    f = fmt_name(fmt)
    if f == "json":
        emit(to_json({"kind": kind, "tolerance": tolerance, "cases": rows}), output, "validation as JSON")
    elif f == "csv":
        emit(csv_text(rows, cell), output, "validation as CSV")
    else:
        lines = [line(r) for r in rows]
        lines.append(f"{len(rows) - len(bad)}/{len(rows)} within ±{100 * tolerance:.{max(0, digits - 1)}f} %")
        emit("\n".join(lines), output, "validation")
    if bad:
        raise typer.Exit(EXIT_CHECK_FAILED)
