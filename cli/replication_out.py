"""Verb handlers of the replicated-service family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``,
``simulate`` and ``validate`` on a replicated-service workload and a CPU machine (its nodes are the replicas),
printed like the other verbs (table | json | csv on stdout or ``-o``).

``check`` reads --min-tokens-per-s as commands per second (the family's throughput unit) and --max-step-time-s as
the latency bound at the offered load.  Exit codes: 0 done; 1 a requirement is not met (or ``validate``
disagrees beyond the tolerance); 2 bad input.
"""
from __future__ import annotations

from parplan.cli.common import Format, human_s, table_width
from parplan.cli.family_verbs import (check_bounds, check_tolerance, csv_text, finish_check, finish_result,
                                      finish_simulate, finish_validate, fix_pairs, searched_plan, unread)
from parplan.errors import SpecError

FAMILY = "replicated-service"
FIX_KEYS = ("scheme", "threads", "rings", "batch")
_LAT_SHORT = {"client_s": "cli", "batching_s": "bat", "leader_s": "lead", "transfer_s": "xfer", "propagation_s": "prop",
              "deliver_s": "dlv", "scheduler_s": "sch", "queue_s": "que", "execute_s": "exe", "reply_s": "rep"}
LEGEND = ("latency shares: cli = client → leader, bat = batch fill, lead = ring leader (wait + CPU), xfer = NIC "
          "transfers, prop = accept/ack/decision propagation, dlv = learner delivery, sch = central scheduler, que = "
          "thread queue, exe = execution (+ barrier signalling), rep = reply; limit = the resource that bounds the "
          "throughput")


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
    finish_result(fmt, output, "1 plan", "replication-estimate", e, lambda: csv_text([_flat(e)]),
                  lambda: _table_estimate(e, table_width(output)))


def _flat(e) -> dict:
    row = {k: v for k, v in e.to_dict().items() if not isinstance(v, (dict, list))}
    return {**row, **{f"cap_{k}": v for k, v in e.capacity_s.items()},
            **{f"lat_{k}": v for k, v in e.latency_parts_s.items()}}


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

    ps = api_suggest(model, hw, fix=fix_pairs(fix, FIX_KEYS, ints=FIX_KEYS[1:]), top=top, objective=objective)
    finish_result(fmt, output, f"{len(ps.rows)} plans", "replication-suggest", ps,
                  lambda: csv_text([{k: v for k, v in r.items() if k != "reasons"} for r in ps.rows]),
                  lambda: render_plans(ps, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fix=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) fits, sustains --min-tokens-per-s commands/s and answers within
    --max-step-time-s at the offered load."""
    unread(extra, FAMILY)
    check_bounds(max_time_s, min_throughput)
    from parplan.replication import estimate as api_estimate, suggest as api_suggest

    if plan is None:
        rows = api_suggest(model, hw, fix=fix_pairs(fix, FIX_KEYS, ints=FIX_KEYS[1:]), top=0).rows
        plan = searched_plan(rows, lambda r: r["fits"]
                             and (min_throughput is None or r["throughput_per_s"] >= min_throughput)
                             and (max_time_s is None or r["latency_s"] <= max_time_s),
                             lambda r: ",".join(f"{k}={r[k]}" for k in FIX_KEYS))
    e = api_estimate(model, hw, plan)
    results = [("fits", 1.0 if e.fits else 0.0, 1.0, e.fits, "≥")]
    if min_throughput is not None:
        results.append(("throughput", e.throughput_per_s, min_throughput, e.throughput_per_s >= min_throughput, "≥"))
    if max_time_s is not None:
        results.append(("latency", e.latency_s, max_time_s, e.fits and e.latency_s <= max_time_s, "≤"))
    finish_check(fmt, output, f"{e.workload} on {e.machine}: {e.plan_string()} ({_kcmd(e.throughput_per_s)}, "
                              f"bound: {e.limit})", e.plan_string(), results, [f"  why: {r}" for r in e.reasons],
                 {"reasons": e.reasons})


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.replication import estimate as api_estimate, simulate as api_simulate

    e = api_estimate(model, hw, plan)
    r = api_simulate(model, hw, e.plan_string(), seed=seed)
    doc = {"kind": "replication-simulate", "plan": e.plan_string(), "commands": r.commands,
           "simulated_throughput_per_s": r.throughput_per_s, "predicted_throughput_per_s": e.throughput_per_s,
           "error": e.throughput_per_s / r.throughput_per_s - 1.0, "limit": e.limit, "events": r.events}
    finish_simulate(fmt, output, doc, f"{e.workload} on {e.machine}: {e.plan_string()}\n  simulated "
                    f"{_kcmd(r.throughput_per_s)} vs closed form {_kcmd(e.throughput_per_s)} "
                    f"({100 * doc['error']:+.1f} %), bound: {e.limit}; {r.commands:,} commands, {r.events:,} events")


def validate(model, hw, *, plan=None, tolerance=0.05, fmt=Format.table, output=None, top=None, **extra) -> None:
    """Closed form vs the executor on the workload's schemes (or the given plans)."""
    unread(dict(extra, top=top), FAMILY)  # its plans are fixed (or --plan): --top does not apply
    check_tolerance(tolerance)
    from parplan.executor.replication import agreement

    finish_validate("replication-validate", fmt, output, agreement(model, hw, plans=list(plan) if plan else None),
                    tolerance, lambda r: f"{r['plan']:<44} {r['metric']:<17} simulated {r['simulated']:.6g}, closed "
                                         f"form {r['predicted']:.6g} ({100 * r['error']:+.2f} %)")
