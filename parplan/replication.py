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


def _check_fix(fix: "dict | None", machine) -> dict:
    """Pinned knobs in the ranges a plan accepts (threads ≤ the replica's hardware threads, rings ≤ MAX_RINGS,
    batch ≤ MAX_BATCH), as ``parse_plan`` checks a ``--plan``."""
    from parplan.errors import SpecError
    from parplan.workloads.replication import MAX_BATCH, MAX_RINGS

    fix = dict(fix or {})
    hi = {"threads": machine.socket.cores * machine.socket.smt, "rings": MAX_RINGS, "batch": MAX_BATCH}
    for k, cap in hi.items():
        if k in fix:
            v = fix[k]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= cap:
                raise SpecError(f"bad value {v!r}: {k} is a whole number in 1..{cap:,}", key=f"--fix {k}")
    return fix


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10, objective: "str | None" = None
            ) -> ReplicationPlans:
    spec, machine = load_replication(model), load_cpu_machine(hw)
    return search(spec, machine, fix=_check_fix(fix, machine), top=top, objective=objective)


def simulate(model, hw, plan: "str | None" = None, *, seed: int = 0, load: "float | None" = None,
             n_cmds: "int | None" = None):
    """Saturation throughput (``load`` None) or latency at ``load`` cmd/s of one plan on the executor."""
    from parplan.executor.replication import simulate_plan

    spec, machine = load_replication(model), load_cpu_machine(hw)
    return simulate_plan(spec, machine, parse_plan(plan, spec, machine), load=load, n_cmds=n_cmds, seed=seed)
