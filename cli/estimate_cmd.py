"""``parplan estimate``: one plan → step time, throughput, MFU, memory, breakdown.

Exit codes: 0 estimated (a plan that does not fit is an estimate with ``fits: false``, not an error); 2 bad input —
a bad option value, file or plan, or a partial plan whose completions are above --max-plans (refused before any is
tried).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from parplan.cli.common import (check_framework, check_precision, DebugOpt, FrameworkOpt, emit, Format, FormatOpt,
                                gib, GlobalBatchOpt, handle_errors, human_s, HwOpt, ImbalanceOpt, ModelArg,
                                OutputOpt, PrecisionOpt, SeqLenOpt, table_width, to_json)
from parplan.errors import SpecError
from parplan.planner.budget import MAX_PLANS_HELP

# pandas, the API and the models are imported inside the functions: `parplan --help` does not load them



def estimate_row(e: "Estimate") -> dict:  # noqa: F821  (parplan.models.estimate.Estimate)
    """Flat record (CSV): plan axes, metrics, then every breakdown part."""
    row = {"workload": e.workload, "cluster": e.cluster, "n_devices": e.n_devices, **e.plan.as_dict(),
           "fits": e.fits, "step_time_s": e.step_time_s, "tokens_per_s": e.tokens_per_s,
           "tokens_per_s_per_device": e.tokens_per_s / e.n_devices, "mfu": e.mfu, "hfu": e.hfu,
           "memory_peak_bytes": e.memory_peak_bytes, "memory_capacity_bytes": e.memory_capacity_bytes,
           "micro_batches": e.micro_batches, "step_time_low_s": e.step_time_low_s,
           "step_time_high_s": e.step_time_high_s, "framework": e.framework, "provenance_class": e.provenance_class,
           "chosen": ";".join(f"{k}={v}" for k, v in e.chosen.items())}
    row.update(e.breakdown.time_s)
    row.update(e.breakdown.memory_bytes)
    row["reasons"] = "; ".join(e.reasons)
    return row


def _parts_rows(parts: dict, suffix: str, fmt, total: float) -> list[list[str]]:
    """One breakdown (time or memory): each part, its value and its share of the total, then the total."""
    rows = [[k.removesuffix(suffix), fmt(v), f"{100 * v / total:.1f} %"] for k, v in parts.items()]
    return rows + [["total", fmt(sum(parts.values())), "100.0 %"]]


def render_table(e: "Estimate", width: int | None = None) -> str:
    """The estimate as three tables that fit the terminal (``width``: a file's): the summary, time per step (one
    unit for the column) and memory per device (GiB)."""
    from parplan.cli.tables import Col, console, fmt_time, render, time_unit

    con = console(width)
    head = [["plan", e.plan.to_string()],
            ["step time", f"{human_s(e.step_time_s)} (80 % interval {human_s(e.step_time_low_s)} – "
                          f"{human_s(e.step_time_high_s)}, {e.provenance_class})"],
            ["framework", e.framework]]
    if e.chosen:
        head.append(["chosen", ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                                         for k, v in e.chosen.items())])
    head += [["throughput", f"{e.tokens_per_s:,.0f} tokens/s ({e.tokens_per_s / e.n_devices:,.0f} per device)"],
             ["MFU / HFU", f"{100 * e.mfu:.1f} % / {100 * e.hfu:.1f} %"],
             ["memory", f"{gib(e.memory_peak_bytes)} GiB of {gib(e.memory_capacity_bytes)} GiB per device "
                        f"(heaviest stage {e.heaviest_memory_stage})"],
             ["fits", "yes" if e.fits else "NO — " + "; ".join(e.reasons)],
             ["micro-batches", f"{e.micro_batches} per pipeline; critical stage: {e.critical_stage}"],
             ["efficiencies", e.provenance]]
    kv = [Col("k", "left"), Col("v", "left", wrap=True)]
    text = render(kv, [[k, escape(v)] for k, v in head], title=f"{e.workload} on {e.cluster} ({e.n_devices} devices)",
                  show_header=False, con=con)
    times = e.breakdown.time_s
    scale, unit = time_unit(list(times.values()) + [sum(times.values())])
    cols = [Col("part", "left"), Col(unit), Col("share")]
    text += render(cols, _parts_rows(times, "_s", lambda v: fmt_time(v, scale), e.step_time_s),
                   title="time per step (critical pipeline stage)", con=con)
    text += render([Col("part", "left"), Col("GiB"), Col("share")],
                   _parts_rows(e.breakdown.memory_bytes, "_bytes", gib, e.memory_peak_bytes),
                   title="memory per device (heaviest stage)", con=con)
    return text


def frame_csv(rows: list[dict]) -> str:
    import pandas as pd

    from parplan.planner.export import integer_columns

    buf = io.StringIO()
    integer_columns(pd.DataFrame(rows)).to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


def register(app: typer.Typer) -> None:
    @app.command("estimate")
    @handle_errors
    def estimate_cmd(
        model: ModelArg,
        hw: HwOpt,
        plan: Optional[str] = typer.Option(None, "--plan",
                                           help='e.g. "tp=8,pp=4,mbs=1,zero=1,recompute=selective,sp=true"'),
        plan_file: Optional[Path] = typer.Option(None, "--plan-file",
                                                 help="a heterogeneous plan YAML (pipelines of stages per group)"),
        seq_len: SeqLenOpt = None,
        global_batch: GlobalBatchOpt = None,
        precision: PrecisionOpt = None,
        framework: FrameworkOpt = None,
        expert_imbalance: ImbalanceOpt = None,
        fmt: FormatOpt = Format.table,
        output: OutputOpt = None,
        max_plans: Optional[int] = typer.Option(None, "--max-plans", show_default=False,
                                                help="a partial plan: " + MAX_PLANS_HELP),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
        serve: Optional[Path] = typer.Option(None, "--serve", help="serve.yaml: estimate a serving --deployment"),
        deployment: Optional[str] = typer.Option(None, "--deployment",
                                                 help='--serve: e.g. "tp=8,batch=64,chunk=2048"'),
        debug: DebugOpt = False,
    ) -> None:
        """Predict step time, throughput, MFU and memory of one parallel plan (--serve: of a serving deployment)."""
        from parplan.workloads.registry import verbs_for

        verbs = verbs_for(model)  # a family with its own verbs (task graphs on CPU sockets): its handler prints
        if verbs is not None:
            from parplan.cli.family_verbs import given

            return verbs.estimate(model, hw, plan=plan, fmt=fmt, output=output, **given(
                plan_file=plan_file, seq_len=seq_len, global_batch=global_batch, precision=precision,
                framework=framework, expert_imbalance=expert_imbalance, max_plans=max_plans, serve=serve,
                deployment=deployment))
        from parplan.cli.family_verbs import serve_door

        serve_door("estimate", serve, deployment, plan=plan, plan_file=plan_file, seq_len=seq_len,
                   global_batch=global_batch, precision=precision, framework=framework,
                   expert_imbalance=expert_imbalance, max_plans=max_plans)
        if serve is not None:
            from parplan.cli.serve_out import serve_estimate

            return serve_estimate(model, hw, serve, deployment, fmt=fmt, output=output)
        from parplan.cli.progress import LazyProgress
        from parplan.planner.budget import check_max_plans

        if max_plans is not None:
            check_max_plans(max_plans)
        check_precision(precision)
        check_framework(framework)
        if (plan is None) == (plan_file is None):
            if plan is None:  # a broken workload file says so first (an empty one was blamed on --plan)
                from parplan.workloads.loader import load_workload

                load_workload(model, seq_len=seq_len, global_batch=global_batch, precision=precision)
            raise SpecError("give exactly one of --plan or --plan-file", key="--plan")
        if plan_file is not None:
            import pandas as pd

            from parplan.cli.hetero_out import frame_to_csv, hetero_estimate_json, render_hetero_estimate, result_row
            from parplan.hardware.catalog import load_cluster
            from parplan.models.families import hetero_model
            from parplan.models.hetero_planfile import load_plan_file
            from parplan.workloads.loader import load_workload

            w = load_workload(model, seq_len=seq_len, global_batch=global_batch, precision=precision)
            c = load_cluster(hw)
            res = hetero_model(w).evaluate_hetero(w, c, load_plan_file(str(plan_file), c))
            what = "1 heterogeneous plan"
            if fmt == Format.json:
                emit(to_json(hetero_estimate_json(res, w.name, c)), output, what + " as JSON")
            elif fmt == Format.csv:
                emit(frame_to_csv(pd.DataFrame([result_row(1, res.plan.label, res, c, w.name, {})])), output,
                     what + " as CSV")
            else:
                emit(render_hetero_estimate(res, w.name, c, width=table_width(output)), output, what + " as a table")
            return
        from parplan.api import estimate

        bar = LazyProgress(not quiet, "completing the plan")
        try:
            e = estimate(model, hw, plan, seq_len=seq_len, global_batch=global_batch, precision=precision,
                         framework=framework, expert_imbalance=expert_imbalance, max_plans=max_plans,
                         progress=bar)
        finally:
            bar.close()
        if fmt == Format.json:
            from parplan.cli.json_out import estimate_json
            from parplan.hardware.catalog import load_cluster

            emit(to_json(estimate_json(e, load_cluster(hw))), output, "1 plan as JSON")
        elif fmt == Format.csv:
            emit(frame_csv([estimate_row(e)]), output, "1 plan as CSV")
        else:
            emit(render_table(e, width=table_width(output)), output, "1 plan as a table")
