"""``--serve``: the serving branch of ``parplan simulate`` (one deployment, request by request) and ``parplan
validate`` (analytical estimate vs simulation: TTFT p50/p99, TPOT, throughput).

Exit codes: simulate 0; validate 0 every deployment within the tolerance, 1 some beyond it; 2 bad input (a bad
serve.yaml, deployment or option, or a simulation above --max-events)."""
from __future__ import annotations

import typer

from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, human_s, table_width, to_json, what_written
from parplan.errors import SpecError

VALIDATE_MAX_TOP = 50  # validate --serve --top K: deployments simulated


def _pct(p) -> str:
    return f"{human_s(p.p50)} / {human_s(p.p90)} / {human_s(p.p99)}"


def _records(rows: list[dict]) -> str:
    from parplan.cli.estimate_cmd import frame_csv

    return frame_csv([{k: v for k, v in r.items() if not isinstance(v, (dict, list))} for r in rows])


def serve_simulate(model, hw, serve, deployment, *, requests: int, seed: int, max_events, fmt: Format,
                   output) -> None:
    from parplan.cli.serve_out import _peak_active, plan_record
    from parplan.cli.tables import Col, console, render
    from parplan.executor.serving import simulate_serving
    from parplan.models.serving import as_deployment, estimate_serving
    from parplan.planner.export import envelope
    from parplan.serving import _inputs

    if deployment is None:
        raise SpecError("--serve needs --deployment", key="--deployment", hint='e.g. --deployment "tp=8,batch=64"')
    w, c, s = _inputs(model, hw, serve)
    dep = as_deployment(deployment, c.n_devices)
    sim = simulate_serving(w, c, s, dep, n_requests=requests, seed=seed, max_events=max_events)
    if fmt == Format.json:
        e = estimate_serving(w, c, s, dep)
        peak, active = _peak_active(w, c, s)
        rec = plan_record(e, 1, peak, active)
        rec["memory"] = rec.pop("memory_bytes")  # a mapping of byte counts (check_document: *_bytes are integers)
        rec["simulated_step_time_s"] = sim.tpot_s.p50  # the simulated TPOT p50 (one decode step per token)
        rec["simulated"] = sim.to_dict()
        details = sim.to_dict()
        emit(to_json(envelope("simulate", workload=w.name, cluster=c.name, n_devices=c.n_devices, plans=[rec],
                              schedule="continuous-batching", simulated_step_time_s=sim.tpot_s.p50, devices=[],
                              totals={k: details[k] for k in ("events", "iterations", "output_tokens",
                                                               "preemptions")},
                              serving=s.to_dict())), output, "1 simulated deployment as JSON")
        return
    if fmt == Format.csv:
        d = sim.to_dict()
        row = {"deployment": dep.to_string(), **{k: v for k, v in d.items() if not isinstance(v, (dict, list))}}
        for k in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
            row.update({f"{k}_{q}": d[k][q] for q in ("mean", "p50", "p90", "p99")})
        emit(_records([row]), output, "1 simulated deployment as CSV")
        return
    con = console(table_width(output))
    head = [["deployment", dep.to_string()], ["mode", sim.mode], ["requests", f"{sim.n_requests:,} ({sim.mix}; seed "
                                                                              f"{sim.seed}); warm-up {sim.warmup:,} "
                                                                              "left out"],
            ["TTFT p50 / p90 / p99", _pct(sim.ttft_s)], ["TPOT p50 / p90 / p99", _pct(sim.tpot_s)],
            ["ITL p50 / p90 / p99", _pct(sim.itl_s)], ["E2E p50 / p90 / p99", _pct(sim.e2e_s)],
            ["throughput", f"{sim.output_tokens_per_s:,.0f} output tokens/s ({sim.output_tokens_per_s_per_device:,.0f}"
                           f" per device), {sim.requests_per_s:,.2f} requests/s"
                           + ("; SATURATED: arrivals outpace the deployment" if sim.saturated else "")],
            ["KV cache", f"{100 * sim.kv_util_mean:.1f} % used on average, peak {100 * sim.kv_util_peak:.1f} %; "
                         f"{sim.preemptions:,} preemptions ({sim.preempted_requests:,} requests)"],
            ["events", f"{sim.events:,} ({sim.iterations:,} iterations)"]]
    head += [["note", n] for n in sim.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, show_header=False, con=con,
                  title=f"simulated serving: {w.name} on {c.name}")
    rows = [[p.role, str(p.replicas), f"{p.iterations:,}", f"{100 * p.busy_share:.1f} %", f"{p.mean_decode_batch:.1f}",
             f"{p.kv_capacity_tokens:,}", f"{100 * p.kv_peak_share:.1f} %", f"{p.preemptions:,}"] for p in sim.pools]
    text += render([Col("pool", "left"), Col("replicas"), Col("iterations"), Col("busy"), Col("decode batch"),
                    Col("KV tokens / replica", keep=2), Col("KV peak", keep=1), Col("preemptions", keep=1)], rows,
                   title="per pool", con=con)
    emit(text, output, "1 simulated deployment as a table")


def serve_validate(model, hw, serve, deployments, top, tolerance: float, *, requests: int, seed: int, max_events,
                   fmt: Format, output) -> None:
    from parplan.cli.tables import Col, render
    from parplan.executor.serving_agree import KEYS, compare_serving
    from parplan.planner.export import envelope
    from parplan.serving import _inputs

    if bool(deployments) == (top is not None):
        raise SpecError("--serve: give either --deployment (one or more) or --top K", key="--deployment")
    if top is not None and not 1 <= top <= VALIDATE_MAX_TOP:
        raise SpecError(f"--top {top} is outside 1–{VALIDATE_MAX_TOP} (deployments simulated)", key="--top")
    w, c, s = _inputs(model, hw, serve)
    if top is not None:
        from parplan.planner.serving_search import suggest_serving_plans

        deps = [e.deployment for e in suggest_serving_plans(w, c, s, top=top).ranked]
        if not deps:
            raise SpecError("the planner found no deployment meeting the SLOs to validate", key="--top")
    else:
        deps = list(deployments)
    rows = [compare_serving(w, c, s, d, n_requests=requests, seed=seed, max_events=max_events) for d in deps]
    ok = all(a.ok(tolerance) for a in rows)
    what = what_written(fmt, len(rows), "deployment compared")
    if fmt == Format.json:
        plans = []
        for i, a in enumerate(rows, 1):
            rec = {"rank": i, "plan": a.deployment, "fits": True, "step_time_s": a.analytical["tpot_s"],
                   "tokens_per_s": a.analytical["output_tokens_per_s"], "mfu": 0.0, "memory_peak_bytes": 0,
                   "equivalent_plans": 1, **a.row(), "simulated_step_s": a.simulated["tpot_s"],
                   "step_diff": a.diff("tpot_s"), "ok": bool(a.ok(tolerance))}
            plans.append(rec)
        emit(to_json(envelope("validate", workload=w.name, cluster=c.name, n_devices=c.n_devices, plans=plans,
                              tolerance=tolerance, ok=ok, serving=s.to_dict())), output, what)
    elif fmt == Format.csv:
        emit(_records([dict(a.row(), ok=a.ok(tolerance)) for a in rows]), output, what)
    else:
        cols = [Col("deployment", "left", wrap=True)]
        names = {"ttft_p50_s": "TTFT p50", "ttft_p99_s": "TTFT p99", "tpot_s": "TPOT", "output_tokens_per_s": "tok/s"}
        for k in KEYS:
            cols.append(Col(f"{names[k]} an. / sim.", keep=0 if k != "ttft_p50_s" else 2))
            cols.append(Col("diff", keep=1))
        cols.append(Col("status", "left"))
        out, styles = [], []
        for a in rows:
            r = [a.deployment]
            for k in KEYS:
                fmt_v = (lambda x: f"{x:,.0f}") if k == "output_tokens_per_s" else human_s
                r += ([f"{fmt_v(a.analytical[k])} / {fmt_v(a.simulated[k])}", f"{100 * a.diff(k):+.1f} %"]
                      if k in a.compared else ["no decode (osl 1)", "—"])
            good = a.ok(tolerance)
            r.append("ok" if good else "DIFFERS")
            out.append(r)
            styles.append(None if good else "bold")
        bad = sum(not a.ok(tolerance) for a in rows)
        emit(render(cols, out, title=f"analytical vs simulated serving: {w.name} on {c.name}",
                    width=table_width(output), row_styles=styles,
                    notes=[f"{len(rows)} deployment(s); {bad} differ by more than {100 * tolerance:g} %; "
                           f"{requests:,} requests each (seed {seed})"]), output, what)
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)
