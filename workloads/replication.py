"""Replicated-service workloads (``family: replicated-service``): a state machine replicated on the servers of a CPU
machine (``hardware/cpu.py``: one replica per node), its command mix, the clients' offered load and the ordering
layer — the inputs of P-SMR (SEEDS.md S01) and leader-based consensus (ANCHORS.md Part B §4).

A workload file::

    family: replicated-service
    name: kv-store-1kb
    commands:                              # the mix; fractions sum to 1
      - {name: get, fraction: 0.5, cost: "20 us", bytes: 1024}            # threads: one (independent, default)
      - {name: put, fraction: 0.49, cost: "20 us", bytes: 1024}
      - {name: snapshot, fraction: 0.01, cost: "20 us", bytes: 1024, threads: all}   # dependent: every thread
    sync: {signal: "0.5 us"}               # t_sync(k) = k · signal for a command delivered to k threads
    scheduler: {cost: "5 us"}              # sched-psmr: the central parallelizer's cost per command
    ordering: {protocol: multi-paxos, recv: "2 us", send: "1 us", ack: "1 us", per_command: "0.5 us",
               deliver: "0.5 us", header_bytes: 64}
    clients: {offered_load: 150000}        # commands/s; optional (latency is then priced at load_fraction of X)
    search: {threads: [1, 2, 4, 8, 16], rings: [1, 2, 4], batch: [1, 8, 32], schemes: [smr, sched-psmr, psmr]}

A command's ``threads`` is ``one`` (independent: its multicast group is one thread's, chosen by key hash) or ``all``
(dependent on every thread: delivered to all of them, which synchronize so one executes it — P-SMR's rule, two
commands conflict iff they touch a common variable and one writes).  The ordering layer is atomic multicast over
``rings`` Multi-Paxos rings (one leader each, placed round-robin on the replicas); classic SMR and scheduler-based
parallel SMR use one total order (one ring).  Every quantity is SI once loaded.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, short
from parplan.spec import Name, locate, validate
from parplan.units import parse_quantity
from parplan.workloads.family import FamilyInfo

Quantity = Union[str, float, int]
SCHEMES = ("smr", "sched-psmr", "psmr")
MAX_CLASSES = 64
MAX_KNOB_VALUES = 32
MAX_THREADS = 256
MAX_RINGS = 64
MAX_BATCH = 4096


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class CommandEntry(_Strict):
    name: Name
    fraction: float = Field(gt=0, le=1, strict=False)
    cost: Quantity  # CPU seconds to execute one command (t_i for independent, t_d for dependent ones)
    bytes: float = Field(default=1024, gt=0, le=1e8, strict=False)  # the command as multicast (payload)
    reply_bytes: float = Field(default=64, ge=0, le=1e8, strict=False)
    threads: Literal["one", "all"] = "one"


class SyncEntry(_Strict):
    signal: Quantity = "0.5 us"  # assumed default: one cross-core wake-up/handoff per involved thread


class SchedulerEntry(_Strict):
    cost: Quantity = "5 us"  # SEEDS.md S01(d): t_sched = 5 µs


class OrderingEntry(_Strict):
    protocol: Literal["multi-paxos"] = "multi-paxos"
    # per-message CPU costs at a ring's leader (ANCHORS.md Part B §4.2: c_L ≈ c_recv + (r−1)c_send + ⌈r/2⌉c_ack + c_exec)
    recv: Quantity = "2 us"  # assumed: receiving one client request (kernel TCP/UDP receive + unmarshal)
    send: Quantity = "1 us"  # assumed: sending one batch message to one acceptor
    ack: Quantity = "1 us"  # assumed: processing one acceptor's phase-2b reply
    per_command: Quantity = "0.5 us"  # assumed: c_exec, the leader's own bookkeeping per command
    deliver: Quantity = "0.5 us"  # assumed: c_replica, a learner delivering one command to its threads
    header_bytes: float = Field(default=64, ge=0, le=1e6, strict=False)  # per batch message (Paxos + UDP/IP headers)


class ClientsEntry(_Strict):
    offered_load: Optional[float] = Field(default=None, ge=1e-3, le=1e9, strict=False)  # commands per second
    load_fraction: float = Field(default=0.7, gt=0, lt=1, strict=False)  # without offered_load: latency at this ρ


class SearchEntry(_Strict):
    threads: list[int] = Field(default=[1, 2, 4, 8, 16], min_length=1, max_length=MAX_KNOB_VALUES)
    rings: list[int] = Field(default=[1, 2, 4], min_length=1, max_length=MAX_KNOB_VALUES)
    batch: list[int] = Field(default=[1, 8, 32], min_length=1, max_length=MAX_KNOB_VALUES)
    schemes: list[Literal["smr", "sched-psmr", "psmr"]] = Field(default=list(SCHEMES), min_length=1, max_length=3)


class ReplicationFile(_Strict):
    family: Literal["replicated-service"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    commands: list[CommandEntry] = Field(min_length=1, max_length=MAX_CLASSES)
    sync: SyncEntry = SyncEntry()
    scheduler: SchedulerEntry = SchedulerEntry()
    ordering: OrderingEntry = OrderingEntry()
    clients: ClientsEntry = ClientsEntry()
    search: SearchEntry = SearchEntry()


@dataclass(frozen=True)
class CommandClass:
    name: str
    fraction: float
    cost_s: float
    bytes: float
    reply_bytes: float
    dependent: bool  # threads: all


@dataclass(frozen=True)
class Ordering:
    recv_s: float
    send_s: float
    ack_s: float
    per_command_s: float
    deliver_s: float
    header_bytes: float


@dataclass(frozen=True)
class ReplicationSpec:
    name: str
    source: str
    classes: tuple  # CommandClass
    signal_s: float
    sched_s: float
    ordering: Ordering
    offered_load: Optional[float]  # commands/s, None: priced at load_fraction of each plan's throughput
    load_fraction: float
    threads: tuple
    rings: tuple
    batch: tuple
    schemes: tuple
    family: str = "replicated-service"

    @property
    def dependent_fraction(self) -> float:
        """d: the share of commands delivered to every thread."""
        return sum(c.fraction for c in self.classes if c.dependent)

    def _mean(self, attr: str, dependent: "bool | None") -> float:
        cs = [c for c in self.classes if dependent is None or c.dependent == dependent]
        w = sum(c.fraction for c in cs)
        return sum(c.fraction * getattr(c, attr) for c in cs) / w if w > 0 else 0.0

    @property
    def t_independent_s(self) -> float:
        """t_i: mean execution cost of an independent command (0 when there is none)."""
        return self._mean("cost_s", False)

    @property
    def t_dependent_s(self) -> float:
        """t_d: mean execution cost of a dependent command (0 when there is none)."""
        return self._mean("cost_s", True)

    @property
    def t_mean_s(self) -> float:
        return self._mean("cost_s", None)

    @property
    def command_bytes(self) -> float:
        return self._mean("bytes", None)

    @property
    def reply_bytes(self) -> float:
        return self._mean("reply_bytes", None)


def _q(v: Any, key: str, file: "str | None", positive: bool = True) -> float:
    return parse_quantity(v, "seconds", key=key, file=file, positive=positive, maximum=1.0)


def _knobs(values: list[int], key: str, lo: int, hi: int, file: "str | None") -> tuple:
    bad = [v for v in values if not lo <= v <= hi]
    if bad:
        raise SpecError(f"bad value {short(bad[0])}: {key.split('.')[-1]} values are whole numbers {lo}..{hi}",
                        file=file, key=key)
    return tuple(sorted(set(values)))


def spec_from_dict(data: Any, file: "str | None" = None) -> ReplicationSpec:
    e = validate(ReplicationFile, data, file=file)
    total = sum(c.fraction for c in e.commands)
    if not math.isclose(total, 1.0, rel_tol=0, abs_tol=1e-6):
        raise SpecError(f"command fractions sum to {total:.6g}, not 1", file=file, key="commands",
                        hint="give each class's share of the commands; they must add up to 1")
    names = [c.name for c in e.commands]
    if len(set(names)) != len(names):
        raise SpecError("command class names repeat", file=file, key="commands", allowed=sorted(set(names)))
    try:
        classes = tuple(CommandClass(c.name, c.fraction, _q(c.cost, f"commands.{i}.cost", file), c.bytes,
                                     c.reply_bytes, c.threads == "all") for i, c in enumerate(e.commands))
        o = e.ordering
        ordering = Ordering(_q(o.recv, "ordering.recv", file, False), _q(o.send, "ordering.send", file, False),
                            _q(o.ack, "ordering.ack", file, False), _q(o.per_command, "ordering.per_command", file, False),
                            _q(o.deliver, "ordering.deliver", file, False), o.header_bytes)
        signal = _q(e.sync.signal, "sync.signal", file, False)
        sched = _q(e.scheduler.cost, "scheduler.cost", file)
    except SpecError as err:
        raise locate(err, data, file) from None
    s = e.search
    return ReplicationSpec(
        e.name, e.source or (file or "inline"), classes, signal, sched, ordering, e.clients.offered_load,
        e.clients.load_fraction, _knobs(s.threads, "search.threads", 1, MAX_THREADS, file),
        _knobs(s.rings, "search.rings", 1, MAX_RINGS, file), _knobs(s.batch, "search.batch", 1, MAX_BATCH, file),
        tuple(dict.fromkeys(s.schemes)))


def load_replication(ref: Any) -> ReplicationSpec:
    """A replicated-service workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, ReplicationSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):  # the registry's transformer-style entry point is not used
    raise SpecError("replicated-service workloads are files of their own (family: replicated-service at the top "
                    "level)", file=file, key=f"{prefix}.family", hint="see docs/replication.md")


FAMILY = FamilyInfo(
    name="replicated-service",
    summary="state-machine replication on CPU servers: command mix with a dependent fraction, worker threads, "
            "atomic multicast over Multi-Paxos rings, batching; SMR vs scheduler-based parallel SMR vs P-SMR",
    spec_type=ReplicationSpec,
    architecture_schema=ReplicationFile,
    build_spec=_build,
    model="parplan.models.replication",
    space="parplan.planner.spaces.replication",
    executor="parplan.executor.replication",
    verbs="parplan.cli.replication_out",
    load=load_replication,
)
