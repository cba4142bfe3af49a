"""Verb handlers of the dataflow family (``FamilyInfo.verbs``, contract in ``cli/family_verbs.py``): ``estimate``,
``suggest``, ``check``, ``simulate`` and ``validate`` on a dataflow workload and a DSP / spatial device, printed
like the other verbs (table | json | csv on stdout or ``-o``).

Exit codes as everywhere: 0 done; 1 a ``check`` requirement is not met (or ``validate`` disagrees beyond the
tolerance); 2 bad input (``SpecError``, one line on stderr).
"""
from __future__ import annotations

import io

import typer

from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, human_s, table_width, to_json
from parplan.cli.family_verbs import unread
from parplan.errors import SpecError

FAMILY = "dataflow"
FIX_KEYS = ("cores", "vector", "unroll", "sync")
_SHORT = {"compute_s": "comp", "masking_s": "mask", "stall_s": "stall", "control_s": "ctrl",
          "dependence_s": "dep", "memory_s": "mem", "sync_s": "sync", "bandwidth_s": "bw"}
LEGEND = ("shares of the latency: comp = vector work at full lanes, mask = padded partial vectors, stall = "
          "loop-carried reductions, ctrl = loop control, dep = the dependence chain not hidden, mem = memory beyond "
          "compute, sync = hand-offs (barriers / streams)")
MAP_LEGEND = ("bw = share of the latency a storage level's bandwidth adds beyond the MACs; mapping: per level "
              "(outermost first) temporal loop factors / spatial fan-out factors")


def _fmt(fmt) -> str:
    return fmt.value if isinstance(fmt, Format) else str(fmt or "table")


def _csv(rows: list[dict]) -> str:
    import json

    import pandas as pd

    buf = io.StringIO()
    flat = [{k: (json.dumps(v, separators=(",", ":")) if isinstance(v, (list, dict)) else v) for k, v in r.items()}
            for r in rows]
    pd.DataFrame(flat).to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


def _energy(j: float) -> str:
    for scale, unit in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ"), (1e-12, "pJ")):
        if abs(j) >= scale:
            return f"{j / scale:.4g} {unit}"
    return f"{j:.3g} J"


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, fmt_time, render, time_unit

    con = console(width)
    head = [["plan", e.plan_string() or "(mapping)"], ["latency", f"{human_s(e.total_s)} ({e.cycles:,.0f} cycles)"],
            ["energy", f"{_energy(e.energy_j)} ({e.pj_per_mac:.3g} pJ/MAC)" if e.energy_j else "not estimated"],
            ["MACs", f"{e.macs:,.0f} at {100 * e.utilization:.1f} % utilization"]]
    head += [[k.removesuffix("_bytes") + " bytes", f"{v:,.0f}"] for k, v in e.bytes.items()]
    head += [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.device}",
                  show_header=False, con=con)
    scale, unit = time_unit(list(e.parts.values()) + [e.total_s])
    rows = [[k.removesuffix("_s"), fmt_time(v, scale), f"{100 * v / e.total_s:.1f} %"] for k, v in e.parts.items()]
    rows.append(["total", fmt_time(e.total_s, scale), "100.0 %"])
    text += render([Col("part", "left"), Col(unit), Col("share")], rows, title="latency breakdown", con=con)
    if e.energy_j:
        rows = [[k.removesuffix("_j"), _energy(v), f"{100 * v / e.energy_j:.1f} %"] for k, v in e.energy_parts.items()]
        rows.append(["total", _energy(e.energy_j), "100.0 %"])
        text += render([Col("part", "left"), Col("energy"), Col("share")], rows, title="energy breakdown", con=con)
    if "mapping" in e.plan:
        text += "\n" + _mapping_text(e.plan["mapping"])
    return text


def _mapping_text(doc: list) -> str:
    lines = ["mapping (outermost level first; loops innermost first):"]
    for m in doc:
        t = " ".join(f"{d}{f}" for d, f in m["temporal"].items()) or "-"
        s = " ".join(f"{d}{f}" for d, f in m["spatial"].items())
        lines.append(f"  {m['level']:<14} temporal {t}" + (f"  spatial {s}" if s else "")
                     + (f"  order {m['order']}" if m["order"] else ""))
    return "\n".join(lines)


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.dataflow import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    f = _fmt(fmt)
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "dataflow-estimate", **e.to_dict()}), output, "1 plan as JSON")
    elif f == "csv":
        row = {k: v for k, v in e.to_dict().items() if k not in ("breakdown_s", "energy_breakdown_j", "bytes",
                                                                   "notes", "mapping")}
        emit(_csv([{**row, **e.parts, **e.energy_parts, **e.bytes}]), output, "1 plan as CSV")
    else:
        emit(_table_estimate(e, table_width(output)), output, "1 plan as a table")


def _fix_map(fix) -> dict:
    out = {}
    for item in fix or []:
        if "=" not in item:
            raise SpecError(f"bad --fix {item!r}: write key=value", key="--fix")
        k, v = (x.strip() for x in item.split("=", 1))
        if k not in FIX_KEYS:
            raise SpecError(f"unknown key {k!r}", key="--fix", allowed=list(FIX_KEYS))
        if k in ("cores", "unroll"):
            try:
                v = int(v)
            except ValueError:
                raise SpecError(f"bad value {v!r}: {k} is a whole number", key="--fix") from None
        elif k == "vector" and v not in ("on", "off"):
            raise SpecError(f"bad value {v!r}", key="--fix vector", allowed=["on", "off"])
        out[k] = v
    return out


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    scale, unit = time_unit([r["total_s"] for r in ps.rows] or [1.0])
    if ps.view == "nest":
        parts = [k for k in _SHORT if k in (ps.rows[0] if ps.rows else {}) and k != "bandwidth_s"]
        cols = [Col("#"), Col("cores"), Col("vec"), Col("unroll"), Col("sync", "left"), Col(f"latency {unit}"),
                Col("energy"), Col("util")] + [Col(_SHORT[k], keep=5) for k in parts]
        rows = [[str(r["rank"]), str(r["cores"]), r["vector"], str(r["unroll"]), r["sync"],
                 fmt_time(r["total_s"], scale), _energy(r["energy_j"]), f"{100 * r['utilization']:.0f}%"]
                + [f"{100 * r[k] / r['total_s']:.0f}%" for k in parts] for r in ps.rows]
    else:
        cols = [Col("#"), Col("MACs used"), Col("cycles"), Col(f"latency {unit}"), Col("pJ/MAC"), Col("util"),
                Col("bw", keep=5), Col("mapping (outer → inner: temporal / spatial)", "left", wrap=True)]
        rows = []
        for r in ps.rows:
            m = "; ".join(f"{x['level']} " + (" ".join(f"{d}{f}" for d, f in x["temporal"].items()) or "-")
                          + ("/" + " ".join(f"{d}{f}" for d, f in x["spatial"].items()) if x["spatial"] else "")
                          for x in r["mapping"])
            rows.append([str(r["rank"]), str(r["macs_used"]), f"{r['cycles']:,.0f}", fmt_time(r["total_s"], scale),
                         f"{r['pj_per_mac']:.3f}", f"{100 * r['utilization']:.0f}%",
                         f"{100 * r['bandwidth_s'] / r['total_s']:.0f}%", m])
    title = (f"{ps.workload} on {ps.device}: top {len(ps.rows)} of {ps.n_configs:,} "
             f"{'configurations' if ps.view == 'nest' else 'mappings'} by {ps.objective}")
    legend = LEGEND if ps.view == "nest" else MAP_LEGEND
    return render(cols, rows, title=title, width=width, notes=lambda dropped: [legend] + list(ps.notes))


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    objective = objective or "latency"
    if objective not in ("latency", "energy", "edp"):
        raise SpecError(f"bad value {objective!r}: dataflow plans are ranked by latency, energy or edp",
                        key="--objective", allowed=["latency", "energy", "edp"])
    unread(extra, FAMILY)
    from parplan.dataflow import suggest as api_suggest

    ps = api_suggest(model, hw, fix=_fix_map(fix), top=top, objective=objective)
    f = _fmt(fmt)
    what = f"{len(ps.rows)} plans"
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "dataflow-suggest", **ps.to_dict()}), output, what + " as JSON")
    elif f == "csv":
        emit(_csv(ps.rows), output, what + " as CSV")
    else:
        emit(render_plans(ps, width=table_width(output)), output, what + " as a table")


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) runs within --max-step-time-s and reaches --min-tokens-per-s, read as
    kernel runs per second."""
    unread(extra, FAMILY)
    from parplan.planner.budget import check_number

    check_number(max_time_s, "--max-step-time-s", lo=0, lo_open=True)  # > 0 and finite, like every verb
    check_number(min_throughput, "--min-tokens-per-s", lo=0, lo_open=True)
    from parplan.dataflow import estimate as api_estimate, suggest as api_suggest, view_of
    from parplan.hardware.dsp import load_dsp
    from parplan.workloads.dataflow import load_dataflow

    if plan is None and view_of(load_dataflow(model), load_dsp(hw)) == "nest":
        best = api_suggest(model, hw, top=1).rows[0]
        plan = ",".join(f"{k}={best[k]}" for k in FIX_KEYS)
    e = api_estimate(model, hw, plan)
    results = []
    if max_time_s is not None:
        results.append(("latency", e.total_s, max_time_s, e.total_s <= max_time_s))
    if min_throughput is not None:
        rate = 1.0 / e.total_s
        results.append(("runs per second", rate, min_throughput, rate >= min_throughput))
    ok = all(r[3] for r in results)
    if _fmt(fmt) == "json":
        emit(to_json({"ok": ok, "plan": e.plan_string(), "requirements": [
            {"metric": m, "actual": a, "required": q, "ok": o} for m, a, q, o in results]}), output, "check as JSON")
    else:
        lines = [f"{'PASS' if ok else 'FAIL'}  {e.workload} on {e.device}: {e.plan_string() or 'mapping'} "
                 f"({human_s(e.total_s)})"]
        lines += [f"  {'ok  ' if o else 'FAIL'} {m}: {a:.6g} (required {'≤' if m == 'latency' else '≥'} {q:.6g})"
                  for m, a, q, o in results]
        emit("\n".join(lines), output, "check")
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.dataflow import estimate as api_estimate, simulate as api_simulate

    r = api_simulate(model, hw, plan)
    e = api_estimate(model, hw, plan)
    doc = {"kind": "dataflow-simulate", "plan": e.plan_string(), "simulated_s": r.makespan_s,
           "predicted_s": e.total_s, "error": e.total_s / r.makespan_s - 1.0, **r.to_dict()}
    if _fmt(fmt) == "json":
        emit(to_json(doc), output, "1 simulation as JSON")
    else:
        emit(f"{e.workload} on {e.device}: {e.plan_string()}\n  simulated {human_s(r.makespan_s)} vs closed form "
             f"{human_s(e.total_s)} ({100 * doc['error']:+.2f} %); {r.iterations:,} iterations, {r.ops:,} ops, "
             f"cores busy {100 * r.busy_fraction:.0f} %", output, "1 simulation")


def validate(model, hw, *, plan=None, top=None, tolerance=0.05, fmt=Format.table, output=None, **extra) -> None:
    """Closed form vs the executor over cores × vectorization × unroll (or the given --plan values)."""
    unread(dict(extra, top=top), FAMILY)  # its plans are fixed (or --plan): --top does not apply
    from parplan.planner.budget import check_number

    check_number(tolerance, "--tolerance", lo=0, hi=1, lo_open=True, hi_open=True)  # as validate's door
    from parplan.executor.dataflow import agreement

    rows = agreement(model, hw, plans=list(plan) if plan else None)
    bad = [r for r in rows if abs(r["error"]) > tolerance]
    if _fmt(fmt) == "json":
        emit(to_json({"kind": "dataflow-validate", "tolerance": tolerance, "cases": rows}), output,
             "validation as JSON")
    elif _fmt(fmt) == "csv":
        emit(_csv(rows), output, "validation as CSV")
    else:
        lines = [f"{r['plan']:<42} simulated {human_s(r['simulated_s'])}, closed form {human_s(r['predicted_s'])} "
                 f"({100 * r['error']:+.2f} %)" for r in rows]
        lines.append(f"{len(rows) - len(bad)}/{len(rows)} within ±{100 * tolerance:.0f} %")
        emit("\n".join(lines), output, "validation")
    if bad:
        raise typer.Exit(EXIT_CHECK_FAILED)
