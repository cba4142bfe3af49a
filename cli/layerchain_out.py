"""Verb handlers of the layer-chain family (``FamilyInfo.verbs``): ``estimate``, ``suggest``, ``check``, ``simulate``
and ``validate`` on a layer-chain workload and an edge cluster, printed like the other verbs (table | json | csv on
stdout or ``-o``).  Exit codes as everywhere: 0 done; 1 a ``check`` requirement is not met (or ``validate``
disagrees beyond the tolerance); 2 bad input (``SpecError``).
"""
from __future__ import annotations

from parplan.cli.common import Format, human_s, table_width
from parplan.cli.family_verbs import (check_bounds, check_tolerance, csv_text, finish_check, finish_result,
                                      finish_simulate, finish_validate, parts_table, unread)

FAMILY = "layer-chain"
MAX_VALIDATE_TOP = 20  # validate --top: the best plans per objective simulated (a DAG's placement plays ~0.1 s each)
LEGEND = ("latency = one request through the plan; bottleneck = the busiest resource per microbatch (a device's "
          "compute, a link's or a shared channel's airtime); total = the whole stream or training run")


def _flat(e) -> dict:
    d = e.to_dict()
    out = {k: v for k, v in d.items() if k not in ("breakdown", "stages", "reasons", "notes")}
    return out | {f"part_{k}": v for k, v in d["breakdown"].items()}


def _metric_rows(e) -> list:
    m = e.metrics
    rows = []
    for k, label in (("latency_s", "latency"), ("bottleneck_s", "bottleneck"), ("makespan_s", "stream time"),
                     ("training_s", "training time"), ("cycle_s", "cycle per batch"), ("t_seq_s", "sequential batch")):
        if k in m:
            rows.append([label, human_s(m[k])])
    if "bottleneck" in m:
        rows.append(["busiest", m["bottleneck"]])
    if "throughput_per_s" in m:
        rows.append(["throughput", f"{m['throughput_per_s']:,.3g} samples/s"])
    if "samples_per_s" in m:
        rows.append(["throughput", f"{m['samples_per_s']:,.3g} samples/s"])
    if "energy_j" in m:
        rows.append(["edge energy", f"{m['energy_j']:.4g} J per microbatch"])
    if "server_idle_fraction" in m:
        rows.append(["server idle", f"{100 * m['server_idle_fraction']:.1f} %"])
    if "availability" in m:
        rows.append(["availability", f"{m['availability']:.6f} with election vs {m['availability_standalone']:.6f} "
                                     "standalone"])
    return rows


def _table_estimate(e, width) -> str:
    from parplan.cli.tables import Col, console, render

    con = console(width)
    head = [["technique", e.technique], ["plan", e.plan], ["fits", "yes" if e.fits else "no: " + "; ".join(e.reasons)]]
    head += _metric_rows(e) + [["note", n] for n in e.notes]
    text = render([Col("k", "left"), Col("v", "left", wrap=True)], head, title=f"{e.workload} on {e.cluster}",
                  show_header=False, con=con)
    text += parts_table(e.parts, e.total_s, "time", con)
    if e.stages and "compute_s" in e.stages[0]:
        cols = [Col("device", "left"), Col("type", "left", keep=2), Col("what", "left"), Col("compute"),
                Col("transfer", keep=1), Col("memory MiB", keep=3)]
        srows = [[s["device"], s["type"], s.get("layers", s.get("module", "")), human_s(s["compute_s"]),
                  human_s(s.get("transfer_s", 0.0)),
                  f"{s['memory_bytes'] / 2**20:,.0f}" if "memory_bytes" in s else "—"] for s in e.stages]
        text += render(cols, srows, title="stages", con=con)
    return text


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layerchain import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    finish_result(fmt, output, "1 plan", "layerchain-estimate", e, lambda: csv_text([_flat(e)]),
                  lambda: _table_estimate(e, table_width(output)))


def render_plans(ps, width=None) -> str:
    from parplan.cli.tables import Col, render

    cols = [Col("#"), Col("technique", "left"), Col("plan", "left", wrap=True), Col("latency"), Col("bottleneck"),
            Col("samples/s"), Col("total"), Col("energy J", keep=2), Col("fits", keep=1)]
    rows = []
    for i, e in enumerate(ps.rows, 1):
        m = e.metrics
        rows.append([str(i), e.technique, e.plan, human_s(m["latency_s"]) if "latency_s" in m else "—",
                     human_s(m["bottleneck_s"]) if "bottleneck_s" in m else human_s(m.get("cycle_s", 0.0)),
                     f"{m.get('throughput_per_s', m.get('samples_per_s', 0.0)):,.3g}", human_s(e.total_s),
                     f"{m['energy_j']:.3g}" if "energy_j" in m else "—", "yes" if e.fits else "no"])
    title = (f"{ps.workload} on {ps.cluster}: top {len(ps.rows)} of {ps.n_configs:,} configurations by "
             f"{ps.objective}")
    text = render(cols, rows, title=title, width=width, notes=lambda dropped: [LEGEND] + list(ps.notes))
    if ps.rows:
        text += "\nbest plan:\n" + _table_estimate(ps.rows[0], width)
    return text


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    unread(dict(extra, fix=fix), FAMILY)
    from parplan.layerchain import suggest as api_suggest

    ps = api_suggest(model, hw, objective=objective, top=top)
    finish_result(fmt, output, f"{len(ps.rows)} plans", "layerchain-suggest", ps,
                  lambda: csv_text([_flat(e) for e in ps.rows]), lambda: render_plans(ps, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the plan (or the best plan) finishes within --max-step-time-s and reaches --min-tokens-per-s
    (here: samples per second)."""
    unread(extra, FAMILY)
    check_bounds(max_time_s, min_throughput)
    from parplan.layerchain import estimate as api_estimate

    e = api_estimate(model, hw, plan)
    thr = e.metrics.get("throughput_per_s", e.metrics.get("samples_per_s", 0.0))
    results = []
    if max_time_s is not None:
        results.append(("total time", e.total_s, max_time_s, e.total_s <= max_time_s, "≤"))
    if min_throughput is not None:
        results.append(("samples/s", thr, min_throughput, thr >= min_throughput, "≥"))
    results.append(("fits memory", float(e.fits), 1.0, e.fits, "≥"))
    finish_check(fmt, output, f"{e.workload} on {e.cluster}: {e.plan} ({human_s(e.total_s)})", e.plan, results)


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.layerchain import simulate as api_simulate

    r = api_simulate(model, hw, plan)
    text = (f"{r['plan']}\n  simulated {human_s(r['simulated_s'])} vs closed form {human_s(r['predicted_s'])} "
            f"({100 * r['error']:+.2f} %)")
    if "availability_simulated" in r:
        text += (f"\n  availability: election {r['availability_simulated']:.6f} (closed form "
                 f"{r['availability_predicted']:.6f}), standalone {r['availability_standalone_simulated']:.6f} "
                 f"({r['availability_standalone_predicted']:.6f})")
    finish_simulate(fmt, output, {"kind": "layerchain-simulate", **r}, text)


def validate(model, hw, *, plan=None, top=6, tolerance=0.05, fmt=Format.table, output=None, **extra) -> None:
    """The closed form vs the engine on the best plans (or the given ones)."""
    unread(extra, FAMILY)
    from parplan.planner.budget import check_number

    check_tolerance(tolerance)
    check_number(top, "--top", lo=1, hi=MAX_VALIDATE_TOP, integer=True,
                 what="best plans per objective, each played request by request on the engine")
    from parplan.executor.edge_pipeline import agreement, simulate_estimate
    from parplan.hardware.edge import load_edge_cluster
    from parplan.layerchain import estimate as api_estimate
    from parplan.workloads.layerchain import load_layerchain

    if plan:
        spec, cluster = load_layerchain(model), load_edge_cluster(hw)
        rows = [simulate_estimate(spec, cluster, api_estimate(spec, cluster, p)) for p in plan]
    else:
        rows = agreement(model, hw, top=top or 6)
    finish_validate("layerchain-validate", fmt, output, rows, tolerance,
                    lambda r: f"{r['technique']:<14} {r['plan']}: simulated {human_s(r['simulated_s'])}, closed form "
                              f"{human_s(r['predicted_s'])} ({100 * r['error']:+.2f} %)")
