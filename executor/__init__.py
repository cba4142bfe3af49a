"""Reference executor: a discrete-event simulator that plays a plan's schedule out, op by op.

``simulate_plan`` (a plan on a workload and cluster, costs from the analytical model), ``simulate_costs``
(hand-made ``PipelineCosts``), ``Schedule`` (the result), ``chrome_trace`` / ``write_chrome_trace``,
``compare_plan`` (analytical vs simulated), ``model_costs`` (a plan's per-op costs from its workload family's
executor module), ``estimate_events`` / ``plan_events`` (a simulation's events, counted before it is built: its work
budget, ``budget``).  See ``simulate`` for what is simulated and the symmetry argument.
"""
from __future__ import annotations

import importlib
from typing import Any

# names imported lazily (a module __getattr__): importing one executor module, e.g. executor.budget for the CLI's
# help texts, does not load the engine, the schedules or numpy
_LAZY = {
    "Agreement": "agreement", "agreement": "agreement", "compare_plan": "agreement",
    "DEFAULT_MAX_EVENTS": "budget", "EventEstimate": "budget", "estimate_events": "budget",
    "PipelineCosts": "costs", "model_costs": "families", "SCHEDULES": "schedules", "default_schedule": "schedules",
    "Event": "simulate", "Schedule": "simulate", "parse_slowdowns": "simulate", "plan_events": "simulate",
    "simulate_costs": "simulate", "simulate_plan": "simulate",
    "chrome_trace": "trace", "write_chrome_trace": "trace",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"parplan.executor.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'parplan.executor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
