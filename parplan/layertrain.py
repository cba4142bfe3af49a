"""Public API of the layer-training family (per-layer data/model parallel CNN training — SplitBrain — and
layer-parallel quantized ADMM for GA-MLPs — pdADMM-G): estimate one plan, search the plans, play one on the engine.

    >>> from parplan.layertrain import estimate
    >>> e = estimate("examples/vgg16-splitbrain.yaml", "v100-eth10-4", "workers=4,modes=hybrid")
"""
from __future__ import annotations

from parplan.hardware.catalog import load_cluster
from parplan.models.layertrain import LayerEstimate, estimate_plan, parse_plan
from parplan.models.layertrain_terms import train_hw
from parplan.planner.spaces.layertrain import LayerPlans, search
from parplan.workloads.layertrain import load_layertrain

__all__ = ["estimate", "suggest", "simulate", "load", "check_simulated", "check_validation", "LayerEstimate",
           "LayerPlans"]


def load(model, hw):
    """(spec, hardware view) of a workload and a cluster (file, catalog id or DEVICE:NODESxDPN shorthand)."""
    spec = load_layertrain(model)
    return spec, train_hw(load_cluster(hw), spec.job.dtype)


def estimate(model, hw, plan: "str | None" = None) -> LayerEstimate:
    spec, h = load(model, hw)
    return estimate_plan(spec, h, parse_plan(plan, spec, h))


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10, objective: str = "time") -> LayerPlans:
    """The ranked plans (``search`` refuses pinned values outside the ranges a ``--plan`` accepts)."""
    spec, h = load(model, hw)
    return search(spec, h, fix=fix, top=top, objective=objective)


# the engine's hybrid iteration makes every worker's collective op wait on every member's: workers² dependencies per
# collective.  Measured (VGG-16, 10 GbE): 256 workers 1.0 s / 94 MB, 1,024 3.3 s / 0.6 GB, 2,048 14 s / 2.2 GB
MAX_SIMULATED_WORKERS = 512


def check_simulated(plan: dict) -> dict:
    """A plan the executor can play within its budget (``MAX_SIMULATED_WORKERS`` for method=hybrid; ADMM's
    messages go to neighbours only, its workers are bounded by the chain's layers)."""
    from parplan.errors import SpecError

    k = plan.get("workers", 1)
    if plan.get("method") == "hybrid" and k > MAX_SIMULATED_WORKERS:
        raise SpecError(f"workers = {k:,} is above {MAX_SIMULATED_WORKERS} for the executor (its collectives "
                        f"make every worker wait on every member: workers² dependencies)", key="--plan workers",
                        hint=f"estimate prices any worker count; simulate a plan with workers ≤ "
                             f"{MAX_SIMULATED_WORKERS}")
    return plan


def check_validation(model, hw, plans: "list[str] | None" = None) -> None:
    """The plans ``validate`` plays (the given ones, else the standard ones: hybrid workloads include workers = every
    device of the cluster) within the executor's budget, checked before any is played."""
    spec, h = load(model, hw)
    for text in plans or []:
        check_simulated(parse_plan(text, spec, h))
    if not plans and spec.admm is None:
        check_simulated({"method": "hybrid", "workers": h.n_devices})


def simulate(model, hw, plan: "str | None" = None) -> float:
    """Seconds of one iteration as the reference executor plays it (refused above ``MAX_SIMULATED_WORKERS``)."""
    from parplan.executor.layertrain import simulate_plan

    spec, h = load(model, hw)
    return simulate_plan(spec, h, check_simulated(parse_plan(plan, spec, h)))
