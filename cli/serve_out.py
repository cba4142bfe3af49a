"""``--serve``: the serving branch of ``parplan suggest``, ``estimate`` and ``check`` (tables, JSON, CSV).

Exit codes: suggest 0 deployments found, 1 none fits or meets the SLOs (why and what would fit on stderr); check 0
pass, 1 fail; 2 bad input (a bad serve.yaml, deployment or option)."""
from __future__ import annotations

import math

import typer

from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, human_s, table_width, to_json
from parplan.errors import SpecError

GiB = float(2**30)
# the rows exported per deployment (CSV columns, JSON plan keys after the envelope's core keys)
ROW_KEYS = ("mode", "n_devices", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "output_tokens_per_s",
            "output_tokens_per_s_per_device", "requests_per_s", "goodput_tokens_per_s", "batch_per_replica",
            "kv_capacity_tokens", "kv_transfer_s", "memory_capacity_bytes", "slo_ok", "ttft_p99_s_low",
            "ttft_p99_s_high", "tpot_p50_s_low", "tpot_p50_s_high", "output_tokens_per_s_low",
            "output_tokens_per_s_high")


def _rate(x: float) -> str:
    """A per-GPU rate to three significant digits (a large cluster at a fixed load runs well below 1 tok/s/GPU)."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _ms(x: float) -> str:
    return "∞" if x != x or x == float("inf") else f"{x * 1e3:,.1f}"


def plan_record(e, rank: int, peak: float, active: float, price: float | None = None, equivalent: int = 1) -> dict:
    """One deployment as the JSON envelope's plan object: the core keys every verb has, then the serving keys."""
    d = e.to_dict()
    rec = {"rank": rank, "plan": e.deployment.to_string(), "fits": bool(e.fits),
           "step_time_s": e.tpot_p50_s, "tokens_per_s": e.output_tokens_per_s,
           "mfu": 2.0 * active * e.output_tokens_per_s / (peak * e.n_devices) if peak else 0.0,
           "memory_peak_bytes": int(round(sum(e.memory_bytes.values()))), "equivalent_plans": int(equivalent)}
    rec.update({k: d.get(k) for k in ROW_KEYS})
    if not e.fits:  # it serves nothing: no throughput (its latencies are the model's inf, null in JSON)
        rec.update({k: None for k in ROW_KEYS if k.startswith(("output_tokens", "requests_per", "goodput"))},
                   tokens_per_s=None)
    rec["usd_per_million_tokens"] = (e.n_devices * price / 3600.0 / e.output_tokens_per_s * 1e6
                                     if price and e.output_tokens_per_s > 0 else None)
    rec.update({"slo_failures": list(e.slo_failures), "reasons": list(e.reasons),
                "memory_bytes": {k: int(round(v)) for k, v in e.memory_bytes.items()},
                "decode_breakdown_s": dict(e.decode_breakdown_s), "prefill_breakdown_s": dict(e.prefill_breakdown_s),
                "pools": d["pools"]})
    return rec


def _peak_active(workload, cluster, serving) -> tuple[float, float]:
    from parplan.models.serving_terms import serving_context

    c = serving_context(workload, cluster, serving)
    m = workload.model
    return c.peak, float(getattr(m, "active_params", m.total_params))


def _csv(records: list[dict]) -> str:
    import pandas as pd

    from parplan.planner.export import to_csv

    flat = [{k: v for k, v in r.items() if not isinstance(v, (dict, list))} for r in records]
    return to_csv(pd.DataFrame(flat))


def _table(rows_e, title: str, width, price=None, equivalent=None, notes=()) -> str:
    from parplan.cli.tables import Col, render

    cols = [Col("#"), Col("deployment", "left"), Col("GPUs"), Col("TTFT p50 ms"), Col("TTFT p99 ms"),
            Col("TPOT p50 ms"), Col("TPOT p99 ms"), Col("tok/s/GPU"), Col("80 % interval", keep=3),
            Col("batch", keep=4), Col("mem GiB", keep=2), Col("KV Mtok", keep=5), Col("equiv", keep=6)]
    if price is not None:
        cols.append(Col("$/Mtok", keep=2))
    rows = []
    for i, e in enumerate(rows_e, 1):
        lo, hi = e.bounds("output_tokens_per_s_per_device")
        row = [str(i), e.deployment.to_string(), str(e.n_devices), _ms(e.ttft_p50_s), _ms(e.ttft_p99_s),
               _ms(e.tpot_p50_s), _ms(e.tpot_p99_s), f"{e.output_tokens_per_s_per_device:,.0f}",
               f"{lo:,.0f}–{hi:,.0f}", f"{e.batch_per_replica:,.0f}", f"{sum(e.memory_bytes.values()) / GiB:.1f}",
               f"{e.kv_capacity_tokens / 1e6:.2f}", str(equivalent[i - 1] if equivalent else 1)]
        if price is not None:
            row.append(f"{e.n_devices * price / 3600 / e.output_tokens_per_s * 1e6:.3f}"
                       if e.output_tokens_per_s > 0 else "—")
        rows.append(row)
    return render(cols, rows, title=title, width=width, notes=list(notes))


def _where(workload, cluster) -> str:
    return f"{workload.name} on {cluster.name} ({cluster.n_devices:,} devices)"


def serve_suggest(model, hw, serve, *, top: int, fmt: Format, output, price_per_hour=None, quiet=False) -> None:
    from parplan.cli.progress import _Err
    from parplan.planner.export import envelope
    from parplan.serving import suggest_serving

    ps = suggest_serving(model, hw, serve, top=top, price_per_hour=price_per_hour)
    w, c, s = ps.workload, ps.cluster, ps.serving
    peak, active = _peak_active(w, c, s)
    recs = [plan_record(e, i, peak, active, price_per_hour, n) for i, (e, n) in
            enumerate(zip(ps.ranked, ps.equivalent), 1)]
    if fmt == Format.json:
        doc = envelope("suggest", workload=w.name, cluster=c.name, n_devices=c.n_devices, plans=recs,
                       search={**ps.stats, "objective": "output_tokens_per_s_per_device"},
                       serving=s.to_dict(), pareto=[plan_record(e, i, peak, active, price_per_hour)
                                                    for i, e in enumerate(ps.pareto, 1)],
                       advice=list(ps.advice))
        emit(to_json(doc), output, f"{len(recs)} deployments as JSON")
    elif fmt == Format.csv:
        emit(_csv(recs), output, f"{len(recs)} deployments as CSV")
    elif ps.ranked:
        slo = ", ".join(f"{k} ≤ {v:g}" if k != "min_tokens_per_s" else f"{k} ≥ {v:g}" for k, v in s.slos().items())
        title = (f"{_where(w, c)} serving ISL {s.isl_mean:g} / OSL {s.osl_mean:g} ({s.load} load"
                 f"{f', {s.concurrency} users' if s.concurrency else ''}"
                 f"{f', {s.arrival_rate_per_s:g} req/s' if s.arrival_rate_per_s else ''}; {slo or 'no SLO'}): top "
                 f"{len(ps.ranked)} of {ps.stats['distinct_passing']:,} distinct deployments meeting the SLOs")
        points = [f"{_rate(e.output_tokens_per_s_per_device)} tok/s/GPU @ TPOT {_ms(e.tpot_p50_s)} ms"
                  for e in ps.pareto[:6]]
        pareto = " · ".join(dict.fromkeys(points))  # points that print alike are said once
        notes = [f"{s.engine}; interval: 80 % band of the tool's latency misses (catalogs/calibration/serving.yaml)",
                 f"Pareto of every deployment that fits (throughput vs TPOT, any TTFT): {pareto}"]
        emit(_table(ps.ranked, title, table_width(output), price_per_hour, ps.equivalent, notes), output,
             f"{len(ps.ranked)} deployments as a table")
    err = _Err()
    if not quiet:
        st = ps.stats
        err.print(f"searched {st['candidates']:,} deployments ({', '.join(st['modes'])}) in {st['wall_s']:.2f} s; "
                  f"{st['fitting']:,} fit, {st['passing']:,} meet the SLOs", markup=False)
    if not ps.ranked:
        err.print("error: no deployment fits and meets every SLO; what would fit:", markup=False)
        for line in ps.advice:
            err.print(f"  {line}", markup=False)
        if ps.closest is not None:
            e = ps.closest
            err.print(f"  closest: {e.deployment.to_string()} (TTFT p99 {_ms(e.ttft_p99_s)} ms, TPOT "
                      f"{_ms(e.tpot_p50_s)} ms, fails {', '.join(e.slo_failures) or 'capacity'})", markup=False)
        raise typer.Exit(EXIT_CHECK_FAILED)


def serve_estimate(model, hw, serve, deployment, *, fmt: Format, output) -> None:
    from parplan.cli.tables import Col, console, render
    from parplan.planner.export import envelope
    from parplan.serving import _inputs, estimate_serving

    if deployment is None:
        raise SpecError("--serve needs --deployment", key="--deployment", hint='e.g. --deployment "tp=8,batch=64"')
    w, c, s = _inputs(model, hw, serve)
    e = estimate_serving(w, c, s, deployment)
    peak, active = _peak_active(w, c, s)
    rec = plan_record(e, 1, peak, active)
    if fmt == Format.json:
        emit(to_json(envelope("estimate", workload=w.name, cluster=c.name, n_devices=c.n_devices, plans=[rec],
                              serving=s.to_dict())), output, "1 deployment as JSON")
        return
    if fmt == Format.csv:
        emit(_csv([rec]), output, "1 deployment as CSV")
        return
    con = console(table_width(output))
    lo, hi = e.interval
    ttft = f"{human_s(e.ttft_p50_s)} / {human_s(e.ttft_p99_s)} (80 %: ×{lo:g}–×{hi:g})"
    tpot = f"{human_s(e.tpot_p50_s)} / {human_s(e.tpot_p99_s)}"
    tput = (f"{e.output_tokens_per_s:,.0f} output tokens/s ({e.output_tokens_per_s_per_device:,.0f} per device), "
            f"{e.requests_per_s:,.2f} requests/s; goodput {e.goodput_tokens_per_s:,.0f}")
    if not e.fits:  # it cannot hold its weights and cache: no latency or throughput to show
        ttft = tpot = tput = "n/a: the deployment does not fit (below)"
    elif not math.isfinite(e.ttft_p50_s):  # the queue grows without bound: the offered rate is not served
        ttft = "unbounded: the offered load exceeds what the deployment serves (its queue grows)"
        tput = "the offered load is not sustained: " + tput.replace("output tokens/s", "output tokens/s offered", 1)
    head = [["deployment", e.deployment.to_string()], ["mode", e.deployment.mode],
            ["TTFT p50 / p99", ttft], ["TPOT p50 / p99", tpot], ["throughput", tput],
            ["batch", f"{e.batch_per_replica:,.1f} sequences per replica; KV cache {e.kv_capacity_tokens:,} tokens"],
            ["fits", "yes" if e.fits else "NO — " + "; ".join(e.reasons)],
            ["SLOs", "met" if e.slo_ok else "FAIL: " + ", ".join(e.slo_failures or ("capacity",))]]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=_where(w, c), show_header=False,
                  con=con)
    for name, parts in (("decode iteration (steady batch)", e.decode_breakdown_s),
                        ("prefill of one prompt", e.prefill_breakdown_s)):
        tot = sum(parts.values()) or 1.0
        rows = [[k.removesuffix("_s"), f"{v * 1e3:,.3f}", f"{100 * v / tot:.1f} %"] for k, v in parts.items() if v]
        rows.append(["total", f"{tot * 1e3:,.3f}", "100.0 %"])
        text += render([Col("part", "left"), Col("ms"), Col("share")], rows, title=name, con=con)
    mem = e.memory_bytes
    rows = [[k.removesuffix("_bytes"), f"{v / GiB:.2f}"] for k, v in mem.items()]
    rows.append(["total", f"{sum(mem.values()) / GiB:.2f} of {e.memory_capacity_bytes / GiB:.0f}"])
    text += render([Col("part", "left"), Col("GiB")], rows, title="memory per device", con=con)
    emit(text, output, "1 deployment as a table")


def serve_check(model, hw, serve, deployment, *, fmt: Format, output) -> None:
    from parplan.planner.export import envelope
    from parplan.serving import _inputs, check_serving

    w, c, s = _inputs(model, hw, serve)
    r = check_serving(w, c, s, deployment)
    where = _where(w, c)
    if fmt == Format.json:
        peak, active = _peak_active(w, c, s)
        reqs = [{"name": k, "required": req, "actual": act, "ok": False} for k, req, act in r.failures]
        emit(to_json(envelope("check", workload=w.name, cluster=c.name, n_devices=c.n_devices,
                              plans=[plan_record(r.estimate, 1, peak, active)] if r.estimate else [], ok=r.ok,
                              requirements=reqs, plans_searched=r.searched, plans_passing=r.passing,
                              serving=s.to_dict())), output, "1 check as JSON")
    else:
        dep = r.estimate.deployment.to_string() if r.estimate else "no deployment fits"
        head = (f"PASS  {where}: {dep}" if r.ok else f"FAIL  {where}: {dep}"
                + ("" if deployment is not None else f" (closest of {r.searched:,} searched)"))
        e = r.estimate
        info = [f"  TTFT p99 {_ms(e.ttft_p99_s)} ms, TPOT {_ms(e.tpot_p50_s)} ms, "
                f"{e.output_tokens_per_s:,.0f} tokens/s"] if e and e.fits else []
        emit("\n".join([head, *info, *("  " + x for x in r.lines())]), output, "1 check")
    if not r.ok:
        raise typer.Exit(EXIT_CHECK_FAILED)
