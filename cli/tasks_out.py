"""Verb handlers of the task-graph family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``, ``simulate``
and ``validate`` on a task-graph workload and a CPU machine, printed like the other verbs (table | json | csv on
stdout or ``-o``).  The transformer verbs call these when ``registry.verbs_for(model)`` names this module.

Exit codes as everywhere: 0 done; 1 a ``check`` requirement is not met (or ``validate`` disagrees beyond the
tolerance); 2 bad input (``SpecError``, one line on stderr).
"""
from __future__ import annotations

from parplan.cli.common import Format, human_s, table_width
from parplan.cli.family_verbs import (check_bounds, check_tolerance, csv_text, finish_check, finish_result,
                                      finish_simulate, finish_validate, fix_pairs, parts_table, searched_plan, unread)
from parplan.errors import SpecError
from parplan.models.tasks_terms import TIME_PARTS

_SHORT = {"compute_s": "comp", "memory_s": "mem", "task_overhead_s": "ovh", "contention_s": "cont", "span_s": "span",
          "barrier_s": "barr", "record_s": "rec", "mpi_halo_s": "halo", "mpi_allreduce_s": "allr"}
FAMILY = "task-graph"
LEGEND = ("shares of the run time: comp = useful work, mem = bandwidth-roofline excess, ovh = per-task runtime cost, "
          "cont = serialized (team-wide lock, single producer), span = burdened span, barr = barriers, rec = "
          "record (replay runtimes), halo/allr = MPI")
FIX_KEYS = ("runtime", "threads", "sockets", "grain", "ranks")


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, render

    con = console(width)
    head = [["plan", e.plan_string()], ["run time", human_s(e.total_s)],
            ["speedup", f"{e.speedup:.2f}× over the serial elision ({human_s(e.serial_s)}) on {e.threads} threads"],
            ["tasks", f"{e.tasks:,.0f} of {human_s(e.grain_s)} mean grain"]] + [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.machine}",
                  show_header=False, con=con)
    return text + parts_table(e.parts, e.total_s, "time (all iterations)", con)


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.tasks import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    finish_result(fmt, output, "1 plan", "task-estimate", e, lambda: csv_text([{**_row(e), **e.parts}]),
                  lambda: _table_estimate(e, table_width(output)))


def _row(e) -> dict:
    return {k: v for k, v in e.to_dict().items() if k not in ("breakdown_s", "notes")}


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

    ps = api_suggest(model, hw, fix=fix_pairs(fix, FIX_KEYS, ints=FIX_KEYS[1:]), top=top)
    finish_result(fmt, output, f"{len(ps.rows)} plans", "task-suggest", ps, lambda: csv_text(ps.rows),
                  lambda: render_plans(ps, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, min_speedup=None, fix=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) runs within --max-step-time-s (and reaches ``min_speedup``, API)."""
    unread(extra, FAMILY)
    check_bounds(max_time_s, min_speedup, min_name="min_speedup")
    from parplan.tasks import estimate as api_estimate, suggest as api_suggest

    if plan is None:
        rows = api_suggest(model, hw, fix=fix_pairs(fix, FIX_KEYS, ints=FIX_KEYS[1:]), top=0).rows
        plan = searched_plan(rows, lambda r: (max_time_s is None or r["total_s"] <= max_time_s)
                             and (min_speedup is None or r["speedup"] >= min_speedup),
                             lambda r: ",".join(f"{k}={r[k]}" for k in FIX_KEYS))
    e = api_estimate(model, hw, plan)
    results = []
    if max_time_s is not None:
        results.append(("run time", e.total_s, max_time_s, e.total_s <= max_time_s, "≤"))
    if min_speedup is not None:
        results.append(("speedup", e.speedup, min_speedup, e.speedup >= min_speedup, "≥"))
    finish_check(fmt, output, f"{e.workload} on {e.machine}: {e.plan_string()} ({human_s(e.total_s)}, "
                              f"{e.speedup:.1f}×)", e.plan_string(), results)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.tasks import estimate as api_estimate, simulate as api_simulate

    r = api_simulate(model, hw, plan, seed=seed)
    e = api_estimate(model, hw, plan)
    doc = {"kind": "task-simulate", "plan": e.plan_string(), "simulated_s": r.makespan_s, "predicted_s": e.total_s,
           "error": r.makespan_s / e.total_s - 1.0, "tasks": r.tasks, "steals": r.steals,
           "failed_steals": r.failed_steals, "busy_fraction": r.busy_fraction, "scaled": r.scale}
    finish_simulate(fmt, output, doc, f"{e.workload} on {e.machine}: {e.plan_string()}\n  simulated "
                    f"{human_s(r.makespan_s)} vs closed form {human_s(e.total_s)} ({100 * doc['error']:+.1f} %); "
                    f"{r.tasks:,} tasks, {r.steals:,} steals ({r.failed_steals:,} failed), workers busy "
                    f"{100 * r.busy_fraction:.0f} %"
                    + (f"; graph scaled ×{r.scale:g} to fit the simulation budget" if r.scale != 1 else ""))


def validate(model, hw, *, tolerance=0.25, fmt=Format.table, output=None, **extra) -> None:
    """Simulate every runtime × a few thread counts × every grain and compare with the closed form."""
    unread(extra, FAMILY)
    check_tolerance(tolerance)
    from parplan.executor.worksteal import agreement

    finish_validate("task-validate", fmt, output, agreement(model, hw), tolerance,
                    lambda r: f"{r['runtime']:<11} thr {r['threads']:>4} grain {r['grain']:>7}: simulated "
                              f"{human_s(r['simulated_s'])}, closed form {human_s(r['predicted_s'])} "
                              f"({100 * r['error']:+.1f} %)")
