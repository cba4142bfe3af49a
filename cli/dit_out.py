"""Verb handlers of the DiT inference family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``, ``simulate``
and ``validate`` on a ``family: dit-inference`` workload and a GPU cluster (catalog id, file or DEVICE:NODESxDPN),
printed like the other verbs.  ``check`` reads --max-step-time-s as the bound on one denoising step and
--min-tokens-per-s as latent tokens per second per GPU.  Exit codes: 0 done; 1 a requirement is not met (or
``validate`` disagrees beyond the tolerance); 2 bad input.
"""
from __future__ import annotations

from parplan.cli.common import Format, human_s, table_width
from parplan.cli.family_verbs import (check_bounds, check_tolerance, csv_text, finish_check, finish_result,
                                      finish_simulate, finish_validate, fix_pairs, parts_table, searched_plan, unread)
from parplan.errors import SpecError

FAMILY = "dit-inference"
FIX_KEYS = ("sp", "u", "r", "tp", "dp", "comm", "chunks")
LEGEND = ("per denoising step: gemm = linear layers, mem = element-wise kernels, attn = attention blocks, sm = SMs "
          "held by two-sided copy kernels, tp = TP all-reduces, sp = SP exchanges not hidden behind attention; "
          "hidden = share of the SP exchanges' seconds the schedule hides")


def _load(model, hw):
    from parplan.hardware.catalog import load_cluster
    from parplan.models.dit_terms import dit_context
    from parplan.workloads.dit import load_dit

    spec, cluster = load_dit(model), load_cluster(hw)
    return spec, cluster, dit_context(spec, cluster)


def _estimate(model, hw, plan):
    from parplan.models.dit import estimate_plan, parse_plan

    spec, cluster, c = _load(model, hw)
    return spec, estimate_plan(spec, cluster, parse_plan(plan, spec, c), c)


def _table(e, width) -> str:
    from parplan.cli.tables import Col, console, render

    con = console(width)
    head = [["plan", e.plan_string()], ["devices", str(e.devices)],
            ["one step", f"{human_s(e.step_s)}; request {human_s(e.latency_s)}"],
            ["throughput", f"{e.samples_per_s_per_gpu:.4g} samples/s per GPU"],
            ["SP exchanges", f"{human_s(e.sp_comm_busy_s)} per step, {100 * e.hidden_fraction:.0f} % hidden "
                             f"(sync {human_s(e.sync_busy_s)})"],
            ["memory", f"{e.memory_bytes / 1e9:.1f} GB per device"]]
    head += [["does not fit", r] for r in e.reasons]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.cluster}",
                  show_header=False, con=con)
    return text + parts_table(e.parts, e.step_s, "one denoising step", con)


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    _, e = _estimate(model, hw, plan)
    finish_result(fmt, output, "1 plan", "dit-estimate", e,
                  lambda: csv_text([{k: v for k, v in e.to_dict().items() if not isinstance(v, (dict, list))}
                                    | e.parts]), lambda: _table(e, table_width(output)))


def _fix_map(fix) -> dict:
    from parplan.workloads.dit import COMMS, SP_KINDS

    out = fix_pairs(fix, FIX_KEYS, ints=("u", "r", "tp", "dp", "chunks"), choices={"sp": SP_KINDS, "comm": COMMS})
    for k in ("u", "r", "tp", "dp", "chunks"):
        if k in out and not 1 <= out[k] <= 4096:
            raise SpecError(f"bad value {out[k]}: {k} is a whole number 1..4096", key=f"--fix {k}")
    return out


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, render

    short = {"gemm_s": "gemm", "memory_s": "mem", "attention_s": "attn", "sm_share_s": "sm", "tp_comm_s": "tp",
             "sp_comm_s": "sp"}
    cols = [Col("#"), Col("sp", "left"), Col("u"), Col("r"), Col("tp"), Col("dp"), Col("comm", "left"),
            Col("chunks"), Col("step"), Col("request"), Col("samples/s/GPU"), Col("hidden"), Col("fits", keep=3)] + [
        Col(v, keep=4) for v in short.values()]
    rows = []
    for r in ps.rows:
        t = r["step_s"]
        rows.append([str(r["rank"]), r["sp"], str(r["u"]), str(r["r"]), str(r["tp"]), str(r["dp"]), r["comm"],
                     str(r["chunks"]), human_s(t), human_s(r["latency_s"]), f"{r['samples_per_s_per_gpu']:.3g}",
                     f"{100 * r['hidden_fraction']:.0f}%", "yes" if r["fits"] else "no"] + [
            f"{100 * r[k] / t:.0f}%" for k in short])
    title = f"{ps.workload} on {ps.cluster}: best plans by {ps.objective} ({ps.n_plans:,} plans)"
    return render(cols, rows, title=title, width=width, notes=lambda dropped: [LEGEND] + ps.notes)


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    from parplan.planner.spaces.dit import OBJECTIVES, search

    if objective not in (None, *OBJECTIVES):
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=list(OBJECTIVES))
    unread(extra, FAMILY)
    spec, cluster, _ = _load(model, hw)
    ps = search(spec, cluster, fix=_fix_map(fix), top=top, objective=objective)
    finish_result(fmt, output, f"{len(ps.rows)} plans", "dit-suggest", ps, lambda: csv_text(ps.rows),
                  lambda: render_plans(ps, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fix=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (default: the fastest) fits, its step is within --max-step-time-s and it reaches
    --min-tokens-per-s latent tokens per second per GPU."""
    unread(extra, FAMILY)
    check_bounds(max_time_s, min_throughput)
    if plan is None:
        from parplan.planner.spaces.dit import search

        spec, cluster, _ = _load(model, hw)
        plan = searched_plan(search(spec, cluster, fix=_fix_map(fix), top=0).rows,
                             lambda r: r["fits"] and (max_time_s is None or r["step_s"] <= max_time_s)
                             and (min_throughput is None
                                  or r["samples_per_s_per_gpu"] * spec.image_tokens >= min_throughput),
                             lambda r: ",".join(f"{k}={r[k]}" for k in FIX_KEYS))
    spec, e = _estimate(model, hw, plan)
    results = [("fits", 1.0 if e.fits else 0.0, 1.0, e.fits, "≥")]
    if max_time_s is not None:
        results.append(("step time", e.step_s, max_time_s, e.step_s <= max_time_s, "≤"))
    if min_throughput is not None:
        tok = e.samples_per_s_per_gpu * spec.image_tokens
        results.append(("tokens/s per GPU", tok, min_throughput, tok >= min_throughput, "≥"))
    finish_check(fmt, output, f"{e.workload} on {e.cluster}: {e.plan_string()} ({human_s(e.step_s)} per step)",
                 e.plan_string(), results, [f"  why: {r}" for r in e.reasons], {"reasons": e.reasons})


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)  # the play is deterministic: --seed changes nothing and is accepted like the other families
    from parplan.executor.dit import simulate_plan
    from parplan.models.dit import estimate_plan, parse_plan

    spec, cluster, c = _load(model, hw)
    p = parse_plan(plan, spec, c)
    e = estimate_plan(spec, cluster, p, c)
    r = simulate_plan(spec, cluster, p, c)
    doc = {"kind": "dit-simulate", "plan": e.plan_string(), "simulated_s": r.step_s, "predicted_s": e.step_s,
           "error": e.step_s / r.step_s - 1.0, "devices": r.devices, "ops": r.ops, "events": r.events}
    finish_simulate(fmt, output, doc, f"{e.workload} on {e.cluster}: {e.plan_string()}\n  one step simulated "
                    f"{human_s(r.step_s)} vs closed form {human_s(e.step_s)} ({100 * doc['error']:+.2f} %) over "
                    f"{r.devices} devices, {r.ops:,} ops")


def validate(model, hw, *, plan=None, tolerance=0.05, fmt=Format.table, output=None, top=None, **extra) -> None:
    unread(dict(extra, top=top), FAMILY)  # its plans are fixed (or --plan): --top does not apply
    check_tolerance(tolerance)
    from parplan.executor.dit import agreement

    finish_validate("dit-validate", fmt, output, agreement(model, hw, plans=list(plan) if plan else None),
                    tolerance, lambda r: f"{r['plan']:<62} simulated {human_s(r['simulated_s'])}, closed form "
                                         f"{human_s(r['predicted_s'])} ({100 * r['error']:+.2f} %)")
