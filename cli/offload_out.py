"""Verb handlers of the offload family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``, ``simulate`` and
``validate`` on an offload workload and an offload node (``catalogs/offload_nodes``), printed like the other verbs.

A heritage workload (texture vs octree) answers ``estimate`` and ``suggest`` with its report (storage, brush edits,
frame query, upload).  ``check`` reads --max-step-time-s as the bound on the workload's requests' time.  Exit codes:
0 done; 1 a requirement is not met (or ``validate`` disagrees beyond the tolerance); 2 bad input.
"""
from __future__ import annotations

from parplan.cli.common import Format, emit, human_s, table_width, to_json
from parplan.cli.family_verbs import (check_bounds, check_tolerance, csv_text, finish_check, finish_result,
                                      finish_simulate, finish_validate, fix_pairs, fmt_name, searched_plan, unread)
from parplan.errors import SpecError

FAMILY = "offload"
FIX_KEYS = ("place", "resident", "chunks", "api", "n")
_SHORT = {"message_s": "msg", "enqueue_s": "enq", "h2d_s": "h2d", "launch_s": "lnch", "device_s": "dev",
          "d2h_s": "d2h", "cpu_s": "cpu", "network_s": "net"}
LEGEND = ("shares of one request: msg = actor messages, enq = enqueue, h2d/d2h = PCIe transfers (latency + bytes), "
          "lnch = kernel launches, dev = device compute, cpu = host compute, net = remote actor transfers; time = the "
          "workload's requests pipelined through the actors, bottleneck = the busiest resource")


def _is_heritage(model) -> bool:
    from parplan.workloads.offload import load_offload

    return load_offload(model).is_heritage


def _heritage(model, hw, fmt, output) -> None:
    from parplan.cli.tables import Col, console, render
    from parplan.offload import heritage

    r = heritage(model, hw)
    if fmt_name(fmt) == "json":
        emit(to_json({"schema_version": "1", "kind": "offload-heritage", **r.to_dict()}), output, "report as JSON")
        return
    if fmt_name(fmt) == "csv":
        emit(csv_text(r.to_dict()["edits"]), output, "edits as CSV")
        return
    con = console(table_width(output))
    s = r.storage_bytes
    head = [["texture storage", f"{s['texture_bytes'] / 1e6:,.0f} MB (layers · W² · (data + mask))"],
            ["octree storage", f"{s['octree_bytes'] / 1e6:,.0f} MB ({s['octree_leaves']:,.0f} leaves, depth "
                               f"{r.octree_depth})"],
            ["octree smaller when", f"painted fraction < {r.break_even_painted_fraction:.2f}"],
            ["frame query (1 layer)", f"GPU {human_s(r.frame_gpu_s)} vs octree {human_s(r.frame_octree_s)} "
                                      f"({r.frame_octree_s / r.frame_gpu_s:,.0f}×)"],
            ["upload of all layers", human_s(r.upload_s)]]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head,
                  title=f"{r.workload} on {r.node} ({r.device}): textures on the GPU vs an octree on the CPU",
                  show_header=False, con=con)
    rows = [[f"{k:,.0f}", human_s(g), human_s(o), f"{o / g:,.0f}×", human_s(p["launch_s"]), human_s(p["texels_s"]),
             human_s(p["visibility_s"])] for k, g, o, p in zip(r.brush_texels, r.edit_gpu_s, r.edit_octree_s,
                                                               r.edit_parts_s)]
    text += render([Col("brush texels"), Col("GPU edit"), Col("octree edit"), Col("speedup"), Col("launch"),
                    Col("texels"), Col("visibility")], rows, title="brush edit latency", con=con)
    emit(text, output, "heritage report")


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, render

    con = console(width)
    head = [["plan", e.plan_string()], ["one request", f"{human_s(e.total_s)} ({e.speedup:.2f}× the all-CPU chain, "
                                                      f"{human_s(e.cpu_s)})"],
            ["requests", f"{e.requests} in {human_s(e.requests_s)} (bottleneck: {e.bottleneck})"]]
    head += [["does not fit", r] for r in e.reasons]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.node}",
                  show_header=False, con=con)
    rows = [[k.removesuffix("_s"), human_s(v), f"{100 * v / e.total_s:.1f} %"] for k, v in e.parts.items()]
    rows.append(["total", human_s(e.total_s), "100.0 %"])
    return text + render([Col("part", "left"), Col("time"), Col("share")], rows, title="one request", con=con)


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    if _is_heritage(model):
        if plan:
            raise SpecError("a heritage workload takes no --plan", key="--plan")
        return _heritage(model, hw, fmt, output)
    from parplan.offload import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    finish_result(fmt, output, "1 plan", "offload-estimate", e, lambda: csv_text([{**_scalars(e), **e.parts}]),
                  lambda: _table_estimate(e, table_width(output)))


def _scalars(e) -> dict:
    return {k: v for k, v in e.to_dict().items() if not isinstance(v, (dict, list))}


def _fix_map(fix, model, hw) -> dict:
    if not fix:
        return {}
    from parplan.hardware.offload import load_offload_node
    from parplan.models.offload import parse_plan
    from parplan.workloads.offload import load_offload

    keys = fix_pairs(fix, FIX_KEYS)  # the keys; parse_plan reads the values as a --plan's
    plan = parse_plan(",".join(fix), load_offload(model), load_offload_node(hw))
    return {k: plan[k] for k in keys}


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, render
    from parplan.models.offload import TIME_PARTS

    cols = [Col("#"), Col("n"), Col("place", "left"), Col("resident"), Col("chunks"), Col("api", "left"),
            Col("time"), Col("vs CPU"), Col("bottleneck", "left"), Col("fits", keep=3)] + [
        Col(v, keep=5) for v in _SHORT.values()]
    rows = []
    for r in ps.rows:
        t = r["total_s"]
        rows.append([str(r["rank"]), f"{r['n']:.3g}", r["place"], "yes" if r["resident"] else "no", str(r["chunks"]),
                     r["api"], human_s(r["requests_s"]), f"{r['speedup']:.2f}×", r["bottleneck"],
                     "yes" if r["fits"] else "no"] + [f"{100 * r[k] / t:.0f}%" for k in TIME_PARTS])
    be = "; ".join(f"{b['accelerator']} ({b['api']}): n* = " + (f"{b['n_star']:.3g}" if b["n_star"] != float("inf")
                                                                else "never") for b in ps.break_even)
    title = f"{ps.workload} on {ps.node}: best plan per size ({ps.n_configs:,} configurations)"
    return render(cols, rows, title=title, width=width,
                  notes=lambda dropped: [f"break-even vs the all-CPU chain: {be}", LEGEND] + ps.notes)


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    if objective not in (None, "time"):
        raise SpecError(f"bad value {objective!r}: offload plans are ranked by time", key="--objective",
                        allowed=["time"])
    unread(extra, FAMILY)
    if _is_heritage(model):
        if fix:
            raise SpecError("a heritage workload has nothing to --fix", key="--fix")
        return _heritage(model, hw, fmt, output)
    from parplan.offload import suggest as api_suggest

    ps = api_suggest(model, hw, fix=_fix_map(fix, model, hw), top=top)
    finish_result(fmt, output, f"{len(ps.rows)} plans", "offload-suggest", ps,
                  lambda: csv_text([{k: v for k, v in r.items() if k != "reasons"} for r in ps.rows]),
                  lambda: render_plans(ps, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, fix=None, fmt=Format.table, output=None, **extra) -> None:
    """PASS when the plan (default: the best at the largest size) fits and its requests finish within
    --max-step-time-s."""
    unread(extra, FAMILY)
    check_bounds(max_time_s)
    if _is_heritage(model):
        raise SpecError("check applies to kernel chains, not heritage workloads", key="heritage")
    from parplan.offload import estimate as api_estimate, suggest as api_suggest

    if plan is None:  # every plan at the largest size (or the --fix one)
        fixed = _fix_map(fix, model, hw)
        if "n" not in fixed:
            fixed["n"] = api_suggest(model, hw, fix=fixed).rows[-1]["n"]
        plan = searched_plan(api_suggest(model, hw, fix=fixed, top=0).rows,
                             lambda r: r["fits"] and (max_time_s is None or r["requests_s"] <= max_time_s),
                             lambda r: (f"place={r['place']},resident={str(r['resident']).lower()},"
                                        f"chunks={r['chunks']},api={r['api']},n={r['n']:.17g}"))
    e = api_estimate(model, hw, plan)
    results = [("fits", 1.0 if e.fits else 0.0, 1.0, e.fits, "≥")]
    if max_time_s is not None:
        results.append(("time", e.requests_s, max_time_s, e.requests_s <= max_time_s, "≤"))
    finish_check(fmt, output, f"{e.workload} on {e.node}: {e.plan_string()} ({human_s(e.requests_s)})",
                 e.plan_string(), results, [f"  why: {r}" for r in e.reasons], {"reasons": e.reasons})


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    if _is_heritage(model):
        raise SpecError("simulate applies to kernel chains, not heritage workloads", key="heritage")
    from parplan.offload import estimate as api_estimate, simulate as api_simulate

    e = api_estimate(model, hw, plan)
    r = api_simulate(model, hw, plan)
    doc = {"kind": "offload-simulate", "plan": e.plan_string(), "requests": r.requests, "simulated_s": r.makespan_s,
           "predicted_s": e.requests_s, "error": e.requests_s / r.makespan_s - 1.0, "events": r.events}
    finish_simulate(fmt, output, doc, f"{e.workload} on {e.node}: {e.plan_string()}\n  simulated "
                    f"{human_s(r.makespan_s)} vs closed form {human_s(e.requests_s)} ({100 * doc['error']:+.1f} %) "
                    f"for {r.requests} request(s)")


def validate(model, hw, *, plan=None, tolerance=0.05, fmt=Format.table, output=None, top=None, **extra) -> None:
    unread(dict(extra, top=top), FAMILY)  # its plans are fixed (or --plan): --top does not apply
    check_tolerance(tolerance)
    from parplan.executor.offload import agreement

    finish_validate("offload-validate", fmt, output, agreement(model, hw, plans=list(plan) if plan else None),
                    tolerance, lambda r: f"{r['plan']:<70} simulated {human_s(r['simulated_s'])}, closed form "
                                         f"{human_s(r['predicted_s'])} ({100 * r['error']:+.2f} %)")
