"""Verb handlers of the task-graph family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``, ``simulate``
and ``validate`` on a task-graph workload and a CPU machine, printed like the other verbs (table | json | csv on
stdout or ``-o``).  The transformer verbs call these when ``registry.verbs_for(model)`` names this module.

Exit codes as everywhere: 0 done; 1 a ``check`` requirement is not met (or ``validate`` disagrees beyond the
tolerance); 2 bad input (``SpecError``, one line on stderr).
"""
from __future__ import annotations

import io

import typer

from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, human_s, table_width, to_json
from parplan.cli.family_verbs import unread
from parplan.errors import SpecError
from parplan.models.tasks_terms import TIME_PARTS

_SHORT = {"compute_s": "comp", "memory_s": "mem", "task_overhead_s": "ovh", "contention_s": "cont", "span_s": "span",
          "barrier_s": "barr", "record_s": "rec", "mpi_halo_s": "halo", "mpi_allreduce_s": "allr"}
FAMILY = "task-graph"
LEGEND = ("shares of the run time: comp = useful work, mem = bandwidth-roofline excess, ovh = per-task runtime cost, "
          "cont = serialized (team-wide lock, single producer), span = burdened span, barr = barriers, rec = "
          "record (replay runtimes), halo/allr = MPI")


def _fmt(fmt) -> str:
    return fmt.value if isinstance(fmt, Format) else str(fmt or "table")


def _csv(rows: list[dict]) -> str:
    import pandas as pd

    buf = io.StringIO()
    pd.DataFrame(rows).to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, fmt_time, render, time_unit

    con = console(width)
    head = [["plan", e.plan_string()], ["run time", human_s(e.total_s)],
            ["speedup", f"{e.speedup:.2f}× over the serial elision ({human_s(e.serial_s)}) on {e.threads} threads"],
            ["tasks", f"{e.tasks:,.0f} of {human_s(e.grain_s)} mean grain"]] + [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.machine}",
                  show_header=False, con=con)
    scale, unit = time_unit(list(e.parts.values()) + [e.total_s])
    rows = [[k.removesuffix("_s"), fmt_time(v, scale), f"{100 * v / e.total_s:.1f} %"] for k, v in e.parts.items()]
    rows.append(["total", fmt_time(e.total_s, scale), "100.0 %"])
    return text + render([Col("part", "left"), Col(unit), Col("share")], rows, title="time (all iterations)", con=con)


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.tasks import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    f = _fmt(fmt)
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "task-estimate", **e.to_dict()}), output, "1 plan as JSON")
    elif f == "csv":
        row = {k: v for k, v in e.to_dict().items() if k not in ("breakdown_s", "notes")}
        emit(_csv([{**row, **e.parts}]), output, "1 plan as CSV")
    else:
        emit(_table_estimate(e, table_width(output)), output, "1 plan as a table")


def _fix_map(fix) -> dict:
    out = {}
    for item in fix or []:
        if "=" not in item:
            raise SpecError(f"bad --fix {item!r}: write key=value", key="--fix")
        k, v = (x.strip() for x in item.split("=", 1))
        if k not in ("runtime", "threads", "sockets", "grain", "ranks"):
            raise SpecError(f"unknown key {k!r}", key="--fix", allowed=["runtime", "threads", "sockets", "grain",
                                                                         "ranks"])
        if k != "runtime":
            try:
                v = int(v)
            except ValueError:
                raise SpecError(f"bad value {v!r}: {k} is a whole number", key="--fix") from None
        out[k] = v
    return out


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    scale, unit = time_unit([r["total_s"] for r in ps.rows] or [1.0])
    cols = [Col("#"), Col("runtime", "left"), Col("thr/sock"), Col("sock"), Col("ranks", keep=3), Col("grain"),
            Col("task µs"), Col(f"time {unit}"), Col("speedup")] + [Col(v, keep=5) for v in _SHORT.values()]
    rows = []
    for r in ps.rows:
        t = r["total_s"]
        rows.append([str(r["rank"]), r["runtime"], str(r["threads"]), str(r["sockets"]), str(r["ranks"]),
                     str(r["grain"]), f"{r['grain_s'] * 1e6:.2f}", fmt_time(t, scale), f"{r['speedup']:.1f}×"]
                    + [f"{100 * r[k] / t:.0f}%" for k in TIME_PARTS])
    title = f"{ps.workload} on {ps.machine}: top {len(ps.rows)} of {ps.n_configs:,} configurations by run time"
    return render(cols, rows, title=title, width=width, notes=lambda dropped: [LEGEND])


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    if objective not in (None, "time"):
        raise SpecError(f"bad value {objective!r}: task graphs are ranked by run time", key="--objective",
                        allowed=["time"])
    unread(extra, FAMILY)
    from parplan.tasks import suggest as api_suggest

    ps = api_suggest(model, hw, fix=_fix_map(fix), top=top)
    f = _fmt(fmt)
    what = f"{len(ps.rows)} plans"
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "task-suggest", **ps.to_dict()}), output, what + " as JSON")
    elif f == "csv":
        emit(_csv(ps.rows), output, what + " as CSV")
    else:
        emit(render_plans(ps, width=table_width(output)), output, what + " as a table")


def check(model, hw, *, plan=None, max_time_s=None, min_speedup=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) runs within --max-step-time-s (and reaches ``min_speedup``, API)."""
    unread(extra, FAMILY)
    from parplan.planner.budget import check_number

    check_number(max_time_s, "--max-step-time-s", lo=0, lo_open=True)  # > 0 and finite, like every verb
    check_number(min_speedup, "min_speedup", lo=0, lo_open=True)
    from parplan.tasks import estimate as api_estimate, suggest as api_suggest

    if plan is None:
        best = api_suggest(model, hw, top=1).rows[0]
        plan = ",".join(f"{k}={best[k]}" for k in ("runtime", "threads", "sockets", "grain", "ranks"))
    e = api_estimate(model, hw, plan)
    results = []
    if max_time_s is not None:
        results.append(("run time", e.total_s, max_time_s, e.total_s <= max_time_s))
    if min_speedup is not None:
        results.append(("speedup", e.speedup, min_speedup, e.speedup >= min_speedup))
    ok = all(r[3] for r in results)
    if _fmt(fmt) == "json":
        emit(to_json({"ok": ok, "plan": e.plan_string(), "requirements": [
            {"metric": m, "actual": a, "required": q, "ok": o} for m, a, q, o in results]}), output, "check as JSON")
    else:
        lines = [f"{'PASS' if ok else 'FAIL'}  {e.workload} on {e.machine}: {e.plan_string()} "
                 f"({human_s(e.total_s)}, {e.speedup:.1f}×)"]
        lines += [f"  {'ok  ' if o else 'FAIL'} {m}: {a:.6g} (required {'≤' if m == 'run time' else '≥'} {q:.6g})"
                  for m, a, q, o in results]
        emit("\n".join(lines), output, "check")
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.tasks import estimate as api_estimate, simulate as api_simulate

    r = api_simulate(model, hw, plan, seed=seed)
    e = api_estimate(model, hw, plan)
    doc = {"kind": "task-simulate", "plan": e.plan_string(), "simulated_s": r.makespan_s, "predicted_s": e.total_s,
           "error": r.makespan_s / e.total_s - 1.0, "tasks": r.tasks, "steals": r.steals,
           "failed_steals": r.failed_steals, "busy_fraction": r.busy_fraction, "scaled": r.scale}
    if _fmt(fmt) == "json":
        emit(to_json(doc), output, "1 simulation as JSON")
    else:
        emit(f"{e.workload} on {e.machine}: {e.plan_string()}\n  simulated {human_s(r.makespan_s)} vs closed form "
             f"{human_s(e.total_s)} ({100 * doc['error']:+.1f} %); {r.tasks:,} tasks, {r.steals:,} steals "
             f"({r.failed_steals:,} failed), workers busy {100 * r.busy_fraction:.0f} %"
             + (f"; graph scaled ×{r.scale:g} to fit the simulation budget" if r.scale != 1 else ""), output,
             "1 simulation")


def validate(model, hw, *, tolerance=0.25, fmt=Format.table, output=None, **extra) -> None:
    """Simulate every runtime × a few thread counts × every grain and compare with the closed form."""
    unread(extra, FAMILY)
    from parplan.planner.budget import check_number

    check_number(tolerance, "--tolerance", lo=0, hi=1, lo_open=True, hi_open=True)  # as validate's door
    from parplan.executor.worksteal import agreement

    rows = agreement(model, hw)
    bad = [r for r in rows if abs(r["error"]) > tolerance]
    if _fmt(fmt) == "json":
        emit(to_json({"kind": "task-validate", "tolerance": tolerance, "cases": rows}), output, "validation as JSON")
    elif _fmt(fmt) == "csv":
        emit(_csv(rows), output, "validation as CSV")
    else:
        lines = [f"{r['runtime']:<11} thr {r['threads']:>4} grain {r['grain']:>7}: simulated "
                 f"{human_s(r['simulated_s'])}, closed form {human_s(r['predicted_s'])} ({100 * r['error']:+.1f} %)"
                 for r in rows]
        lines.append(f"{len(rows) - len(bad)}/{len(rows)} within ±{100 * tolerance:.0f} %")
        emit("\n".join(lines), output, "validation")
    if bad:
        raise typer.Exit(EXIT_CHECK_FAILED)
