"""Verb handlers of the layer-training family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``,
``simulate`` and ``validate`` on a layer-training workload and a GPU cluster, printed as tables, JSON or CSV.

Exit codes as everywhere: 0 done; 1 a ``check`` requirement is not met (or ``validate`` disagrees beyond the
tolerance); 2 bad input (``SpecError``).
"""
from __future__ import annotations

import io

import typer

from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, gib, human_s, table_width, to_json
from parplan.cli.family_verbs import unread
from parplan.errors import SpecError

FAMILY = "layer-training"
_SHORT = {"forward_s": "fwd", "backward_s": "bwd", "mp_comm_s": "mp", "transition_s": "trans",
          "dp_allreduce_exposed_s": "ar", "optimizer_s": "opt", "compute_s": "comp", "exchange_s": "exch"}
LEGEND = ("shares of the iteration: fwd/bwd = compute, mp = model-parallel gathers, trans = DP↔MP group "
          "communication, ar = exposed gradient all-reduce, opt = optimizer; ADMM: comp = slowest worker's updates, "
          "exch = slowest p/q/dual exchange")


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
    x = e.extra
    head = [["plan", e.plan_string()], ["iteration", human_s(e.total_s)],
            ["throughput", f"{e.samples_per_s:,.1f} samples/s; speedup {e.speedup:.2f}×"
             + (" over one worker" if e.plan["method"] != "admm" else " over layer-serial backprop")],
            ["memory", f"{gib(e.memory_bytes)} GiB per worker of {gib(e.capacity_bytes)} GiB ({'fits' if e.fits else 'does NOT fit'})"]]
    if "state_saving_vs_dp" in x:
        head.append(["vs pure DP", f"parameter + optimizer state −{100 * x['state_saving_vs_dp']:.1f} % per worker "
                     f"({x['params_mp'] / 1e6:.1f}M of {x['params_total'] / 1e6:.1f}M parameters sharded)"])
    if "comm_reduction" in x:
        head.append(["exchange", f"{x['bytes_per_iteration'] / 1e6:,.1f} MB per iteration, −{100 * x['comm_reduction']:.1f} % "
                     f"bytes vs fp32 ({', '.join(x['quantized'])} at {e.plan['bits']} bits)"])
    head += [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.cluster}",
                  show_header=False, con=con)
    scale, unit = time_unit(list(e.parts.values()) + [e.total_s])
    rows = [[k.removesuffix("_s"), fmt_time(v, scale), f"{100 * v / e.total_s:.1f} %"] for k, v in e.parts.items()]
    rows.append(["total", fmt_time(e.total_s, scale), "100.0 %"])
    return text + render([Col("part", "left"), Col(unit), Col("share")], rows, title="time per iteration", con=con)


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layertrain import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    f = _fmt(fmt)
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "layertrain-estimate", **e.to_dict()}), output, "1 plan as JSON")
    elif f == "csv":
        row = {k: v for k, v in e.to_dict().items() if not isinstance(v, (dict, list))}
        emit(_csv([{**row, **e.parts, **e.memory}]), output, "1 plan as CSV")
    else:
        emit(_table_estimate(e, table_width(output)), output, "1 plan as a table")


def _fix_map(fix) -> dict:
    out = {}
    for item in fix or []:
        if "=" not in item:
            raise SpecError(f"bad --fix {item!r}: write key=value", key="--fix")
        k, v = (x.strip() for x in item.split("=", 1))
        if k not in ("method", "workers", "bits"):
            raise SpecError(f"unknown key {k!r}", key="--fix", allowed=["method", "workers", "bits"])
        if k != "method":
            try:
                v = int(v)
            except ValueError:
                raise SpecError(f"bad value {v!r}: {k} is a whole number", key="--fix") from None
        out[k] = v
    return out


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    scale, unit = time_unit([r["iteration_s"] for r in ps.rows] or [1.0])
    keys = [k for k in _SHORT if ps.rows and k in ps.rows[0]]
    cols = [Col("#"), Col("plan", "left"), Col("kind", "left", keep=4), Col(f"iter {unit}"), Col("samples/s"),
            Col("speedup"), Col("GiB/worker"), Col("fits", keep=3)] + [Col(_SHORT[k], keep=5) for k in keys]
    rows = []
    for r in ps.rows:
        t = r["iteration_s"]
        rows.append([str(r["rank"]), r["plan"], r["label"], fmt_time(t, scale), f"{r['samples_per_s']:,.1f}",
                     f"{r['speedup']:.2f}×", f"{r['memory_bytes'] / 2**30:.2f}", "yes" if r["fits"] else "no"]
                    + [f"{100 * r[k] / t:.0f}%" for k in keys])
    title = (f"{ps.workload} on {ps.cluster}: top {len(ps.rows)} by {ps.objective} ({ps.n_configs:,} labels / plans"
             f" priced{'' if ps.exact else ', frontier capped: not exact'})")
    return render(cols, rows, title=title, width=width, notes=lambda dropped: [LEGEND])


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layertrain import suggest as api_suggest

    ps = api_suggest(model, hw, fix=_fix_map(fix), top=top, objective=objective or "time")
    f = _fmt(fmt)
    what = f"{len(ps.rows)} plans"
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "layertrain-suggest", **ps.to_dict()}), output, what + " as JSON")
    elif f == "csv":
        emit(_csv(ps.rows), output, what + " as CSV")
    else:
        emit(render_plans(ps, width=table_width(output)), output, what + " as a table")


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) fits, runs an iteration within --max-step-time-s and reaches
    --min-tokens-per-s (read as samples per second)."""
    unread(extra, FAMILY)
    from parplan.planner.budget import check_number

    check_number(max_time_s, "--max-step-time-s", lo=0, lo_open=True)  # > 0 and finite, like every verb
    check_number(min_throughput, "--min-tokens-per-s", lo=0, lo_open=True)
    from parplan.layertrain import estimate as api_estimate, suggest as api_suggest

    if plan is None:
        plan = api_suggest(model, hw, top=1).rows[0]["plan"]
    e = api_estimate(model, hw, plan)
    results = [("fits in memory", e.memory_bytes, e.capacity_bytes, e.fits)]
    if max_time_s is not None:
        results.append(("iteration time", e.total_s, max_time_s, e.total_s <= max_time_s))
    if min_throughput is not None:
        results.append(("samples/s", e.samples_per_s, min_throughput, e.samples_per_s >= min_throughput))
    ok = all(r[3] for r in results)
    if _fmt(fmt) == "json":
        emit(to_json({"ok": ok, "plan": e.plan_string(), "requirements": [
            {"metric": m, "actual": a, "required": q, "ok": o} for m, a, q, o in results]}), output, "check as JSON")
    else:
        lines = [f"{'PASS' if ok else 'FAIL'}  {e.workload} on {e.cluster}: {e.plan_string()} "
                 f"({human_s(e.total_s)} per iteration, {e.samples_per_s:,.1f} samples/s)"]
        lines += [f"  {'ok  ' if o else 'FAIL'} {m}: {a:.6g} (required {'≥' if m == 'samples/s' else '≤'} {q:.6g})"
                  for m, a, q, o in results]
        emit("\n".join(lines), output, "check")
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layertrain import estimate as api_estimate, simulate as api_simulate

    e = api_estimate(model, hw, plan)
    sim = api_simulate(model, hw, plan)
    doc = {"kind": "layertrain-simulate", "plan": e.plan_string(), "simulated_s": sim, "predicted_s": e.total_s,
           "error": e.total_s / sim - 1.0}
    if _fmt(fmt) == "json":
        emit(to_json(doc), output, "1 simulation as JSON")
    else:
        emit(f"{e.workload} on {e.cluster}: {e.plan_string()}\n  simulated {human_s(sim)} per iteration vs closed "
             f"form {human_s(e.total_s)} ({100 * doc['error']:+.2f} %)", output, "1 simulation")


def validate(model, hw, *, plan=None, tolerance=0.05, fmt=Format.table, output=None, **extra) -> None:
    """The closed form against the engine on the workload's standard plans (or the given --plan values)."""
    unread(extra, FAMILY)  # its standard plans (or --plan): --top does not apply
    from parplan.planner.budget import check_number

    check_number(tolerance, "--tolerance", lo=0, hi=1, lo_open=True, hi_open=True)  # as validate's door
    from parplan.executor.layertrain import agreement
    from parplan.layertrain import check_validation

    check_validation(model, hw, list(plan) if plan else None)
    rows = agreement(model, hw, plans=list(plan) if plan else None)
    bad = [r for r in rows if abs(r["error"]) > tolerance]
    if _fmt(fmt) == "json":
        emit(to_json({"kind": "layertrain-validate", "tolerance": tolerance, "cases": rows}), output,
             "validation as JSON")
    elif _fmt(fmt) == "csv":
        emit(_csv(rows), output, "validation as CSV")
    else:
        lines = [f"{r['plan']:<44} simulated {human_s(r['simulated_s'])}, closed form {human_s(r['predicted_s'])} "
                 f"({100 * r['error']:+.2f} %)" for r in rows]
        lines.append(f"{len(rows) - len(bad)}/{len(rows)} within ±{100 * tolerance:.0f} %")
        emit("\n".join(lines), output, "validation")
    if bad:
        raise typer.Exit(EXIT_CHECK_FAILED)
