"""``parplan validate``: the analytical model against the reference executor — step time and peak memory per plan
(or serving deployment), exit 1 beyond a tolerance.

Exit codes: 0 every plan within the tolerance; 1 some plan beyond it; 2 bad input, --top above ``VALIDATE_MAX_TOP``,
or a plan above --max-events (every plan is estimated before any is simulated) or a search above --max-plans.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from parplan.cli.common import (DebugOpt, emit, EXIT_CHECK_FAILED, Format, FormatOpt, FrameworkOpt, ImbalanceOpt, gib,
                                GlobalBatchOpt, handle_errors, human_s, HwOpt, ModelArg, OutputOpt, PrecisionOpt,
                                SeqLenOpt, table_width, to_json, what_written)
from parplan.cli.simulate_cmd import REQUESTS_OPT, SEED_OPT, SERVE_SIM_OPT, _load, check_max_events, short_plan
from parplan.errors import SpecError
from parplan.executor.budget import MAX_EVENTS_HELP
from parplan.planner.budget import MAX_PLANS_HELP, check_max_plans, check_number

VALIDATE_MAX_TOP = 1_000  # validate --top K: plans simulated (each up to --max-events)
DEFAULT_TOLERANCE = 0.05  # validate's default: the executor-agreement tolerance of the training model


def render_agreement(rows, tolerance: float, title: str, width: int | None = None) -> str:
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    a2a = any(getattr(a, "has_a2a", False) for a in rows)
    scale, unit = time_unit([a.analytical_step_s for a in rows] + [a.simulated_step_s for a in rows])
    cols = [Col("plan", "left", wrap=True), Col(f"analytical step {unit}"), Col(f"simulated step {unit}"),
            Col("diff"), Col("analytical mem GiB", keep=2), Col("simulated mem GiB", keep=2), Col("diff", keep=1),
            *((Col("a2a exposed (an. / sim.)", keep=3),) if a2a else ()), Col("status", "left")]
    out, styles = [], []
    for a in rows:
        ok = a.ok(tolerance)
        ep = (f"{human_s(a.analytical_ep_exposed_s)} / {human_s(a.simulated_ep_exposed_s)}" if a.has_a2a
              else "-",) if a2a else ()
        out.append([short_plan(a.plan), fmt_time(a.analytical_step_s, scale), fmt_time(a.simulated_step_s, scale),
                    f"{100 * a.step_diff:+.2f} %", gib(a.analytical_memory_bytes), gib(a.simulated_memory_bytes),
                    f"{100 * a.memory_diff:+.2f} %", *ep, "ok" if ok else "DIFFERS"])
        styles.append(None if ok else "bold")
    bad = sum(not a.ok(tolerance) for a in rows)
    return render(cols, out, title=title, width=width, row_styles=styles,
                  notes=[f"{len(rows)} plan(s); {bad} differ by more than {100 * tolerance:g} %"])


def _suggested_plans(workload, cluster, top: int, max_plans: int | None = None, progress=None) -> list:
    """Plans of the planner's top K (imported lazily: the planner is optional here)."""
    try:
        import parplan

        suggest = parplan.suggest
        res = suggest(workload, cluster, top=top, max_plans=max_plans, progress=progress)
    except (ImportError, AttributeError) as exc:
        raise SpecError(f"--top needs the planner (parplan.suggest), which is not available: {exc}", key="--top",
                        hint="pass --plan instead") from None
    return [e.plan for e in res]


def register(app: typer.Typer) -> None:
    @app.command("validate")
    @handle_errors
    def validate_cmd(
        model: ModelArg,
        hw: HwOpt,
        plan: Optional[List[str]] = typer.Option(None, "--plan", help="a plan to check (repeatable)"),
        plan_file: Optional[List[Path]] = typer.Option(None, "--plan-file",
                                                       help="multi-group clusters: a heterogeneous plan YAML to "
                                                            "check (repeatable)"),
        top: Optional[int] = typer.Option(None, "--top", help=f"check the planner's K best plans instead (1–"
                                                              f"{VALIDATE_MAX_TOP:,})"),
        tolerance: float = typer.Option(DEFAULT_TOLERANCE, "--tolerance",
                                        help="largest accepted relative difference, in (0, 1)"),
        seq_len: SeqLenOpt = None,
        global_batch: GlobalBatchOpt = None,
        precision: PrecisionOpt = None,
        framework: FrameworkOpt = None,
        expert_imbalance: ImbalanceOpt = None,
        fmt: FormatOpt = Format.table,
        output: OutputOpt = None,
        max_events: Optional[int] = typer.Option(None, "--max-events", help=MAX_EVENTS_HELP + "; per plan",
                                                 show_default=False),
        max_plans: Optional[int] = typer.Option(None, "--max-plans", help="--top: " + MAX_PLANS_HELP,
                                                show_default=False),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
        serve: Optional[Path] = SERVE_SIM_OPT,
        deployment: Optional[List[str]] = typer.Option(None, "--deployment",
                                                       help="--serve: a deployment to check (repeatable)"),
        requests: int = REQUESTS_OPT,
        seed: int = SEED_OPT,
        debug: DebugOpt = False,
    ) -> None:
        """Analytical estimate vs simulated step: step time and peak memory; exit 1 beyond the tolerance (--serve:
        TTFT p50/p99, TPOT and throughput of serving deployments)."""
        from parplan.planner.budget import check_number
        from parplan.workloads.registry import verbs_for

        check_number(seed, "--seed", lo=0, integer=True, hint="a whole number ≥ 0")  # numpy refuses a negative one

        verbs = verbs_for(model)  # a family with its own verbs (task graphs on CPU sockets)
        if verbs is not None:
            from parplan.cli.family_verbs import given

            return verbs.validate(model, hw, plan=plan or None, top=top, fmt=fmt, output=output,
                                  **({} if tolerance == DEFAULT_TOLERANCE else {"tolerance": tolerance}), **given(
                                      plan_file=plan_file, seq_len=seq_len, global_batch=global_batch,
                                      precision=precision, framework=framework, expert_imbalance=expert_imbalance,
                                      max_events=max_events, max_plans=max_plans, serve=serve,
                                      deployment=deployment))
        from parplan.cli.family_verbs import serve_door

        if serve is not None and (plan or plan_file):
            raise SpecError("--serve validates --deployment or --top, not a training --plan", key="--plan")
        serve_door("validate", serve, deployment, seq_len=seq_len, global_batch=global_batch, precision=precision,
                   framework=framework, expert_imbalance=expert_imbalance, max_plans=max_plans)
        if serve is not None:
            from parplan.cli.serve_sim_out import serve_validate

            if not (0.0 < tolerance < 1.0):
                raise SpecError(f"bad tolerance {tolerance!r}: must be between 0 and 1", key="--tolerance")
            if max_events is not None:
                check_max_events(max_events)
            return serve_validate(model, hw, serve, deployment, top, tolerance, requests=requests, seed=seed,
                                  max_events=max_events, fmt=fmt, output=output)
        from parplan.cli.estimate_cmd import frame_csv
        from parplan.cli.progress import LazyProgress
        from parplan.executor.agreement import compare_plan
        from parplan.executor.budget import DEFAULT_MAX_EVENTS, over_event_budget
        from parplan.executor.simulate import plan_events
        from parplan.models.plan import parse_plan

        if not (0.0 < tolerance < 1.0):  # nan and inf fail too
            raise SpecError(f"bad tolerance {tolerance!r}: must be between 0 and 1", key="--tolerance",
                            hint="e.g. 0.05 for 5 %")
        if top is not None:
            check_number(top, "--top", lo=1, integer=True)
            check_number(top, "--top", hi=VALIDATE_MAX_TOP, integer=True,
                         what="plans simulated, each up to --max-events", hint="validate the best ones, or --plan")
        if max_events is not None:
            check_max_events(max_events)
        if max_plans is not None:
            check_max_plans(max_plans)
        if (bool(plan) + bool(plan_file) + (top is not None)) != 1:
            raise SpecError("give either --plan (one or more), --plan-file (one or more; multi-group clusters) or "
                            "--top K", key="--plan")
        limit = DEFAULT_MAX_EVENTS if max_events is None else max_events
        w, c = _load(model, hw, seq_len, global_batch, precision, framework, expert_imbalance)
        if not c.is_homogeneous or plan_file:
            from parplan.cli.hetero_out import validate_hetero_cmd

            validate_hetero_cmd(w, c, plan, plan_file, top, tolerance, fmt, output, max_plans=max_plans, quiet=quiet)
            return
        bar = LazyProgress(not quiet, "validating")
        try:
            if top is not None:
                plans = _suggested_plans(w, c, top, max_plans=max_plans, progress=bar)
                if not plans:
                    raise SpecError("the planner found no plan to validate", key="--top")
            else:
                plans = [parse_plan(x, c.n_devices) for x in plan]
            # every plan's events before any is simulated
            for i, p in enumerate(plans):
                bar(i, 2 * len(plans))
                est = plan_events(w, c, p)
                if est.events > limit:
                    raise over_event_budget(est, limit, f"plan {short_plan(p)}")
            rows = []
            for i, p in enumerate(plans):
                bar(len(plans) + i, 2 * len(plans))
                rows.append(compare_plan(w, c, p, max_events=limit))
        finally:
            bar.close()
        what = what_written(fmt, len(rows), "plan compared")
        if fmt == Format.json:
            from parplan.cli.json_out import validate_json
            from parplan.models.estimate import estimate_plan

            emit(to_json(validate_json(rows, [estimate_plan(w, c, p) for p in plans], tolerance, w.name, c)), output,
                 what)
        elif fmt == Format.csv:
            emit(frame_csv([dict(a.row(), ok=a.ok(tolerance)) for a in rows]), output, what)
        else:
            emit(render_agreement(rows, tolerance, f"analytical vs simulated: {w.name} on {c.name}",
                                  width=table_width(output)), output, what)
        if not all(a.ok(tolerance) for a in rows):
            raise typer.Exit(EXIT_CHECK_FAILED)
