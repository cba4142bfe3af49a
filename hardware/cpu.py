"""CPU sockets (device kind ``cpu-socket``) and CPU machines (``kind: cpu-cluster``: nodes of 1–8 sockets joined by
an inter-socket link — xGMI, UPI, NVLink-C2C — and nodes joined by a network), for the task-graph family.

A socket file (``catalogs/hardware/cpus/<id>.yaml`` or a user file written by ``parplan calibrate cpu``)::

    id: epyc-9654
    kind: cpu-socket
    cores: 96                      # physical cores; smt: hardware threads per core
    base_clock_ghz: 2.4            # all-core sustained clock used for per-core peaks (boost_clock_ghz: one core)
    fp64_flops_per_cycle: {scalar: 4, simd128: 8, simd256: 16, simd512: 16}   # per core, by vector width
    l1d_per_core: "32 KiB"         # l2_per_core, l3 (per socket)
    stream_bandwidth: "378 GB/s"   # STREAM triad of one socket (local); memory_bandwidth: the DDR wire rate
    core_bandwidth: "40 GB/s"      # one core's achievable bandwidth (saturation at stream/core cores)
    dram_latency: "110 ns"         # remote_latency, remote_bandwidth: from the other socket (default: the link)
    task_overhead: "0.2 us"        # optional, measured: one empty OpenMP task created + run (parplan calibrate cpu)
    task_contention: "0.2 us"      # optional, measured: serialized time per task with every core spawning
    task_dependence: "10 ns"       # optional, measured: one task dependence registered (one thread / every core:
    task_dependence_contention: "70 ns"   # task_dependence_contention)

A machine file (``catalogs/cpu_clusters/<name>.yaml`` or a user file): ``kind: cpu-cluster``, ``socket`` (an id,
an inline socket mapping or a path to a socket file), ``sockets_per_node`` (1–8), ``inter_socket`` {name, bandwidth,
latency}, ``nodes``, ``network`` {name, bandwidth, latency}.  ``load_cpu_machine`` also accepts a socket file or id
(one node of one socket).  Every quantity is SI once loaded.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import Name, load_yaml_file, locate, validate
from parplan.units import parse_quantity

Quantity = Union[str, float, int]
WIDTHS = ("scalar", "simd128", "simd256", "simd512")  # vector widths a core's FP64 FLOP/cycle is given for
MAX_SOCKETS_PER_NODE = 8  # the largest glueless x86 boxes (8-socket Xeon SP) — issue 14
MAX_CPU_NODES = 1_048_576


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class FlopsPerCycle(_Strict):
    scalar: float = Field(gt=0, le=1024, strict=False)
    simd128: Optional[float] = Field(default=None, gt=0, le=1024, strict=False)
    simd256: Optional[float] = Field(default=None, gt=0, le=1024, strict=False)
    simd512: Optional[float] = Field(default=None, gt=0, le=1024, strict=False)


class SocketEntry(_Strict):
    id: Name
    name: Name
    kind: Literal["cpu-socket"]
    vendor: Name
    cores: int = Field(gt=0, le=4096)
    smt: int = Field(default=1, ge=1, le=8)
    base_clock_ghz: float = Field(gt=0, le=10, strict=False)
    boost_clock_ghz: Optional[float] = Field(default=None, gt=0, le=10, strict=False)
    fp64_flops_per_cycle: FlopsPerCycle
    l1d_per_core: Quantity
    l2_per_core: Quantity
    l3: Optional[Quantity] = None
    numa_domains: int = Field(default=1, ge=1, le=64)  # NUMA domains per socket in the cataloged mode
    memory: Optional[Quantity] = None
    memory_bandwidth: Optional[Quantity] = None  # wire rate (channels × MT/s × 8 B)
    stream_bandwidth: Quantity
    core_bandwidth: Quantity
    dram_latency: Quantity
    remote_latency: Optional[Quantity] = None
    remote_bandwidth: Optional[Quantity] = None
    core_to_core_latency: Optional[Quantity] = None  # a contended cache line moving between two cores (CAS ping-pong)
    cas_cost: Optional[Quantity] = None  # uncontended atomic compare-and-swap
    fence_cost: Optional[Quantity] = None  # full memory fence (MFENCE / DMB ISH)
    task_overhead: Optional[Quantity] = None  # measured here: one empty task, one thread (calibrate)
    task_contention: Optional[Quantity] = None  # measured here: serialized time per task with every core creating
    task_dependence: Optional[Quantity] = None  # measured here: registering one task dependence, one thread
    task_dependence_contention: Optional[Quantity] = None  # measured here: the same with every core in the team
    task_runtime: Optional[Name] = None  # the runtime those were measured with (libgomp for gcc -fopenmp)
    tdp: Optional[Quantity] = None
    generation: Optional[Name] = None
    source: str = Field(min_length=8)
    notes: Optional[str] = None


class LinkSpecEntry(_Strict):
    name: Name
    bandwidth: Quantity  # one direction, between two sockets (inter_socket) or per node (network)
    latency: Quantity
    source: Optional[str] = None


class MachineEntry(_Strict):
    name: Name
    kind: Literal["cpu-cluster"]
    description: Optional[str] = None
    socket: Union[Name, dict]
    sockets_per_node: int = Field(ge=1, le=MAX_SOCKETS_PER_NODE)
    inter_socket: Optional[LinkSpecEntry] = None
    nodes: int = Field(default=1, ge=1, le=MAX_CPU_NODES)
    network: Optional[LinkSpecEntry] = None
    source: str = Field(min_length=8)


@dataclass(frozen=True)
class CpuSocket:
    id: str
    name: str
    vendor: str
    cores: int
    smt: int
    clock_hz: float  # all-core base clock
    boost_hz: float
    fp64_flops_per_cycle: dict  # width -> FLOP/cycle per core
    l1d_bytes: float
    l2_bytes: float
    l3_bytes: float
    numa_domains: int
    stream_bytes_per_s: float
    core_bytes_per_s: float
    dram_latency_s: float
    remote_latency_s: float | None
    remote_bytes_per_s: float | None
    c2c_latency_s: float | None
    cas_s: float | None
    fence_s: float | None
    task_overhead_s: float | None
    task_contention_s: float | None
    source: str
    task_runtime: str | None = None
    task_dependence_s: float | None = None
    task_dependence_contention_s: float | None = None

    def core_peak(self, width: str = "simd256") -> float:
        """Peak FP64 FLOP/s of one core at ``width`` (the widest the socket has when it lacks ``width``)."""
        table = self.fp64_flops_per_cycle
        if width not in table:
            width = max((w for w in table), key=WIDTHS.index)
        return table[width] * self.clock_hz

    @property
    def saturation_cores(self) -> float:
        """Cores that saturate the socket's memory bandwidth (STREAM / one core's bandwidth)."""
        return self.stream_bytes_per_s / self.core_bytes_per_s


@dataclass(frozen=True)
class CpuLink:
    name: str
    bytes_per_s: float
    latency_s: float


@dataclass(frozen=True)
class CpuMachine:
    name: str
    socket: CpuSocket
    sockets_per_node: int
    nodes: int
    inter_socket: CpuLink | None
    network: CpuLink | None
    source: str

    @property
    def cores_per_node(self) -> int:
        return self.socket.cores * self.sockets_per_node

    @property
    def remote_bytes_per_s(self) -> float:
        """Bandwidth one socket gets from another socket's memory: the socket's own figure, else the link's."""
        s = self.socket
        if s.remote_bytes_per_s is not None:
            return s.remote_bytes_per_s
        if self.inter_socket is not None:
            return min(self.inter_socket.bytes_per_s, s.stream_bytes_per_s)
        return s.stream_bytes_per_s

    @property
    def remote_latency_s(self) -> float:
        s = self.socket
        if s.remote_latency_s is not None:
            return s.remote_latency_s
        return s.dram_latency_s + (self.inter_socket.latency_s if self.inter_socket else 0.0)


def _q(v: Any, kind: str, key: str, file: str | None) -> float:
    return parse_quantity(v, kind, key=key, file=file)


def _opt(v: Any, kind: str, key: str, file: str | None) -> float | None:
    return None if v is None else _q(v, kind, key, file)


def socket_from_dict(data: Any, file: str | None = None, prefix: str = "") -> CpuSocket:
    """A validated socket; bad or unknown keys are ``SpecError`` naming the key."""
    e = validate(SocketEntry, data, file=file, prefix=prefix)
    p = f"{prefix}." if prefix else ""
    try:
        fpc = {w: float(getattr(e.fp64_flops_per_cycle, w)) for w in WIDTHS
               if getattr(e.fp64_flops_per_cycle, w) is not None}
        return CpuSocket(
            id=e.id, name=e.name, vendor=e.vendor, cores=e.cores, smt=e.smt, clock_hz=e.base_clock_ghz * 1e9,
            boost_hz=(e.boost_clock_ghz or e.base_clock_ghz) * 1e9, fp64_flops_per_cycle=fpc,
            l1d_bytes=_q(e.l1d_per_core, "bytes", p + "l1d_per_core", file),
            l2_bytes=_q(e.l2_per_core, "bytes", p + "l2_per_core", file),
            l3_bytes=_opt(e.l3, "bytes", p + "l3", file) or 0.0, numa_domains=e.numa_domains,
            stream_bytes_per_s=_q(e.stream_bandwidth, "bytes_per_s", p + "stream_bandwidth", file),
            core_bytes_per_s=_q(e.core_bandwidth, "bytes_per_s", p + "core_bandwidth", file),
            dram_latency_s=_q(e.dram_latency, "seconds", p + "dram_latency", file),
            remote_latency_s=_opt(e.remote_latency, "seconds", p + "remote_latency", file),
            remote_bytes_per_s=_opt(e.remote_bandwidth, "bytes_per_s", p + "remote_bandwidth", file),
            c2c_latency_s=_opt(e.core_to_core_latency, "seconds", p + "core_to_core_latency", file),
            cas_s=_opt(e.cas_cost, "seconds", p + "cas_cost", file),
            fence_s=_opt(e.fence_cost, "seconds", p + "fence_cost", file),
            task_overhead_s=_opt(e.task_overhead, "seconds", p + "task_overhead", file),
            task_contention_s=(None if e.task_contention is None else
                               parse_quantity(e.task_contention, "seconds", key=p + "task_contention", file=file,
                                              positive=False)),
            task_dependence_s=_opt(e.task_dependence, "seconds", p + "task_dependence", file),
            task_dependence_contention_s=_opt(e.task_dependence_contention, "seconds",
                                              p + "task_dependence_contention", file),
            source=e.source, task_runtime=e.task_runtime)
    except SpecError as err:
        raise locate(err, data, file) from None


def _link(e: LinkSpecEntry | None, key: str, file: str | None) -> CpuLink | None:
    if e is None:
        return None
    return CpuLink(e.name, _q(e.bandwidth, "bytes_per_s", f"{key}.bandwidth", file),
                   parse_quantity(e.latency, "seconds", key=f"{key}.latency", file=file, positive=False))


def _catalog_dir(*parts: str) -> Path:
    from parplan.catalogs import catalog_dir

    return catalog_dir(*parts)


def socket_ids() -> list[str]:
    return sorted(p.stem for p in _catalog_dir("hardware", "cpus").glob("*.yaml"))


def machine_ids() -> list[str]:
    return sorted(p.stem for p in _catalog_dir("cpu_clusters").glob("*.yaml"))


@lru_cache(maxsize=64)
def get_socket(ident: str) -> CpuSocket:
    path = _catalog_dir("hardware", "cpus") / f"{ident}.yaml"
    if not path.is_file():
        raise SpecError(f"unknown cpu socket {short(ident)}", allowed=socket_ids(),
                        hint=did_you_mean(ident, socket_ids()))
    return socket_from_dict(load_yaml_file(path), file=str(path))


def _resolve_socket(spec: Any, key: str, file: str | None) -> CpuSocket:
    if isinstance(spec, dict):
        return socket_from_dict(spec, file=file, prefix=key)
    if file is not None and (spec.endswith((".yaml", ".yml"))):
        path = Path(file).parent / spec
        if not path.is_file():
            raise SpecError(f"socket file {short(spec)} not found", file=file, key=key)
        return socket_from_dict(load_yaml_file(path), file=str(path))
    if spec not in socket_ids():
        raise SpecError(f"unknown cpu socket {short(spec)}", file=file, key=key, allowed=socket_ids(),
                        hint=did_you_mean(spec, socket_ids()))
    return get_socket(spec)


def machine_from_dict(data: Any, file: str | None = None) -> CpuMachine:
    if isinstance(data, dict) and data.get("kind") == "cpu-socket":  # a socket alone: one node of one socket
        s = socket_from_dict(data, file=file)
        return CpuMachine(s.id, s, 1, 1, None, None, s.source)
    e = validate(MachineEntry, data, file=file)
    try:
        sock = _resolve_socket(e.socket, "socket", file)
        inter = _link(e.inter_socket, "inter_socket", file)
        net = _link(e.network, "network", file)
    except SpecError as err:
        raise locate(err, data, file) from None
    if e.sockets_per_node > 1 and inter is None:
        raise SpecError(f"{e.sockets_per_node} sockets per node need an inter_socket link", file=file,
                        key="inter_socket", hint="e.g. {name: xgmi, bandwidth: \"256 GB/s\", latency: \"150 ns\"}")
    if e.nodes > 1 and net is None:
        raise SpecError(f"{e.nodes} nodes need a network", file=file, key="network")
    return CpuMachine(e.name, sock, e.sockets_per_node, e.nodes, inter, net, e.source)


def is_cpu_file(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") in ("cpu-socket", "cpu-cluster")


def load_cpu_machine(ref: "str | Path | CpuMachine") -> CpuMachine:
    """A CPU machine from a machine/socket YAML path or a catalog id (machine ids first, then socket ids)."""
    if isinstance(ref, CpuMachine):
        return ref
    text = str(ref)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise SpecError(f"file not found: {short(text)}", key="--hw")
        data = load_yaml_file(path)
        if not is_cpu_file(data):
            raise SpecError("not a CPU machine or socket file (kind: cpu-cluster | cpu-socket)", file=text,
                            key="kind", hint="task-graph workloads run on CPU sockets: see catalogs/cpu_clusters/")
        return machine_from_dict(data, file=text)
    if text in machine_ids():
        p = _catalog_dir("cpu_clusters") / f"{text}.yaml"
        return machine_from_dict(load_yaml_file(p), file=str(p))
    if text in socket_ids():
        s = get_socket(text)
        return CpuMachine(s.id, s, 1, 1, None, None, s.source)
    known = machine_ids() + socket_ids()
    raise SpecError(f"unknown CPU machine {short(text)}", key="--hw", allowed=known, hint=did_you_mean(text, known))
