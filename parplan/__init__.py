"""parplan — plan, predict and validate parallel configurations: large-model training and serving on GPU clusters,
task-parallel programs on NUMA CPUs, DSP dataflow kernels, edge/cloud pipelines, replicated services and offload.

Public API (imported lazily so that ``parplan.hardware`` and ``parplan.workloads`` stay light):
``estimate``, ``suggest``, ``check``, ``simulate``, ``plan_hetero``, ``sweep``, ``load_workload``, ``load_cluster``,
``parse_plan``, ``SpecError``; serving: ``estimate_serving``, ``suggest_serving``, ``check_serving``,
``load_serving``, ``parse_deployment``; ``parplan.launch.export_plan`` (launch configs) and ``parplan.plots`` (figures).
The families with their own workload files have their own modules: ``parplan.tasks``, ``parplan.dataflow``,
``parplan.layerchain``, ``parplan.layertrain``, ``parplan.variants``, ``parplan.replication``, ``parplan.offload``.
"""
from __future__ import annotations

from typing import Any

from parplan.errors import ParplanError, SpecError

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (tool.setuptools.dynamic), the CLI prints it

_LAZY = {
    "estimate": "parplan.api",
    "load_workload": "parplan.workloads.loader",
    "load_cluster": "parplan.hardware.catalog",
    "parse_plan": "parplan.models.plan",
    "Plan": "parplan.models.plan",
    "Estimate": "parplan.models.estimate",
    "suggest": "parplan.api",
    "check": "parplan.api",
    "simulate": "parplan.api",
    "plan_hetero": "parplan.planner.hetero",
    "sweep": "parplan.planner.sweep",
    "estimate_serving": "parplan.serving",
    "suggest_serving": "parplan.serving",
    "check_serving": "parplan.serving",
    "load_serving": "parplan.workloads.serving",
    "parse_deployment": "parplan.models.serving_plan",
}

__all__ = ["ParplanError", "SpecError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'parplan' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names plus the lazily imported API, so ``dir(parplan)`` and completion list the API."""
    return sorted(set(globals()) | set(_LAZY))
