"""Public API of the layer-chain family (DNNs as layer chains or module DAGs on edge boards and servers): estimate one
plan, search the family's techniques (Neurosurgeon split, PipeEdge DP, PiPar (P, N), CEC-PA placement), simulate a
plan on the engine.

    >>> from parplan.layerchain import suggest
    >>> best = suggest("examples/vit-edge.yaml", "edge-4pi-server").rows[0]
"""
from __future__ import annotations

from parplan.hardware.edge import load_edge_cluster
from parplan.models.edge import EdgeEstimate, estimate_plan, parse_plan
from parplan.planner.spaces.layerchain import EdgePlans, search
from parplan.workloads.layerchain import load_layerchain

__all__ = ["estimate", "suggest", "simulate", "EdgeEstimate", "EdgePlans"]


def estimate(model, hw, plan: "str | None" = None) -> EdgeEstimate:
    spec, cluster = load_layerchain(model), load_edge_cluster(hw)
    if not plan:
        return suggest(spec, cluster, top=1).rows[0]
    return estimate_plan(spec, cluster, parse_plan(plan, spec, cluster))


def suggest(model, hw, *, objective: "str | None" = None, top: int = 10) -> EdgePlans:
    """The ranked plans (``search`` refuses an objective outside ``OBJECTIVES`` before pricing any)."""
    return search(load_layerchain(model), load_edge_cluster(hw), objective=objective, top=top)


def simulate(model, hw, plan: "str | None" = None) -> dict:
    """The plan played on the engine: ``{"plan", "predicted_s", "simulated_s", "error"}``."""
    from parplan.executor.edge_pipeline import simulate_estimate

    spec, cluster = load_layerchain(model), load_edge_cluster(hw)
    return simulate_estimate(spec, cluster, estimate(spec, cluster, plan))
