"""Planning on heterogeneous clusters: ILP-planned, data-balanced pipeline and data parallelism across GPU types.

Hierarchical, as the seed paper (ETH, S02) describes its planner: (1) enumerate group-level pipeline shapes,
(2) per shape, an ILP chooses the stage-to-group assignment and non-uniform layer counts per stage minimizing the
pipeline time under per-device memory, (3) an ILP splits the micro-batches over the replicas in proportion to their
speed so none idles, (4) the decoded plan is re-priced by the analytical model (``models.hetero``) — chunked
gradient aggregation included — and checked against the ILP's own objective.

Every ILP is built separately from its solve (``build_* → solve → decode``, ``planner/hetero_ilp.py``), with the
solver (CBC bundled with PuLP; HiGHS when ``highspy`` is installed) and a time limit selectable; the shapes and their
bounds are in ``planner/hetero_shapes.py``.  A time-out or a non-optimal status falls back to
the best heuristic found, flagged as such on the plan.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import pulp

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.planner.budget import BudgetError
from parplan.models.hetero import (HeteroPlan, HeteroResult, PipelineSpec, StageSpec, evaluate_hetero, group_costs,
                                   link_between)
# the integer programs (re-exported: tests and callers import them from here)
from parplan.planner.hetero_ilp import (ShapeCosts, Solved, _state_bytes_per_param, block_orders,  # noqa: F401
                                        build_data_ilp, build_layer_ilp, build_typed_data_ilp, decode_layers,
                                        decode_typed_shares, heuristic_data, heuristic_layers, layer_terms,
                                        make_solver, proportional_split, solve)
from parplan.planner.hetero_exact import ExactSolver, solve_data, solve_layers
from parplan.planner.hetero_shapes import (Shape, _bottleneck_bound, _divisors, _supports, count_shapes,  # noqa: F401
                                           enumerate_shapes, min_fitting_depth, shape_lower_bound)
from parplan.workloads.transformer import Workload

GiB = float(2**30)


@dataclass
class HeteroCandidate:
    result: HeteroResult
    shape: Shape
    ilp_objective_s: float
    heuristic: bool
    ilp_solves: int


@dataclass
class HeteroPlanSet:
    best: HeteroCandidate | None
    candidates: list[HeteroCandidate]
    uniform: HeteroResult | None  # homogeneous-framework baseline: uniform layers, equal data
    fastest_group: object | None  # Estimate of the best homogeneous plan on the fastest group alone
    fastest_group_id: int | None
    infeasible: dict = field(default_factory=dict)  # reason → count
    stats: dict = field(default_factory=dict)

    def speedups(self) -> dict:
        out = {}
        if self.best is not None:
            t = self.best.result.step_time_s
            out["speedup_vs_uniform"] = (self.uniform.step_time_s / t) if self.uniform is not None else None
            out["speedup_vs_fastest_group"] = (self.fastest_group.step_time_s / t) if self.fastest_group is not None \
                else None
        return out


def _shape_costs(workload, cluster, shape_type, tp, mbs, recompute, m_est, owners) -> ShapeCosts:
    groups = tuple(g for g, _ in shape_type)
    counts = tuple(c for _, c in shape_type)
    costs = tuple(group_costs(workload, cluster, g, tp, mbs, recompute, tp > 1) for g in groups)
    p2p = 0.0
    for a in groups:
        for b in groups:
            if sum(counts) > 1:
                bw, lat = link_between(cluster, a, b)
                p2p = max(p2p, costs[0].p2p_bytes / bw + lat)
    return ShapeCosts(groups=groups, counts=counts, costs=costs, p2p_s=p2p, micro_batches=m_est, owners=owners)


def _pipeline_from_layers(layers: list[tuple[int, int]], m: int) -> PipelineSpec:
    st, pos = [], 0
    for g, n in layers:
        st.append(StageSpec(g, pos, pos + n))
        pos += n
    return PipelineSpec(tuple(st), m)


def plan_shape(workload: Workload, cluster: Cluster, shape: Shape, tp: int, mbs: int, recompute: str, zero: int,
               solver, headroom: float = 0.0) -> HeteroCandidate | str:
    """Solve the layer ILP per pipeline type, then the data ILP over all replicas; re-price the decoded plan."""
    M = workload.training.global_batch // mbs
    K = sum(shape.replicas)
    if K > M:
        return "more replicas than micro-batches"
    heuristic, solves = False, 0
    exact = isinstance(solver, ExactSolver)
    m_est = max(1, M // K)
    # first estimate of each type's share: M split in proportion to the replicas' speed bound (shape_lower_bound)
    speed = [reps / _bottleneck_bound(workload, cluster, st, tp, mbs, recompute)
             for st, reps in zip(shape.types, shape.replicas)]
    est_by_type = [max(1, round(M * sp_ / sum(speed) / reps)) for sp_, reps in zip(speed, shape.replicas)]
    layer_sets = []
    shares_by_type: list[int] = []
    for rnd in range(2):  # solve layers with the estimated shares, then again with the balanced shares
        if rnd == 1 and all(abs(s_ - e_) <= 0.1 * e_ for s_, e_ in zip(shares_by_type, est_by_type)):
            break  # shares close to the estimate: the layer split would not change
        layer_sets = []
        for ti, st in enumerate(shape.types):
            m_t = est_by_type[ti] if rnd == 0 else max(1, shares_by_type[ti])
            sc = _shape_costs(workload, cluster, st, tp, mbs, recompute, m_t, K)
            best_obj, best_layers, any_feasible = math.inf, None, False
            for order in block_orders(sc):
                solves += 1
                if exact:
                    sol = solve_layers(layer_terms(workload, sc, zero, order, headroom))
                    status, obj = sol.status, sol.objective_s
                    decoded = [(sc.groups[g], n) for g, n in zip(order, sol.layers)]
                else:
                    prob, v = build_layer_ilp(workload, sc, zero, order, headroom)
                    status, _ = solve(prob, solver)
                    obj = pulp.value(prob.objective) if status == "Optimal" else math.inf
                    decoded = None
                if status == "Infeasible":
                    continue
                any_feasible = True
                if status != "Optimal":
                    heuristic = True
                    continue
                if obj < best_obj - 1e-12:
                    best_obj, best_layers = obj, decoded if exact else decode_layers(sc, v)
            if not any_feasible:
                return "memory: no layer split of the shape fits every stage"
            if best_layers is None:
                heuristic = True
                best_layers = heuristic_layers(workload, sc)
            layer_sets.append(best_layers)
        # per-replica bottleneck and fill from the analytical model (one replica of each type)
        probe = []
        for ti, layers in enumerate(layer_sets):
            probe.append(_pipeline_from_layers(layers, m_est))
        zb, fb = [], []
        for ti, pipe in enumerate(probe):
            one = HeteroPlan(pipelines=(pipe,), tp=tp, mbs=mbs, zero=zero, recompute=recompute, sp=tp > 1)
            r1 = evaluate_hetero(workload, cluster, replace(one, pipelines=(replace(pipe, micro_batches=1),)),
                                 validate=False)
            sl = r1.stage_slots_s[0]
            zb.append(max(sl))
            fb.append(sum(sl) - max(sl))
        bott = [zb[ti] for ti, reps in enumerate(shape.replicas) for _ in range(reps)]
        fill = [fb[ti] for ti, reps in enumerate(shape.replicas) for _ in range(reps)]
        solves += 1
        if exact:
            ilp_T, shares = solve_data(zb, fb, list(shape.replicas), M)
            status = "exact"
        else:
            prob, v = build_typed_data_ilp(zb, fb, list(shape.replicas), M)
            status, _ = solve(prob, solver)
        if status == "exact":
            pass
        elif status == "Optimal":
            shares = decode_typed_shares(v, list(shape.replicas))
            ilp_T = float(v["T"].value())
        else:
            heuristic = True
            shares = heuristic_data(bott, M)
            ilp_T = max(b * m + f for b, m, f in zip(bott, shares, fill))
        idx, shares_by_type = 0, []
        for reps in shape.replicas:
            shares_by_type.append(round(sum(shares[idx: idx + reps]) / reps))
            idx += reps
    pipes, idx = [], 0
    for ti, reps in enumerate(shape.replicas):
        for _ in range(reps):
            pipes.append(_pipeline_from_layers(layer_sets[ti], shares[idx]))
            idx += 1
    plan = HeteroPlan(pipelines=tuple(pipes), tp=tp, mbs=mbs, zero=zero, recompute=recompute, sp=tp > 1,
                      label="balanced" + (" (heuristic)" if heuristic else ""))
    res = evaluate_hetero(workload, cluster, plan)
    if not res.fits:
        return "memory: " + res.reasons[0].split(":")[0]
    if not within_headroom(res, headroom):
        return f"memory: a stage above the {100 * headroom:g} % headroom limit"
    return HeteroCandidate(result=res, shape=shape, ilp_objective_s=ilp_T, heuristic=heuristic, ilp_solves=solves)


def within_headroom(res: HeteroResult, headroom: float) -> bool:
    """Every stage's peak at most (1 − headroom) of its device's memory (the limit the planner ranks under)."""
    return all(m <= (1.0 - headroom) * cap for ms, caps in zip(res.memory_by_stage, res.capacity_by_stage)
               for m, cap in zip(ms, caps))


def uniform_baseline(workload: Workload, cluster: Cluster, tps, mbss, recomputes, zeros,
                     headroom: float = 0.0) -> HeteroResult | None:
    """What a homogeneous framework does on mixed hardware: uniform tp and pp, equal layers per stage, equal data per
    replica, ranks laid out group after group (TP innermost, then PP, then DP); the best such plan that fits."""
    L = workload.model.layers
    best = None
    groups_slots = []
    for tp in tps:
        groups_slots = []
        for g, grp in enumerate(cluster.groups):
            if tp > grp.devices_per_node or not _supports(cluster, g, workload):
                groups_slots = None
                break
            groups_slots += [g] * (grp.n_devices // tp)
        if not groups_slots:
            continue
        units = len(groups_slots)
        for pp in _divisors(units):
            if pp > L:
                continue
            K = units // pp
            base, extra = divmod(L, pp)
            sizes = [base + (1 if i < extra else 0) for i in range(pp)]
            for mbs in mbss:
                M = workload.training.global_batch // mbs
                if workload.training.global_batch % mbs or M % K:
                    continue
                for rc in recomputes:
                    for zero in zeros:
                        pipes = []
                        for k in range(K):
                            layers = [(groups_slots[k * pp + j], sizes[j]) for j in range(pp)]
                            pipes.append(_pipeline_from_layers(layers, M // K))
                        plan = HeteroPlan(pipelines=tuple(pipes), tp=tp, mbs=mbs, zero=zero, recompute=rc,
                                          sp=tp > 1, label="uniform")
                        try:
                            r = evaluate_hetero(workload, cluster, plan)
                        except SpecError:
                            continue
                        if r.fits and within_headroom(r, headroom) and (best is None or r.step_time_s < best.step_time_s):
                            best = r
    return best


def fastest_group_baseline(workload: Workload, cluster: Cluster, max_plans: int | None = None,
                           headroom: float | None = None):
    """The best homogeneous plan (parplan's homogeneous planner) on the group with the fastest device alone
    (``max_plans``: the search's work budget, default ``planner.budget.DEFAULT_MAX_PLANS``; ``headroom``: the
    memory headroom it ranks under, the search's default when None)."""
    from parplan.hardware.types import Cluster as C

    order = sorted(range(len(cluster.groups)),
                   key=lambda g: -cluster.groups[g].device.peak_flops_per_s.get(
                       workload.training.precision if workload.training.precision != "fp32" else "tf32", 0.0))
    for g in order:
        if not _supports(cluster, g, workload):
            continue
        sub = C(name=f"{cluster.name}[{cluster.groups[g].device.id}]", groups=(cluster.groups[g],))
        try:
            from parplan.planner.planset import suggest_plans
            from parplan.planner.search import SearchOptions

            kw = {} if max_plans is None else {"max_plans": int(max_plans)}
            opts = SearchOptions(**kw) if headroom is None else SearchOptions(memory_headroom=headroom, **kw)
            ps = suggest_plans(workload, sub, top=1, options=opts)
        except BudgetError:
            raise
        except SpecError:
            return None, g
        best = getattr(ps, "best", None)
        return best, g
    return None, None


def default_recompute_options(workload: Workload) -> tuple[str, ...]:
    """With fused (flash) attention, selective recompute costs time and saves no memory: skip it."""
    return ("none", "full") if workload.training.attention == "flash" else ("none", "selective", "full")


def plan_hetero(workload, cluster, *, solver: str = "exact", time_limit_s: float = 10.0,
                mbs_options=(1, 2, 4), recompute_options=None, zero_options=(1,),
                tp_options=None, baselines: bool = True, max_depth_options: int = 2,
                prune: bool = True, progress=None, max_configurations: int | None = None,
                max_plans: int | None = None, memory_headroom: float | None = None) -> HeteroPlanSet:
    """Search shapes × knobs with the two ILPs; return the ranked candidates and both baselines.
    ``memory_headroom``: fraction of each device's memory kept free, as in the homogeneous search (default
    ``planner.search.DEFAULT_MEMORY_HEADROOM``); candidates and both baselines are planned under it.
    ``progress``: optional ``f(done, total)`` called as configurations are taken up.  ``time_limit_s``: seconds
    per ILP solve, in (0, 3600].  Work budget: the shape × knob configurations are counted before any is made or
    solved; above ``max_configurations`` (default ``planner.budget.DEFAULT_MAX_CONFIGURATIONS``) a
    ``BudgetError``; ``max_plans``: the budget of the fastest-group baseline's homogeneous search.

    ``zero_options`` defaults to ZeRO-1 (optimizer states sharded among the owners of each chunk): the chunked
    all-reduce costs the same either way, so zero=1 is never slower and always smaller.

    ``workload`` / ``cluster``: the loaded objects, or what ``parplan.estimate`` accepts (a catalog id, a YAML
    path, a mapping)."""
    from parplan.hardware.catalog import load_cluster
    from parplan.planner.spaces import hetero_planner
    from parplan.workloads.loader import load_workload

    workload, cluster = load_workload(workload), load_cluster(cluster)  # objects pass through unchanged

    from parplan.planner.budget import (DEFAULT_MAX_CONFIGURATIONS, MAX_TIME_LIMIT_S, BudgetError, check_number)

    hetero_planner(workload)  # only families with a heterogeneous planner (this one plans dense layers)
    time_limit_s = check_number(time_limit_s, "--time-limit", lo=0, lo_open=True, hi=MAX_TIME_LIMIT_S,
                                hint="seconds per ILP solve, e.g. 10")
    from parplan.planner.search import DEFAULT_MEMORY_HEADROOM

    headroom = check_number(DEFAULT_MEMORY_HEADROOM if memory_headroom is None else memory_headroom,
                            "--memory-headroom", lo=0.0, hi=0.5, hint="a fraction of device memory, e.g. 0.05")
    limit = check_number(DEFAULT_MAX_CONFIGURATIONS if max_configurations is None else max_configurations,
                         "--max-configurations", lo=1, integer=True)
    t0 = time.perf_counter()
    recompute_options = recompute_options or default_recompute_options(workload)
    slv = make_solver(solver, time_limit_s)
    mdl = workload.model
    dpn = max(g.devices_per_node for g in cluster.groups)
    tps = tp_options or [t for t in (1, 2, 4, 8) if t <= dpn and mdl.heads % t == 0 and mdl.kv_heads % t == 0]
    mbss = [b for b in mbs_options if workload.training.global_batch % b == 0]
    cands: list[HeteroCandidate] = []
    infeasible: dict[str, int] = {}
    solves = 0
    n_shapes = 0
    # hierarchical search: list every (shape, knobs) with a cheap lower bound, solve the ILPs in bound order and
    # stop once the bound exceeds the best step time found (the bound ignores fill, p2p, embedding/output and sync)
    queue = []
    settings, n_conf = [], 0
    for tp in tps:
        for mbs in mbss:
            for rc in recompute_options:
                for zero in zero_options:
                    depth = {g: min_fitting_depth(workload, cluster, g, tp, mbs, rc, zero, headroom)
                             for g in range(len(cluster.groups))}
                    settings.append((tp, mbs, rc, zero, depth))
                    n_conf += count_shapes(cluster, workload, tp, max_depth_options, depth)
    if n_conf > limit:
        raise BudgetError(f"{n_conf:,} shape × knob configurations to plan on {cluster.name} ({len(cluster.groups)} "
                          f"device groups), above the budget of {limit:,}", key="--max-configurations",
                          hint="raise --max-configurations (each may take up to two rounds of ILP solves), or "
                               "lower --max-mbs")
    for tp, mbs, rc, zero, depth in settings:
        for shape in enumerate_shapes(cluster, workload, tp, max_depth_options, depth):
            lb = shape_lower_bound(workload, cluster, shape, tp, mbs, rc)
            queue.append((lb, len(queue), shape, tp, mbs, rc, zero))
        for g, d in depth.items():
            if d is None:
                key = (f"memory: {cluster.groups[g].device.id} alone cannot hold the model at any "
                       "pipeline depth (per tp × mbs × recompute setting)")
                infeasible[key] = infeasible.get(key, 0) + 1
    queue.sort(key=lambda q: (q[0], q[1]))
    best_t = math.inf
    pruned = 0
    for done, (lb, _, shape, tp, mbs, rc, zero) in enumerate(queue):
        if progress is not None:
            progress(done, len(queue))
        if prune and lb >= best_t:
            pruned += 1
            continue
        n_shapes += 1
        got = plan_shape(workload, cluster, shape, tp, mbs, rc, zero, slv, headroom)
        if isinstance(got, str):
            infeasible[got] = infeasible.get(got, 0) + 1
            continue
        solves += got.ilp_solves
        cands.append(got)
        best_t = min(best_t, got.result.step_time_s)
    cands.sort(key=lambda c: (c.result.step_time_s, c.result.memory_peak_bytes))
    uni = fast = fast_g = None
    if baselines:
        uni = uniform_baseline(workload, cluster, tps, mbss, recompute_options, zero_options, headroom)
        fast, fast_g = fastest_group_baseline(workload, cluster, max_plans, headroom)
    return HeteroPlanSet(best=cands[0] if cands else None, candidates=cands, uniform=uni, fastest_group=fast,
                         fastest_group_id=fast_g, infeasible=infeasible,
                         stats={"configurations": len(queue), "configurations_estimated": n_conf,
                                "solved": n_shapes, "pruned_by_bound": pruned,
                                "ilp_solves": solves,
                                "wall_s": time.perf_counter() - t0, "solver": solver})
