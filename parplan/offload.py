"""Public API of the offload family (kernel chains offloaded from actors to a GPU, a coprocessor or an integrated
GPU; the texture-vs-octree heritage case): estimate one plan, search placements × residency × chunks × API over the
size sweep with break-even sizes, simulate a plan on the discrete-event executor.

    >>> from parplan.offload import suggest
    >>> ps = suggest("examples/mandelbrot-offload.yaml", "caf-k40-phi")
    >>> [(b["accelerator"], b["n_star"]) for b in ps.break_even]
"""
from __future__ import annotations

from parplan.hardware.offload import load_offload_node
from parplan.models.offload import OffloadEstimate, break_even, estimate_plan, parse_plan
from parplan.planner.spaces.offload import OffloadPlans, search
from parplan.workloads.offload import load_offload

__all__ = ["estimate", "suggest", "simulate", "heritage", "break_even_size", "OffloadEstimate", "OffloadPlans"]


def estimate(model, hw, plan: "str | None" = None) -> OffloadEstimate:
    spec, node = load_offload(model), load_offload_node(hw)
    return estimate_plan(spec, node, parse_plan(plan, spec, node))


def break_even_size(model, hw, plan: "str | None" = None) -> float:
    """n* of a plan against the all-CPU chain (inf when the offload never wins)."""
    spec, node = load_offload(model), load_offload_node(hw)
    return break_even(spec, node, parse_plan(plan, spec, node))


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10) -> OffloadPlans:
    return search(load_offload(model), load_offload_node(hw), fix=fix, top=top)


def heritage(model, hw, device: "str | None" = None):
    """The texture-vs-octree report of a heritage workload (storage, edits, frame query, upload)."""
    from parplan.models.offload_heritage import heritage_report

    return heritage_report(load_offload(model), load_offload_node(hw), device)


def simulate(model, hw, plan: "str | None" = None, *, requests: "int | None" = None):
    from parplan.executor.offload import simulate_plan

    spec, node = load_offload(model), load_offload_node(hw)
    return simulate_plan(spec, node, parse_plan(plan, spec, node), requests=requests)
