"""Public API of the diffusion-transformer inference family (``family: dit-inference``): estimate one sequence-
parallel plan of a denoising step, search SP kind × degrees × TP × replicas, and play a plan on the discrete-event
executor.

    >>> from parplan.dit import suggest
    >>> ps = suggest("examples/dit-flux-64k.yaml", "h100-sxm-80gb:2x8", top=3)
    >>> [r["sp"] for r in ps.rows]
"""
from __future__ import annotations

from parplan.executor.dit import DiTSim
from parplan.models.dit import DiTEstimate
from parplan.planner.spaces.dit import DiTPlans

__all__ = ["estimate", "suggest", "simulate", "DiTEstimate", "DiTPlans", "DiTSim"]


def _load(model, hw):
    from parplan.hardware.catalog import load_cluster
    from parplan.models.dit_terms import dit_context
    from parplan.workloads.dit import load_dit

    spec, cluster = load_dit(model), load_cluster(hw)
    return spec, cluster, dit_context(spec, cluster)


def estimate(model, hw, plan: "str | None" = None) -> DiTEstimate:
    """One plan (``sp=usp,u=8,r=2,…``; None: the workload's defaults) priced by the closed form."""
    from parplan.models.dit import estimate_plan, parse_plan

    spec, cluster, c = _load(model, hw)
    return estimate_plan(spec, cluster, parse_plan(plan, spec, c), c)


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10, objective: "str | None" = None) -> DiTPlans:
    """The ranked plans (objective ``latency`` or ``throughput``)."""
    from parplan.planner.spaces.dit import search

    spec, cluster, _ = _load(model, hw)
    return search(spec, cluster, fix=fix, top=top, objective=objective)


def simulate(model, hw, plan: "str | None" = None) -> DiTSim:
    """One plan's denoising step played on the discrete-event executor."""
    from parplan.executor.dit import simulate_plan
    from parplan.models.dit import parse_plan

    spec, cluster, c = _load(model, hw)
    return simulate_plan(spec, cluster, parse_plan(plan, spec, c), c)
