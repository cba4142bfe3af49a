"""Public API of the process-network family (mAPN: algorithm × data-parallel variants of a streaming pipeline on
an embedded multicore platform): price one variant, enumerate and filter all of them, play one on the engine.

    >>> from parplan.variants import suggest
    >>> front = suggest("examples/subtitling.yaml", "odroid-xu4").rows      # the feasible Pareto set
"""
from __future__ import annotations

from parplan.hardware.platform import load_platform
from parplan.planner.spaces.variants import VariantSet, parse_variant, row_of, search, single
from parplan.workloads.variants import load_variants

__all__ = ["estimate", "suggest", "simulate", "VariantSet"]


def estimate(model, hw, plan: "str | None" = None) -> dict:
    """Metrics of one variant (``stage=alternativexR@core,…``; unnamed stages: first alternative, fewest replicas,
    first allowed core type), with the constraint checks."""
    spec, plat = load_variants(model), load_platform(hw)
    cols, m = single(spec, plat, parse_variant(plan or "", spec, plat))
    row = row_of(spec, plat, cols, m, 0)
    row["checks"] = {k: bool(v[0]) for k, v in m["checks"].items()}
    row["stage_time_s"] = {s.name: float(m["stage_time_s"][i][0]) for i, s in enumerate(spec.stages)}
    row["workload"], row["platform"] = spec.name, plat.id
    return row


def suggest(model, hw, *, objective: str = "pareto", fix: "dict | None" = None, top: int = 10) -> VariantSet:
    return search(load_variants(model), load_platform(hw), objective=objective, fix=fix, top=top)


def simulate(model, hw, plan: "str | None" = None, *, n_items: int = 400) -> dict:
    from parplan.executor.process_network import play

    spec, plat = load_variants(model), load_platform(hw)
    return play(spec, plat, parse_variant(plan or "", spec, plat), n_items)
