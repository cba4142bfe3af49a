"""Public API of the replicated-service family (state-machine replication on the servers of a CPU machine):
estimate one plan, search scheme × threads × rings × batch, simulate a plan on the discrete-event executor.

    >>> from parplan.replication import suggest
    >>> best = suggest("examples/kv-store.yaml", "smr-3x-16c-10gbe").rows[0]
"""
from __future__ import annotations

from parplan.hardware.cpu import load_cpu_machine
from parplan.models.replication import ReplicationEstimate, estimate_plan, parse_plan
from parplan.planner.spaces.replication import ReplicationPlans, search
from parplan.workloads.replication import load_replication

__all__ = ["estimate", "suggest", "simulate", "ReplicationEstimate", "ReplicationPlans"]


def estimate(model, hw, plan: "str | None" = None) -> ReplicationEstimate:
    spec, machine = load_replication(model), load_cpu_machine(hw)
    return estimate_plan(spec, machine, parse_plan(plan, spec, machine))


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10, objective: "str | None" = None
            ) -> ReplicationPlans:
    """The ranked plans (``search`` refuses pinned values outside the ranges a ``--plan`` accepts)."""
    spec, machine = load_replication(model), load_cpu_machine(hw)
    return search(spec, machine, fix=fix, top=top, objective=objective)


def simulate(model, hw, plan: "str | None" = None, *, seed: int = 0, load: "float | None" = None,
             n_cmds: "int | None" = None):
    """Saturation throughput (``load`` None) or latency at ``load`` cmd/s of one plan on the executor."""
    from parplan.executor.replication import simulate_plan

    spec, machine = load_replication(model), load_cpu_machine(hw)
    return simulate_plan(spec, machine, parse_plan(plan, spec, machine), load=load, n_cmds=n_cmds, seed=seed)
