"""``parplan plot pareto|breakdown|timeline|scaling … -o FILE.png|FILE.svg``: figures of a search, of the top
plans' breakdowns, of a simulated step and of a sweep (``parplan.plots``; matplotlib, the optional ``plot`` extra).

Exit codes: 0 written (``wrote FILE`` on stderr); 2 bad input — a bad option value, file or plan, matplotlib not
installed (the line names ``pip install "parplan[plot]"``), a search above --max-plans or a step above
--max-events, or nothing to plot (no plan fits, no ok row in the sweep).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from parplan.cli.common import (check_framework, check_precision, DebugOpt, FrameworkOpt,
                                GlobalBatchOpt, handle_errors, HwOpt, ImbalanceOpt, ModelArg, one_line,
                                PrecisionOpt, SeqLenOpt)
from parplan.errors import SpecError, did_you_mean
from parplan.planner.budget import HEADROOM_HELP, MAX_MBS, MAX_PLANS_HELP

PlotOut = Annotated[Path, typer.Option("-o", "--output", help="the figure to write: FILE.png or FILE.svg")]
FixOpt = Annotated[Optional[List[str]], typer.Option("--fix", help="pin a plan key, e.g. --fix tp=8 (repeatable)")]
HeadroomOpt = Annotated[Optional[float], typer.Option("--memory-headroom", help=HEADROOM_HELP, show_default=False)]
CrossTpOpt = Annotated[bool, typer.Option("--allow-cross-node-tp", help="let tensor parallelism span nodes")]
MaxMbsOpt = Annotated[int, typer.Option("--max-mbs", help=f"largest micro-batch size searched (1–{MAX_MBS:,})")]
MaxPlansOpt = Annotated[Optional[int], typer.Option("--max-plans", help=MAX_PLANS_HELP, show_default=False)]
OBJECTIVES = ["throughput", "memory", "cost"]

plot_app = typer.Typer(name="plot", help="Write a figure (PNG or SVG): pareto | breakdown | timeline | scaling.",
                       no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


def _begin(output: Path, precision: Optional[str] = None, framework: Optional[str] = None) -> None:
    """Checks before any work: the output suffix, matplotlib installed, precision and framework ids."""
    from parplan.plots.style import plot_format, require_matplotlib

    plot_format(output)
    require_matplotlib()
    check_precision(precision)
    check_framework(framework)


def _write(fig, output: Path) -> None:
    from parplan.plots.style import save

    save(fig, output)
    sys.stderr.write(f"wrote {one_line(output)}\n")  # one line, never wrapped (a rich console wraps long paths)


def _training(seq_len, global_batch, precision, framework, expert_imbalance) -> dict:
    return {"seq_len": seq_len, "global_batch": global_batch, "precision": precision, "framework": framework,
            "expert_imbalance": expert_imbalance}


@plot_app.command("pareto")
@handle_errors
def pareto_cmd(
    model: ModelArg,
    hw: HwOpt,
    output: PlotOut,
    labels: int = typer.Option(5, "--labels", help="plans of the Pareto front named on the plot (1–20)"),
    fix: FixOpt = None,
    memory_headroom: HeadroomOpt = None,
    allow_cross_node_tp: CrossTpOpt = False,
    max_mbs: MaxMbsOpt = 32,
    max_plans: MaxPlansOpt = None,
    seq_len: SeqLenOpt = None,
    global_batch: GlobalBatchOpt = None,
    precision: PrecisionOpt = None,
    framework: FrameworkOpt = None,
    expert_imbalance: ImbalanceOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Throughput against peak memory per device of every plan of a search; the Pareto front labelled."""
    from parplan.plots.pareto import pareto

    _begin(output, precision, framework)
    fig = pareto(model, hw, labels=labels, fix=fix, memory_headroom=memory_headroom,
                 allow_cross_node_tp=allow_cross_node_tp, max_mbs=max_mbs, max_plans=max_plans,
                 **_training(seq_len, global_batch, precision, framework, expert_imbalance))
    _write(fig, output)


@plot_app.command("breakdown")
@handle_errors
def breakdown_cmd(
    model: ModelArg,
    hw: HwOpt,
    output: PlotOut,
    top: int = typer.Option(5, "--top", help="plans shown, best first (1–30)"),
    objective: Optional[str] = typer.Option(None, "--objective", help="throughput (default) | memory | cost"),
    fix: FixOpt = None,
    memory_headroom: HeadroomOpt = None,
    allow_cross_node_tp: CrossTpOpt = False,
    max_mbs: MaxMbsOpt = 32,
    max_plans: MaxPlansOpt = None,
    seq_len: SeqLenOpt = None,
    global_batch: GlobalBatchOpt = None,
    precision: PrecisionOpt = None,
    framework: FrameworkOpt = None,
    expert_imbalance: ImbalanceOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Stacked time and memory breakdowns of the top K plans (two panels)."""
    from parplan.plots.breakdown import breakdown

    if objective is not None and objective not in OBJECTIVES:
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=OBJECTIVES,
                        hint=did_you_mean(objective, OBJECTIVES))
    _begin(output, precision, framework)
    fig = breakdown(model, hw, top=top, objective=objective, fix=fix, memory_headroom=memory_headroom,
                    allow_cross_node_tp=allow_cross_node_tp, max_mbs=max_mbs, max_plans=max_plans,
                    **_training(seq_len, global_batch, precision, framework, expert_imbalance))
    _write(fig, output)


@plot_app.command("timeline")
@handle_errors
def timeline_cmd(
    model: ModelArg,
    hw: HwOpt,
    output: PlotOut,
    plan: str = typer.Option(..., "--plan", help='e.g. "tp=8,pp=4,mbs=1,zero=1,recompute=selective,sp=true"'),
    schedule: Optional[str] = typer.Option(None, "--schedule",
                                           help="1f1b | gpipe | interleaved | zb-h1 (default: interleaved when "
                                                "vpp>1 else 1f1b)"),
    p2p: str = typer.Option("blocking", "--p2p", help="blocking (Megatron default) | async p2p sends"),
    slowdown: Optional[List[str]] = typer.Option(None, "--slowdown",
                                                 help="DEVICE=FACTOR, DEVICE a global rank or stage:N; repeat or "
                                                      "separate with commas"),
    max_events: Optional[int] = typer.Option(None, "--max-events", show_default=False,
                                             help="work budget: the most events the simulation may play"),
    seq_len: SeqLenOpt = None,
    global_batch: GlobalBatchOpt = None,
    precision: PrecisionOpt = None,
    framework: FrameworkOpt = None,
    expert_imbalance: ImbalanceOpt = None,
    debug: DebugOpt = False,
) -> None:
    """One simulated step of a plan (reference executor): one row per pipeline stage."""
    from parplan.cli.simulate_cmd import _door_simulate, _split_items
    from parplan.plots.timeline import timeline

    _door_simulate(schedule, "auto", p2p, max_events)
    _begin(output, precision, framework)
    fig = timeline(model, hw, plan, schedule=schedule, p2p=p2p, slowdown=_split_items(slowdown),
                   max_events=max_events, **_training(seq_len, global_batch, precision, framework, expert_imbalance))
    _write(fig, output)


@plot_app.command("scaling")
@handle_errors
def scaling_cmd(
    sweep_file: Path = typer.Argument(..., metavar="SWEEP_FILE",
                                      help="a `parplan sweep` table (CSV or parquet)"),
    output: PlotOut = ...,
    title: Optional[str] = typer.Option(None, "--title", help="the figure's title"),
    debug: DebugOpt = False,
) -> None:
    """Tokens/s of the best plan against cluster size, one line per workload, from a sweep table."""
    from parplan.plots.scaling import scaling

    _begin(output)
    _write(scaling(sweep_file, title=title), output)


def register(app: typer.Typer) -> None:
    """Register ``parplan plot`` (a group of four commands) on the app."""
    app.add_typer(plot_app, name="plot")
