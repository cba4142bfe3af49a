"""What a simulation returns: the step's event timeline (``Event``), per-device and per-link totals
(``DeviceStats``, ``LinkStats``) and the whole ``Schedule``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class Event(NamedTuple):
    """One interval on a track: an op on a device's compute stream, or a transfer on a link."""

    track: str  # device name (compute stream) or link name
    # e.g. "F3", "B3.c1", "W3", "F3.p2" (per-layer part), "p2p B7", "ag3.p0", "grad15.p3" (DP buckets),
    # "a2a-d3.l1" (the all-to-all dispatch of micro-batch 3 in MoE layer 1 of the stage; ".h": its hidden part)
    name: str
    kind: str  # one of engine.KIND_NAMES
    device: int  # simulated device index (replica·pp + stage)
    mb: int
    chunk: int
    part: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class DeviceStats:
    """Where one simulated device's step went (seconds; they sum to the step time)."""

    name: str
    replica: int
    stage: int
    compute_s: float  # forward/backward/wgrad busy, without the parts below
    recompute_s: float
    tp_comm_s: float  # TP/SP/CP collectives inside the layers (synchronous, part of the layer costs)
    pp_p2p_s: float  # blocked in p2p sends
    bubble_s: float  # waiting for other pipeline stages (fill, drain, imbalance, stragglers), incl. the tail
    dp_comm_exposed_s: float  # waiting for DP/ZeRO collectives
    optimizer_s: float
    peak_activation_bytes: float
    slowdown: float
    ep_a2a_s: float = 0.0  # waiting for the exposed expert-parallel all-to-all of MoE layers

    @property
    def busy_s(self) -> float:
        return self.compute_s + self.recompute_s + self.tp_comm_s + self.pp_p2p_s + self.ep_a2a_s + self.optimizer_s

    @property
    def idle_s(self) -> float:
        return self.bubble_s + self.dp_comm_exposed_s


@dataclass(frozen=True)
class LinkStats:
    name: str
    transfers: int
    busy_s: float  # time with at least one transfer on the link
    work_s: float  # sum of the transfers' times alone on the link
    max_concurrent: int
    a2a_work_s: float = 0.0  # of work_s: the expert-parallel all-to-all (exposed and hidden parts)


@dataclass
class Schedule:
    """A simulated step: the event timeline and its totals."""

    schedule: str
    mode: str
    pp: int
    vpp: int
    micro_batches: int
    replicas: int  # replicas simulated (1 in replica mode)
    step_time_s: float
    devices: list  # DeviceStats, one per simulated device
    links: list  # LinkStats
    memory_timeline: list  # per device: (times_s, activation_bytes) numpy arrays (step function, value after t)
    critical_device: int
    exposed_comm_s: dict  # on the critical device: tp, pp_p2p, dp (and ep for MoE plans)
    totals: dict
    notes: list = field(default_factory=list)
    plan: object = None
    workload: str = ""
    cluster: str = ""
    analytical: dict = field(default_factory=dict)  # the model's scalars when simulated from a plan
    events_estimate: object = field(default=None, repr=False, compare=False)  # budget.EventEstimate (before building)
    _event_source: object = field(default=None, repr=False, compare=False)
    _events: object = field(default=None, repr=False, compare=False)

    @property
    def events(self) -> list:
        """Every op and transfer as an ``Event``, sorted by (start, track, end, name); built on first use."""
        if self._events is None:
            if self._event_source is not None:
                from parplan.executor.analysis import build_events

                self._events = build_events(*self._event_source)
            else:
                self._events = []
        return self._events

    @property
    def peak_activation_bytes(self) -> list:
        """Peak activation bytes per pipeline stage (replica 0)."""
        return [d.peak_activation_bytes for d in self.devices[: self.pp]]

    @property
    def bubble_s(self) -> float:
        return self.devices[self.critical_device].bubble_s

    @property
    def has_a2a(self) -> bool:
        """The step plays expert-parallel all-to-all transfers (an MoE plan with ep > 1)."""
        return "ep" in self.exposed_comm_s

    def device_events(self, device: int) -> list:
        name = self.devices[device].name
        return [e for e in self.events if e.track == name]

    def to_dict(self, with_events: bool = False) -> dict:
        a2a = self.has_a2a

        def dev(d):
            out = dict(d.__dict__, busy_s=d.busy_s, idle_s=d.idle_s)
            if not a2a:
                out.pop("ep_a2a_s")
            return out

        def link(lk):
            out = dict(lk.__dict__)
            if not a2a:
                out.pop("a2a_work_s")
            return out

        out = {
            "workload": self.workload, "cluster": self.cluster,
            "plan": self.plan.as_dict() if self.plan is not None else None,
            "schedule": self.schedule, "mode": self.mode, "pp": self.pp, "vpp": self.vpp,
            "micro_batches": self.micro_batches, "replicas_simulated": self.replicas,
            "step_time_s": self.step_time_s, "critical_device": self.devices[self.critical_device].name,
            "exposed_comm_s": dict(self.exposed_comm_s), "totals": dict(self.totals),
            "devices": [dev(d) for d in self.devices],
            "links": [link(lk) for lk in self.links if lk.transfers],
            "notes": list(self.notes),
        }
        if self.analytical:
            out["analytical"] = dict(self.analytical)
        if with_events:
            out["events"] = [e._asdict() for e in self.events]
        return out
