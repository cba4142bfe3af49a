"""Output of heterogeneous plans (multi-group clusters): ``suggest`` tables/CSV/JSON and ``estimate --plan-file``."""
from __future__ import annotations

import io
from typing import TYPE_CHECKING

from rich.markup import escape

from parplan.cli.common import gib, human_s

if TYPE_CHECKING:  # pandas and the models are imported where used (start-up: `parplan --help` loads neither)
    import pandas as pd

    from parplan.hardware.types import Cluster
    from parplan.models.hetero import HeteroPlan, HeteroResult

# columns of `suggest --format csv` on a multi-group cluster (stable from now on)
HETERO_COLUMNS = [
    "rank", "label", "workload", "cluster", "n_devices_used", "tp", "mbs", "zero", "recompute", "sp", "pipelines",
    "stages", "fits", "step_time_s", "tokens_per_s", "mfu", "memory_peak_bytes", "pipeline_time_max_s",
    "sync_exposed_s", "optimizer_s", "speedup_vs_uniform", "speedup_vs_fastest_group", "heuristic",
]


def stages_text(plan: HeteroPlan, cluster: Cluster) -> str:
    """Compact, readable: identical replicas folded, e.g. ``4× m=128 [a100-sxm-80gb:0-13 | v100-sxm-32gb:14-39]``."""
    out: list[list] = []
    for p in plan.pipelines:
        body = f"m={p.micro_batches} [" + " | ".join(_runs(p.stages, cluster)) + "]"
        if out and out[-1][1] == body:
            out[-1][0] += 1
        else:
            out.append([1, body])
    return "; ".join(f"{n}× {b}" for n, b in out)


def _runs(stages, cluster: Cluster) -> list[str]:
    """Consecutive stages on one group as one run: ``a100-sxm-80gb 0-13,14-27`` or, for long runs,
    ``a100-sxm-80gb ×8 0-23 (3 layers each)``."""
    runs: list[list] = []
    for s in stages:
        if runs and runs[-1][0] == s.group:
            runs[-1][1].append(s)
        else:
            runs.append([s.group, [s]])
    out = []
    for g, ss in runs:
        dev = cluster.groups[g].device.id
        if len(ss) <= 3:
            out.append(dev + " " + ",".join(f"{x.first_layer}-{x.last_layer - 1}" for x in ss))
        else:
            sizes = sorted({x.layers for x in ss})
            each = f"{sizes[0]} layers each" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]} layers"
            out.append(f"{dev} ×{len(ss)} {ss[0].first_layer}-{ss[-1].last_layer - 1} ({each})")
    return out


def result_row(rank: int, label: str, res: HeteroResult, cluster: Cluster, workload: str, speedups: dict,
               heuristic: bool = False) -> dict:
    p = res.plan
    return {"rank": rank, "label": label, "workload": workload, "cluster": cluster.name,
            "n_devices_used": sum(p.devices_per_group(len(cluster.groups))), "tp": p.tp, "mbs": p.mbs,
            "zero": p.zero, "recompute": p.recompute, "sp": p.sp, "pipelines": len(p.pipelines),
            "stages": stages_text(p, cluster), "fits": res.fits, "step_time_s": res.step_time_s,
            "tokens_per_s": res.tokens_per_s, "mfu": res.mfu, "memory_peak_bytes": res.memory_peak_bytes,
            "pipeline_time_max_s": max(res.pipeline_times_s), "sync_exposed_s": res.sync_exposed_s,
            "optimizer_s": res.optimizer_s, "speedup_vs_uniform": speedups.get("speedup_vs_uniform"),
            "speedup_vs_fastest_group": speedups.get("speedup_vs_fastest_group"), "heuristic": heuristic}


def _speedups(step: float, uniform: HeteroResult | None, fastest) -> dict:
    return {"speedup_vs_uniform": uniform.step_time_s / step if uniform is not None else None,
            "speedup_vs_fastest_group": fastest.step_time_s / step if fastest is not None else None}


def hetero_frame(ps, workload_name: str, cluster: Cluster, top: int) -> pd.DataFrame:
    import pandas as pd

    rows = []
    cands = ps.candidates if top == 0 else ps.candidates[:top]
    for i, c in enumerate(cands, 1):
        rows.append(result_row(i, c.result.plan.label, c.result, cluster, workload_name,
                               _speedups(c.result.step_time_s, ps.uniform, ps.fastest_group), c.heuristic))
    return pd.DataFrame(rows, columns=HETERO_COLUMNS)


def plan_text(plan: HeteroPlan, cluster: Cluster) -> str:
    """One string for a heterogeneous plan: its knobs, then its pipelines (``stages_text``)."""
    return (f"tp={plan.tp},mbs={plan.mbs},zero={plan.zero},recompute={plan.recompute},"
            f"sp={'true' if plan.sp else 'false'}; {stages_text(plan, cluster)}")


def hetero_record(rank: int, res: HeteroResult, cluster: Cluster, workload: str, speedups: dict,
                  heuristic: bool = False, **extra) -> dict:
    """The per-plan object of a heterogeneous plan (docs/json_schema.md): the CSV row, the plan string, the
    equal-outcome count, the structured layout (pipelines of stages) and the model's own details."""
    row = result_row(rank, res.plan.label, res, cluster, workload, speedups, heuristic)
    d = res.to_dict(cluster)
    row.update({"plan": plan_text(res.plan, cluster), "equivalent_plans": 1, "layout": d.pop("plan"),
                **{k: v for k, v in d.items() if k not in row}, **extra})
    row["rank"], row["memory_peak_bytes"] = int(rank), int(round(res.memory_peak_bytes))
    return row


def hetero_json(ps, workload_name: str, cluster: Cluster, top: int) -> dict:
    from parplan.planner.export import envelope

    cands = ps.candidates if top == 0 else ps.candidates[:top]
    plans = [hetero_record(i, c.result, cluster, workload_name,
                           _speedups(c.result.step_time_s, ps.uniform, ps.fastest_group), c.heuristic,
                           ilp_objective_s=c.ilp_objective_s)
             for i, c in enumerate(cands, 1)]
    fast = None
    if ps.fastest_group is not None:
        fast = ps.fastest_group.to_dict()
        fast["group"] = ps.fastest_group_id
    return envelope("suggest", workload=workload_name, cluster=cluster.name, n_devices=cluster.n_devices,
                    heterogeneous=True, plans=plans,
                    groups=[{"index": g, "device": grp.device.id, "devices": grp.n_devices}
                            for g, grp in enumerate(cluster.groups)],
                    baselines={"uniform": ps.uniform.to_dict(cluster) if ps.uniform is not None else None,
                               "fastest_group": fast},
                    infeasible=dict(ps.infeasible), search=dict(ps.stats))


def hetero_estimate_json(res: HeteroResult, workload_name: str, cluster: Cluster) -> dict:
    from parplan.planner.export import envelope

    return envelope("estimate", workload=workload_name, cluster=cluster.name, n_devices=cluster.n_devices,
                    heterogeneous=True, plans=[hetero_record(1, res, cluster, workload_name, {})])


def render_hetero(ps, workload_name: str, cluster: Cluster, top: int, width: int | None = None) -> str:
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    groups = ", ".join(f"{g.nodes}×{g.devices_per_node} {g.device.id}" for g in cluster.groups)
    title = f"{workload_name} on {cluster.name} ({cluster.n_devices} devices: {groups})"
    cands = ps.candidates if top == 0 else ps.candidates[:top]
    base = [x for x in (ps.uniform, ps.fastest_group) if x is not None]
    scale, unit = time_unit([c.result.step_time_s for c in cands] + [x.step_time_s for x in base])
    cols = [Col("#"), Col("plan", "left", wrap=True), Col("tp"), Col("mbs"), Col("recomp", "left"),
            Col(f"step {unit}"), Col("tokens/s"), Col("MFU", keep=2), Col("mem GiB"), Col("vs uniform", keep=1),
            Col("vs fastest group", keep=1), Col("pipelines", "left", wrap=True)]
    rows, styles = [], []
    for i, c in enumerate(cands, 1):
        r = c.result
        sp = _speedups(r.step_time_s, ps.uniform, ps.fastest_group)
        rows.append([str(i), r.plan.label, str(r.plan.tp), str(r.plan.mbs), r.plan.recompute,
                     fmt_time(r.step_time_s, scale), f"{r.tokens_per_s:,.0f}", f"{100 * r.mfu:.1f}%",
                     gib(r.memory_peak_bytes),
                     f"{sp['speedup_vs_uniform']:.2f}×" if sp["speedup_vs_uniform"] else "—",
                     f"{sp['speedup_vs_fastest_group']:.2f}×" if sp["speedup_vs_fastest_group"] else "—",
                     escape(stages_text(r.plan, cluster))])
        styles.append(None)
    if ps.uniform is not None:
        u = ps.uniform
        rows.append(["base", "uniform (equal layers, equal data)", str(u.plan.tp), str(u.plan.mbs), u.plan.recompute,
                     fmt_time(u.step_time_s, scale), f"{u.tokens_per_s:,.0f}", f"{100 * u.mfu:.1f}%",
                     gib(u.memory_peak_bytes), "1.00×", "", escape(stages_text(u.plan, cluster))])
        styles.append("dim")
    if ps.fastest_group is not None:
        f = ps.fastest_group
        g = cluster.groups[ps.fastest_group_id]
        rows.append(["base", f"fastest group only ({g.n_devices}× {g.device.id})", str(f.plan.tp), str(f.plan.mbs),
                     f.plan.recompute, fmt_time(f.step_time_s, scale), f"{f.tokens_per_s:,.0f}",
                     f"{100 * f.mfu:.1f}%", gib(f.memory_peak_bytes), "", "1.00×", f.plan.to_string()])
        styles.append("dim")
    return render(cols, rows, title=title, width=width, row_styles=styles,
                  notes=["pipelines: replicas × micro-batch share [device layers | …]; base = baselines"])


def render_hetero_estimate(res: HeteroResult, workload_name: str, cluster: Cluster, width: int | None = None) -> str:
    from parplan.cli.tables import Col, render

    rows = [["plan", f"tp={res.plan.tp}, mbs={res.plan.mbs}, zero={res.plan.zero}, recompute={res.plan.recompute}"
                     f", sp={'true' if res.plan.sp else 'false'}"],
            ["pipelines", escape(stages_text(res.plan, cluster))],
            ["step time", human_s(res.step_time_s)],
            ["throughput", f"{res.tokens_per_s:,.0f} tokens/s; MFU {100 * res.mfu:.1f} %"],
            ["pipeline times", ", ".join(human_s(x) for x in sorted(set(res.pipeline_times_s)))],
            ["chunked gradient sync (exposed)", human_s(res.sync_exposed_s)],
            ["optimizer step", human_s(res.optimizer_s)],
            ["memory", f"peak {gib(res.memory_peak_bytes)} GiB per device"],
            ["fits", "yes" if res.fits else "NO — " + "; ".join(res.reasons)]]
    return render([Col("k", "left"), Col("v", "left", wrap=True)], rows,
                  title=f"{workload_name} on {cluster.name}: {res.plan.label}", width=width, show_header=False)


def suggest_hetero(w, c, given: dict, *, solver, time_limit, max_mbs, max_configurations, max_plans, top, fmt,
                   output, explain, quiet) -> None:
    """``suggest`` on a multi-group cluster: the heterogeneous ILP planner (``parplan.suggest`` does the same)."""
    import typer

    from parplan.api import suggest
    from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, table_width, to_json, what_written
    from parplan.cli.progress import LazyProgress, _Err
    from parplan.planner.budget import TABLE_ROWS

    bar = LazyProgress(not quiet, "planning")
    try:
        hp = suggest(w, c, solver=solver, time_limit_s=time_limit, max_mbs=max_mbs,
                     max_configurations=max_configurations, max_plans=max_plans, progress=bar, **given)
        with bar.phase("writing"):
            if fmt == Format.json:
                text = to_json(hetero_json(hp, w.name, c, top))
            elif fmt == Format.csv:
                text = frame_to_csv(hetero_frame(hp, w.name, c, top))
            else:
                text = render_hetero(hp, w.name, c, min(top or TABLE_ROWS, TABLE_ROWS),
                                     width=table_width(output)) if hp.candidates else None
    finally:
        bar.close()
    n = len(hp.candidates) if top == 0 else min(top, len(hp.candidates))
    if text is not None:
        emit(text, output, what_written(fmt, min(n, TABLE_ROWS) if fmt == Format.table else n,
                                        "heterogeneous plan"))
    err = _Err()
    st = hp.stats
    if not quiet:
        err.print(f"searched {st['configurations']:,} shape × knob configurations in {st['wall_s']:.2f} s: "
                  f"{st['solved']:,} solved ({st['ilp_solves']:,} ILP solves, {solver}), "
                  f"{st['pruned_by_bound']:,} pruned by the lower bound; "
                  f"{sum(1 for x in hp.candidates if x.heuristic)} heuristic fallbacks")
    if explain or not hp.candidates:
        for why, k in sorted(hp.infeasible.items(), key=lambda kv: -kv[1]):
            err.print(f"why: {k} configurations out: {why}")
    if not hp.candidates:
        err.print(f"error: no heterogeneous plan fits on {c.name}; try recompute=full-friendly settings, "
                  "more devices or a smaller global batch")
        raise typer.Exit(EXIT_CHECK_FAILED)


def frame_to_csv(df: pd.DataFrame) -> str:
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


# --- simulate / validate on a multi-group cluster (executor/hetero.py) -------------------------------------------
def _plan_of(c: Cluster, plan, plan_file):
    from parplan.errors import SpecError
    from parplan.models.hetero_planfile import load_plan_file

    if plan_file is None:
        raise SpecError(f"cluster {c.name!r} has {len(c.groups)} device groups; a --plan string describes a "
                        "homogeneous plan", key="--plan",
                        hint="give a heterogeneous plan with --plan-file (`parplan suggest` plans one)")
    return load_plan_file(str(plan_file), c)


def simulate_hetero_cmd(w, c: Cluster, plan, plan_file, fmt, output, *, trace=None, schedule=None, slowdown=(),
                        mode="auto", p2p="blocking") -> None:
    """``simulate --plan-file`` on a multi-group cluster: every distinct pipeline played out with 1F1B."""
    import pandas as pd

    from parplan.api import check_hetero_simulation
    from parplan.cli.common import Format, emit, table_width, to_json
    from parplan.cli.tables import Col, render
    from parplan.errors import SpecError
    from parplan.executor.hetero import simulate_hetero
    from parplan.models.families import hetero_model
    from parplan.planner.export import envelope

    hp = _plan_of(c, plan, plan_file)
    if trace is not None:
        raise SpecError("--trace is not written for a heterogeneous plan (its pipelines are simulated one by one)",
                        key="--trace", hint="drop --trace")
    check_hetero_simulation(c, schedule=schedule, slowdown=slowdown, mode=mode, p2p=p2p)
    sim = simulate_hetero(w, c, hp)
    res = hetero_model(w).evaluate_hetero(w, c, hp)
    details = {"schedule": "1f1b", "simulated_step_time_s": sim.step_time_s,
               "pipeline_times_s": sim.pipeline_times_s, "analytical_pipeline_times_s": sim.analytical_pipeline_times_s,
               "sync_exposed_s": sim.sync_exposed_s, "optimizer_s": sim.optimizer_s, "devices": [], "totals": {}}
    if fmt == Format.json:
        rec = hetero_record(1, res, c, w.name, {}, simulated_step_time_s=sim.step_time_s,
                            step_diff=sim.rel_diff)
        emit(to_json(envelope("simulate", workload=w.name, cluster=c.name, n_devices=c.n_devices, heterogeneous=True,
                              plans=[rec], **details)), output, "the simulated step of 1 heterogeneous plan as JSON")
        return
    rows = [{"pipeline": k, "stages": len(p.stages), "micro_batches": p.micro_batches,
             "simulated_s": sim.pipeline_times_s[k], "analytical_s": sim.analytical_pipeline_times_s[k]}
            for k, p in enumerate(hp.pipelines)]
    if fmt == Format.csv:
        emit(frame_to_csv(pd.DataFrame(rows)), output, f"{len(rows)} pipelines as CSV")
        return
    head = [["plan", escape(plan_text(hp, c))], ["schedule", "1f1b, each distinct pipeline once"],
            ["step time", f"{human_s(sim.step_time_s)} (analytical {human_s(sim.analytical_step_time_s)}, "
                          f"{100 * sim.rel_diff:+.1f} %)"],
            ["exposed sync + optimizer", f"{human_s(sim.sync_exposed_s)} + {human_s(sim.optimizer_s)} (from the model)"]]
    con_w = table_width(output)
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, show_header=False, width=con_w,
                  title=f"simulated step: {w.name} on {c.name} ({hp.label})")
    text += render([Col("pipeline"), Col("stages"), Col("micro-batches"), Col("simulated s"), Col("analytical s")],
                   [[str(r["pipeline"]), str(r["stages"]), str(r["micro_batches"]), f"{r['simulated_s']:.4f}",
                     f"{r['analytical_s']:.4f}"] for r in rows], title="per pipeline", width=con_w)
    emit(text, output, "the simulated step of 1 heterogeneous plan as a table")


def validate_hetero_cmd(w, c: Cluster, plan, plan_files, top, tolerance, fmt, output, *, max_plans=None,
                        quiet=False) -> None:
    """``validate`` on a multi-group cluster: analytical vs simulated step of plan files or of the planner's top K
    heterogeneous plans (memory is the model's only: the heterogeneous executor plays time, not memory)."""
    import pandas as pd
    import typer

    from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, table_width, to_json, what_written
    from parplan.cli.tables import Col, fmt_time, render, time_unit
    from parplan.errors import SpecError
    from parplan.executor.hetero import simulate_hetero
    from parplan.models.families import hetero_model
    from parplan.planner.export import envelope

    if plan:
        _plan_of(c, plan[0], None)  # the precise refusal of a plan string here
    if top is not None:
        from parplan.api import suggest

        hps = [x.result.plan for x in suggest(w, c, max_plans=max_plans).candidates[:top]]
        if not hps:
            raise SpecError("the heterogeneous planner found no plan to validate", key="--top")
    else:
        hps = [_plan_of(c, None, f) for f in plan_files]
    out = []
    for hp in hps:
        sim = simulate_hetero(w, c, hp)
        out.append((hp, sim, hetero_model(w).evaluate_hetero(w, c, hp)))
    ok = [abs(sim.rel_diff) <= tolerance for _, sim, _ in out]
    what = what_written(fmt, len(out), "heterogeneous plan compared")
    if fmt in (Format.json, Format.csv):
        recs = [hetero_record(i, res, c, w.name, {}, analytical_step_s=sim.analytical_step_time_s,
                              simulated_step_s=sim.step_time_s, step_diff=sim.rel_diff, ok=bool(k))
                for i, ((hp, sim, res), k) in enumerate(zip(out, ok), 1)]
        if fmt == Format.json:
            emit(to_json(envelope("validate", workload=w.name, cluster=c.name, n_devices=c.n_devices,
                                  heterogeneous=True, plans=recs, tolerance=tolerance, ok=all(ok))), output, what)
        else:
            emit(frame_to_csv(pd.DataFrame([{k: v for k, v in r.items() if k != "layout"} for r in recs])), output,
                 what)
    else:
        scale, unit = time_unit([s.step_time_s for _, s, _ in out])
        rows = [[escape(plan_text(hp, c)), fmt_time(sim.analytical_step_time_s, scale), fmt_time(sim.step_time_s, scale),
                 f"{100 * sim.rel_diff:+.2f} %", gib(res.memory_peak_bytes), "ok" if k else "DIFFERS"]
                for (hp, sim, res), k in zip(out, ok)]
        cols = [Col("plan", "left", wrap=True), Col(f"analytical step {unit}"), Col(f"simulated step {unit}"),
                Col("diff"), Col("analytical mem GiB", keep=1), Col("status", "left")]
        emit(render(cols, rows, title=f"analytical vs simulated: {w.name} on {c.name}", width=table_width(output),
                    notes=[f"{len(out)} plan(s); {ok.count(False)} differ by more than {100 * tolerance:g} % "
                           "(step time; the heterogeneous executor does not simulate memory)"]), output, what)
    if not all(ok):
        raise typer.Exit(EXIT_CHECK_FAILED)
