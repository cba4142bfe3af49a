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


def estimate(workload: WorkloadRef, cluster: ClusterRef, plan: PlanRef, **training_overrides: Any) -> Estimate:
    """Predict step time, throughput, MFU and memory of ``plan`` for ``workload`` on ``cluster``.

    ``workload``/``cluster``: a YAML path, a catalog id, a parsed mapping or the loaded object.
    ``plan``: ``"tp=8,pp=4,mbs=1,zero=1,recompute=selective,sp=true"`` (dp derived), a dict, or a ``Plan``.  A
    partial plan (``"tp=8,pp=16"``) gets the knobs it leaves out (mbs, vpp, zero, recompute, sp, reshard; ep and
    etp for mixture-of-experts workloads) chosen
    as the fastest fitting choice the workload's framework can launch; they are reported in ``Estimate.chosen``.
    ``training_overrides``: ``seq_len``, ``global_batch``, ``precision``, ``optimizer``, ``framework``.
    """
    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    partial = _partial(plan, c, w)
    if partial is None:
        return estimate_plan(w, c, _plan(plan, c.n_devices))
    from parplan.planner.complete import complete_plan

    est, chosen = complete_plan(w, c, partial)
    return replace(est, chosen=chosen)


def _partial(plan: PlanRef, c: Cluster, w: Workload) -> dict | None:
    """The pinned values of a partial plan (knobs left out are chosen: fastest that fits, launchable by the
    framework), or None for a ``Plan``, a complete plan, or a multi-group cluster (a plan file's business)."""
    if isinstance(plan, Plan) or not c.is_homogeneous:
        return None
    from parplan.planner.complete import chosen_knobs, parse_partial

    values = parse_partial(plan, c.n_devices)
    return None if all(k in values for k in chosen_knobs(w) if k != "reshard") else values


def _complete(w: Workload, c: Cluster, plan: PlanRef) -> Plan:
    """The plan itself, or a partial plan's completion (as ``estimate`` chooses it)."""
    partial = _partial(plan, c, w)
    if partial is None:
        return _plan(plan, c.n_devices)
    from parplan.planner.complete import complete_plan

    return complete_plan(w, c, partial)[0].plan


# --- planner (issue 3): search, rank and check plans ------------------------------------------------------------
from parplan.planner.check import CheckResult  # noqa: E402
from parplan.planner.planset import PlanSet  # noqa: E402


def _search_options(fix, memory_headroom, allow_cross_node_tp, max_mbs):
    from parplan.planner.search import SearchOptions
    from parplan.planner.space import DEFAULT_MAX_MBS, parse_fix

    return SearchOptions(fix=parse_fix(fix), memory_headroom=float(memory_headroom),
                         allow_cross_node_tp=bool(allow_cross_node_tp),
                         max_mbs=int(max_mbs if max_mbs is not None else DEFAULT_MAX_MBS))


def suggest(workload: WorkloadRef, cluster: ClusterRef, *, objective: str | None = None, top: int = 10,
            fix: Any = None, memory_headroom: float = 0.0, allow_cross_node_tp: bool = False,
            max_mbs: int | None = None, price_per_hour: float | None = None,
            target_tokens_per_s: float | None = None, deadline: Any = None, token_budget: Any = None,
            max_nodes: int | None = None, progress: Any = None, **training_overrides: Any) -> PlanSet:
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
    return suggest_plans(w, c, objective=objective, top=int(top),
                         options=_search_options(fix, memory_headroom, allow_cross_node_tp, max_mbs),
                         price_per_hour=price_per_hour, target_tokens_per_s=target_tokens_per_s, deadline=deadline,
                         token_budget=token_budget, max_nodes=max_nodes, progress=progress)


def check(workload: WorkloadRef, cluster: ClusterRef, plan: PlanRef | None = None, *,
          min_tokens_per_s: float | None = None, max_step_time_s: float | None = None,
          max_memory_fraction: float | None = None, min_mfu: float | None = None, fix: Any = None,
          allow_cross_node_tp: bool = False, max_mbs: int | None = None, progress: Any = None,
          **training_overrides: Any) -> CheckResult:
    """Does ``plan`` — or, without one, any valid plan — meet every requirement?

    Requirements left ``None`` are not checked, except memory: ``max_memory_fraction`` defaults to 1.0 (the plan
    fits).  Returns ``CheckResult(ok, plan, failures)``: the passing plan (best throughput), or the closest one with
    the requirements it misses.
    """
    from parplan.planner.check import check_plans

    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    p = _complete(w, c, plan) if plan is not None else None
    return check_plans(w, c, p, options=_search_options(fix, 0.0, allow_cross_node_tp, max_mbs), progress=progress,
                       min_tokens_per_s=min_tokens_per_s, max_step_time_s=max_step_time_s,
                       max_memory_fraction=max_memory_fraction, min_mfu=min_mfu)


# --- reference executor (issue 4): simulate one step op by op ---------------------------------------------------
def simulate(workload: WorkloadRef, cluster: ClusterRef, plan: PlanRef, *, schedule: str | None = None,
             slowdown: Any = None, mode: str = "auto", p2p: str = "blocking", **training_overrides: Any):
    """Play one optimizer step of ``plan`` out in the discrete-event reference executor; returns a ``Schedule``.

    ``schedule``: ``"1f1b"``, ``"gpipe"``, ``"interleaved"`` or ``"zb-h1"`` (default: interleaved when vpp>1, else
    1f1b).  ``slowdown``: stragglers, ``["12=1.5", "stage:3=2"]`` (global rank or stage → factor on its compute).
    ``mode``: ``"replica"`` (one pipeline replica, exact by symmetry), ``"full"`` (every replica, ≤ 64 devices) or
    ``"auto"``.  ``p2p``: ``"blocking"`` (Megatron's default) or ``"async"`` sends.
    """
    from parplan.executor.simulate import simulate_plan

    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    return simulate_plan(w, c, _plan(plan, c.n_devices), schedule=schedule, slowdown=slowdown, mode=mode, p2p=p2p)
