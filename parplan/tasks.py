"""Public API of the task-graph family (task-parallel programs on NUMA CPU sockets): estimate one plan, search
runtime × threads × sockets × grain × ranks, simulate a plan with the work-stealing executor.

    >>> from parplan.tasks import suggest
    >>> best = suggest("examples/stencil.yaml", "examples/epyc-2s.yaml").rows[0]
"""
from __future__ import annotations

from parplan.hardware.cpu import load_cpu_machine
from parplan.models.tasks import TaskEstimate, estimate_plan, parse_plan
from parplan.planner.spaces.taskgraph import TaskPlans, search
from parplan.workloads.taskgraph import load_taskgraph

__all__ = ["estimate", "suggest", "simulate", "TaskEstimate", "TaskPlans"]


def estimate(model, hw, plan: "str | None" = None) -> TaskEstimate:
    spec, machine = load_taskgraph(model), load_cpu_machine(hw)
    return estimate_plan(spec, machine, parse_plan(plan, spec, machine))


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10, runtimes=None) -> TaskPlans:
    return search(load_taskgraph(model), load_cpu_machine(hw), fix=fix, top=top, runtimes=runtimes)


def simulate(model, hw, plan: "str | None" = None, *, seed: int = 0, max_tasks: int = 200_000):
    from parplan.executor.worksteal import simulate_plan

    spec, machine = load_taskgraph(model), load_cpu_machine(hw)
    return simulate_plan(spec, machine, parse_plan(plan, spec, machine), seed=seed, max_tasks=max_tasks)
