"""parplan — plan, predict and validate parallel configurations for large-model training.

Public API (imported lazily so that ``parplan.hardware`` and ``parplan.workloads`` stay light):
``estimate``, ``suggest``, ``check``, ``load_workload``, ``load_cluster``, ``parse_plan``, ``SpecError``.
"""
from __future__ import annotations

from typing import Any

from parplan.errors import ParplanError, SpecError

__version__ = "0.1.0"

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
}

__all__ = ["ParplanError", "SpecError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'parplan' has no attribute {name!r}")
