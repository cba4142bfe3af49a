"""Planning on heterogeneous clusters: ILP-planned, data-balanced pipeline and data parallelism across GPU types.

Hierarchical, as the seed paper (ETH, S02) describes its planner: (1) enumerate group-level pipeline shapes,
(2) per shape, an ILP chooses the stage-to-group assignment and non-uniform layer counts per stage minimizing the
pipeline time under per-device memory, (3) an ILP splits the micro-batches over the replicas in proportion to their
speed so none idles, (4) the decoded plan is re-priced by the analytical model (``models.hetero``) — chunked
gradient aggregation included — and checked against the ILP's own objective.

Every ILP is built separately from its solve (``build_* → solve → decode``), with the solver (CBC bundled with PuLP;
HiGHS when ``highspy`` is installed) and a time limit selectable.  A time-out or a non-optimal status falls back to
the best heuristic found, flagged as such on the plan.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import os
import sys
import time
from dataclasses import dataclass, field, replace

import pulp

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.planner.budget import BudgetError
from parplan.models.hetero import (GroupCosts, HeteroPlan, HeteroResult, PipelineSpec, StageSpec, evaluate_hetero,
                                   group_costs, link_between)
from parplan.models.training import FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES, OPTIMIZER_STATE_BYTES
from parplan.workloads.transformer import Workload

GiB = float(2**30)


# --- solvers -----------------------------------------------------------------------------------------------------
def make_solver(name: str = "cbc", time_limit_s: float = 10.0):
    """A PuLP solver by name: ``cbc`` (bundled) or ``highs`` (needs highspy)."""
    if name == "cbc":
        return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)
    if name == "highs":
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit_s)
        if not solver.available():
            raise SpecError("solver 'highs' is not installed", key="--solver", allowed=["cbc", "highs"],
                            hint="pip install highspy, or use --solver cbc")
        return solver
    raise SpecError(f"unknown solver {name!r}", key="--solver", allowed=["cbc", "highs"])


@dataclass
class Solved:
    status: str  # "optimal" | "heuristic"
    objective: float
    values: dict
    solve_s: float


@contextlib.contextmanager
def _quiet_fd1():
    """HiGHS prints a banner on the C-level stdout even with msg=False; keep stdout for the data (CLI JSON/CSV)."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real file descriptor (e.g. captured output): nothing to protect
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def solve(prob: pulp.LpProblem, solver) -> tuple[str, float]:
    """Solve; "Optimal" only when the solver proved optimality (a time-limited incumbent is "Not Solved")."""
    t0 = time.perf_counter()
    if isinstance(solver, pulp.HiGHS):
        with _quiet_fd1():
            prob.solve(solver)
    else:
        prob.solve(solver)
    st = pulp.LpStatus[prob.status]
    if st == "Optimal" and prob.sol_status != pulp.LpSolutionOptimal:
        st = "Not Solved"
    return st, time.perf_counter() - t0


# --- ILP 1: stage-to-group assignment and layer counts for one pipeline shape -----------------------------------
@dataclass(frozen=True)
class ShapeCosts:
    """Constants of one pipeline shape: per-group costs and the memory model terms (bytes, seconds)."""

    groups: tuple[int, ...]  # group of each stage-slot type
    counts: tuple[int, ...]  # stages of each group in the pipeline
    costs: tuple[GroupCosts, ...]
    p2p_s: float  # slowest boundary transfer of the shape, charged twice per stage slot
    micro_batches: int
    owners: int  # replicas that share each chunk (ZeRO-1 divisor)


def _state_bytes_per_param(workload: Workload, zero: int, owners: int) -> float:
    mixed = workload.training.precision != "fp32"
    opt = OPTIMIZER_STATE_BYTES[(workload.training.optimizer, mixed)] / (owners if zero >= 1 else 1)
    return (2.0 if mixed else 4.0) + 4.0 + opt


def block_orders(sc: ShapeCosts) -> list[tuple[int, ...]]:
    """Stage-to-group assignments considered: the groups' stages as contiguous blocks, every block order
    (G! ≤ 6 for three groups).  Contiguous blocks keep cross-group boundaries (the slow links) to G − 1, and the
    order decides which group holds the most in-flight activations (the first stages)."""
    out = []
    for perm in itertools.permutations(range(len(sc.groups))):
        out.append(tuple(g for g in perm for _ in range(sc.counts[g])))
    return out


def build_layer_ilp(workload: Workload, sc: ShapeCosts, zero: int, order: tuple[int, ...]) -> tuple[pulp.LpProblem, dict]:
    """For one stage-to-group assignment ``order`` (shape-local group index per stage position):
    min (m − 1)·z + Σ τ_i  s.t.  τ_i = n_i·a_g(i) + extras, z ≥ τ_i, Σ n_i = L, n_i ≥ 1 integer, and the memory of
    position i on its group ≤ capacity (in-flight activations min(S − i, m))."""
    L = workload.model.layers
    S = len(order)
    prob = pulp.LpProblem("stage_layers", pulp.LpMinimize)
    n = [pulp.LpVariable(f"n_{i}", lowBound=1, upBound=L, cat="Integer") for i in range(S)]
    z = pulp.LpVariable("z", lowBound=0)
    bpp = _state_bytes_per_param(workload, zero, sc.owners)
    tau = []
    for i, g in enumerate(order):
        c = sc.costs[g]
        t_i = c.layer_s * n[i] + 2.0 * sc.p2p_s + (c.emb_s if i == 0 else 0.0) + (c.out_s if i == S - 1 else 0.0)
        tau.append(t_i)
        prob += z >= t_i
        inflight = max(1, min(S - i, sc.micro_batches))
        per_layer = c.layer_params * bpp + c.act_bytes_per_layer * inflight
        fixed = c.transient_bytes + (c.emb_params * bpp if i == 0 else 0.0) \
            + ((c.out_params * bpp + c.logits_bytes) if i == S - 1 else 0.0)
        budget = (c.capacity_bytes - FRAMEWORK_RESERVED_BYTES) / (1.0 + FRAGMENTATION_FRACTION)
        prob += (per_layer / GiB) * n[i] <= (budget - fixed) / GiB
    prob += pulp.lpSum(n) == L
    prob += (sc.micro_batches - 1) * z + pulp.lpSum(tau)
    return prob, {"n": n, "z": z, "order": order}


def decode_layers(sc: ShapeCosts, v: dict) -> list[tuple[int, int]]:
    """(cluster group, layers) per stage position from a solved layer ILP."""
    return [(sc.groups[g], int(round(x.value() or 0))) for g, x in zip(v["order"], v["n"])]


def proportional_split(weights: list[float], total: int) -> list[int]:
    """``total`` split in proportion to ``weights``, each part ≥ 1, by largest-remainder rounding."""
    raw = [total * w / sum(weights) for w in weights]
    n = [max(1, int(math.floor(r))) for r in raw]
    order = sorted(range(len(n)), key=lambda i: raw[i] - n[i], reverse=True)
    i = 0
    while sum(n) < total:
        n[order[i % len(n)]] += 1
        i += 1
    while sum(n) > total:
        n[max(range(len(n)), key=lambda k: n[k])] -= 1
    return n


def heuristic_layers(workload: Workload, sc: ShapeCosts) -> list[tuple[int, int]]:
    """Fallback: faster groups first, layers in proportion to per-layer speed."""
    order = sorted(range(len(sc.groups)), key=lambda g: sc.costs[g].layer_s)
    pos = [g for g in order for _ in range(sc.counts[g])]
    n = proportional_split([1.0 / sc.costs[g].layer_s for g in pos], workload.model.layers)
    return [(sc.groups[g], k) for g, k in zip(pos, n)]


# --- ILP 2: data balancing across replicas -----------------------------------------------------------------------
def build_data_ilp(bottleneck_s: list[float], fill_s: list[float], total_micro_batches: int) -> tuple[pulp.LpProblem, dict]:
    """min T  s.t.  T ≥ m_k·z_k + F_k,  Σ m_k = M,  m_k ≥ 1 integer (1F1B makespan of replica k: m·max τ + Σ τ − max τ)."""
    prob = pulp.LpProblem("data_balance", pulp.LpMinimize)
    K = len(bottleneck_s)
    m = [pulp.LpVariable(f"m_{k}", lowBound=1, upBound=total_micro_batches, cat="Integer") for k in range(K)]
    T = pulp.LpVariable("T", lowBound=0)
    for k in range(K):
        prob += T >= bottleneck_s[k] * m[k] + fill_s[k]
    prob += pulp.lpSum(m) == total_micro_batches
    prob += T
    return prob, {"m": m, "T": T}


def build_typed_data_ilp(bottleneck_s: list[float], fill_s: list[float], replicas: list[int],
                         total_micro_batches: int) -> tuple[pulp.LpProblem, dict]:
    """The data-balancing ILP with identical replicas folded by type (same optimum, no symmetric copies): replica
    type t has R_t replicas, each with q_t or q_t + 1 micro-batches (r_t of them with the extra one, e_t = 1 if any):
    min T  s.t.  T ≥ z_t·(q_t + e_t) + F_t,  r_t ≤ (R_t − 1)·e_t,  Σ_t R_t·q_t + r_t = M,  q_t ≥ 1."""
    prob = pulp.LpProblem("data_balance_typed", pulp.LpMinimize)
    M = total_micro_batches
    q = [pulp.LpVariable(f"q_{t}", lowBound=1, upBound=M, cat="Integer") for t in range(len(replicas))]
    r = [pulp.LpVariable(f"r_{t}", lowBound=0, upBound=max(R - 1, 0), cat="Integer") for t, R in enumerate(replicas)]
    e = [pulp.LpVariable(f"e_{t}", cat="Binary") for t in range(len(replicas))]
    T = pulp.LpVariable("T", lowBound=0)
    for t, R in enumerate(replicas):
        prob += T >= bottleneck_s[t] * (q[t] + e[t]) + fill_s[t]
        prob += r[t] <= max(R - 1, 0) * e[t]
    prob += pulp.lpSum(R * q[t] + r[t] for t, R in enumerate(replicas)) == M
    prob += T
    return prob, {"q": q, "r": r, "e": e, "T": T}


def decode_typed_shares(v: dict, replicas: list[int]) -> list[int]:
    """Per-replica shares, type by type: the first r_t replicas of a type get q_t + 1."""
    out = []
    for t, R in enumerate(replicas):
        q, r = int(round(v["q"][t].value())), int(round(v["r"][t].value()))
        out += [q + 1] * r + [q] * (R - r)
    return out


def heuristic_data(bottleneck_s: list[float], total: int) -> list[int]:
    """Fallback: micro-batches proportional to 1/bottleneck."""
    return proportional_split([1.0 / b for b in bottleneck_s], total)


# --- shapes ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """Pipeline types (stage counts per group) and how many replicas of each."""

    kind: str  # "per-group" | "mixed"
    types: tuple[tuple[tuple[int, int], ...], ...]  # per type: ((group, stages), ...)
    replicas: tuple[int, ...]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_shapes(cluster: Cluster, workload: Workload, tp: int, max_depth_options: int = 3,
                     min_depth: dict | None = None) -> list[Shape]:
    """Group-level shapes for one tp: per-group pipelines (each group its own replicas, a few depths per group,
    any subset of groups) and mixed pipelines (K identical pipelines spanning every group of a subset)."""
    L = workload.model.layers
    G = len(cluster.groups)
    units = [g.n_devices // tp if tp <= g.devices_per_node else 0 for g in cluster.groups]
    shapes: list[Shape] = []
    usable = [g for g in range(G) if units[g] > 0 and _supports(cluster, g, workload)]
    for r in range(1, len(usable) + 1):
        for subset in itertools.combinations(usable, r):
            depth_opts = []
            for g in subset:
                lo = (min_depth or {}).get(g, 1)
                opts = [] if lo is None else [d for d in _divisors(units[g]) if lo <= d <= L][:max_depth_options]
                depth_opts.append(opts)
            for depths in itertools.product(*depth_opts):
                types = tuple(((g, d),) for g, d in zip(subset, depths))
                reps = tuple(units[g] // d for g, d in zip(subset, depths))
                shapes.append(Shape("per-group", types, reps))
            if len(subset) > 1:
                common = math.gcd(*[units[g] for g in subset])
                for K in _divisors(common):
                    counts = tuple((g, units[g] // K) for g in subset)
                    if sum(c for _, c in counts) <= L:
                        shapes.append(Shape("mixed", (counts,), (K,)))
    return shapes


def count_shapes(cluster: Cluster, workload: Workload, tp: int, max_depth_options: int = 3,
                 min_depth: dict | None = None) -> int:
    """``len(enumerate_shapes(...))`` without making the shapes: per-group shapes Π(1 + options) − 1 over the usable
    groups, plus, per subset of ≥ 2 groups, the divisors K of its units' gcd whose pipelines fit the layers (up to
    16 usable groups counted exactly; beyond, a bound of the same form)."""
    L = workload.model.layers
    G = len(cluster.groups)
    units = [g.n_devices // tp if tp <= g.devices_per_node else 0 for g in cluster.groups]
    usable = [g for g in range(G) if units[g] > 0 and _supports(cluster, g, workload)]
    n_opts = {}
    for g in usable:
        lo = (min_depth or {}).get(g, 1)
        n_opts[g] = 0 if lo is None else len([d for d in _divisors(units[g]) if lo <= d <= L][:max_depth_options])
    total = 0
    for r in range(1, len(usable) + 1):
        if len(usable) > 16:  # 2^G subsets: bound every subset's mixed shapes by the most divisors of any unit count
            prod = 1
            for g in usable:
                prod *= 1 + n_opts[g]
            most = max(len(_divisors(units[g])) for g in usable)
            return prod - 1 + (2 ** len(usable) - len(usable) - 1) * most
        for subset in itertools.combinations(usable, r):
            prod = 1
            for g in subset:
                prod *= n_opts[g]
            total += prod
            if len(subset) > 1:
                common = math.gcd(*[units[g] for g in subset])
                total += sum(1 for K in _divisors(common) if sum(units[g] // K for g in subset) <= L)
    return total


def min_fitting_depth(workload: Workload, cluster: Cluster, g: int, tp: int, mbs: int, recompute: str,
                      zero: int) -> int | None:
    """Smallest pipeline depth at which a pipeline made of group g alone fits in memory (first stage, the heaviest:
    ceil(L/S) layers with S micro-batches in flight); None if none does.  Used to prune shapes before any ILP."""
    grp = cluster.groups[g]
    if tp > grp.devices_per_node or not _supports(cluster, g, workload):
        return None
    c = group_costs(workload, cluster, g, tp, mbs, recompute, tp > 1)
    L = workload.model.layers
    units = grp.n_devices // tp
    for S in _divisors(units):
        if S > L:
            break
        owners = units // S
        bpp = _state_bytes_per_param(workload, zero, owners)
        n = math.ceil(L / S)
        dyn = n * (c.layer_params * bpp + c.act_bytes_per_layer * S) + c.emb_params * bpp + c.transient_bytes
        if S == 1:
            dyn += c.out_params * bpp + c.logits_bytes
        if dyn * (1 + FRAGMENTATION_FRACTION) + FRAMEWORK_RESERVED_BYTES <= c.capacity_bytes:
            return S
    return None


def shape_lower_bound(workload: Workload, cluster: Cluster, shape: Shape, tp: int, mbs: int, recompute: str) -> float:
    """A lower bound on the pipeline part of a shape's step time.  Per pipeline type: the bottleneck stage takes at
    least z = L/Σ_g(s_g/a_g) + 2·p2p (layers split so that every stage takes equally long, plus the boundary
    transfers every slot pays) and the fill at least F = (S − 1)·(a_min + 2·p2p) (every other stage holds ≥ 1
    layer).  Replica k then needs T ≥ m_k·z_k + F_k, so Σ_k (T − F_k)/z_k ≥ M gives
    T ≥ (M + Σ_k F_k/z_k)/Σ_k 1/z_k — monotone in z and F, hence a valid bound from their lower bounds."""
    M = workload.training.global_batch // mbs
    inv_z, f_over_z = 0.0, 0.0
    for st, reps in zip(shape.types, shape.replicas):
        z, fill = _bottleneck_bound(workload, cluster, st, tp, mbs, recompute, with_fill=True)
        inv_z += reps / z
        f_over_z += reps * fill / z
    return (M + f_over_z) / inv_z


def _bottleneck_bound(workload: Workload, cluster: Cluster, st, tp: int, mbs: int, recompute: str,
                      with_fill: bool = False):
    """Lower bounds of one pipeline type's bottleneck slot z (and, optionally, its fill F); see shape_lower_bound."""
    L = workload.model.layers
    costs = [group_costs(workload, cluster, g, tp, mbs, recompute, tp > 1) for g, _ in st]
    S = sum(cnt for _, cnt in st)
    p2p = 0.0
    if S > 1:
        for a, _ in st:
            for b, _ in st:
                bw, lat = link_between(cluster, a, b)
                p2p = max(p2p, costs[0].p2p_bytes / bw + lat)
    z = L / sum(cnt / c.layer_s for (_, cnt), c in zip(st, costs)) + 2.0 * p2p
    if not with_fill:
        return z
    return z, (S - 1) * (min(c.layer_s for c in costs) + 2.0 * p2p)


def _supports(cluster: Cluster, g: int, workload: Workload) -> bool:
    prec = workload.training.precision
    return prec == "fp32" or cluster.groups[g].device.supports(prec)


# --- the planner ------------------------------------------------------------------------------------------------
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
               solver) -> HeteroCandidate | str:
    """Solve the layer ILP per pipeline type, then the data ILP over all replicas; re-price the decoded plan."""
    M = workload.training.global_batch // mbs
    K = sum(shape.replicas)
    if K > M:
        return "more replicas than micro-batches"
    heuristic, solves = False, 0
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
                prob, v = build_layer_ilp(workload, sc, zero, order)
                status, _ = solve(prob, solver)
                solves += 1
                if status == "Infeasible":
                    continue
                any_feasible = True
                if status != "Optimal":
                    heuristic = True
                    continue
                obj = pulp.value(prob.objective)
                if obj < best_obj - 1e-12:
                    best_obj, best_layers = obj, decode_layers(sc, v)
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
        prob, v = build_typed_data_ilp(zb, fb, list(shape.replicas), M)
        status, _ = solve(prob, solver)
        solves += 1
        if status == "Optimal":
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
    return HeteroCandidate(result=res, shape=shape, ilp_objective_s=ilp_T, heuristic=heuristic, ilp_solves=solves)


def uniform_baseline(workload: Workload, cluster: Cluster, tps, mbss, recomputes, zeros) -> HeteroResult | None:
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
                        if r.fits and (best is None or r.step_time_s < best.step_time_s):
                            best = r
    return best


def fastest_group_baseline(workload: Workload, cluster: Cluster, max_plans: int | None = None):
    """The best homogeneous plan (parplan's homogeneous planner) on the group with the fastest device alone
    (``max_plans``: the search's work budget, default ``planner.budget.DEFAULT_MAX_PLANS``)."""
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

            opts = SearchOptions() if max_plans is None else SearchOptions(max_plans=int(max_plans))
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


def plan_hetero(workload: Workload, cluster: Cluster, *, solver: str = "cbc", time_limit_s: float = 10.0,
                mbs_options=(1, 2, 4), recompute_options=None, zero_options=(1,),
                tp_options=None, baselines: bool = True, max_depth_options: int = 2,
                prune: bool = True, progress=None, max_configurations: int | None = None,
                max_plans: int | None = None) -> HeteroPlanSet:
    """Search shapes × knobs with the two ILPs; return the ranked candidates and both baselines.
    ``progress``: optional ``f(done, total)`` called as configurations are taken up.  ``time_limit_s``: seconds
    per ILP solve, in (0, 3600].  Work budget: the shape × knob configurations are counted before any is made or
    solved; above ``max_configurations`` (default ``planner.budget.DEFAULT_MAX_CONFIGURATIONS``) a
    ``BudgetError``; ``max_plans``: the budget of the fastest-group baseline's homogeneous search.

    ``zero_options`` defaults to ZeRO-1 (optimizer states sharded among the owners of each chunk): the chunked
    all-reduce costs the same either way, so zero=1 is never slower and always smaller."""
    from parplan.planner.spaces import hetero_planner

    from parplan.planner.budget import (DEFAULT_MAX_CONFIGURATIONS, MAX_TIME_LIMIT_S, BudgetError, check_number)

    hetero_planner(workload)  # only families with a heterogeneous planner (this one plans dense layers)
    time_limit_s = check_number(time_limit_s, "--time-limit", lo=0, lo_open=True, hi=MAX_TIME_LIMIT_S,
                                hint="seconds per ILP solve, e.g. 10")
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
                    depth = {g: min_fitting_depth(workload, cluster, g, tp, mbs, rc, zero)
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
        got = plan_shape(workload, cluster, shape, tp, mbs, rc, zero, slv)
        if isinstance(got, str):
            infeasible[got] = infeasible.get(got, 0) + 1
            continue
        solves += got.ilp_solves
        cands.append(got)
        best_t = min(best_t, got.result.step_time_s)
    cands.sort(key=lambda c: (c.result.step_time_s, c.result.memory_peak_bytes))
    uni = fast = fast_g = None
    if baselines:
        uni = uniform_baseline(workload, cluster, tps, mbss, recompute_options, zero_options)
        fast, fast_g = fastest_group_baseline(workload, cluster, max_plans)
    return HeteroPlanSet(best=cands[0] if cands else None, candidates=cands, uniform=uni, fastest_group=fast,
                         fastest_group_id=fast_g, infeasible=infeasible,
                         stats={"configurations": len(queue), "configurations_estimated": n_conf,
                                "solved": n_shapes, "pruned_by_bound": pruned,
                                "ilp_solves": solves,
                                "wall_s": time.perf_counter() - t0, "solver": solver})
