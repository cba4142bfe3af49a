"""``parplan simulate``: play one plan's step out in the reference executor (``parplan validate``, the analytical
model against it, is ``cli/validate_cmd.py``; the two share the loading and option helpers here).

Exit codes: 0 simulated; 2 bad input — a bad option value, file or plan, or a step above --max-events (refused
before it is built).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape

from parplan.cli.common import (check_framework, check_precision, DebugOpt, emit, Format, FormatOpt, FrameworkOpt,
                                ImbalanceOpt, gib, GlobalBatchOpt, handle_errors, human_s, HwOpt, ModelArg, OutputOpt,
                                PrecisionOpt, SeqLenOpt, table_width, to_json)
from parplan.errors import SpecError, did_you_mean
from parplan.executor.budget import MAX_EVENTS_HELP, TRACE_SHARE

SERVE_SIM_OPT = typer.Option(None, "--serve", help="serve.yaml: simulate a serving --deployment request by request "
                                                   "(executor/serving.py)")
REQUESTS_OPT = typer.Option(1_000, "--requests", help="--serve: requests simulated (the first 10 % are warm-up)")
SEED_OPT = typer.Option(0, "--seed", help="--serve: seed of the arrivals and lengths")
MODES = ["auto", "replica", "full"]
P2P_MODES = ["blocking", "async"]




def check_max_events(max_events: int) -> None:
    """``--max-events`` in range (``executor.budget``, imported here: the executor loads numpy)."""
    from parplan.executor.budget import check_max_events as check

    check(max_events)


def _door_simulate(schedule, mode, p2p, max_events) -> None:
    """Option values of ``simulate``, checked before anything is loaded."""
    from parplan.executor.schedules import SCHEDULES

    if schedule is not None and schedule not in SCHEDULES:
        raise SpecError(f"unknown schedule {schedule!r}", key="--schedule", allowed=list(SCHEDULES),
                        hint=did_you_mean(schedule, SCHEDULES))
    if mode not in MODES:
        raise SpecError(f"unknown mode {mode!r}", key="--mode", allowed=MODES, hint=did_you_mean(mode, MODES))
    if p2p not in P2P_MODES:
        raise SpecError(f"unknown p2p mode {p2p!r}", key="--p2p", allowed=P2P_MODES, hint=did_you_mean(p2p, P2P_MODES))
    if max_events is not None:
        check_max_events(max_events)


def _load(model: str, hw: str, seq_len, global_batch, precision, framework=None, expert_imbalance=None):
    from parplan.hardware.catalog import load_cluster
    from parplan.workloads.loader import load_workload

    check_precision(precision)
    check_framework(framework)
    return (load_workload(model, seq_len=seq_len, global_batch=global_batch, precision=precision,
                          framework=framework, expert_imbalance=expert_imbalance), load_cluster(hw))


def _split_items(items: Optional[List[str]]) -> list[str]:
    out: list[str] = []
    for it in items or ():
        out.extend(x for x in (s.strip() for s in it.split(",")) if x)
    return out


def short_plan(plan) -> str:
    """The plan string without its default-valued keys (ep=1, cp=1, vpp=1, sp=false)."""
    return ",".join(kv for kv in plan.to_string().split(",") if kv not in ("ep=1", "cp=1", "vpp=1", "sp=false"))


def render_simulation(s, width: int | None = None) -> str:
    """The simulated step as tables that fit the terminal (``width``: a file's): a summary, per device (seconds,
    one unit per column), the links used."""
    from parplan.cli.tables import Col, console, render

    con = console(width)
    a = s.analytical.get("step_time_s")
    diff = f" (analytical {human_s(a)}, {100 * (a - s.step_time_s) / s.step_time_s:+.1f} %)" if a else ""
    head = [["plan", short_plan(s.plan)],
            ["schedule", f"{s.schedule} ({s.micro_batches} micro-batches, pp={s.pp}, vpp={s.vpp}); mode "
                         f"{s.mode} ({s.replicas} replica{'s' if s.replicas > 1 else ''} simulated)"],
            ["step time", human_s(s.step_time_s) + diff],
            ["critical device", s.devices[s.critical_device].name],
            ["exposed comm", ", ".join(f"{k} {human_s(v)}" for k, v in s.exposed_comm_s.items())],
            ["bubble", human_s(s.bubble_s) + (f" (analytical {human_s(s.analytical['pipeline_bubble_s'])})"
                                              if s.analytical else "")],
            ["peak activations", f"{gib(max(s.peak_activation_bytes))} GiB (stage "
                                 f"{max(range(s.pp), key=lambda i: s.peak_activation_bytes[i])})"]]
    if s.has_a2a:
        head.append(["all-to-all", _a2a_summary(s)])
    head.append(["events", f"{s.totals['ops']} ops, {s.totals['engine_events']} engine events"])
    if any(d.slowdown != 1.0 for d in s.devices):
        head.append(["note", "stragglers: the analytical estimate assumes identical devices"])
    head += [["note", n] for n in s.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], [[k, escape(v)] for k, v in head],
                  title=f"simulated step: {s.workload} on {s.cluster}", show_header=False, con=con)
    a2a = s.has_a2a
    cols = [Col("device", "left"), Col("compute"), Col("recompute", keep=3), Col("tp comm", keep=2), Col("p2p", keep=2),
            *((Col("a2a exposed"),) if a2a else ()), Col("bubble"), Col("dp exposed", keep=2),
            Col("optimizer", keep=4), Col("busy", keep=1), Col("idle"), Col("peak act GiB"), Col("slowdown", keep=5)]
    rows = []
    for d in s.devices:
        vals = (d.compute_s, d.recompute_s, d.tp_comm_s, d.pp_p2p_s, *((d.ep_a2a_s,) if a2a else ()), d.bubble_s,
                d.dp_comm_exposed_s, d.optimizer_s, d.busy_s, d.idle_s)
        rows.append([d.name, *(f"{x:.4f}" for x in vals), gib(d.peak_activation_bytes), f"{d.slowdown:g}"])
    text += render(cols, rows, title="per device (seconds of the step)", con=con)
    used = [lk for lk in s.links if lk.transfers]
    if used:
        lcols = [Col("link", "left", wrap=True), Col("transfers"), Col("busy s"), Col("work s", keep=1),
                 *((Col("all-to-all s"),) if a2a else ()), Col("max concurrent", keep=2)]
        lrows = [[escape(lk.name), str(lk.transfers), f"{lk.busy_s:.4f}", f"{lk.work_s:.4f}",
                  *((f"{lk.a2a_work_s:.4f}",) if a2a else ()), str(lk.max_concurrent)] for lk in used]
        text += render(lcols, lrows, title="links", con=con)
    return text


def _a2a_summary(s) -> str:
    """The expert-parallel all-to-all of an MoE plan: what the critical device waits for, the link work, γ."""
    t = s.totals
    ep = s.exposed_comm_s["ep"]
    share = ep / s.step_time_s if s.step_time_s > 0 else 0.0
    replay = t.get("ep_a2a_recompute_s", 0.0)
    text = f"exposed {human_s(ep)} on the critical device ({100 * share:.1f} % of the step"
    text += f"; {human_s(replay)} of it replayed by full recompute)" if replay > 0 else ")"
    a = s.analytical.get("ep_comm_exposed_s")
    if a is not None:
        text += f", analytical {human_s(a)}"
    text += (f"; {t['a2a_ops']} transfers, link work exposed {t['a2a_exposed_work_s']:.4f} s + hidden "
             f"{t['a2a_hidden_work_s']:.4f} s; expert imbalance γ = {t['expert_imbalance']:.3f}")
    return text


def _device_rows(s) -> list[dict]:
    rows = []
    for d in s.devices:
        row = {"device": d.name, "replica": d.replica, "stage": d.stage, "step_time_s": s.step_time_s,
               "compute_s": d.compute_s, "recompute_s": d.recompute_s, "tp_comm_s": d.tp_comm_s,
               "pp_p2p_s": d.pp_p2p_s, "bubble_s": d.bubble_s, "dp_comm_exposed_s": d.dp_comm_exposed_s,
               "optimizer_s": d.optimizer_s, "busy_s": d.busy_s, "idle_s": d.idle_s,
               "peak_activation_bytes": d.peak_activation_bytes, "slowdown": d.slowdown}
        if s.has_a2a:
            row["ep_a2a_s"] = d.ep_a2a_s
        rows.append(row)
    return rows


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    @handle_errors
    def simulate_cmd(
        model: ModelArg,
        hw: HwOpt,
        plan: Optional[str] = typer.Option(None, "--plan",
                                           help='e.g. "tp=8,pp=4,mbs=1,zero=1,recompute=selective,sp=true"'),
        plan_file: Optional[Path] = typer.Option(None, "--plan-file",
                                                 help="multi-group clusters: a heterogeneous plan YAML (pipelines of "
                                                      "stages per group; see `parplan estimate --plan-file`)"),
        schedule: Optional[str] = typer.Option(None, "--schedule",
                                               help="1f1b | gpipe | interleaved | zb-h1 (default: interleaved "
                                                    "when vpp>1 else 1f1b)"),
        trace: Optional[Path] = typer.Option(None, "--trace", help="write a Chrome-trace JSON (Perfetto) here"),
        slowdown: Optional[List[str]] = typer.Option(None, "--slowdown",
                                                     help="DEVICE=FACTOR, DEVICE a global rank or stage:N; "
                                                          "repeat or separate with commas"),
        mode: str = typer.Option("auto", "--mode", help="auto | replica | full (every device, ≤ 64 devices)"),
        p2p: str = typer.Option("blocking", "--p2p", help="blocking (Megatron default) | async p2p sends"),
        seq_len: SeqLenOpt = None,
        global_batch: GlobalBatchOpt = None,
        precision: PrecisionOpt = None,
        framework: FrameworkOpt = None,
        expert_imbalance: ImbalanceOpt = None,
        fmt: FormatOpt = Format.table,
        output: OutputOpt = None,
        max_events: Optional[int] = typer.Option(None, "--max-events", help=MAX_EVENTS_HELP, show_default=False),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
        serve: Optional[Path] = SERVE_SIM_OPT,
        deployment: Optional[str] = typer.Option(None, "--deployment", help='--serve: e.g. "tp=8,batch=64,chunk=2048"'),
        requests: int = REQUESTS_OPT,
        seed: int = SEED_OPT,
        debug: DebugOpt = False,
    ) -> None:
        """Simulate one training step of a plan, op by op (reference executor); --serve: a serving deployment,
        request by request."""
        from parplan.planner.budget import check_number
        from parplan.workloads.registry import verbs_for

        check_number(seed, "--seed", lo=0, integer=True, hint="a whole number ≥ 0")  # numpy refuses a negative one

        verbs = verbs_for(model)  # a family with its own verbs (task graphs on CPU sockets)
        if verbs is not None:
            from parplan.cli.family_verbs import given

            return verbs.simulate(model, hw, plan=plan, seed=seed, fmt=fmt, output=output, **given(
                plan_file=plan_file, schedule=schedule, trace=trace, slowdown=slowdown, seq_len=seq_len,
                global_batch=global_batch, precision=precision, framework=framework,
                expert_imbalance=expert_imbalance, max_events=max_events, serve=serve, deployment=deployment,
                mode=None if mode == "auto" else mode, p2p=None if p2p == "blocking" else p2p))  # (were dropped)
        from parplan.cli.family_verbs import serve_door

        if serve is not None and (plan is not None or plan_file is not None):
            raise SpecError("--serve simulates a --deployment, not a training --plan", key="--plan")
        serve_door("simulate", serve, deployment, schedule=schedule, trace=trace, slowdown=slowdown,
                   mode=None if mode == "auto" else mode,
                   seq_len=seq_len, global_batch=global_batch, precision=precision, framework=framework,
                   expert_imbalance=expert_imbalance)
        if serve is not None:
            from parplan.cli.serve_sim_out import serve_simulate

            if max_events is not None:
                check_max_events(max_events)
            return serve_simulate(model, hw, serve, deployment, requests=requests, seed=seed, max_events=max_events,
                                  fmt=fmt, output=output)
        from parplan.cli.estimate_cmd import frame_csv
        from parplan.cli.progress import LazyProgress
        from parplan.executor.budget import DEFAULT_MAX_EVENTS
        from parplan.executor.simulate import simulate_plan
        from parplan.executor.trace import write_chrome_trace
        from parplan.models.plan import parse_plan

        _door_simulate(schedule, mode, p2p, max_events)
        limit = DEFAULT_MAX_EVENTS if max_events is None else max_events
        if trace is not None:  # a trace holds every event once more while it is written
            limit = max(1, int(limit * TRACE_SHARE))
        if (plan is None) == (plan_file is None):
            if plan is None:  # a broken workload file says so first (an empty one was blamed on --plan)
                _load(model, hw, seq_len, global_batch, precision, framework, expert_imbalance)
            raise SpecError("give exactly one of --plan or --plan-file (multi-group clusters)", key="--plan")
        w, c = _load(model, hw, seq_len, global_batch, precision, framework, expert_imbalance)
        if not c.is_homogeneous or plan_file is not None:
            from parplan.cli.hetero_out import simulate_hetero_cmd

            simulate_hetero_cmd(w, c, plan, plan_file, fmt, output, trace=trace, schedule=schedule,
                                slowdown=_split_items(slowdown), mode=mode, p2p=p2p)
            return
        p = parse_plan(plan, c.n_devices)
        bar = LazyProgress(not quiet, "simulating")
        try:
            s = simulate_plan(w, c, p, schedule=schedule, slowdown=_split_items(slowdown), mode=mode, p2p=p2p,
                              max_events=limit, progress=bar)
            with bar.phase("writing"):
                if trace is not None:
                    write_chrome_trace(s, trace)
                if fmt == Format.json:
                    from parplan.cli.json_out import simulate_json
                    from parplan.models.estimate import estimate_plan

                    text = to_json(simulate_json(s, estimate_plan(w, c, p), c))
                elif fmt == Format.csv:
                    text = frame_csv(_device_rows(s))
                else:
                    text = render_simulation(s, width=table_width(output))
        finally:
            bar.close()
        emit(text, output, f"the simulated step of 1 plan ({len(s.devices)} devices) "
                           + {"table": "as a table", "json": "as JSON", "csv": "as CSV"}[fmt.value])
