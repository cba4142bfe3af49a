"""The integer programs of heterogeneous planning (``planner/hetero.py``), each built apart from its solve
(``build_* → solve → decode``): the per-shape layer ILP (stage-to-group order and non-uniform layer counts under
per-device memory, minimizing the pipeline time), the data ILP (micro-batches over replicas in proportion to their
speed), their decoders, heuristic fallbacks, and the solvers (CBC bundled with PuLP; HiGHS with ``highspy``)."""
from __future__ import annotations

import contextlib
import itertools
import math
import os
import sys
import time
from dataclasses import dataclass

import pulp

from parplan.errors import SpecError
from parplan.models.hetero import GroupCosts
from parplan.models.training import FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES, OPTIMIZER_STATE_BYTES
from parplan.workloads.transformer import Workload

GiB = float(2**30)

# --- solvers -----------------------------------------------------------------------------------------------------
SOLVERS = ["exact", "cbc", "highs"]


def make_solver(name: str = "exact", time_limit_s: float = 10.0):
    """A solver by name: ``exact`` (in process, by the programs' structure: ``planner/hetero_exact.py``), or the
    ILPs through PuLP: ``cbc`` (bundled) or ``highs`` (needs highspy)."""
    if name == "exact":
        from parplan.planner.hetero_exact import ExactSolver

        return ExactSolver()
    if name == "cbc":
        return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)
    if name == "highs":
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit_s)
        if not solver.available():
            raise SpecError("solver 'highs' is not installed", key="--solver", allowed=SOLVERS,
                            hint="pip install highspy, or use --solver exact")
        return solver
    raise SpecError(f"unknown solver {name!r}", key="--solver", allowed=SOLVERS)


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


@dataclass(frozen=True)
class LayerTerms:
    """Coefficients of the layer ILP for one stage-to-group order (per stage position i): τ_i = a_i·n_i + b_i
    seconds, memory mem_i·n_i ≤ room_i bytes; shared by the ILP (``build_layer_ilp``) and the exact solver
    (``planner/hetero_exact.py``), so both price one formula."""

    a_s: tuple[float, ...]  # seconds per layer on position i's group
    b_s: tuple[float, ...]  # fixed seconds of position i: 2 boundary transfers + embedding (first) + head (last)
    mem_bytes: tuple[float, ...]  # bytes per layer: weights/grads/optimizer state + in-flight activations
    room_bytes: tuple[float, ...]  # usable bytes of the position's device after its fixed terms
    layers: int
    micro_batches: int


def layer_terms(workload: Workload, sc: ShapeCosts, zero: int, order: tuple[int, ...],
                headroom: float = 0.0) -> LayerTerms:
    """The layer ILP's constants: per position, time per layer and fixed time; memory per layer (in-flight
    activations min(S − i, m)) and the room under (1 − headroom) × capacity less the framework reserve."""
    S = len(order)
    bpp = _state_bytes_per_param(workload, zero, sc.owners)
    a, b, mem, room = [], [], [], []
    for i, g in enumerate(order):
        c = sc.costs[g]
        a.append(c.layer_s)
        b.append(2.0 * sc.p2p_s + (c.emb_s if i == 0 else 0.0) + (c.out_s if i == S - 1 else 0.0))
        inflight = max(1, min(S - i, sc.micro_batches))
        mem.append(c.layer_params * bpp + c.act_bytes_per_layer * inflight)
        fixed = c.transient_bytes + (c.emb_params * bpp if i == 0 else 0.0) \
            + ((c.out_params * bpp + c.logits_bytes) if i == S - 1 else 0.0)
        budget = ((1.0 - headroom) * c.capacity_bytes - FRAMEWORK_RESERVED_BYTES) / (1.0 + FRAGMENTATION_FRACTION)
        room.append(budget - fixed)
    return LayerTerms(tuple(a), tuple(b), tuple(mem), tuple(room), workload.model.layers, sc.micro_batches)


def build_layer_ilp(workload: Workload, sc: ShapeCosts, zero: int, order: tuple[int, ...],
                    headroom: float = 0.0) -> tuple[pulp.LpProblem, dict]:
    """For one stage-to-group assignment ``order`` (shape-local group index per stage position):
    min (m − 1)·z + Σ τ_i  s.t.  τ_i = n_i·a_g(i) + extras, z ≥ τ_i, Σ n_i = L, n_i ≥ 1 integer, and the memory of
    position i on its group ≤ (1 − headroom) × capacity (in-flight activations min(S − i, m))."""
    lt = layer_terms(workload, sc, zero, order, headroom)
    L, S = lt.layers, len(order)
    prob = pulp.LpProblem("stage_layers", pulp.LpMinimize)
    n = [pulp.LpVariable(f"n_{i}", lowBound=1, upBound=L, cat="Integer") for i in range(S)]
    z = pulp.LpVariable("z", lowBound=0)
    tau = []
    for i in range(S):
        t_i = lt.a_s[i] * n[i] + lt.b_s[i]
        tau.append(t_i)
        prob += z >= t_i
        prob += (lt.mem_bytes[i] / GiB) * n[i] <= lt.room_bytes[i] / GiB
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
