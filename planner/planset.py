"""``suggest``: search, rank and package the best plans as a ``PlanSet``; advice when nothing fits."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Optional

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.estimate import Estimate, estimate_from_arrays
from parplan.models.training import PlanArrays
from parplan.planner.budget import (DEFAULT_SIZING_REACH, MAX_NODES, MAX_TOP, BudgetError, PlanBudget,  # noqa: F401
                                    check_number)
from parplan.planner.export import envelope, records
from parplan.planner.export import columns as _columns
from parplan.planner.search import (OBJECTIVES, Evaluated, SearchOptions, evaluate_plans, goodput_summary,
                                    plan_goodput, rank, run_search)
from parplan.planner.sizing import (SizingResult, parse_duration, parse_tokens,
                                    scale_cluster, size_for_deadline, size_for_target)
from parplan.planner.space import fix_string
from parplan.workloads.transformer import Workload

DEFAULT_TOP = 10
# equal outcomes: plans whose step time and peak memory agree within this relative difference are one outcome
# (the model's own arithmetic differs at ~1e-15; distinct plans that really differ do so far above 1e-9)
TIE_EPS = 1e-9
# knobs at their default in the simplest plan of a tie: (plan field, default value) — models/plan.py Plan
_KNOB_DEFAULTS = (("cp", 1), ("ep", 1), ("etp", 1), ("vpp", 1), ("zero", 0), ("recompute", 0), ("sp", False),
                  ("reshard", True), ("shard", 0), ("first_layers", 0), ("last_layers", 0),
                  ("embed_as_layer", False), ("loss_as_layer", False))
_SIMPLER_AXES = ("tp", "pp", "cp", "ep", "etp", "vpp", "zero", "recompute", "sp", "mbs")


def tie_groups(ev: Evaluated, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal-outcome groups of the ranked plans ``order``: (start of each group in ``order``, its size).  Plans in a
    row of the ranking whose step time and peak memory each differ by at most ``TIE_EPS`` (relative) from the
    previous one form one group (the ranking puts equal outcomes next to each other)."""
    n = int(order.size)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    st = np.asarray(ev.metrics["step_time_s"], dtype=float)[order]
    mem = np.asarray(ev.metrics["memory_peak_bytes"], dtype=float)[order]
    with np.errstate(invalid="ignore"):
        same = ((np.abs(np.diff(st)) <= TIE_EPS * np.maximum(np.abs(st[1:]), np.abs(st[:-1])))
                & (np.abs(np.diff(mem)) <= TIE_EPS * np.maximum(np.abs(mem[1:]), np.abs(mem[:-1]))))
    starts = np.flatnonzero(np.r_[True, ~same])
    return starts, np.diff(np.r_[starts, n])


def simplest_first(ev: Evaluated, members: np.ndarray) -> np.ndarray:
    """``members`` (space indices of one tie) ordered simplest first: fewest knobs away from their default, then
    smaller tp, pp, cp, ep, etp, vpp, zero, recompute, sp, mbs; the ranking's own order last."""
    if members.size <= 1:
        return members
    P = ev.space.plans.subset(members)
    nondefault = np.zeros(members.size, dtype=np.int64)
    for k, d in _KNOB_DEFAULTS:
        nondefault += (np.asarray(getattr(P, k)) != d).astype(np.int64)
    keys = [np.arange(members.size)] + [np.asarray(getattr(P, k)).astype(np.int64) for k in reversed(_SIMPLER_AXES)]
    keys.append(nondefault)
    return members[np.lexsort(tuple(keys))]


@dataclass(frozen=True)
class SearchStats:
    n_devices: int
    n_nodes: int
    factorizations: int  # (dp, tp, pp, cp) factorizations of the device count
    valid_plans: int  # plans every rule admits
    evaluated: int  # plans priced by the full cost model
    pruned: int  # plans skipped because their model state alone exceeds the memory limit
    fitting: int  # plans within the memory limit (ranked)
    wall_s: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class PlanSet:
    """The ranked plans of one search: iterable of ``Estimate`` (best first), ``len``, ``.best``, ``.to_frame()``."""

    def __init__(self, ev: Evaluated, order: np.ndarray, objective: str, *, price_per_hour: float | None = None,
                 sizing: SizingResult | None = None, token_budget: float | None = None, wall_s: float = 0.0,
                 equivalent: np.ndarray | None = None, reliability=None):
        self.evaluated = ev
        self.workload: Workload = ev.workload
        self.cluster: Cluster = ev.cluster
        self.objective = objective
        self.price_per_hour = price_per_hour
        self.sizing = sizing
        self.token_budget = token_budget
        self.indices = np.asarray(order, dtype=np.int64)  # into the space, best first
        # how many equal-outcome plans each row stands for (1 when ties are not grouped)
        self.equivalent = (np.ones(self.indices.size, dtype=np.int64) if equivalent is None
                           else np.asarray(equivalent, dtype=np.int64))
        self.plans: PlanArrays = ev.space.plans.subset(self.indices)
        self.results = evaluate_plans(ev.workload, ev.hw, self.plans)
        self.reliability = reliability
        # failures and goodput of each plan training the token budget (None without one)
        self.goodput = (plan_goodput(ev, self.indices, token_budget, reliability)
                        if token_budget is not None and self.indices.size else None)
        self._estimates: Optional[list[Estimate]] = None
        self._best: Optional[Estimate] = None
        self.stats = SearchStats(n_devices=ev.cluster.n_devices, n_nodes=ev.cluster.group.nodes,
                                 factorizations=ev.space.factorizations, valid_plans=ev.n_valid,
                                 evaluated=ev.n_evaluated, pruned=ev.n_valid - ev.n_evaluated, fitting=ev.n_fitting,
                                 wall_s=wall_s or ev.wall_s)

    # --- sequence of Estimate ------------------------------------------------------------------------------
    @property
    def estimates(self) -> list[Estimate]:
        if self._estimates is None:
            self._estimates = [self._estimate(i) for i in range(len(self.indices))]
        return self._estimates

    def __len__(self) -> int:
        return int(self.indices.size)

    def __iter__(self) -> Iterator[Estimate]:
        return iter(self.estimates)

    def __getitem__(self, i: int) -> Estimate:
        if self._estimates is not None or not isinstance(i, (int, np.integer)):
            return self.estimates[i]
        j = range(len(self))[i]  # IndexError as for a list
        return self.best if j == 0 else self._estimate(j)

    def __bool__(self) -> bool:
        return len(self) > 0

    def _estimate(self, i: int) -> Estimate:
        return estimate_from_arrays(self.workload, self.cluster, self.plans.plan(i), self.results, i,
                                    self.evaluated.eff.provenance, self.evaluated.eff.provenance_class)

    @property
    def best(self) -> Optional[Estimate]:
        """The best plan's estimate (without building the others')."""
        if not len(self):
            return None
        if self._estimates is not None:
            return self._estimates[0]
        if self._best is None:
            self._best = self._estimate(0)
        return self._best

    # --- export --------------------------------------------------------------------------------------------
    def to_columns(self) -> dict:
        """The ranked plans as columns (name → array or list, ``parplan.planner.EXPORT_COLUMNS`` in order): the
        table without pandas."""
        return _columns(self.plans, self.results, workload=self.workload.name, cluster=self.cluster.name,
                        n_nodes=self.cluster.group.nodes, n_devices=self.cluster.n_devices,
                        price_per_hour=self.price_per_hour,
                        framework=getattr(self.workload.training, "framework", "megatron-core"),
                        provenance_class=self.evaluated.eff.provenance_class, equivalent=self.equivalent,
                        goodput=self.goodput)

    def to_frame(self) -> "pd.DataFrame":
        """The ranked plans, columns ``parplan.planner.EXPORT_COLUMNS``."""
        import pandas as pd

        from parplan.planner.export import EXPORT_COLUMNS

        return pd.DataFrame(self.to_columns(), columns=list(EXPORT_COLUMNS))

    def to_dict(self) -> dict:
        """The JSON envelope (docs/json_schema.md), kind ``suggest``: the ranked plans and the search."""
        out = {"n_nodes": self.cluster.group.nodes, "objective": self.objective,
               "fixed": fix_string(self.evaluated.options.fix),
               "memory_headroom": self.evaluated.options.memory_headroom, "price_per_hour": self.price_per_hour,
               "search": self.stats.to_dict()}
        if self.sizing is not None:
            out["sizing"] = self.sizing.to_dict()
        if self.token_budget is not None and len(self):
            b = self.best
            out["token_budget"] = self.token_budget
            secs = self.training_time_s
            out["training_time_s"] = secs
            if self.price_per_hour is not None:
                out["training_cost_usd"] = secs / 3600.0 * self.cluster.n_devices * self.price_per_hour
            if self.goodput is not None:
                out["failures"] = goodput_summary(self.evaluated, self.goodput, self.token_budget, b.tokens_per_s,
                                                  self.reliability)
        return envelope("suggest", workload=self.workload.name, cluster=self.cluster.name,
                        n_devices=self.cluster.n_devices, plans=records(self.to_frame()), **out)

    @property
    def training_time_s(self) -> float | None:
        """Time to train the token budget with the best plan: goodput-aware (failures, checkpoints, restarts) under
        the time-to-train objective, failure-free otherwise."""
        if self.token_budget is None or not len(self):
            return None
        if self.objective == "time-to-train" and self.goodput is not None:
            return float(np.asarray(self.goodput["time_to_train_s"])[0])
        return self.token_budget / self.best.tokens_per_s

    # --- explanations --------------------------------------------------------------------------------------
    def explain(self) -> list[str]:
        """Why the best beats the runner-up, and the excluded/infeasible plans by reason."""
        from parplan.planner import explain as _explain

        lines = []
        if len(self) >= 2:
            lines.append(_explain.compare(self[0], self[1], self.objective))
        elif len(self) == 1:
            lines.append("only one plan fits")
        lines.extend(_explain.infeasibility(self.evaluated))
        return lines


def _price(cluster: Cluster, price_per_hour: float | None) -> float | None:
    if price_per_hour is not None:
        return check_number(price_per_hour, "--price-per-hour", lo=0, lo_open=True,
                            hint="USD per device-hour, e.g. 2.5")
    return cluster.group.device.price_per_hour


def suggest_plans(workload: Workload, cluster: Cluster, *, objective: str | None = None, top: int = DEFAULT_TOP,
                  options: SearchOptions | None = None, price_per_hour: float | None = None,
                  target_tokens_per_s: float | None = None, deadline=None, token_budget=None,
                  max_nodes: int | None = None, progress=None, group_ties: bool = True, reliability=None) -> PlanSet:
    """Search and rank (see ``parplan.api.suggest``).  ``group_ties``: equal-outcome plans are one row (the
    simplest plan, ``PlanSet.equivalent`` counting them); ``False`` lists each.  ``reliability``: the failure and
    checkpoint model of ``time-to-train`` (a ``models.primitives.reliability.Reliability``; default failures.yaml):
    plans ranked by the expected time to train ``token_budget``; with ``deadline``, the fewest nodes on which some
    plan's expected time meets it."""
    t0 = time.perf_counter()
    options = options or SearchOptions()
    options.validate()
    budget = parse_tokens(token_budget) if token_budget is not None else None
    deadline_s = parse_duration(deadline) if deadline is not None else None
    check_number(target_tokens_per_s, "--target-tokens-per-s", lo=0, lo_open=True,
                 hint="a throughput in tokens per second, e.g. 2e6")
    top = check_number(top, "--top", lo=0, hi=MAX_TOP, integer=True, what="plans reported; 0 = every plan that fits")
    check_number(max_nodes, "--max-nodes", lo=1, hi=MAX_NODES, integer=True, what="sizing: node counts searched")
    if deadline_s is not None and target_tokens_per_s is not None:
        raise SpecError("give either a throughput target or a deadline with a token budget, not both",
                        key="--deadline")
    if deadline_s is not None and budget is None:
        raise SpecError("a deadline needs a token budget", key="--deadline", hint="add --token-budget, e.g. 15T")
    target = float(target_tokens_per_s) if target_tokens_per_s is not None else (
        budget / deadline_s if deadline_s is not None else None)
    if target is not None and not (math.isfinite(target) and target > 0):
        raise SpecError(f"bad value {deadline!r}: {budget:g} tokens in {deadline_s:g} s is {target:g} tokens/s, "
                        "not a finite throughput", key="--deadline", hint="a longer deadline or a token budget ≥ 1")
    if objective is None:
        objective = "devices" if target is not None else "throughput"
    if objective not in OBJECTIVES:
        raise SpecError(f"unknown objective {objective!r}", key="--objective", allowed=list(OBJECTIVES))
    ttt = objective == "time-to-train"
    if ttt and budget is None:
        raise SpecError("the time-to-train objective needs a token budget", key="--token-budget",
                        hint='add --token-budget, e.g. 15T')
    if ttt and target_tokens_per_s is not None:
        raise SpecError("the time-to-train objective sizes for a deadline, not a throughput target",
                        key="--target-tokens-per-s", hint="give --deadline with --token-budget")
    if objective == "devices" and target is None:
        raise SpecError("the devices objective needs a target", key="--objective",
                        hint="give --target-tokens-per-s, or --deadline with --token-budget")
    if max_nodes is not None and target is None:
        raise SpecError("--max-nodes bounds the sizing search: it needs a target to size for", key="--max-nodes",
                        hint="add --target-tokens-per-s, or --deadline with --token-budget")
    if objective not in ("devices", "time-to-train") and target is not None:
        raise SpecError(f"a throughput target or deadline sizes the cluster: it needs --objective devices, "
                        f"not {objective}", key="--objective")
    if cluster.is_homogeneous is False:
        from parplan.planner.search import check_cluster

        check_cluster(cluster)
    price = _price(cluster, price_per_hour)
    if objective == "cost" and price is None:
        raise SpecError(f"the cost objective needs a price: device {cluster.group.device.id} has no cited "
                        "price_per_hour in the catalog", key="--objective",
                        hint="pass --price-per-hour X (USD per device-hour, your own figure)")
    sizing = None
    if ttt and deadline_s is not None:
        max_n = int(max_nodes) if max_nodes is not None else default_max_nodes(workload, cluster, target)
        sizing, ev = size_for_deadline(workload, cluster, options, budget, deadline_s, max_n, reliability,
                                       progress=progress, budget=PlanBudget(int(options.max_plans)))
        if ev is None:
            ev = run_search(workload, scale_cluster(cluster, max_n), options)
    elif objective == "devices":
        max_n = int(max_nodes) if max_nodes is not None else default_max_nodes(workload, cluster, target)
        sizing, ev = size_for_target(workload, cluster, options, target, max_n, progress=progress,
                                     budget=PlanBudget(int(options.max_plans)))
        if ev is None:
            # not reachable: rank the plans of the largest node count, so the caller can show them (an empty set
            # when it has no valid plan: the requirement is not met either way, the input is fine)
            ev = run_search(workload, scale_cluster(cluster, max_n), options)
        sizing.deadline_s, sizing.token_budget = deadline_s, budget
    else:
        cb = None if progress is None else (lambda done, total: progress(done, total, None))
        ev = run_search(workload, cluster, options, progress=cb)
    if len(ev.space) == 0 and not (sizing is not None and sizing.n_nodes is None):
        from parplan.planner.advice import no_valid_plan_message

        raise SpecError(no_valid_plan_message(ev), key="plan")
    order = rank(ev, objective, price, token_budget=budget, reliability=reliability)
    if group_ties:
        starts, sizes = tie_groups(ev, order)
    else:
        starts, sizes = np.arange(order.size), np.ones(order.size, dtype=np.int64)
    if top:
        starts, sizes = starts[:top], sizes[:top]
    elif starts.size > MAX_TOP:
        raise BudgetError(f"--top 0 reports every plan that fits: {starts.size:,} distinct outcomes here, more than "
                          f"{MAX_TOP:,}", key="--top",
                          hint=f"give --top K (K ≤ {MAX_TOP:,}), or narrow the space with --fix")
    chosen = np.array([simplest_first(ev, order[a:a + k])[0] if k > 1 else order[a] for a, k in zip(starts, sizes)],
                      dtype=np.int64)
    return PlanSet(ev, chosen, objective, price_per_hour=price, sizing=sizing, token_budget=budget,
                   wall_s=time.perf_counter() - t0, equivalent=sizes, reliability=reliability)




def default_max_nodes(workload: Workload, cluster: Cluster, target: float) -> int:
    """Node counts sizing searches when --max-nodes is not given (see ``DEFAULT_SIZING_REACH``)."""
    from parplan.planner.sizing import min_nodes_bound

    return int(min(MAX_NODES, max(cluster.group.nodes, DEFAULT_SIZING_REACH * min_nodes_bound(workload, cluster,
                                                                                              target))))
