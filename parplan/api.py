"""The public API: ``estimate``, ``suggest``, ``check``, ``simulate``.

Every function takes the workload and the cluster as a catalog id, a YAML (or Hugging Face config.json) path, a
parsed mapping or the loaded object.  On a multi-group (mixed) cluster: ``estimate`` and ``simulate`` take a
heterogeneous plan (a ``HeteroPlan`` or a plan-file path), ``suggest`` runs the heterogeneous ILP planner and returns
its ``HeteroPlanSet``, ``check`` says why it does not apply and what to run instead."""
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


def _plan(plan: PlanRef, n_devices: int, workload: Workload | None = None) -> Plan:
    """The ``Plan`` of a plan string or mapping; with ``workload``, one that does not name its context-parallel
    layout gets the framework's default (``planner.complete.default_layout``)."""
    if isinstance(plan, Plan):
        return plan
    p = make_plan(plan, n_devices) if isinstance(plan, dict) else parse_plan(plan, n_devices)
    if workload is not None and p.cp > 1:
        from parplan.models.plan import parse_plan_values, split_pairs
        from parplan.planner.complete import default_layout

        named = plan if isinstance(plan, dict) else parse_plan_values(split_pairs(plan))
        if "cp_kind" not in named:
            p = default_layout(workload, p)
    return p


def _hetero_plan(plan: Any, c: Cluster):
    """A heterogeneous plan for the multi-group cluster ``c``: a ``HeteroPlan`` or the path of a plan file."""
    from parplan.errors import SpecError
    from parplan.models.hetero import HeteroPlan

    if isinstance(plan, HeteroPlan):
        return plan
    if isinstance(plan, (str, Path)) and str(plan).endswith((".yaml", ".yml")):
        from parplan.models.hetero_planfile import load_plan_file

        return load_plan_file(str(plan), c)
    raise SpecError(f"cluster {c.name!r} has {len(c.groups)} device groups; a plan string or dict describes a "
                    "homogeneous plan", key="plan",
                    hint="give a heterogeneous plan (a HeteroPlan, or a plan-file YAML path: --plan-file), or let "
                         "suggest plan one")


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
    On a multi-group cluster ``plan`` is a ``HeteroPlan`` or a plan-file path, and the result a ``HeteroResult``.
    """
    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    if not c.is_homogeneous:
        from parplan.models.families import hetero_model

        return hetero_model(w).evaluate_hetero(w, c, _hetero_plan(plan, c))
    partial = _partial(plan, c, w)
    if partial is None:
        return estimate_plan(w, c, _plan(plan, c.n_devices, w))
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
        return _plan(plan, c.n_devices, w)
    from parplan.planner.complete import complete_plan

    return complete_plan(w, c, partial, max_plans=max_plans, progress=progress)[0].plan


# --- planner (issue 3): search, rank and check plans ------------------------------------------------------------
from parplan.planner.check import CheckResult  # noqa: E402
from parplan.planner.planset import PlanSet  # noqa: E402,F401  (re-exported: suggest returns one)


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
            fix: Any = None, memory_headroom: float | None = None, allow_cross_node_tp: bool = False,
            max_mbs: int | None = None, price_per_hour: float | None = None,
            target_tokens_per_s: float | None = None, deadline: Any = None, token_budget: Any = None,
            max_nodes: int | None = None, progress: Any = None, max_plans: int | None = None,
            group_ties: bool = True, solver: str = "exact", time_limit_s: float = 10.0,
            max_configurations: int | None = None, **training_overrides: Any):
    """Search every valid plan of ``workload`` on ``cluster`` and return the ``top`` best (0 = all that fit).

    ``objective``: ``"throughput"`` (default; tokens/s), ``"memory"`` (peak bytes per device), ``"cost"`` (USD per
    token; needs ``price_per_hour`` — USD per device-hour — or a catalog price) or ``"devices"`` (the fewest whole
    nodes reaching ``target_tokens_per_s``, or ``token_budget`` tokens — ``"15T"`` — within ``deadline`` — seconds
    or ``"30d"``; node counts up to ``max_nodes``, default the cluster's).  ``fix``: pins, ``"tp=8,pp=4"``, a list
    of ``"k=v"`` or a dict.  ``memory_headroom``: fraction of device memory kept free (0.0–0.5; default
    ``parplan.planner.search.DEFAULT_MEMORY_HEADROOM``, see ``HEADROOM_HELP``).  ``group_ties``: equal-outcome
    plans are one entry (the simplest; ``PlanSet.equivalent`` counts them).  ``progress``:
    ``f(done, total, nodes_or_None)``.  ``training_overrides``: ``seq_len``, ``global_batch``, ``precision``, ….

    On a multi-group cluster: the heterogeneous ILP planner (``parplan.planner.hetero.plan_hetero``; ``solver``
    cbc | highs, ``time_limit_s`` per solve, ``max_configurations`` work budget, micro-batch sizes 1, 2, 4, 8 up to
    ``max_mbs``), returning its ``HeteroPlanSet`` (candidates best first, both baselines); options it does not take
    are a ``SpecError`` naming them.
    """
    from parplan.planner.planset import suggest_plans
    from parplan.planner.search import DEFAULT_MEMORY_HEADROOM

    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    if not c.is_homogeneous:
        hetero_unsupported(c, objective=objective, fix=fix,
                           allow_cross_node_tp=allow_cross_node_tp, price_per_hour=price_per_hour,
                           target_tokens_per_s=target_tokens_per_s, deadline=deadline, token_budget=token_budget,
                           max_nodes=max_nodes, framework=training_overrides.get("framework"))
        from parplan.planner.spaces import hetero_planner

        mbs = tuple(b for b in (1, 2, 4, 8) if max_mbs is None or b <= max_mbs)
        return hetero_planner(w).plan_hetero(w, c, solver=solver, time_limit_s=time_limit_s, mbs_options=mbs,
                                             progress=progress, max_configurations=max_configurations,
                                             max_plans=max_plans, memory_headroom=memory_headroom)
    headroom = DEFAULT_MEMORY_HEADROOM if memory_headroom is None else memory_headroom
    return suggest_plans(w, c, objective=objective, top=top,
                         options=_search_options(fix, headroom, allow_cross_node_tp, max_mbs, max_plans),
                         price_per_hour=price_per_hour, target_tokens_per_s=target_tokens_per_s, deadline=deadline,
                         token_budget=token_budget, max_nodes=max_nodes, progress=progress, group_ties=group_ties)


# options of suggest the heterogeneous planner does not take (it maximizes throughput over its own space)
_HETERO_OPTIONS = {"objective": "--objective", "fix": "--fix",
                   "allow_cross_node_tp": "--allow-cross-node-tp", "price_per_hour": "--price-per-hour",
                   "target_tokens_per_s": "--target-tokens-per-s", "deadline": "--deadline",
                   "token_budget": "--token-budget", "max_nodes": "--max-nodes", "framework": "--framework"}


def hetero_unsupported(c: Cluster, **given: Any) -> None:
    """A ``SpecError`` naming the options given that the heterogeneous planner does not take."""
    from parplan.errors import SpecError

    used = [flag for k, flag in _HETERO_OPTIONS.items()
            if given.get(k) not in (None, False, (), [], {}) and not (k == "objective" and given[k] == "throughput")]
    if used:
        raise SpecError(f"{', '.join(used)} not supported on a multi-group cluster ({len(c.groups)} device groups)",
                        key=used[0], hint="the heterogeneous planner maximizes throughput")


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
    from parplan.planner.check import check_plans, hetero_check_refusal, requirements

    requirements(min_tokens_per_s, max_step_time_s, max_memory_fraction, min_mfu)  # bad values before any work
    opts = _search_options(fix, 0.0, allow_cross_node_tp, max_mbs, max_plans)
    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    if not c.is_homogeneous:
        raise hetero_check_refusal(c)
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
    On a multi-group cluster ``plan`` is a ``HeteroPlan`` or a plan-file path; every distinct pipeline is played
    out with 1F1B (``parplan.executor.hetero.simulate_hetero``; ``schedule``, ``slowdown``, ``mode``, ``p2p`` other
    than their defaults are a ``SpecError``) and the result is a ``HeteroSimulation``.
    """
    from parplan.executor.simulate import simulate_plan

    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    if not c.is_homogeneous:
        from parplan.executor.hetero import simulate_hetero

        check_hetero_simulation(c, schedule=schedule, slowdown=slowdown, mode=mode, p2p=p2p)
        return simulate_hetero(w, c, _hetero_plan(plan, c))
    return simulate_plan(w, c, _plan(plan, c.n_devices, w), schedule=schedule, slowdown=slowdown, mode=mode, p2p=p2p,
                         max_events=max_events, progress=progress)


def check_hetero_simulation(c: Cluster, *, schedule=None, slowdown=None, mode="auto", p2p="blocking") -> None:
    """The executor's heterogeneous path plays each pipeline with blocking 1F1B, one replica per distinct
    pipeline: other schedules, stragglers, modes or async p2p are a ``SpecError`` naming the option."""
    from parplan.errors import SpecError

    given = {"--schedule": schedule not in (None, "1f1b"), "--slowdown": bool(slowdown), "--mode": mode != "auto",
             "--p2p": p2p != "blocking"}
    used = [k for k, v in given.items() if v]
    if used:
        raise SpecError(f"{', '.join(used)} not supported on a multi-group cluster ({len(c.groups)} device groups): "
                        "its simulation plays each distinct pipeline once with blocking 1F1B", key=used[0],
                        hint="drop the option, or simulate one group as a single-group cluster")
