"""Reference executor: a discrete-event simulator that plays a plan's schedule out, op by op.

``simulate_plan`` (a plan on a workload and cluster, costs from the analytical model), ``simulate_costs``
(hand-made ``PipelineCosts``), ``Schedule`` (the result), ``chrome_trace`` / ``write_chrome_trace``,
``compare_plan`` (analytical vs simulated), ``model_costs`` (a plan's per-op costs from its workload family's
executor module), ``estimate_events`` / ``plan_events`` (a simulation's events, counted before it is built: its work
budget, ``budget``).  See ``simulate`` for what is simulated and the symmetry argument.
"""
from parplan.executor.agreement import Agreement, agreement, compare_plan
from parplan.executor.budget import DEFAULT_MAX_EVENTS, EventEstimate, estimate_events
from parplan.executor.costs import PipelineCosts
from parplan.executor.families import model_costs
from parplan.executor.schedules import SCHEDULES, default_schedule
from parplan.executor.simulate import Event, Schedule, parse_slowdowns, plan_events, simulate_costs, simulate_plan
from parplan.executor.trace import chrome_trace, write_chrome_trace

__all__ = ["Agreement", "DEFAULT_MAX_EVENTS", "Event", "EventEstimate", "PipelineCosts", "SCHEDULES", "Schedule",
           "agreement", "chrome_trace", "compare_plan", "default_schedule", "estimate_events", "model_costs",
           "parse_slowdowns", "plan_events", "simulate_costs", "simulate_plan", "write_chrome_trace"]
