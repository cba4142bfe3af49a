"""Verb handlers of the replicated-service family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``,
``simulate`` and ``validate`` on a replicated-service workload and a CPU machine (its nodes are the replicas),
printed like the other verbs (table | json | csv on stdout or ``-o``).

``check`` reads --min-tokens-per-s as commands per second (the family's throughput unit) and --max-step-time-s as
the latency bound at the offered load.  Exit codes: 0 done; 1 a requirement is not met (or ``validate``
disagrees beyond the tolerance); 2 bad input.
"""
from __future__ import annotations

import io

import typer

from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, human_s, table_width, to_json
from parplan.cli.family_verbs import unread
from parplan.errors import SpecError

FAMILY = "replicated-service"
FIX_KEYS = ("scheme", "threads", "rings", "batch")
_LAT_SHORT = {"client_s": "cli", "batching_s": "bat", "leader_s": "lead", "transfer_s": "xfer", "propagation_s": "prop",
              "deliver_s": "dlv", "scheduler_s": "sch", "queue_s": "que", "execute_s": "exe", "reply_s": "rep"}
LEGEND = ("latency shares: cli = client → leader, bat = batch fill, lead = ring leader (wait + CPU), xfer = NIC "
          "transfers, prop = accept/ack/decision propagation, dlv = learner delivery, sch = central scheduler, que = "
          "thread queue, exe = execution (+ barrier signalling), rep = reply; limit = the resource that bounds the "
          "throughput")


def _fmt(fmt) -> str:
    return fmt.value if isinstance(fmt, Format) else str(fmt or "table")


def _csv(rows: list[dict]) -> str:
    import pandas as pd

    buf = io.StringIO()
    pd.DataFrame(rows).to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


def _kcmd(x: float) -> str:
    return f"{x / 1e3:,.1f} kcmd/s"


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, render

    con = console(width)
    head = [["plan", e.plan_string()], ["throughput", f"{_kcmd(e.throughput_per_s)} (bound: {e.limit})"],
            ["latency", f"{human_s(e.latency_s)} at {_kcmd(e.load_per_s)}" if e.fits else "—"]]
    head += [["does not fit", r] for r in e.reasons] + [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.machine}",
                  show_header=False, con=con)
    worst = max(e.capacity_s.values())
    rows = [[k.removesuffix("_s"), f"{v * 1e6:.3f}", f"{100 * v / worst:.0f} %"] for k, v in e.capacity_s.items()]
    rows += [[f"  exec: {k.removesuffix('_s')}", f"{v * 1e6:.3f}", ""] for k, v in e.exec_parts_s.items()]
    text += render([Col("resource", "left"), Col("µs/command"), Col("of bound")], rows,
                   title="capacity: seconds each resource spends per command (throughput = 1 / max)", con=con)
    if e.fits:
        rows = [[k.removesuffix("_s"), f"{v * 1e6:.2f}", f"{100 * v / e.latency_s:.1f} %"]
                for k, v in e.latency_parts_s.items()]
        rows.append(["total", f"{e.latency_s * 1e6:.2f}", "100.0 %"])
        text += render([Col("part", "left"), Col("µs"), Col("share")], rows, title="latency at the offered load",
                       con=con)
    return text


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.replication import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    f = _fmt(fmt)
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "replication-estimate", **e.to_dict()}), output, "1 plan as JSON")
    elif f == "csv":
        row = {k: v for k, v in e.to_dict().items() if not isinstance(v, (dict, list))}
        emit(_csv([{**row, **{f"cap_{k}": v for k, v in e.capacity_s.items()},
                    **{f"lat_{k}": v for k, v in e.latency_parts_s.items()}}]), output, "1 plan as CSV")
    else:
        emit(_table_estimate(e, table_width(output)), output, "1 plan as a table")


def _fix_map(fix) -> dict:
    out = {}
    for item in fix or []:
        if "=" not in item:
            raise SpecError(f"bad --fix {item!r}: write key=value", key="--fix")
        k, v = (x.strip() for x in item.split("=", 1))
        if k not in FIX_KEYS:
            raise SpecError(f"unknown key {k!r}", key="--fix", allowed=FIX_KEYS)
        if k != "scheme":
            try:
                v = int(v)
            except ValueError:
                raise SpecError(f"bad value {v!r}: {k} is a whole number", key="--fix") from None
        out[k] = v
    return out


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, render
    from parplan.models.replication import LATENCY_PARTS

    cols = [Col("#"), Col("scheme", "left"), Col("threads"), Col("rings"), Col("batch"), Col("kcmd/s"),
            Col("limit", "left"), Col("latency µs"), Col("fits", keep=3)] + [Col(v, keep=5) for v in
                                                                            _LAT_SHORT.values()]
    rows = []
    for r in ps.rows:
        lat = r["latency_s"]
        ok = r["fits"] and lat < float("inf")
        rows.append([str(r["rank"]), r["scheme"], str(r["threads"]), str(r["rings"]), str(r["batch"]),
                     f"{r['throughput_per_s'] / 1e3:,.1f}", r["limit"], f"{lat * 1e6:,.1f}" if ok else "—",
                     "yes" if r["fits"] else "no"]
                    + [f"{100 * r['lat_' + k] / lat:.0f}%" if ok else "—" for k in LATENCY_PARTS])
    title = (f"{ps.workload} on {ps.machine}: top {len(ps.rows)} of {ps.n_configs:,} configurations "
             f"({ps.n_feasible:,} fit) by {ps.objective}")
    notes = [LEGEND] + [f"#{r['rank']} does not fit: {'; '.join(r['reasons'])}" for r in ps.rows if not r["fits"]][:3]
    return render(cols, rows, title=title, width=width, notes=lambda dropped: notes)


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    if objective not in (None, "throughput", "latency"):
        raise SpecError(f"bad value {objective!r}: replicated services are ranked by throughput or latency",
                        key="--objective", allowed=["throughput", "latency"])
    unread(extra, FAMILY)
    from parplan.replication import suggest as api_suggest

    ps = api_suggest(model, hw, fix=_fix_map(fix), top=top, objective=objective)
    f = _fmt(fmt)
    what = f"{len(ps.rows)} plans"
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "replication-suggest", **ps.to_dict()}), output, what + " as JSON")
    elif f == "csv":
        emit(_csv([{k: v for k, v in r.items() if k != "reasons"} for r in ps.rows]), output, what + " as CSV")
    else:
        emit(render_plans(ps, width=table_width(output)), output, what + " as a table")


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) fits, sustains --min-tokens-per-s commands/s and answers within
    --max-step-time-s at the offered load."""
    unread(extra, FAMILY)
    from parplan.planner.budget import check_number

    check_number(max_time_s, "--max-step-time-s", lo=0, lo_open=True)  # > 0 and finite, like every verb
    check_number(min_throughput, "--min-tokens-per-s", lo=0, lo_open=True)
    from parplan.replication import estimate as api_estimate, suggest as api_suggest

    if plan is None:
        best = api_suggest(model, hw, top=1).rows[0]
        plan = ",".join(f"{k}={best[k]}" for k in FIX_KEYS)
    e = api_estimate(model, hw, plan)
    results = [("fits", 1.0 if e.fits else 0.0, 1.0, e.fits)]
    if min_throughput is not None:
        results.append(("throughput", e.throughput_per_s, min_throughput, e.throughput_per_s >= min_throughput))
    if max_time_s is not None:
        results.append(("latency", e.latency_s, max_time_s, e.fits and e.latency_s <= max_time_s))
    ok = all(r[3] for r in results)
    if _fmt(fmt) == "json":
        emit(to_json({"ok": ok, "plan": e.plan_string(), "reasons": e.reasons, "requirements": [
            {"metric": m, "actual": a, "required": q, "ok": o} for m, a, q, o in results]}), output, "check as JSON")
    else:
        lines = [f"{'PASS' if ok else 'FAIL'}  {e.workload} on {e.machine}: {e.plan_string()} "
                 f"({_kcmd(e.throughput_per_s)}, bound: {e.limit})"]
        lines += [f"  {'ok  ' if o else 'FAIL'} {m}: {a:.6g} (required {'≤' if m == 'latency' else '≥'} {q:.6g})"
                  for m, a, q, o in results]
        lines += [f"  why: {r}" for r in e.reasons]
        emit("\n".join(lines), output, "check")
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.replication import estimate as api_estimate, simulate as api_simulate

    e = api_estimate(model, hw, plan)
    r = api_simulate(model, hw, e.plan_string(), seed=seed)
    doc = {"kind": "replication-simulate", "plan": e.plan_string(), "commands": r.commands,
           "simulated_throughput_per_s": r.throughput_per_s, "predicted_throughput_per_s": e.throughput_per_s,
           "error": e.throughput_per_s / r.throughput_per_s - 1.0, "limit": e.limit, "events": r.events}
    if _fmt(fmt) == "json":
        emit(to_json(doc), output, "1 simulation as JSON")
    else:
        emit(f"{e.workload} on {e.machine}: {e.plan_string()}\n  simulated {_kcmd(r.throughput_per_s)} vs closed "
             f"form {_kcmd(e.throughput_per_s)} ({100 * doc['error']:+.1f} %), bound: {e.limit}; "
             f"{r.commands:,} commands, {r.events:,} events", output, "1 simulation")


def validate(model, hw, *, plan=None, tolerance=0.05, fmt=Format.table, output=None, top=None, **extra) -> None:
    """Closed form vs the executor on the workload's schemes (or the given plans)."""
    unread(dict(extra, top=top), FAMILY)  # its plans are fixed (or --plan): --top does not apply
    from parplan.planner.budget import check_number

    check_number(tolerance, "--tolerance", lo=0, hi=1, lo_open=True, hi_open=True)  # as validate's door
    from parplan.executor.replication import agreement

    rows = agreement(model, hw, plans=list(plan) if plan else None)
    bad = [r for r in rows if abs(r["error"]) > tolerance]
    if _fmt(fmt) == "json":
        emit(to_json({"kind": "replication-validate", "tolerance": tolerance, "cases": rows}), output,
             "validation as JSON")
    elif _fmt(fmt) == "csv":
        emit(_csv(rows), output, "validation as CSV")
    else:
        lines = [f"{r['plan']:<44} {r['metric']:<17} simulated {r['simulated']:.6g}, closed form "
                 f"{r['predicted']:.6g} ({100 * r['error']:+.2f} %)" for r in rows]
        lines.append(f"{len(rows) - len(bad)}/{len(rows)} within ±{100 * tolerance:.0f} %")
        emit("\n".join(lines), output, "validation")
    if bad:
        raise typer.Exit(EXIT_CHECK_FAILED)
