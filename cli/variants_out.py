"""Verb handlers of the process-network family (``FamilyInfo.verbs``): ``estimate`` (one variant), ``suggest`` (the
feasible Pareto set, or a ranking by one objective), ``check`` (constraints), ``simulate`` and ``validate`` (the
engine's play of a variant), printed as tables, JSON or CSV.  ``--hw`` names a platform (catalogs/platforms or a
file); ``--min-tokens-per-s`` reads as items per second and ``--max-step-time-s`` as the latency bound.
"""
from __future__ import annotations

import typer

from parplan.cli.common import EXIT_CHECK_FAILED, Format, emit, human_s, table_width, to_json
from parplan.cli.family_verbs import (check_bounds, check_failed_nothing_fits, check_tolerance, csv_text,
                                      finish_check, finish_result, finish_simulate, finish_validate, fix_pairs,
                                      fmt_name, searched_plan, unread)
from parplan.errors import NothingFits, SpecError

FAMILY = "process-network"
MAX_VALIDATE_TOP = 50  # validate --top: Pareto variants played on the engine (each plays its items; a few ms)


def _cell(v):
    """A CSV cell: a mapping (e.g. cores per cluster) as ``k=v,…``."""
    return ",".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else v


def _cores(c: dict) -> str:
    return " ".join(f"{k}:{v}" for k, v in c.items())


def estimate(model, hw, *, plan=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.variants import estimate as api

    r = api(model, hw, plan)
    f = fmt_name(fmt)
    if f == "json":
        emit(to_json({"schema_version": "1", "kind": "variant-estimate", **r}), output, "1 variant as JSON")
    elif f == "csv":
        emit(csv_text([{k: v for k, v in r.items() if k not in ("checks", "stage_time_s")}], _cell), output,
             "1 variant as CSV")
    else:
        lines = [f"{r['workload']} on {r['platform']}: {r['plan']}",
                 f"  throughput {r['throughput_per_s']:.4g} items/s, latency {human_s(r['latency_s'])}, energy "
                 f"{r['energy_per_item_j']:.4g} J/item (active {r['active_energy_j']:.4g} + idle "
                 f"{r['idle_energy_j']:.4g}), quality {r['quality']:.4g}, memory {r['memory_bytes'] / 1e6:.0f} MB, "
                 f"cores {_cores(r['cores'])}",
                 "  stages: " + ", ".join(f"{k} {human_s(v)}" for k, v in r["stage_time_s"].items()),
                 "  constraints: " + ", ".join(f"{k} {'ok' if v else 'VIOLATED'}" for k, v in r["checks"].items())]
        emit("\n".join(lines), output, "1 variant")


def render(vs, width=None) -> str:
    from parplan.cli.tables import Col, render as rtable

    cols = [Col("#"), Col("variant", "left", wrap=True), Col("items/s"), Col("latency"), Col("J/item"),
            Col("quality"), Col("MB", keep=4), Col("cores", "left", keep=3), Col("pareto", keep=5)]
    rows = [[str(r["rank"]), r["plan"], f"{r['throughput_per_s']:.4g}", human_s(r["latency_s"]),
             f"{r['energy_per_item_j']:.4g}", f"{r['quality']:.4g}", f"{r['memory_bytes'] / 1e6:.0f}",
             _cores(r["cores"]), "yes" if r["pareto"] else ""] for r in vs.rows]
    rej = ", ".join(f"{k} {v:,}" for k, v in vs.rejected.items() if v)
    title = (f"{vs.workload} on {vs.platform}: {vs.n_variants:,} variants, {vs.n_feasible:,} feasible, Pareto set "
             f"{vs.pareto_size} — {'the Pareto set' if vs.objective == 'pareto' else 'by ' + vs.objective}")
    return rtable(cols, rows, title=title, width=width,
                  notes=lambda dropped: [f"rejected (first violated): {rej or 'none'}"])


def _infeasible(err: SpecError) -> None:
    """No variant meets the workload's constraints: the input is fine, the requirement is not met (exit 1, as
    ``suggest`` when nothing fits), with why and what the fastest variant reaches on stderr."""
    import sys

    sys.stderr.write(f"error: {err}\n")  # the error's own (terminal-safe, bounded) line
    raise typer.Exit(EXIT_CHECK_FAILED)


def suggest(model, hw, *, fix=None, top=10, objective=None, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.variants import suggest as api

    try:
        vs = api(model, hw, objective=objective or "pareto", fix=fix_pairs(fix, None, sep_hint="STAGE=ALTERNATIVE"),
                 top=top)
    except NothingFits as err:  # only "no variant meets the constraints" is an unmet requirement
        _infeasible(err)
    finish_result(fmt, output, f"{len(vs.rows)} variants", "variant-suggest", vs, lambda: csv_text(vs.rows, _cell),
                  lambda: render(vs, width=table_width(output)))


def check(model, hw, *, plan=None, max_time_s=None, min_throughput=None, fix=None, fmt=Format.table, output=None,
          **extra) -> None:
    """PASS when the variant (or the fastest feasible one) meets the workload's constraints and the given bounds."""
    unread(extra, FAMILY)
    check_bounds(max_time_s, min_throughput)
    from parplan.variants import estimate as api, suggest as api_suggest

    if plan is None:
        try:
            plan = searched_plan(api_suggest(model, hw, objective="throughput", top=0,
                                             fix=fix_pairs(fix, None, sep_hint="STAGE=ALTERNATIVE")).rows,
                                 lambda r: (max_time_s is None or r["latency_s"] <= max_time_s)
                                 and (min_throughput is None or r["throughput_per_s"] >= min_throughput),
                                 lambda r: r["plan"])
        except NothingFits as err:  # no variant meets the workload's constraints: unmet (exit 1), not bad input
            check_failed_nothing_fits(fmt, output, err)
    r = api(model, hw, plan)
    res = [(k, v) for k, v in r["checks"].items()]  # pass/fail tests, printed without figures
    if max_time_s is not None:
        res.append(("latency ≤ --max-step-time-s", r["latency_s"] <= max_time_s))
    if min_throughput is not None:
        res.append(("throughput ≥ --min-tokens-per-s", r["throughput_per_s"] >= min_throughput))
    finish_check(fmt, output, f"{r['workload']} on {r['platform']}: {r['plan']}", r["plan"],
                 [(k, None, None, v, None) for k, v in res])


def simulate(model, hw, *, plan=None, seed=0, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.variants import simulate as api

    p = api(model, hw, plan)
    q = p["predicted"]
    finish_simulate(fmt, output, {"kind": "variant-simulate", **p}, "\n".join(
        f"{k}: engine {p[k]:.6g}, closed form {q[k]:.6g} ({100 * (q[k] / p[k] - 1):+.2f} %)" for k in q))


def validate(model, hw, *, plan=None, top=None, tolerance=0.05, fmt=Format.table, output=None, **extra) -> None:
    unread(extra, FAMILY)
    from parplan.planner.budget import check_number

    check_tolerance(tolerance)
    check_number(top, "--top", lo=1, hi=MAX_VALIDATE_TOP, integer=True,
                 what="Pareto variants, each played item by item on the engine")
    from parplan.executor.process_network import agreement

    rows = agreement(model, hw, plans=list(plan) if plan else None, top=top or 4)
    finish_validate("variant-validate", fmt, output, rows, tolerance,
                    lambda r: f"{r['plan']}  {r['metric']}: engine {r['simulated']:.6g}, closed form "
                              f"{r['predicted']:.6g} ({100 * r['error']:+.2f} %)", cell=_cell)
