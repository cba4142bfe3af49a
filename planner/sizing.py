"""Sizing: the fewest whole nodes (of the cluster's node type) on which some plan reaches a throughput target, and
the smallest node count on which anything fits.

Node counts searched: ``n_start`` … ``max_nodes``, where ``n_start`` is the 100 %-MFU bound (no plan can beat the
device's dense peak: ``tokens/s ≤ devices × peak / model FLOPs per token``).  First the powers of two from
``n_start`` (and ``max_nodes`` itself) are searched upwards until one reaches the target (``n_hi``); then every node
count in ``[n_start, n_hi)`` that admits a valid (dp, tp, pp, cp) factorization is searched in ascending order, and
the first that reaches the target is the answer.  If no power of two up to ``max_nodes`` (nor ``max_nodes``)
reaches the target, the target is reported unreachable within ``max_nodes``.

Work budget (``planner.budget``): the searches of all node counts share ``--max-plans`` (each is paid for before it
runs: its plans plus a fixed ``SEARCH_COST``); a ladder that cannot be searched within it is refused
(``BudgetError``), an exact scan that cannot is stopped and the power of two is reported as an upper bound, with a
note.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.families import cost_model
from parplan.models.hardware_context import framework_of, hardware_context
from parplan.models.plan_arrays import PlanArrays
from parplan.planner.budget import BudgetError, PlanBudget
from parplan.planner.search import Evaluated, SearchOptions, run_search
from parplan.planner.space import factorizations
from parplan.workloads.transformer import Workload

_DURATION = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_TOKENS = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_duration(text, key: str = "--deadline") -> float:
    """Seconds from ``3600``, ``"90m"``, ``"12h"``, ``"30d"`` or ``"2w"``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        m = _NUM.match(str(text))
        if not m or m.group(2) not in ("", *_DURATION):
            raise SpecError(f"cannot read duration {text!r}", key=key, hint='write seconds or e.g. "30d", "12h"')
        value, unit = float(m.group(1)), m.group(2)
    out = value * (_DURATION[unit] if unit else 1.0)
    if not (math.isfinite(out) and out > 0):
        raise SpecError(f"bad value {text!r}: must be a finite duration > 0", key=key,
                        hint='write seconds or e.g. "30d", "12h"')
    return out


MAX_TOKENS = 1e18  # a token budget: 10^4 times the largest published pre-training runs (~10^14 tokens)


def parse_tokens(text, key: str = "--token-budget") -> float:
    """Tokens from ``2e12``, ``"15T"``, ``"300B"`` (K, M, B/G, T, P = 10^3 … 10^15)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        m = _NUM.match(str(text))
        if not m or m.group(2) not in _TOKENS:
            raise SpecError(f"cannot read token count {text!r}", key=key, hint='write e.g. "15T", "300B" or 2e12')
        value, unit = float(m.group(1)), m.group(2)
    out = value * _TOKENS[unit]
    if not (math.isfinite(out) and 1 <= out <= MAX_TOKENS):  # (1e30T was accepted: 10^12 times any run)
        raise SpecError(f"bad value {text!r}: must be a finite number of tokens from 1 to {MAX_TOKENS:g}", key=key,
                        hint='write e.g. "15T", "300B" or 2e12')
    return out


def scale_cluster(cluster: Cluster, nodes: int) -> Cluster:
    """The same node type with ``nodes`` nodes (named ``NAME[n nodes]`` when the count differs)."""
    g = cluster.group
    if nodes == g.nodes:
        return cluster
    return replace(cluster, name=f"{cluster.name}[{nodes} nodes]", groups=(replace(g, nodes=int(nodes)),))


def model_flops_per_token(workload: Workload, cluster: Cluster) -> float:
    hw = hardware_context(cluster.group, workload.training.precision, framework=framework_of(workload))
    one = np.ones(1, dtype=np.int64)
    P = PlanArrays(dp=one, tp=one, pp=one, cp=one, mbs=one, vpp=one, zero=0 * one, recompute=0 * one,
                   sp=np.zeros(1, dtype=bool))
    with np.errstate(all="ignore"):
        flops = float(np.asarray(cost_model(workload).evaluate(workload.model, workload.training, hw, P)["model_flops_per_step"])[0])
    return flops / float(workload.training.tokens_per_step)


def has_factorization(workload: Workload, cluster: Cluster, nodes: int, options: SearchOptions) -> bool:
    g = cluster.group
    tp, *_ = factorizations(workload, nodes * g.devices_per_node, g.devices_per_node, fix=options.fix,
                            allow_cross_node_tp=options.allow_cross_node_tp)
    return tp.size > 0


@dataclass
class SizingResult:
    target_tokens_per_s: float
    n_nodes: Optional[int]  # None: not reached within max_nodes
    devices_per_node: int
    max_nodes: int
    n_start: int  # node counts below this cannot reach the target (100 %-MFU bound)
    tried: list = field(default_factory=list)  # (nodes, best tokens/s among fitting plans or nan)
    deadline_s: Optional[float] = None
    token_budget: Optional[float] = None
    notes: list = field(default_factory=list)  # e.g. the answer is an upper bound (work budget)

    @property
    def n_devices(self) -> Optional[int]:
        return None if self.n_nodes is None else self.n_nodes * self.devices_per_node

    def to_dict(self) -> dict:
        return {"target_tokens_per_s": self.target_tokens_per_s, "n_nodes": self.n_nodes,
                "n_devices": self.n_devices, "devices_per_node": self.devices_per_node, "max_nodes": self.max_nodes,
                "deadline_s": self.deadline_s, "token_budget": self.token_budget, "notes": list(self.notes),
                "node_counts_searched": [{"nodes": n, "best_tokens_per_s": (None if math.isnan(t) else t)}
                                         for n, t in self.tried]}


def best_tokens_per_s(ev: Evaluated) -> float:
    if not ev.fits.any():
        return float("nan")
    return float(np.max(ev.metrics["tokens_per_s"][ev.fits]))


SEARCH_COST = 4_000  # plans of the budget one search costs beyond its own plans (its fixed ~2.5 ms)
CHECK_COST = 50  # … checking that a node count has a valid factorization (~0.05 ms)


def _sizing_over_budget(budget: PlanBudget, n: int, why: str) -> BudgetError:
    return BudgetError(f"sizing: {budget.searches} node count(s) searched so far priced {budget.spent:,} plans; "
                       f"searching {n:,} nodes ({why}) would pass the budget of {budget.limit:,}", key="--max-plans",
                       hint="raise --max-plans, or lower --max-nodes")


def find_nodes(workload: Workload, cluster: Cluster, options: SearchOptions, predicate: Callable[[Evaluated], bool],
               n_start: int, max_nodes: int, progress=None, tried: list | None = None,
               max_scan: int | None = None, budget: PlanBudget | None = None,
               notes: list | None = None) -> tuple[Optional[int], Optional[Evaluated]]:
    """Smallest node count in [n_start, max_nodes] whose search satisfies ``predicate`` (see module docstring).

    Work budget: every search and factorization check is paid from ``budget`` (default: ``options.max_plans``)
    before it runs — a search ``SEARCH_COST`` + its plans, a check ``CHECK_COST``.  Where the powers of two cannot be
    searched within it, a ``BudgetError``; where the exact scan below the first power of two that satisfies the
    predicate cannot, the scan stops there and that power of two is returned (an upper bound, said in ``notes``)."""
    tried = tried if tried is not None else []
    budget = budget if budget is not None else PlanBudget(int(options.max_plans))
    searched: set = set()

    def factorizable(n: int) -> bool:
        if budget.remaining < CHECK_COST:
            raise _sizing_over_budget(budget, n, "checking its factorizations")
        budget.spent += CHECK_COST
        return has_factorization(workload, cluster, n, options)

    def search(n: int) -> Evaluated:
        if budget.remaining < SEARCH_COST:
            raise _sizing_over_budget(budget, n, "a search")
        searched.add(n)
        try:
            ev = run_search(workload, scale_cluster(cluster, n), options, max_plans=budget.remaining - SEARCH_COST)
        except BudgetError as err:
            counted = f"{'' if getattr(err, 'exact', True) else 'more than '}{getattr(err, 'counted', 0):,} plans"
            raise _sizing_over_budget(budget, n, counted) from None
        budget.charge(SEARCH_COST + len(ev.space))
        tried.append((n, best_tokens_per_s(ev)))
        return ev

    n_start = max(1, int(n_start))
    if n_start > max_nodes:
        return None, None
    ladder = []
    k = 1 << max(0, math.ceil(math.log2(n_start)))
    if n_start not in ladder:
        ladder.append(n_start)
    while k <= max_nodes:
        if k > n_start:
            ladder.append(k)
        k *= 2
    if ladder[-1] != max_nodes:
        ladder.append(max_nodes)
    n_hi, ev_hi = None, None
    step = 0
    for n in ladder:
        step += 1
        if progress:
            progress(step, len(ladder), n)
        if not factorizable(n):
            continue
        ev = search(n)
        if predicate(ev):
            n_hi, ev_hi = n, ev
            break
    if n_hi is None:
        return None, None
    try:
        if max_scan is not None:  # too many node counts to scan exactly: report the ladder point (an upper bound)
            below = []
            for n in range(n_start, n_hi):
                if n not in searched and factorizable(n):
                    below.append(n)
                    if len(below) > max_scan:
                        return n_hi, ev_hi
            candidates = below
        else:
            candidates = (n for n in range(n_start, n_hi) if n not in searched and factorizable(n))
        span = max(1, n_hi - n_start)
        for n in candidates:
            if progress:
                progress(n - n_start + 1, span, n)
            ev = search(n)
            if predicate(ev):
                return n, ev
    except BudgetError:
        if notes is not None:
            notes.append(f"{n_hi} nodes is an upper bound of the fewest: scanning every node count below it would "
                         f"pass the budget of {budget.limit:,} plans (raise --max-plans for the exact count)")
    return n_hi, ev_hi


def min_nodes_bound(workload: Workload, cluster: Cluster, target_tokens_per_s: float) -> int:
    """The fewest nodes that could reach the target at 100 % MFU (no plan beats the device's dense peak)."""
    g = cluster.group
    fpt = model_flops_per_token(workload, cluster)
    peak = hardware_context(g, workload.training.precision).peak_flops_per_s
    return max(1, math.ceil(target_tokens_per_s * fpt / peak / g.devices_per_node * (1.0 - 1e-12)))


def size_for_target(workload: Workload, cluster: Cluster, options: SearchOptions, target_tokens_per_s: float,
                    max_nodes: int, progress=None, budget: PlanBudget | None = None
                    ) -> tuple[SizingResult, Optional[Evaluated]]:
    g = cluster.group
    n_start = min_nodes_bound(workload, cluster, target_tokens_per_s)
    res = SizingResult(target_tokens_per_s=float(target_tokens_per_s), n_nodes=None,
                       devices_per_node=g.devices_per_node, max_nodes=int(max_nodes), n_start=n_start)
    n, ev = find_nodes(workload, cluster, options,
                       lambda e: best_tokens_per_s(e) >= target_tokens_per_s, n_start, max_nodes,
                       progress=progress, tried=res.tried, budget=budget, notes=res.notes)
    res.n_nodes = n
    res.tried.sort()
    return res, ev


def best_time_to_train(ev: Evaluated, token_budget: float, reliability=None) -> float:
    """The shortest goodput-aware expected time to train ``token_budget`` tokens among the fitting plans (inf when
    none fits)."""
    from parplan.planner.search import plan_goodput

    idx = np.flatnonzero(ev.fits)
    if idx.size == 0:
        return float("inf")
    return float(np.min(plan_goodput(ev, idx, token_budget, reliability)["time_to_train_s"]))


def size_for_deadline(workload: Workload, cluster: Cluster, options: SearchOptions, token_budget: float,
                      deadline_s: float, max_nodes: int, reliability=None, progress=None,
                      budget: PlanBudget | None = None) -> tuple[SizingResult, Optional[Evaluated]]:
    """The fewest nodes on which some plan trains ``token_budget`` tokens within ``deadline_s`` by the goodput-aware
    expected time (failures, checkpoints and restarts included; more nodes fail more often, so the answer can be
    above the failure-free one).  Node counts as ``size_for_target`` with the target ``budget / deadline`` (a
    failure-free bound: goodput ≤ 1)."""
    g = cluster.group
    target = float(token_budget) / float(deadline_s)
    n_start = min_nodes_bound(workload, cluster, target)
    res = SizingResult(target_tokens_per_s=target, n_nodes=None, devices_per_node=g.devices_per_node,
                       max_nodes=int(max_nodes), n_start=n_start, deadline_s=float(deadline_s),
                       token_budget=float(token_budget))
    n, ev = find_nodes(workload, cluster, options,
                       lambda e: best_time_to_train(e, token_budget, reliability) <= deadline_s, n_start, max_nodes,
                       progress=progress, tried=res.tried, budget=budget, notes=res.notes)
    res.n_nodes = n
    res.tried.sort()
    return res, ev
