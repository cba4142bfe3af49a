"""Verb handlers of the dataflow family (``FamilyInfo.verbs``, contract in ``cli/family_verbs.py``): ``estimate``,
``suggest``, ``check``, ``simulate`` and ``validate`` on a dataflow workload and a DSP / spatial device, printed
like the other verbs (table | json | csv on stdout or ``-o``).

Exit codes as everywhere: 0 done; 1 a ``check`` requirement is not met (or ``validate`` disagrees beyond the
tolerance); 2 bad input (``SpecError``, one line on stderr).
"""
from __future__ import annotations

from parplan.cli.common import Format, human_s, table_width
from parplan.cli.family_verbs import (check_bounds, check_failed_nothing_fits, check_tolerance, csv_text,
                                      finish_check, finish_result, finish_simulate, finish_validate, fix_pairs,
                                      parts_table, searched_plan, unread)
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


def _cell(v):
    """A CSV cell: a list or mapping (a mapping's levels) as compact JSON."""
    import json

    return json.dumps(v, separators=(",", ":")) if isinstance(v, (list, dict)) else v


def _energy(j: float) -> str:
    for scale, unit in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ"), (1e-12, "pJ")):
        if abs(j) >= scale:
            return f"{j / scale:.4g} {unit}"
    return f"{j:.3g} J"


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, render

    con = console(width)
    head = [["plan", e.plan_string() or "(mapping)"], ["latency", f"{human_s(e.total_s)} ({e.cycles:,.0f} cycles)"],
            ["energy", f"{_energy(e.energy_j)} ({e.pj_per_mac:.3g} pJ/MAC)" if e.energy_j else "not estimated"],
            ["MACs", f"{e.macs:,.0f} at {100 * e.utilization:.1f} % utilization"]]
    head += [[k.removesuffix("_bytes") + " bytes", f"{v:,.0f}"] for k, v in e.bytes.items()]
    head += [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.device}",
                  show_header=False, con=con)
    text += parts_table(e.parts, e.total_s, "latency breakdown", con)
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
    finish_result(fmt, output, "1 plan", "dataflow-estimate", e,
                  lambda: csv_text([{**_row(e), **e.parts, **e.energy_parts, **e.bytes}], _cell),
                  lambda: _table_estimate(e, table_width(output)))


def _row(e) -> dict:
    return {k: v for k, v in e.to_dict().items()
            if k not in ("breakdown_s", "energy_breakdown_j", "bytes", "notes", "mapping")}


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

    fixed = fix_pairs(fix, FIX_KEYS, ints=("cores", "unroll"), choices={"vector": ("on", "off")})
    ps = api_suggest(model, hw, fix=fixed, top=top, objective=objective)
    finish_result(fmt, output, f"{len(ps.rows)} plans", "dataflow-suggest", ps, lambda: csv_text(ps.rows, _cell),
                  lambda: render_plans(ps, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fix=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) runs within --max-step-time-s and reaches --min-tokens-per-s, read as
    kernel runs per second."""
    unread(extra, FAMILY)
    check_bounds(max_time_s, min_throughput)
    from parplan.dataflow import estimate as api_estimate, suggest as api_suggest, view_of
    from parplan.hardware.dsp import load_dsp
    from parplan.workloads.dataflow import load_dataflow

    nest = view_of(load_dataflow(model), load_dsp(hw)) == "nest"
    if fix and not nest:
        raise SpecError("--fix applies to loop-nest plans (cores, vector, unroll, sync)", key="--fix")
    if plan is None and nest:
        fixed = fix_pairs(fix, FIX_KEYS, ints=("cores", "unroll"), choices={"vector": ("on", "off")})
        plan = searched_plan(api_suggest(model, hw, fix=fixed, top=0).rows,
                             lambda r: (max_time_s is None or r["total_s"] <= max_time_s)
                             and (min_throughput is None or 1.0 / r["total_s"] >= min_throughput),
                             lambda r: ",".join(f"{k}={r[k]}" for k in FIX_KEYS))
    from parplan.errors import NothingFits

    try:
        e = api_estimate(model, hw, plan)
    except NothingFits as err:  # no mapping fits: the requirement is not met (exit 1), the input is fine
        check_failed_nothing_fits(fmt, output, err)
    results = []
    if max_time_s is not None:
        results.append(("latency", e.total_s, max_time_s, e.total_s <= max_time_s, "≤"))
    if min_throughput is not None:
        rate = 1.0 / e.total_s
        results.append(("runs per second", rate, min_throughput, rate >= min_throughput, "≥"))
    finish_check(fmt, output, f"{e.workload} on {e.device}: {e.plan_string() or 'mapping'} ({human_s(e.total_s)})",
                 e.plan_string(), results)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.dataflow import estimate as api_estimate, simulate as api_simulate

    r = api_simulate(model, hw, plan)
    e = api_estimate(model, hw, plan)
    doc = {"kind": "dataflow-simulate", "plan": e.plan_string(), "simulated_s": r.makespan_s,
           "predicted_s": e.total_s, "error": e.total_s / r.makespan_s - 1.0, **r.to_dict()}
    finish_simulate(fmt, output, doc, f"{e.workload} on {e.device}: {e.plan_string()}\n  simulated "
                    f"{human_s(r.makespan_s)} vs closed form {human_s(e.total_s)} ({100 * doc['error']:+.2f} %); "
                    f"{r.iterations:,} iterations, {r.ops:,} ops, cores busy {100 * r.busy_fraction:.0f} %")


def validate(model, hw, *, plan=None, top=None, tolerance=0.05, fmt=Format.table, output=None, **extra) -> None:
    """Closed form vs the executor over cores × vectorization × unroll (or the given --plan values)."""
    unread(dict(extra, top=top), FAMILY)  # its plans are fixed (or --plan): --top does not apply
    check_tolerance(tolerance)
    from parplan.executor.dataflow import agreement

    finish_validate("dataflow-validate", fmt, output, agreement(model, hw, plans=list(plan) if plan else None),
                    tolerance, lambda r: f"{r['plan']:<42} simulated {human_s(r['simulated_s'])}, closed form "
                                         f"{human_s(r['predicted_s'])} ({100 * r['error']:+.2f} %)", cell=_cell)
