"""When nothing fits: why no plan is valid (the exclusion rules that removed the most), and what would fit — each
line of advice the result of a search (more nodes, another precision, a smaller batch, recompute=full, fewer pins, no
headroom) under one shared work budget."""
from __future__ import annotations

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.planner.budget import BudgetError, PlanBudget
from parplan.planner.search import Evaluated, SearchOptions, rank, run_search
from parplan.planner.sizing import find_nodes
from parplan.planner.space import fix_string
from parplan.workloads.transformer import Workload


def no_valid_plan_message(ev: Evaluated) -> str:
    sp = ev.space
    fx = fix_string(ev.options.fix)
    reasons = {**{k: v for k, v in sp.excluded_factorizations.items() if v},
               **{k: v for k, v in sp.excluded_plans.items() if v}}
    top = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
    why = "; ".join(sp.rule_text[k] for k, _ in top) or "no factorization"
    return (f"no valid plan for {ev.workload.name} on {sp.n_devices} devices" + (f" with {fx}" if fx else "")
            + f" ({why})")


def advice(workload: Workload, cluster: Cluster, options: SearchOptions, max_extra_nodes_factor: int = 64,
           progress=None) -> list[str]:
    """What would make something fit, when nothing does: more nodes, another precision, a smaller batch,
    recompute=full, fewer pins, no headroom.  Each line is the result of a search.  The searches share one budget
    of ``options.max_plans`` plans (``planner.budget``); the advice stops, with a line saying so, where the next
    search would pass it.  ``progress``: ``f(done, total, None)``."""
    from parplan.planner.sizing import SEARCH_COST
    from parplan.workloads.loader import load_workload

    out = []
    g = cluster.group
    pool = PlanBudget(int(options.max_plans))
    steps = [0]
    total = 1 + 3 + 11 + 3

    def tick():
        steps[0] += 1
        if progress is not None:
            progress(min(steps[0], total), total, None)

    def search(w, o):
        tick()
        if pool.remaining < SEARCH_COST:
            raise BudgetError("advice budget spent", key="--max-plans")
        ev = run_search(w, cluster, o, max_plans=pool.remaining - SEARCH_COST)
        pool.charge(SEARCH_COST + len(ev.space))
        return ev

    try:
        # more devices: the smallest node count on which some plan fits
        tick()
        n, ev = find_nodes(workload, cluster, options, lambda e: bool(e.fits.any()), g.nodes + 1,
                           g.nodes * max_extra_nodes_factor, max_scan=64, budget=pool)
        if n is not None:
            b = ev.space.plans.plan(int(rank(ev)[0]))
            out.append(f"more devices: {n} nodes ({n * g.devices_per_node} devices) is the smallest node count where "
                       f"a plan fits, e.g. {b.to_string()}")
        else:
            out.append(f"more devices: nothing fits on up to {g.nodes * max_extra_nodes_factor} nodes")
        job = workload.training
        for prec in ("bf16", "fp8", "fp16"):
            if prec == job.precision or not g.device.supports(prec):
                continue
            try:
                ev = search(load_workload(workload, precision=prec), options)
            except BudgetError:
                raise
            except SpecError:
                continue
            if ev.fits.any():
                out.append(f"precision {prec}: {int(ev.fits.sum()):,} plans fit (--precision {prec})")
        B = job.global_batch
        for k in range(1, 12):
            b2 = B >> k
            if b2 < 1:
                break
            ev = search(load_workload(workload, global_batch=b2), options)
            if ev.fits.any():
                out.append(f"smaller batch: --global-batch {b2} lets {int(ev.fits.sum()):,} plans fit")
                break
        fix = dict(options.fix)
        if "recompute" in fix and fix["recompute"] != 2:
            ev = search(workload, SearchOptions(**{**options.__dict__, "fix": {**fix, "recompute": 2}}))
            if ev.fits.any():
                out.append(f"recompute=full: {int(ev.fits.sum()):,} plans fit (--fix recompute=full)")
        if fix:
            ev = search(workload, SearchOptions(**{**options.__dict__, "fix": {}}))
            if ev.fits.any():
                b = ev.space.plans.plan(int(rank(ev)[0]))
                out.append(f"without --fix {fix_string(fix)}: {int(ev.fits.sum()):,} plans fit, best {b.to_string()}")
        if options.memory_headroom > 0:
            ev = search(workload, SearchOptions(**{**options.__dict__, "memory_headroom": 0.0}))
            if ev.fits.any():
                out.append(f"no headroom: with --memory-headroom 0, {int(ev.fits.sum()):,} plans fit")
    except BudgetError:
        out.append(f"(further advice not searched: its searches would price more than the budget of {pool.limit:,} "
                   "plans; raise --max-plans)")
    return out
