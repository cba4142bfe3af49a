"""Planners.  Dense homogeneous search (issue 3): every valid parallel plan of a training job, ranked, explained,
sized and checked — ``suggest_plans`` → ``PlanSet`` (ranked ``Estimate``s, ``to_frame()`` with ``EXPORT_COLUMNS``),
``check_plans`` → ``CheckResult``; the public entry points are ``parplan.suggest`` and ``parplan.check``.  Work
budgets and option checks: ``planner.budget``.

Names are imported lazily so that importing one planner module does not load the others.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "CheckResult": "parplan.planner.check", "RequirementResult": "parplan.planner.check",
    "check_plans": "parplan.planner.check", "junit_xml": "parplan.planner.check",
    "EXPORT_COLUMNS": "parplan.planner.export",
    "PlanSet": "parplan.planner.planset", "SearchStats": "parplan.planner.planset",
    "advice": "parplan.planner.planset", "suggest_plans": "parplan.planner.planset",
    "OBJECTIVES": "parplan.planner.search", "SearchOptions": "parplan.planner.search",
    "rank": "parplan.planner.search", "run_search": "parplan.planner.search",
    "build_space": "parplan.planner.space", "parse_fix": "parplan.planner.space",
    "BudgetError": "parplan.planner.budget", "DEFAULT_MAX_PLANS": "parplan.planner.budget",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'parplan.planner' has no attribute {name!r}")
