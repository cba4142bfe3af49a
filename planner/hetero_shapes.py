"""Pipeline shapes of heterogeneous planning (``planner/hetero.py``): which device groups a pipeline's stages run
on, how many such shapes exist (the work budget), the shallowest pipeline a group's memory allows, and the lower
bounds that prune shapes before any ILP is built."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from parplan.hardware.types import Cluster
from parplan.models.hetero import group_costs, link_between
from parplan.models.training import FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES
from parplan.planner.hetero_ilp import _state_bytes_per_param
from parplan.workloads.transformer import Workload

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
                      zero: int, headroom: float = 0.0) -> int | None:
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
        if dyn * (1 + FRAGMENTATION_FRACTION) + FRAMEWORK_RESERVED_BYTES <= (1.0 - headroom) * c.capacity_bytes:
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
