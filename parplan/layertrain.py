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

__all__ = ["estimate", "suggest", "simulate", "load", "LayerEstimate", "LayerPlans"]


def load(model, hw):
    """(spec, hardware view) of a workload and a cluster (file, catalog id or DEVICE:NODESxDPN shorthand)."""
    spec = load_layertrain(model)
    return spec, train_hw(load_cluster(hw), spec.job.dtype)


def estimate(model, hw, plan: "str | None" = None) -> LayerEstimate:
    spec, h = load(model, hw)
    return estimate_plan(spec, h, parse_plan(plan, spec, h))


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10, objective: str = "time") -> LayerPlans:
    spec, h = load(model, hw)
    return search(spec, h, fix=fix, top=top, objective=objective)


def simulate(model, hw, plan: "str | None" = None) -> float:
    """Seconds of one iteration as the reference executor plays it."""
    from parplan.executor.layertrain import simulate_plan

    spec, h = load(model, hw)
    return simulate_plan(spec, h, parse_plan(plan, spec, h))
