"""Analytical model vs reference executor on one plan: step time and peak memory side by side.

Peak memory of the simulation: the time-invariant parts of the heaviest stage (weights, gradients, optimizer
states, ZeRO-3 gather buffers, transient working set — the model's values) plus the activation peak the executor
*observed* on that stage (allocated when a forward starts, freed when its backward ends), with the model's
fragmentation allowance on the dynamic part and its framework reserve.  Only the activation term is simulated.
"""
from __future__ import annotations

from dataclasses import dataclass

from parplan.executor.results import Schedule
from parplan.executor.simulate import simulate_plan
from parplan.models.plan import Plan
from parplan.models.training import FRAGMENTATION_FRACTION

STATIC_PARTS = ("params_bytes", "grads_bytes", "optimizer_bytes", "zero3_gather_buffer_bytes", "transient_bytes")


@dataclass(frozen=True)
class Agreement:
    plan: Plan
    schedule: str
    micro_batches: int
    analytical_step_s: float
    simulated_step_s: float
    analytical_memory_bytes: float
    simulated_memory_bytes: float
    analytical_bubble_s: float
    simulated_bubble_s: float
    analytical_dp_exposed_s: float
    simulated_dp_exposed_s: float
    fits: bool
    # MoE plans with an all-to-all: the exposed all-to-all of the critical stage per step (the simulated one
    # without full recompute's replay, which the model books as recompute)
    analytical_ep_exposed_s: float = 0.0
    simulated_ep_exposed_s: float = 0.0
    has_a2a: bool = False
    simulated_ep_wait_s: float = 0.0  # the critical device's wait for the exposed all-to-all, replay included

    @property
    def simulated_ep_share(self) -> float:
        """Share of the simulated step the critical device waits for the exposed all-to-all."""
        return self.simulated_ep_wait_s / self.simulated_step_s if self.simulated_step_s > 0 else 0.0

    @property
    def step_diff(self) -> float:
        """(analytical − simulated) / simulated."""
        return (self.analytical_step_s - self.simulated_step_s) / self.simulated_step_s

    @property
    def memory_diff(self) -> float:
        return (self.analytical_memory_bytes - self.simulated_memory_bytes) / self.simulated_memory_bytes

    def ok(self, tolerance: float) -> bool:
        return abs(self.step_diff) <= tolerance and abs(self.memory_diff) <= tolerance

    def row(self) -> dict:
        return {"plan": self.plan.to_string(), "schedule": self.schedule, "micro_batches": self.micro_batches,
                "analytical_step_s": self.analytical_step_s, "simulated_step_s": self.simulated_step_s,
                "step_diff": self.step_diff, "analytical_memory_bytes": self.analytical_memory_bytes,
                "simulated_memory_bytes": self.simulated_memory_bytes, "memory_diff": self.memory_diff,
                "analytical_bubble_s": self.analytical_bubble_s, "simulated_bubble_s": self.simulated_bubble_s,
                "analytical_dp_exposed_s": self.analytical_dp_exposed_s,
                "simulated_dp_exposed_s": self.simulated_dp_exposed_s, "fits": self.fits,
                **({"analytical_ep_exposed_s": self.analytical_ep_exposed_s,
                    "simulated_ep_exposed_s": self.simulated_ep_exposed_s} if self.has_a2a else {})}


def simulated_memory_peak(sched: Schedule) -> float:
    a = sched.analytical
    stage = int(round(a["heaviest_memory_stage"]))
    static = sum(a[k] for k in STATIC_PARTS)
    act = sched.devices[stage].peak_activation_bytes
    # the analytical model's fragmentation fraction of the dynamic part (0 under XLA:TPU's compiled buffers)
    dyn = a["memory_peak_bytes"] - a["fragmentation_bytes"] - a["framework_reserved_bytes"]
    frag = a["fragmentation_bytes"] / dyn if dyn > 0 else FRAGMENTATION_FRACTION
    return (static + act) * (1.0 + frag) + a["framework_reserved_bytes"]


def agreement(sched: Schedule) -> Agreement:
    a = sched.analytical
    return Agreement(plan=sched.plan, schedule=sched.schedule, micro_batches=sched.micro_batches,
                     analytical_step_s=a["step_time_s"],
                     simulated_step_s=sched.step_time_s, analytical_memory_bytes=a["memory_peak_bytes"],
                     simulated_memory_bytes=simulated_memory_peak(sched), analytical_bubble_s=a["pipeline_bubble_s"],
                     simulated_bubble_s=sched.bubble_s, analytical_dp_exposed_s=a["dp_comm_exposed_s"],
                     simulated_dp_exposed_s=sched.exposed_comm_s["dp"], fits=bool(a["fits"]),
                     analytical_ep_exposed_s=float(a.get("ep_comm_exposed_s", 0.0)),
                     simulated_ep_exposed_s=sched.exposed_comm_s.get("ep", 0.0)
                     - float(sched.totals.get("ep_a2a_recompute_s", 0.0)), has_a2a=sched.has_a2a,
                     simulated_ep_wait_s=sched.exposed_comm_s.get("ep", 0.0))


def compare_plan(workload, cluster, plan: Plan, eff=None, *, max_events: int | None = None, progress=None) -> Agreement:
    """Simulate ``plan`` with its default schedule and compare with the analytical estimate (``max_events``: the
    simulation's work budget, see ``simulate_costs``)."""
    return agreement(simulate_plan(workload, cluster, plan, eff=eff, mode="replica", max_events=max_events,
                                   progress=progress))
