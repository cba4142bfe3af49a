"""Verb handlers of the layer-training family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``,
``simulate`` and ``validate`` on a layer-training workload and a GPU cluster, printed as tables, JSON or CSV.

Exit codes as everywhere: 0 done; 1 a ``check`` requirement is not met (or ``validate`` disagrees beyond the
tolerance); 2 bad input (``SpecError``).
"""
from __future__ import annotations

from parplan.cli.common import Format, gib, human_s, table_width
from parplan.cli.family_verbs import (check_bounds, check_failed_nothing_fits, check_tolerance, csv_text,
                                      finish_check, finish_result, finish_simulate, finish_validate, fix_pairs,
                                      parts_table, searched_plan, unread)

FAMILY = "layer-training"
_SHORT = {"forward_s": "fwd", "backward_s": "bwd", "mp_comm_s": "mp", "transition_s": "trans",
          "dp_allreduce_exposed_s": "ar", "optimizer_s": "opt", "compute_s": "comp", "exchange_s": "exch"}
LEGEND = ("shares of the iteration: fwd/bwd = compute, mp = model-parallel gathers, trans = DP↔MP group "
          "communication, ar = exposed gradient all-reduce, opt = optimizer; ADMM: comp = slowest worker's updates, "
          "exch = slowest p/q/dual exchange")


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, render

    con = console(width)
    x = e.extra
    head = [["plan", e.plan_string()], ["iteration", human_s(e.total_s)],
            ["throughput", f"{e.samples_per_s:,.1f} samples/s; speedup {e.speedup:.2f}×"
             + (" over one worker" if e.plan["method"] != "admm" else " over layer-serial backprop")],
            ["memory", f"{gib(e.memory_bytes)} GiB per worker of {gib(e.capacity_bytes)} GiB "
                       f"({'fits' if e.fits else 'does NOT fit'})"]]
    if "state_saving_vs_dp" in x:
        head.append(["vs pure DP", f"parameter + optimizer state −{100 * x['state_saving_vs_dp']:.1f} % per worker "
                     f"({x['params_mp'] / 1e6:.1f}M of {x['params_total'] / 1e6:.1f}M parameters sharded)"])
    if "comm_reduction" in x:
        head.append(["exchange", f"{x['bytes_per_iteration'] / 1e6:,.1f} MB per iteration, "
                     f"−{100 * x['comm_reduction']:.1f} % bytes vs fp32 ({', '.join(x['quantized'])} at "
                     f"{e.plan['bits']} bits)"])
    head += [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.cluster}",
                  show_header=False, con=con)
    return text + parts_table(e.parts, e.total_s, "time per iteration", con)


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layertrain import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    finish_result(fmt, output, "1 plan", "layertrain-estimate", e,
                  lambda: csv_text([{**_scalars(e), **e.parts, **e.memory}]),
                  lambda: _table_estimate(e, table_width(output)))


def _scalars(e) -> dict:
    return {k: v for k, v in e.to_dict().items() if not isinstance(v, (dict, list))}


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    scale, unit = time_unit([r["iteration_s"] for r in ps.rows] or [1.0])
    keys = [k for k in _SHORT if any(k in r for r in ps.rows)]  # ADMM rows beside serial backprop's
    cols = [Col("#"), Col("plan", "left"), Col("kind", "left", keep=4), Col(f"iter {unit}"), Col("samples/s"),
            Col("speedup"), Col("GiB/worker"), Col("fits", keep=3)] + [Col(_SHORT[k], keep=5) for k in keys]
    rows = []
    for r in ps.rows:
        t = r["iteration_s"]
        rows.append([str(r["rank"]), r["plan"], r["label"], fmt_time(t, scale), f"{r['samples_per_s']:,.1f}",
                     f"{r['speedup']:.2f}×", f"{r['memory_bytes'] / 2**30:.2f}", "yes" if r["fits"] else "no"]
                    + [f"{100 * r[k] / t:.0f}%" if k in r else "—" for k in keys])
    title = (f"{ps.workload} on {ps.cluster}: top {len(ps.rows)} by {ps.objective} ({ps.n_configs:,} labels / plans"
             f" priced{'' if ps.exact else ', frontier capped: not exact'})")
    return render(cols, rows, title=title, width=width, notes=lambda dropped: [LEGEND])


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layertrain import suggest as api_suggest

    fixed = fix_pairs(fix, ("method", "workers", "bits"), ints=("workers", "bits"))
    ps = api_suggest(model, hw, fix=fixed, top=top, objective=objective or "time")
    finish_result(fmt, output, f"{len(ps.rows)} plans", "layertrain-suggest", ps, lambda: csv_text(ps.rows),
                  lambda: render_plans(ps, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fix=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) fits, runs an iteration within --max-step-time-s and reaches
    --min-tokens-per-s (read as samples per second)."""
    unread(extra, FAMILY)
    check_bounds(max_time_s, min_throughput)
    from parplan.layertrain import estimate as api_estimate, suggest as api_suggest

    from parplan.errors import NothingFits

    if plan is None:
        fixed = fix_pairs(fix, ("method", "workers", "bits"), ints=("workers", "bits"))
        try:
            rows = api_suggest(model, hw, fix=fixed, top=0, objective="time").rows
        except NothingFits as err:  # no plan fits the workers' memory: unmet (exit 1), not bad input
            check_failed_nothing_fits(fmt, output, err)
        plan = searched_plan(rows,
                             lambda r: r["fits"] and (max_time_s is None or r["iteration_s"] <= max_time_s)
                             and (min_throughput is None or r["samples_per_s"] >= min_throughput), lambda r: r["plan"])
    e = api_estimate(model, hw, plan)
    results = [("fits in memory", e.memory_bytes, e.capacity_bytes, e.fits, "≤")]
    if max_time_s is not None:
        results.append(("iteration time", e.total_s, max_time_s, e.total_s <= max_time_s, "≤"))
    if min_throughput is not None:
        results.append(("samples/s", e.samples_per_s, min_throughput, e.samples_per_s >= min_throughput, "≥"))
    finish_check(fmt, output, f"{e.workload} on {e.cluster}: {e.plan_string()} ({human_s(e.total_s)} per iteration, "
                              f"{e.samples_per_s:,.1f} samples/s)", e.plan_string(), results)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layertrain import estimate as api_estimate, simulate as api_simulate

    e = api_estimate(model, hw, plan)
    sim = api_simulate(model, hw, plan)
    doc = {"kind": "layertrain-simulate", "plan": e.plan_string(), "simulated_s": sim, "predicted_s": e.total_s,
           "error": e.total_s / sim - 1.0}
    finish_simulate(fmt, output, doc, f"{e.workload} on {e.cluster}: {e.plan_string()}\n  simulated {human_s(sim)} "
                                      f"per iteration vs closed form {human_s(e.total_s)} ({100 * doc['error']:+.2f} %)")


def validate(model, hw, *, plan=None, tolerance=0.05, fmt=Format.table, output=None, **extra) -> None:
    """The closed form against the engine on the workload's standard plans (or the given --plan values)."""
    unread(extra, FAMILY)  # its standard plans (or --plan): --top does not apply
    check_tolerance(tolerance)
    from parplan.executor.layertrain import agreement
    from parplan.layertrain import check_validation

    check_validation(model, hw, list(plan) if plan else None)
    finish_validate("layertrain-validate", fmt, output, agreement(model, hw, plans=list(plan) if plan else None),
                    tolerance, lambda r: f"{r['plan']:<44} simulated {human_s(r['simulated_s'])}, closed form "
                                         f"{human_s(r['predicted_s'])} ({100 * r['error']:+.2f} %)")
