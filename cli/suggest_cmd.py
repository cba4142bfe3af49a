"""``parplan suggest``: search and rank plans (``parplan check``, the CI gate, is in ``cli/check_cmd.py``).

suggest exit codes: 0 plans found; 1 nothing fits in memory (stdout: an empty table / a CSV header / JSON with no
plans; stderr: why, and what would fit — more nodes, another precision, a smaller batch, recompute=full, fewer
pins), or the devices objective's target is not reached within --max-nodes (the input is fine, the requirement is
not met); 2 bad input — a bad option value, file or plan, or work above a budget (--max-plans,
--max-configurations: refused before searching).
Option values are checked before anything is loaded (``door``): finite, in range, one line each.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from parplan.cli.common import (check_framework, check_precision, DebugOpt, emit, EXIT_CHECK_FAILED, Format,
                                FormatOpt, FrameworkOpt, GlobalBatchOpt, handle_errors, HwOpt, ImbalanceOpt,
                                ModelArg, OutputOpt, PrecisionOpt, SeqLenOpt, table_width, to_json, what_written)
from parplan.cli.export_cmd import Target, export_framework
from parplan.cli.progress import LazyProgress, _Err  # noqa: F401  (LazyProgress: other commands import it here)
from parplan.errors import SpecError, did_you_mean
from parplan.planner.budget import (DEFAULT_MAX_CONFIGURATIONS, DEFAULT_SIZING_REACH, HEADROOM_HELP, MAX_MBS,
                                    MAX_NODES, MAX_PLANS_HELP, MAX_PRICE_PER_HOUR, MAX_TIME_LIMIT_S, MAX_TOP,
                                    TABLE_ROWS, check_max_plans, check_number)

OBJECTIVE_NAMES = ["throughput", "memory", "cost", "devices", "time-to-train"]
GiB = float(2**30)


def _short_plan(row) -> str:
    return (f"tp{row.tp} pp{row.pp} cp{row.cp} dp{row.dp} mbs{row.mbs} vpp{row.vpp} z{row.zero} "
            f"{row.recompute[:3]}{' sp' if row.sp else ''}")


# the legend of the share and memory columns (only the columns shown are explained)
_LEGEND = {"equiv": "equiv = equal-outcome plans the row stands for (same step time and memory; the simplest shown)",
           "comp": "comp = GEMM + attention + memory-bound kernels", "rcmp": "rcmp = recompute",
           "comm": "comm = exposed TP + CP + PP p2p + DP (+ EP all-to-all)", "bubl": "bubl = pipeline bubble",
           "opt": "opt = optimizer step", "state": "state = weights + grads + optimizer states (GiB)",
           "act": "act = activations (GiB)"}


def render_plans(ps, explain_lines: list[str] | None = None, max_rows: int | None = None,
                 width: int | None = None) -> str:
    """Compact table that fits the terminal (``width``: a file's): plan, step time, throughput, MFU, memory; time
    shares and memory parts (the first ``max_rows`` plans).  The least important columns go first when it is too
    wide (a footer names them)."""
    from parplan.cli.tables import Col, fmt_time, render, time_unit

    from types import SimpleNamespace

    cols_ = ps.to_columns()  # columns, not a DataFrame: the table needs no pandas
    n = len(cols_["rank"]) if max_rows is None else min(max_rows, len(cols_["rank"]))
    plans = [SimpleNamespace(**{k: v[i] for k, v in cols_.items()}) for i in range(n)]
    s = ps.stats
    title = (f"{ps.workload.name} on {ps.cluster.name} ({s.n_devices:,} devices): top {n} of {s.fitting:,} "
             f"fitting plans ({s.valid_plans:,} valid), objective {ps.objective}")
    pinned = [k for k in ("helix", "rotate") if any(bool(getattr(r, k, False)) for r in plans)]
    if pinned:  # HelixPipe / RTP plans (pinned with --fix): named in the title, the table has no column for them
        title += ", " + ", ".join(f"{k}=true" for k in pinned)
    # expert axes are shown when a plan uses them (MoE workloads)
    experts = any(r.ep > 1 or r.etp > 1 for r in plans)
    layouts = any(r.cp_kind != "ring" for r in plans)  # a context-parallel layout other than the ring
    scale, unit = time_unit([float(r.step_time_s) for r in plans])
    cols = [Col("#"), Col("tp"), Col("pp"), Col("cp"), *([Col("cp layout", "left", keep=4)] if layouts else []),
            Col("dp"), *([Col("ep"), Col("etp")] if experts else []),
            Col("mbs"), Col("vpp", keep=3), Col("zero"), Col("recomp", "left"), Col("sp", "left", keep=3),
            Col(f"step {unit}"), Col("tokens/s"), Col("MFU", keep=2), Col("mem GiB"), Col("equiv"),
            Col("comp", keep=6), Col("rcmp", keep=8), Col("comm", keep=5), Col("bubl", keep=7),
            Col("opt", keep=9), Col("state", keep=4), Col("act", keep=4)]
    if ps.price_per_hour is not None:
        cols.append(Col("$/Mtok", keep=2))
    rows = []
    for r in plans:
        st = r.step_time_s
        comp = r.compute_gemm_s + r.compute_attention_s + r.compute_memory_bound_s
        comm = r.tp_comm_exposed_s + r.cp_comm_exposed_s + r.pp_p2p_s + r.dp_comm_exposed_s + r.ep_comm_exposed_s
        row = [str(r.rank), str(r.tp), str(r.pp), str(r.cp), *([r.cp_kind if r.cp > 1 else ""] if layouts else []),
               str(r.dp),
               *([str(r.ep), str(r.etp)] if experts else []), str(r.mbs), str(r.vpp), str(r.zero),
               r.recompute, "y" if r.sp else "n", fmt_time(st, scale), f"{r.tokens_per_s:,.0f}", f"{100 * r.mfu:.1f}%",
               f"{r.memory_peak_bytes / GiB:.1f}", f"{r.equivalent_plans:,}", f"{100 * comp / st:.0f}%",
               f"{100 * r.recompute_s / st:.0f}%", f"{100 * comm / st:.0f}%", f"{100 * r.pipeline_bubble_s / st:.0f}%",
               f"{100 * r.optimizer_s / st:.1f}%", f"{(r.params_bytes + r.grads_bytes + r.optimizer_bytes) / GiB:.1f}",
               f"{r.activations_bytes / GiB:.1f}"]
        if ps.price_per_hour is not None:
            row.append(f"{r.usd_per_million_tokens:.3f}")
        rows.append(row)

    def legend(dropped: list[str]) -> list[str]:
        parts = [v for k, v in _LEGEND.items() if k not in dropped]
        return ["shares of the step time (critical stage); GiB per device, mem = peak: " + "; ".join(parts)]

    return render(cols, rows, title=title, width=width, notes=legend)


def _fmt_duration(s: float) -> str:
    if s >= 86400:
        return f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    return f"{s:.0f} s"


MAX_PLANS_OPT = typer.Option(None, "--max-plans", help=MAX_PLANS_HELP, show_default=False)
SERVE_OPT = typer.Option(None, "--serve", help="serve.yaml: plan inference serving against its SLOs (examples/)")


def _door_suggest(top, memory_headroom, max_mbs, price_per_hour, target_tokens_per_s, max_nodes, time_limit,
                  max_plans, max_configurations) -> None:
    """Option values of ``suggest``, checked before anything is loaded (one line, exit 2, naming the option)."""
    check_number(top, "--top", lo=0, hi=MAX_TOP, integer=True, what="plans reported; 0 = every plan that fits")
    check_number(memory_headroom, "--memory-headroom", lo=0.0, hi=0.5,
                 hint="a fraction of device memory kept free, e.g. 0.1")
    check_number(max_mbs, "--max-mbs", lo=1, hi=MAX_MBS, integer=True,
                 what=f"micro-batch sizes 1..max-mbs are searched; at most {MAX_MBS:,}",
                 hint="pin a larger one with --fix mbs=N")
    check_number(price_per_hour, "--price-per-hour", lo=0, hi=MAX_PRICE_PER_HOUR, lo_open=True,
                 hint="USD per device-hour, e.g. 2.5")
    check_number(target_tokens_per_s, "--target-tokens-per-s", lo=0, lo_open=True,
                 hint="a throughput in tokens per second, e.g. 2e6")
    check_number(max_nodes, "--max-nodes", lo=1, hi=MAX_NODES, integer=True, what="sizing: node counts searched")
    check_number(time_limit, "--time-limit", lo=0, lo_open=True, hi=MAX_TIME_LIMIT_S,
                 hint="seconds per ILP solve, e.g. 10")
    if max_plans is not None:
        check_max_plans(max_plans)
    check_number(max_configurations, "--max-configurations", lo=1, integer=True)


def register(app: typer.Typer) -> None:
    @app.command("suggest")
    @handle_errors
    def suggest_cmd(
        model: ModelArg,
        hw: HwOpt,
        global_batch: GlobalBatchOpt = None,
        seq_len: SeqLenOpt = None,
        precision: PrecisionOpt = None,
        framework: FrameworkOpt = None,
        expert_imbalance: ImbalanceOpt = None,
        top: int = typer.Option(10, "--top", help=f"how many plans to print (0 = every plan that fits; at most "
                                                  f"{MAX_TOP:,}; a table shows the first {TABLE_ROWS:,})"),
        objective: Optional[str] = typer.Option(None, "--objective",
                                                help="throughput (default) | memory | cost | devices | "
                                                     "time-to-train (with --token-budget: failures, checkpoints "
                                                     "and restarts counted; devices is implied by a target or "
                                                     "deadline)"),
        fix: Optional[List[str]] = typer.Option(None, "--fix", help="pin a plan key, e.g. --fix tp=8 (repeatable)"),
        memory_headroom: Optional[float] = typer.Option(None, "--memory-headroom", help=HEADROOM_HELP,
                                                        show_default=False),
        allow_cross_node_tp: bool = typer.Option(False, "--allow-cross-node-tp",
                                                 help="let tensor parallelism span nodes"),
        max_mbs: int = typer.Option(32, "--max-mbs", help=f"largest micro-batch size searched (1–{MAX_MBS:,}; "
                                                          "--fix mbs=N pins any)"),
        price_per_hour: Optional[float] = typer.Option(None, "--price-per-hour",
                                                       help="USD per device-hour (your own figure) for --objective cost"),
        target_tokens_per_s: Optional[float] = typer.Option(None, "--target-tokens-per-s",
                                                            help="sizing: the throughput to reach (> 0, finite)"),
        deadline: Optional[str] = typer.Option(None, "--deadline", help='sizing: seconds or e.g. "30d", "12h"'),
        token_budget: Optional[str] = typer.Option(None, "--token-budget", help='tokens to train, e.g. "15T"'),
        max_nodes: Optional[int] = typer.Option(None, "--max-nodes",
                                                help=f"sizing (with --target-tokens-per-s or --deadline): most "
                                                     f"nodes searched (default: the cluster's node count, or "
                                                     f"{DEFAULT_SIZING_REACH}× the 100 %-MFU bound when larger; at "
                                                     f"most {MAX_NODES:,})"),
        fmt: FormatOpt = Format.table,
        output: OutputOpt = None,
        export: Optional[Target] = typer.Option(
            None, "--export", help="also write the best plan as this framework's launch script or config: megatron | "
                                   "nemo | torchtitan | deepspeed | maxtext (as `parplan export`; the search then "
                                   "ranks only plans that framework can launch)"),
        export_output: Optional[Path] = typer.Option(None, "--export-output",
                                                     help="file for --export (default: its suggested name, e.g. "
                                                          "launch_megatron.sh)"),
        explain: bool = typer.Option(False, "--explain", help="why the best wins, and why other plans are out"),
        expand_ties: bool = typer.Option(False, "--expand-ties",
                                         help="one row per plan, even where plans have the same outcome (default: "
                                              "equal-outcome plans are one row, the simplest, with their count)"),
        solver: str = typer.Option("exact", "--solver",
                                   help="multi-group clusters: exact (in process) | cbc | highs (the same programs "
                                        "as ILPs, through PuLP)"),
        time_limit: float = typer.Option(10.0, "--time-limit",
                                         help=f"multi-group clusters: seconds per ILP solve, in (0, "
                                              f"{MAX_TIME_LIMIT_S:g}]"),
        max_plans: Optional[int] = MAX_PLANS_OPT,
        max_configurations: Optional[int] = typer.Option(
            None, "--max-configurations", show_default=False,
            help=f"multi-group clusters: work budget, the most shape × knob configurations planned (default "
                 f"{DEFAULT_MAX_CONFIGURATIONS:,}; each may take two rounds of ILP solves)"),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar, no summary line"),
        serve: Optional[Path] = SERVE_OPT,
        debug: DebugOpt = False,
    ) -> None:
        """Search every valid parallel plan and print the best ones (multi-group clusters: ILP-balanced
        heterogeneous plans beside the uniform and fastest-group baselines; --serve: serving deployments)."""
        if serve is not None:
            from parplan.cli.family_verbs import serve_door
            from parplan.cli.serve_out import serve_suggest

            serve_door("suggest", serve, None, global_batch=global_batch, seq_len=seq_len, precision=precision,
                       framework=framework, expert_imbalance=expert_imbalance, objective=objective, fix=fix,
                       memory_headroom=memory_headroom, allow_cross_node_tp=allow_cross_node_tp,
                       max_mbs=None if max_mbs == 32 else max_mbs, solver=None if solver == "exact" else solver,
                       time_limit=None if time_limit == 10.0 else time_limit,
                       target_tokens_per_s=target_tokens_per_s, deadline=deadline, token_budget=token_budget,
                       max_nodes=max_nodes, export=export, export_output=export_output, explain=explain,
                       expand_ties=expand_ties, max_plans=max_plans, max_configurations=max_configurations)

            _door_suggest(top, None, 1, price_per_hour, None, None, 10.0, None, None)
            return serve_suggest(model, hw, serve, top=top, fmt=fmt, output=output, price_per_hour=price_per_hour,
                                 quiet=quiet)
        from parplan.api import _search_options
        from parplan.hardware.catalog import load_cluster
        from parplan.planner.export import to_csv
        from parplan.planner.advice import advice
        from parplan.planner.planset import suggest_plans
        from parplan.planner.search import DEFAULT_MEMORY_HEADROOM
        from parplan.workloads.loader import load_workload

        _door_suggest(top, memory_headroom, max_mbs, price_per_hour, target_tokens_per_s, max_nodes, time_limit,
                      max_plans, max_configurations)
        from parplan.workloads.registry import verbs_for

        verbs = verbs_for(model)  # a family with its own verbs (task graphs on CPU sockets): its handler prints
        if verbs is not None:
            from parplan.cli.family_verbs import given

            return verbs.suggest(model, hw, fix=fix, top=top, objective=objective, fmt=fmt, output=output, **given(
                global_batch=global_batch, seq_len=seq_len, precision=precision, framework=framework,
                expert_imbalance=expert_imbalance, memory_headroom=memory_headroom,
                allow_cross_node_tp=allow_cross_node_tp, price_per_hour=price_per_hour,
                target_tokens_per_s=target_tokens_per_s, deadline=deadline, token_budget=token_budget,
                max_nodes=max_nodes, export=export, export_output=export_output, explain=explain,
                expand_ties=expand_ties, max_plans=max_plans, max_configurations=max_configurations))
        check_precision(precision)
        check_framework(framework)
        framework = export_framework(export, framework, export_output)
        if objective is not None and objective not in OBJECTIVE_NAMES:
            raise SpecError(f"bad value {objective!r}", key="--objective", allowed=OBJECTIVE_NAMES,
                            hint=did_you_mean(objective, OBJECTIVE_NAMES))
        w = load_workload(model, seq_len=seq_len, global_batch=global_batch, precision=precision, framework=framework,
                          expert_imbalance=expert_imbalance)
        c = load_cluster(hw)
        if not c.is_homogeneous:
            from parplan.cli.hetero_out import suggest_hetero

            if export is not None:
                raise SpecError(f"a heterogeneous plan on the multi-group cluster {c.name} cannot be exported: no "
                                "supported framework launches per-group stage layouts", key="--export",
                                hint="export a plan of one device group (e.g. the fastest-group baseline) with "
                                     "`parplan export`")
            suggest_hetero(w, c, dict(objective=objective, fix=fix, memory_headroom=memory_headroom,
                                      allow_cross_node_tp=allow_cross_node_tp, price_per_hour=price_per_hour,
                                      target_tokens_per_s=target_tokens_per_s, deadline=deadline,
                                      token_budget=token_budget, max_nodes=max_nodes, framework=framework),
                           solver=solver, time_limit=time_limit, max_mbs=max_mbs, max_configurations=max_configurations,
                           max_plans=max_plans, top=top, fmt=fmt, output=output, explain=explain, quiet=quiet)
            return
        headroom = DEFAULT_MEMORY_HEADROOM if memory_headroom is None else memory_headroom
        opts = _search_options(fix, headroom, allow_cross_node_tp, max_mbs, max_plans)
        bar = LazyProgress(not quiet, "searching")
        try:
            ps = suggest_plans(w, c, objective=objective, top=top, options=opts, price_per_hour=price_per_hour,
                               target_tokens_per_s=target_tokens_per_s, deadline=deadline, token_budget=token_budget,
                               max_nodes=max_nodes, progress=bar, group_ties=not expand_ties)
            with bar.phase("writing"):
                if fmt == Format.json:
                    text = to_json(ps.to_dict())
                elif fmt == Format.csv:
                    text = to_csv(ps.to_frame())
                else:
                    text = render_plans(ps, max_rows=TABLE_ROWS, width=table_width(output)) if len(ps) else None
        finally:
            bar.close()
        if text is not None:
            emit(text, output, what_written(fmt, min(len(ps), TABLE_ROWS) if fmt == Format.table else len(ps)))
        if export is not None and len(ps):
            from parplan.cli.export_cmd import write_launch

            write_launch(ps.workload, ps.cluster, ps.best.plan, export.value, export_output)
        err = _Err()
        if fmt == Format.table and len(ps) > TABLE_ROWS:
            err.print(f"note: the table shows the first {TABLE_ROWS:,} of {len(ps):,} plans; --format csv or json "
                      "writes them all")
        s = ps.stats
        if not quiet:
            sized = (f"searched {len(ps.sizing.tried)} node count{'' if len(ps.sizing.tried) == 1 else 's'} in "
                     f"{s.wall_s:.2f} s; at {s.n_nodes} nodes: " if ps.sizing is not None and ps.sizing.tried
                     else "searched ")
            err.print(f"{sized}{s.valid_plans:,} valid plans on {s.n_devices:,} devices ({s.evaluated:,} priced, "
                      f"{s.pruned:,} skipped by the memory bound)"
                      + ("" if ps.sizing is not None else f" in {s.wall_s:.2f} s") + f"; {s.fitting:,} fit",
                      markup=False)
        code = 0
        if ps.sizing is not None:
            z = ps.sizing
            for note in z.notes:
                err.print(f"note: sizing: {note}")
            if z.n_nodes is not None:
                fewest = ("is the fewest reaching" if not z.notes
                          else "reach (an upper bound of the fewest, see the note)")
                err.print(f"sizing: {z.n_nodes} nodes ({z.n_devices:,} devices) {fewest} "
                          f"{z.target_tokens_per_s:,.0f} tokens/s (best plan: {ps.best.tokens_per_s:,.0f} tokens/s)",
                          markup=False)
            elif z.n_start > z.max_nodes:
                todo = (f"raise --max-nodes to {z.n_start:,} or more" if z.n_start <= MAX_NODES
                        else f"more than the {MAX_NODES:,} nodes searched at most: lower the target")
                err.print(f"sizing: no node count up to {z.max_nodes:,} reaches {z.target_tokens_per_s:,.0f} "
                          f"tokens/s: even at 100 % MFU it needs at least {z.n_start:,} nodes (none searched); {todo}",
                          markup=False)
                code = EXIT_CHECK_FAILED
            else:
                reached = max((t for _, t in z.tried if t == t), default=float("nan"))
                best = (f"best found {reached:,.0f} tokens/s" if reached == reached
                        else "no plan fits at any node count searched")
                span = (f"{len(z.tried):,} node count{'' if len(z.tried) == 1 else 's'} searched from {z.n_start:,}"
                        + ("" if max_nodes is not None else
                           f", up to {DEFAULT_SIZING_REACH}× the 100 %-MFU bound as --max-nodes was not given"))
                err.print(f"sizing: no node count up to {z.max_nodes:,} reaches {z.target_tokens_per_s:,.0f} tokens/s "
                          f"({best}; {span}); raise --max-nodes", markup=False)
                code = EXIT_CHECK_FAILED
        if ps.token_budget is not None and len(ps):
            secs = ps.training_time_s  # goodput-aware under --objective time-to-train, failure-free otherwise
            line = (f"training {ps.token_budget:.3g} tokens takes {_fmt_duration(secs)} with the best plan"
                    + (" (failures, checkpoints and restarts included)" if ps.objective == "time-to-train" else ""))
            if ps.price_per_hour is not None:
                line += f", ≈ ${secs / 3600 * s.n_devices * ps.price_per_hour:,.0f} at ${ps.price_per_hour:g}/device-hour"
            err.print(line, markup=False)
            if ps.objective == "time-to-train" and ps.goodput is not None:
                f = ps.to_dict()["failures"]
                parts = ", ".join(f"{k[:-2]} {_fmt_duration(v)}" for k, v in f["breakdown_s"].items() if v > 0)
                err.print(f"goodput {f['goodput']:.1%} (p10–p90 {_fmt_duration(f['time_to_train_p10_s'])}–"
                          f"{_fmt_duration(f['time_to_train_p90_s'])}; {parts}; "
                          f"{f['expected_interruptions']:,.0f} interruptions, MTBF {_fmt_duration(f['mtbf_s'])}, "
                          f"checkpoint every {_fmt_duration(f['checkpoint_interval_s'])})", markup=False)
        if not len(ps) and len(ps.evaluated.space) == 0:
            return_code = code or EXIT_CHECK_FAILED  # sizing: the largest node count has no valid plan at all
            raise typer.Exit(return_code)
        if explain or not len(ps):
            for line in ps.explain():
                err.print(("why: " if explain else "") + line, markup=False)
        if not len(ps):
            h = ps.evaluated.options.memory_headroom
            cap = f" ({ps.evaluated.hw.memory_capacity_bytes / GiB:.1f} GiB less {100 * h:g} % headroom)" if h else ""
            err.print(f"error: no plan fits in {ps.evaluated.limit_bytes / GiB:.1f} GiB per device{cap}; what would "
                      "fit:", markup=False)
            bar = LazyProgress(not quiet, "advice")
            try:
                lines = advice(w, ps.cluster, opts, progress=bar)
            finally:
                bar.close()
            for line in lines or ["nothing found: try a larger cluster"]:
                err.print(f"  {line}", markup=False)
            code = EXIT_CHECK_FAILED
        if code:
            raise typer.Exit(code)
