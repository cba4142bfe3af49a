"""Partial plans: the knobs a user (or a published run) leaves out are chosen as the best feasible choice that the
framework can launch, and reported as ``chosen``.

``"tp=8,pp=16"`` fixes the degrees it names (the others default to 1, ``dp`` is derived); micro-batch size, virtual
stages, ZeRO stage, recompute, sequence parallelism and FSDP re-sharding are searched (the fastest plan that fits
wins; if none fits, the one with the least memory is returned with its reasons).  Only an impossible pin is an error.
"""
from __future__ import annotations

import itertools

import numpy as np

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency
from parplan.models.estimate import Estimate, estimate_plan, validate_plan
from parplan.models.hardware_context import framework_of
from parplan.models.plan import Plan, make_plan, parse_plan_values, split_pairs
from parplan.models.plan_arrays import PlanArrays
from parplan.models.families import cost_model
from parplan.planner.budget import COMPLETION_COST, DEFAULT_MAX_PLANS, BudgetError, check_max_plans
from parplan.workloads.transformer import Workload

CHOSEN_KNOBS = ("mbs", "vpp", "zero", "recompute", "sp", "reshard")


def chosen_knobs(workload) -> tuple:
    """The knobs a partial plan may leave out: the shared ones and the family's own (``EXTRA_KNOBS`` of its cost
    model, e.g. the MoE family's ep and etp)."""
    return tuple(getattr(cost_model(workload), "EXTRA_KNOBS", ())) + CHOSEN_KNOBS
MAX_COMPLETION_MBS = 64
MAX_COMPLETION_VPP = 16


def _options(knob: str, base: dict, workload: Workload, dp: int, fw, dpn: int) -> list:
    mdl, job = workload.model, workload.training

    if knob == "mbs":
        per_dp = job.global_batch // dp if job.global_batch % dp == 0 else 0
        cap = min(per_dp, MAX_COMPLETION_MBS, fw.max_mbs or MAX_COMPLETION_MBS)
        return [b for b in range(1, cap + 1) if per_dp % b == 0] or [1]
    if knob == "vpp":
        pp = base.get("pp", 1)
        if pp == 1 or not fw.vpp:
            return [1]
        return [v for v in range(1, MAX_COMPLETION_VPP + 1) if mdl.layers % (pp * v) == 0 or v == 1]
    if knob == "zero":
        return list(fw.zero)
    if knob == "recompute":  # what the framework launches and the family prices
        return [r for r in fw.recompute if r in cost_model(workload).RECOMPUTE_MODES]
    if knob == "sp":
        if base.get("tp", 1) == 1:
            return [False]
        return {"always-with-tp": [True], "none": [False]}.get(fw.sp, [True, False])
    if knob == "reshard":
        return [True, False] if fw.reshard_after_forward_optional else [True]
    # a family's own knobs (ep, etp): the values its search space offers (validate_plan applies the folding rule)
    from parplan.planner.spaces import space_module

    return [int(x) for x in space_module(workload).knob_values(knob, workload, fw, dpn)]


def default_layout(workload, plan: Plan) -> Plan:
    """A plan that does not name its context-parallel layout runs the framework's default one (the first of
    ``FrameworkProfile.cp_kinds``: ring for Megatron-Core's ``--cp-comm-type p2p``, Ulysses for DeepSpeed)."""
    from dataclasses import replace

    fw = framework_of(workload)
    if plan.cp > 1 and plan.cp_kind == "ring" and fw.cp_kinds[0] != "ring":
        return replace(plan, cp_kind=fw.cp_kinds[0])
    return plan


def parse_partial(text_or_values, n_devices: int) -> dict:
    """Typed values of a (possibly partial) plan string or mapping; ``dp`` derived when absent."""
    values = parse_plan_values(split_pairs(text_or_values))
    if not values:
        raise SpecError(f"no key=value in plan {text_or_values!r}", key="plan", hint='write e.g. "tp=8,pp=4"')
    make_plan({k: v for k, v in values.items() if k in ("dp", "tp", "pp", "cp", "ep")}, n_devices)  # degree checks
    return values


def complete_plan(workload: Workload, cluster: Cluster, given: dict, eff: Efficiency | None = None, *,
                  max_plans: int | None = None, progress=None) -> tuple[Estimate, dict]:
    """Best completion of the pinned ``given`` values; returns (estimate, chosen knobs).

    Work budget: the completions (the product of the free knobs' choices) are counted before any is tried; each
    is validated one by one and counts ``COMPLETION_COST`` plans of ``max_plans`` (default
    ``DEFAULT_MAX_PLANS``: 200,000 completions); above it a ``BudgetError``.  ``progress``: ``f(done, total,
    None)`` every 1,024 completions."""
    fw = framework_of(workload)
    n = cluster.n_devices
    if not cluster.is_homogeneous:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups; a plan string describes "
                        "a homogeneous plan", key="groups",
                        hint="give a heterogeneous plan with --plan-file, or let `parplan suggest` plan it")
    degrees = make_plan({k: v for k, v in given.items() if k in ("dp", "tp", "pp", "cp", "ep")}, n)
    base = {**{k: getattr(degrees, k) for k in ("dp", "tp", "pp", "cp", "ep")}, **given}
    if "cp_kind" not in given and base["cp"] > 1:  # the framework's default layout (not searched: as launched)
        base["cp_kind"] = fw.cp_kinds[0]
    free = [k for k in chosen_knobs(workload) if k not in given]
    if base.get("zero", 3) != 3 and "reshard" in free:
        free.remove("reshard")
    dpn = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    grids = [_options(k, base, workload, degrees.dp, fw, dpn) for k in free]
    total = int(np.prod([len(g) for g in grids], dtype=object)) if grids else 1
    limit = int(DEFAULT_MAX_PLANS if max_plans is None else check_max_plans(max_plans))
    if total * COMPLETION_COST > limit:
        choices = ", ".join(f"{k} ×{len(g)}" for k, g in zip(free, grids) if len(g) > 1)
        raise BudgetError(f"the partial plan leaves {total:,} completions to try ({choices}); each is validated one "
                          f"by one and counts {COMPLETION_COST} plans, above the budget of {limit:,} plans",
                          key="--max-plans", hint="pin more knobs in the plan (e.g. mbs=…, zero=…, recompute=…), "
                                                  f"or raise --max-plans to {total * COMPLETION_COST:,}")
    plans, first_error, messages, fw_reasons = [], None, set(), set()
    for done, combo in enumerate(itertools.product(*grids)):
        if progress is not None and not done & 1023:
            progress(done, total, None)
        values = {**base, **dict(zip(free, combo))}
        if "reshard" in free and values.get("zero", 0) != 3:
            del values["reshard"]  # only FSDP re-shards; the other ZeRO stages keep the default
        try:
            p = Plan(**values)
        except SpecError as err:
            first_error = first_error or err
            messages.add(err.message)
            continue
        reasons = fw.plan_reasons(p, dpn, workload)  # what the framework cannot launch, before the model's checks
        if reasons:
            fw_reasons.add(reasons[0])
            continue
        try:
            validate_plan(workload, cluster, p)
        except SpecError as err:
            first_error = first_error or err
            messages.add(err.message)
            continue
        plans.append(p)
    plans = list(dict.fromkeys(plans))
    if not plans:
        if first_error is not None and (not free or len(messages) == 1):
            raise first_error  # the pins alone make every completion invalid: the plain error says why
        why = f" ({first_error.message})" if first_error is not None else (
            f" ({next(iter(fw_reasons))})" if len(fw_reasons) == 1 else "")
        pins = ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in given.items())
        raise SpecError(f"no plan with {pins} can run under "
                        f"{fw.id}{why}", key="plan",
                        hint="change the pinned knobs, or let `parplan suggest` search them")
    if len(plans) == 1:
        best = plans[0]
    else:
        res = cost_model(workload).evaluate_workload(workload, cluster, PlanArrays.from_plans(plans), eff)
        t = np.where(res["fits"], res["step_time_s"], np.inf)
        best = plans[int(np.argmin(t))] if np.isfinite(t).any() else plans[int(np.argmin(res["memory_peak_bytes"]))]
    est = estimate_plan(workload, cluster, best, eff)
    chosen = {k: getattr(best, k) for k in free if k != "reshard" or best.zero == 3}
    return est, chosen
