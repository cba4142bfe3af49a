"""``parplan check``: capacity requirements for CI.

Exit codes: 0 a plan meets every requirement; 1 none does (the closest plan and each failed requirement with its
shortfall are printed; a plan that does not fit never passes); 2 bad input or work above --max-plans.
Option values are checked before anything is loaded, one line each.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from parplan.cli.common import (check_precision, DebugOpt, emit, EXIT_CHECK_FAILED, Format, FormatOpt,
                                GlobalBatchOpt, handle_errors, HwOpt, ImbalanceOpt, ModelArg, OutputOpt, PrecisionOpt,
                                SeqLenOpt, to_json)
from parplan.cli.progress import LazyProgress, _Err
from parplan.cli.suggest_cmd import MAX_PLANS_OPT, SERVE_OPT
from parplan.errors import SpecError
from parplan.planner.budget import check_max_plans


def register(app: typer.Typer) -> None:
    @app.command("check")
    @handle_errors
    def check_cmd(
        model: ModelArg,
        hw: HwOpt,
        plan: Optional[str] = typer.Option(None, "--plan", help="check this plan (default: search every plan)"),
        min_tokens_per_s: Optional[float] = typer.Option(None, "--min-tokens-per-s",
                                                         help="required throughput (> 0, finite)"),
        max_step_time_s: Optional[float] = typer.Option(None, "--max-step-time-s",
                                                        help="longest allowed step (> 0, finite)"),
        max_memory_fraction: Optional[float] = typer.Option(
            None, "--max-memory-fraction",
            help="peak memory / device memory, in (0, 1] (default 1.0: fits; above 1 is an error — a plan that does "
                 "not fit never passes)"),
        min_mfu: Optional[float] = typer.Option(None, "--min-mfu", help="required model FLOPs utilization, in (0, 1]"),
        global_batch: GlobalBatchOpt = None,
        seq_len: SeqLenOpt = None,
        precision: PrecisionOpt = None,
        expert_imbalance: ImbalanceOpt = None,
        fix: Optional[List[str]] = typer.Option(None, "--fix", help="pin a plan key when searching (repeatable)"),
        allow_cross_node_tp: bool = typer.Option(False, "--allow-cross-node-tp",
                                                 help="let tensor parallelism span nodes"),
        junit: Optional[Path] = typer.Option(None, "--junit", help="also write a JUnit XML report here"),
        fmt: FormatOpt = Format.table,
        output: OutputOpt = None,
        max_plans: Optional[int] = MAX_PLANS_OPT,
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
        serve: Optional[Path] = SERVE_OPT,
        deployment: Optional[str] = typer.Option(None, "--deployment", help="--serve: check this deployment"),
        debug: DebugOpt = False,
    ) -> None:
        """Exit 0 when a plan (or the given plan) meets every requirement, 1 when none does, 2 on bad input."""
        from parplan.workloads.registry import verbs_for

        if plan is not None and fix:
            raise SpecError("--fix pins the search; it cannot be combined with --plan", key="--fix")
        verbs = verbs_for(model)  # a family with its own verbs (task graphs): --max-step-time-s bounds the run time
        if verbs is not None:
            from parplan.cli.family_verbs import given

            return verbs.check(model, hw, plan=plan, max_time_s=max_step_time_s, min_throughput=min_tokens_per_s,
                               fmt=fmt, output=output, **given(fix=fix,
                                   max_memory_fraction=max_memory_fraction, min_mfu=min_mfu,
                                   global_batch=global_batch, seq_len=seq_len, precision=precision,
                                   expert_imbalance=expert_imbalance, allow_cross_node_tp=allow_cross_node_tp,
                                   junit=junit, max_plans=max_plans, serve=serve, deployment=deployment))
        from parplan.cli.family_verbs import serve_door

        serve_door("check", serve, deployment, plan=plan, min_tokens_per_s=min_tokens_per_s,
                   max_step_time_s=max_step_time_s, max_memory_fraction=max_memory_fraction, min_mfu=min_mfu,
                   global_batch=global_batch, seq_len=seq_len, precision=precision, expert_imbalance=expert_imbalance,
                   fix=fix, allow_cross_node_tp=allow_cross_node_tp, junit=junit, max_plans=max_plans)
        if serve is not None:
            from parplan.cli.serve_out import serve_check

            return serve_check(model, hw, serve, deployment, fmt=fmt, output=output)
        import pandas as pd

        from parplan.api import check
        from parplan.cli.tables import fit_lines
        from parplan.planner.check import junit_xml, requirements
        from parplan.planner.export import to_csv

        requirements(min_tokens_per_s, max_step_time_s, max_memory_fraction, min_mfu)  # at the door
        if max_plans is not None:
            check_max_plans(max_plans)
        check_precision(precision)
        bar = LazyProgress(not quiet, "checking")
        try:
            r = check(model, hw, plan, min_tokens_per_s=min_tokens_per_s, max_step_time_s=max_step_time_s,
                      max_memory_fraction=max_memory_fraction, min_mfu=min_mfu, fix=fix,
                      allow_cross_node_tp=allow_cross_node_tp, progress=bar, seq_len=seq_len,
                      global_batch=global_batch, precision=precision, expert_imbalance=expert_imbalance,
                      max_plans=max_plans)
        finally:
            bar.close()
        e = r.estimate
        where = f"{e.workload} on {e.cluster} ({e.n_devices:,} devices)"
        what = f"{len(r.results)} requirement{'' if len(r.results) == 1 else 's'} of 1 plan"
        if fmt == Format.json:
            from parplan.cli.json_out import check_json
            from parplan.hardware.catalog import load_cluster

            emit(to_json(check_json(r, load_cluster(hw))), output, what + " as JSON")
        elif fmt == Format.csv:
            rows = [{"requirement": x.name, "metric": x.metric, "required": x.required, "actual": x.actual,
                     "ok": x.ok, "shortfall": x.shortfall, "plan": r.plan.to_string()} for x in r.results]
            emit(to_csv(pd.DataFrame(rows)), output, what + " as CSV")
        else:
            if r.ok:
                head = f"PASS  {where}: {r.plan.to_string()}"
            elif plan is not None:
                head = f"FAIL  {where}: {r.plan.to_string()}"
            else:
                head = (f"FAIL  no plan of {where} meets every requirement ({r.searched:,} searched); "
                        f"closest: {r.plan.to_string()}")
            lines = [head] + ["  " + x.line() for x in r.results]
            emit("\n".join(lines) if output is not None else fit_lines(lines), output, what)
        if junit is not None:
            junit.write_text(junit_xml(r, e.workload, e.cluster), encoding="utf-8")
            if not quiet:
                _Err().print(f"wrote {junit}")
        if not r.ok:
            raise typer.Exit(EXIT_CHECK_FAILED)
