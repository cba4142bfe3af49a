"""The public API: ``estimate`` (one plan).  ``suggest`` and ``check`` are added by the planner."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Union

from parplan.hardware.catalog import load_cluster
from parplan.hardware.types import Cluster
from parplan.models.estimate import Estimate, estimate_plan
from parplan.models.plan import Plan, make_plan, parse_plan
from parplan.workloads.loader import load_workload
from parplan.workloads.transformer import Workload

WorkloadRef = Union[str, Path, dict, Workload]
ClusterRef = Union[str, Path, dict, Cluster]
PlanRef = Union[str, dict, Plan]


def _plan(plan: PlanRef, n_devices: int) -> Plan:
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, dict):
        return make_plan(plan, n_devices)
    return parse_plan(plan, n_devices)


def estimate(workload: WorkloadRef, cluster: ClusterRef, plan: PlanRef, *, max_plans: int | None = None,
             progress: Any = None, **training_overrides: Any) -> Estimate:
    """Predict step time, throughput, MFU and memory of ``plan`` for ``workload`` on ``cluster``.

    ``workload``/``cluster``: a YAML path, a catalog id, a parsed mapping or the loaded object.
    ``plan``: ``"tp=8,pp=4,mbs=1,zero=1,recompute=selective,sp=true"`` (dp derived), a dict, or a ``Plan``.  A
    partial plan (``"tp=8,pp=16"``) gets the knobs it leaves out (mbs, vpp, zero, recompute, sp, reshard; ep and
    etp for mixture-of-experts workloads) chosen
    as the fastest fitting choice the workload's framework can launch; they are reported in ``Estimate.chosen``.
    ``training_overrides``: ``seq_len``, ``global_batch``, ``precision``, ``optimizer``, ``framework``.
    ``max_plans``: work budget of a partial plan's completion (``parplan.planner.budget``); ``progress``:
    ``f(done, total, None)`` while completions are tried.
    """
    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    partial = _partial(plan, c, w)
    if partial is None:
        return estimate_plan(w, c, _plan(plan, c.n_devices))
    from parplan.planner.complete import complete_plan

    est, chosen = complete_plan(w, c, partial, max_plans=max_plans, progress=progress)
    return replace(est, chosen=chosen)


def _partial(plan: PlanRef, c: Cluster, w: Workload) -> dict | None:
    """The pinned values of a partial plan (knobs left out are chosen: fastest that fits, launchable by the
    framework), or None for a ``Plan``, a complete plan, or a multi-group cluster (a plan file's business)."""
    if isinstance(plan, Plan) or not c.is_homogeneous:
        return None
    from parplan.planner.complete import chosen_knobs, parse_partial

    values = parse_partial(plan, c.n_devices)
    return None if all(k in values for k in chosen_knobs(w) if k != "reshard") else values


def _complete(w: Workload, c: Cluster, plan: PlanRef, max_plans: int | None = None, progress: Any = None) -> Plan:
    """The plan itself, or a partial plan's completion (as ``estimate`` chooses it)."""
    partial = _partial(plan, c, w)
    if partial is None:
        return _plan(plan, c.n_devices)
    from parplan.planner.complete import complete_plan

    return complete_plan(w, c, partial, max_plans=max_plans, progress=progress)[0].plan


# --- planner (issue 3): search, rank and check plans ------------------------------------------------------------
from parplan.planner.check import CheckResult  # noqa: E402
from parplan.planner.planset import PlanSet  # noqa: E402


def _search_options(fix, memory_headroom, allow_cross_node_tp, max_mbs, max_plans=None):
    from parplan.planner.budget import DEFAULT_MAX_PLANS, check_max_plans
    from parplan.planner.search import SearchOptions
    from parplan.planner.space import DEFAULT_MAX_MBS, parse_fix

    opts = SearchOptions(fix=parse_fix(fix), memory_headroom=memory_headroom,
                         allow_cross_node_tp=bool(allow_cross_node_tp),
                         max_mbs=max_mbs if max_mbs is not None else DEFAULT_MAX_MBS,
                         max_plans=check_max_plans(max_plans) if max_plans is not None else DEFAULT_MAX_PLANS)
    opts.validate()
    opts.memory_headroom, opts.max_mbs = float(opts.memory_headroom), int(opts.max_mbs)
    return opts


def suggest(workload: WorkloadRef, cluster: ClusterRef, *, objective: str | None = None, top: int = 10,
            fix: Any = None, memory_headroom: float = 0.0, allow_cross_node_tp: bool = False,
            max_mbs: int | None = None, price_per_hour: float | None = None,
            target_tokens_per_s: float | None = None, deadline: Any = None, token_budget: Any = None,
            max_nodes: int | None = None, progress: Any = None, max_plans: int | None = None,
            **training_overrides: Any) -> PlanSet:
    """Search every valid plan of ``workload`` on ``cluster`` and return the ``top`` best (0 = all that fit).

    ``objective``: ``"throughput"`` (default; tokens/s), ``"memory"`` (peak bytes per device), ``"cost"`` (USD per
    token; needs ``price_per_hour`` — USD per device-hour — or a catalog price) or ``"devices"`` (the fewest whole
    nodes reaching ``target_tokens_per_s``, or ``token_budget`` tokens — ``"15T"`` — within ``deadline`` — seconds
    or ``"30d"``; node counts up to ``max_nodes``, default the cluster's).  ``fix``: pins, ``"tp=8,pp=4"``, a list
    of ``"k=v"`` or a dict.  ``memory_headroom``: fraction of device memory kept free (0.0–0.5).  ``progress``:
    ``f(done, total, nodes_or_None)``.  ``training_overrides``: ``seq_len``, ``global_batch``, ``precision``, ….
    """
    from parplan.planner.planset import suggest_plans

    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    return suggest_plans(w, c, objective=objective, top=top,
                         options=_search_options(fix, memory_headroom, allow_cross_node_tp, max_mbs, max_plans),
                         price_per_hour=price_per_hour, target_tokens_per_s=target_tokens_per_s, deadline=deadline,
                         token_budget=token_budget, max_nodes=max_nodes, progress=progress)


def check(workload: WorkloadRef, cluster: ClusterRef, plan: PlanRef | None = None, *,
          min_tokens_per_s: float | None = None, max_step_time_s: float | None = None,
          max_memory_fraction: float | None = None, min_mfu: float | None = None, fix: Any = None,
          allow_cross_node_tp: bool = False, max_mbs: int | None = None, progress: Any = None,
          max_plans: int | None = None, **training_overrides: Any) -> CheckResult:
    """Does ``plan`` — or, without one, any valid plan — meet every requirement?

    Requirements left ``None`` are not checked, except memory: ``max_memory_fraction`` defaults to 1.0 (the plan
    fits; a fraction above 1 is an error: a plan that does not fit never passes).  Returns ``CheckResult(ok, plan,
    failures)``: the passing plan (best throughput), or the closest one with the requirements it misses.
    ``max_plans``: work budget of the search (or of a partial plan's completion).
    """
    from parplan.planner.check import check_plans, requirements

    requirements(min_tokens_per_s, max_step_time_s, max_memory_fraction, min_mfu)  # bad values before any work
    opts = _search_options(fix, 0.0, allow_cross_node_tp, max_mbs, max_plans)
    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    p = _complete(w, c, plan, max_plans=opts.max_plans, progress=progress) if plan is not None else None
    return check_plans(w, c, p, options=opts, progress=progress,
                       min_tokens_per_s=min_tokens_per_s, max_step_time_s=max_step_time_s,
                       max_memory_fraction=max_memory_fraction, min_mfu=min_mfu)


# --- reference executor (issue 4): simulate one step op by op ---------------------------------------------------
def simulate(workload: WorkloadRef, cluster: ClusterRef, plan: PlanRef, *, schedule: str | None = None,
             slowdown: Any = None, mode: str = "auto", p2p: str = "blocking", max_events: int | None = None,
             progress: Any = None, **training_overrides: Any):
    """Play one optimizer step of ``plan`` out in the discrete-event reference executor; returns a ``Schedule``.

    ``schedule``: ``"1f1b"``, ``"gpipe"``, ``"interleaved"`` or ``"zb-h1"`` (default: interleaved when vpp>1, else
    1f1b).  ``slowdown``: stragglers, ``["12=1.5", "stage:3=2"]`` (global rank or stage → factor on its compute).
    ``mode``: ``"replica"`` (one pipeline replica, exact by symmetry), ``"full"`` (every replica, ≤ 64 devices) or
    ``"auto"``.  ``p2p``: ``"blocking"`` (Megatron's default) or ``"async"`` sends.  ``max_events``: work budget,
    the most events (ops + transfers) the simulation may play (default
    ``parplan.executor.budget.DEFAULT_MAX_EVENTS``), counted before the program is built; above it an
    ``EventBudgetError``, a ``SpecError`` (auto mode falls back to one replica first).  ``progress``: ``f(done, total, None)``.
    """
    from parplan.executor.simulate import simulate_plan

    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    return simulate_plan(w, c, _plan(plan, c.n_devices), schedule=schedule, slowdown=slowdown, mode=mode, p2p=p2p,
                         max_events=max_events, progress=progress)
