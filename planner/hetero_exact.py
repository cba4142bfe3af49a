"""Exact in-process solvers of the two heterogeneous-planning integer programs (``planner/hetero_ilp.py``), by the
structure of each problem instead of branch and bound — the default ``--solver exact``; ``cbc`` / ``highs`` solve the
same programs as ILPs and the tests hold the optima equal.

**Layer program** (one stage-to-group order): min (m − 1)·z + Σ_i (a_i·n_i + b_i) s.t. z ≥ a_i·n_i + b_i,
Σ n_i = L, 1 ≤ n_i ≤ U_i (U_i = ⌊room_i / mem_i⌋, the memory row).  For a fixed bottleneck z every position holds at
most c_i(z) = min(U_i, ⌊(z − b_i)/a_i⌋) layers and Σ a_i·n_i is least when the layers beyond one each go to the
cheapest positions first (unit costs: greedy is optimal).  At an optimum z equals some τ_j = a_j·k + b_j, so the
minimum over those S·L candidate values of (m − 1)·z + Σ b_i + greedy(z) is the program's optimum (derivation:
docs/heterogeneous.md, "exact solvers").

**Data program** (replicas of T types, R_t each): min T s.t. T ≥ z_t·m_k + F_t for every replica k of type t,
Σ m_k = M, m_k ≥ 1.  A makespan T admits ⌊(T − F_t)/z_t⌋ micro-batches on each replica of type t, so T* is the least
candidate z_t·j + F_t (j = 1..M) where Σ_t R_t·⌊(T − F_t)/z_t⌋ ≥ M and T ≥ max_t (z_t + F_t); the surplus is then
taken from the replicas finishing last, one micro-batch at a time (the lexicographically least finish times).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from parplan.planner.hetero_ilp import LayerTerms

_EPS = 1e-9  # relative slack on ⌊·⌋ of a ratio that is an integer up to rounding (the ILP solvers' tolerance)


class ExactSolver:
    """Marker for ``make_solver("exact")``: ``plan_shape`` calls the functions below instead of an ILP solve."""

    name = "exact"


@dataclass(frozen=True)
class LayerSolution:
    status: str  # "Optimal" | "Infeasible"
    objective_s: float
    layers: tuple[int, ...]  # n_i per stage position


def _floor(x: np.ndarray) -> np.ndarray:
    return np.floor(x + _EPS * np.maximum(1.0, np.abs(x)))


def solve_layers(lt: LayerTerms) -> LayerSolution:
    """The layer program's optimum (module docstring)."""
    a, b = np.asarray(lt.a_s, float), np.asarray(lt.b_s, float)
    mem, room = np.asarray(lt.mem_bytes, float), np.asarray(lt.room_bytes, float)
    S, L, m = len(a), int(lt.layers), int(lt.micro_batches)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(mem > 0, _floor(room / np.where(mem > 0, mem, 1.0)), np.where(room >= 0, L, -1))
    cap = np.minimum(cap, L - (S - 1)).astype(np.int64)  # n_i ≥ 1 elsewhere leaves at most L − S + 1 here
    if S > L or (cap < 1).any() or int(cap.sum()) < L:
        return LayerSolution("Infeasible", float("inf"), ())
    # candidate bottlenecks: every τ_j = a_j·k + b_j reachable on position j
    k = np.arange(1, int(cap.max()) + 1, dtype=float)
    Z = (a[:, None] * k[None, :] + b[:, None])[k[None, :] <= cap[:, None]]
    Z = np.unique(Z)
    C = np.minimum(cap[None, :], _floor((Z[:, None] - b[None, :]) / a[None, :])).astype(np.int64)  # (Nc, S)
    ok = (C >= 1).all(axis=1) & (C.sum(axis=1) >= L)
    Z, C = Z[ok], C[ok]
    order = np.argsort(a, kind="stable")  # cheapest positions take the extra layers first
    extra_cap = C[:, order] - 1
    before = np.cumsum(extra_cap, axis=1) - extra_cap
    extra = np.clip((L - S) - before, 0, extra_cap)
    n_sorted = 1 + extra
    tau_sum = (n_sorted * a[order][None, :]).sum(axis=1) + b.sum()
    obj = (m - 1) * Z + tau_sum
    best = int(np.argmin(obj))
    n = np.empty(S, dtype=np.int64)
    n[order] = n_sorted[best]
    z = float(np.max(a * n + b))  # the bottleneck the split really has (≤ the candidate)
    return LayerSolution("Optimal", (m - 1) * z + float(np.sum(a * n + b)), tuple(int(x) for x in n))


def solve_data(bottleneck_s: list[float], fill_s: list[float], replicas: list[int],
               total_micro_batches: int) -> tuple[float, list[int]]:
    """The typed data program's optimum makespan and per-replica shares, type by type (module docstring)."""
    z = np.asarray(bottleneck_s, float)
    F = np.asarray(fill_s, float)
    R = np.asarray(replicas, np.int64)
    M = int(total_micro_batches)
    if int(R.sum()) > M:
        raise ValueError("more replicas than micro-batches")
    j = np.arange(1, M + 1, dtype=float)
    T = np.unique((z[:, None] * j[None, :] + F[:, None]).ravel())
    T = T[T >= float(np.max(z + F))]
    counts = (R[None, :] * np.clip(_floor((T[:, None] - F[None, :]) / z[None, :]), 0, M)).sum(axis=1)
    t_star = float(T[np.argmax(counts >= M)])  # counts are non-decreasing in T; T = max candidate admits M
    cap = np.clip(_floor((t_star - F) / z), 1, M).astype(np.int64)
    shares = [[int(cap[t])] * int(R[t]) for t in range(len(R))]
    surplus = int((R * cap).sum()) - M
    heap = [(-(z[t] * cap[t] + F[t]), t, k) for t in range(len(R)) for k in range(int(R[t]))]
    heapq.heapify(heap)
    while surplus > 0:
        _, t, k = heapq.heappop(heap)
        if shares[t][k] > 1:
            shares[t][k] -= 1
            surplus -= 1
            heapq.heappush(heap, (-(z[t] * shares[t][k] + F[t]), t, k))
    flat = [s for per_type in shares for s in sorted(per_type, reverse=True)]
    makespan = max(float(z[t] * s + F[t]) for t in range(len(R)) for s in shares[t])
    return makespan, flat
