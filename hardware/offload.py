"""Offload nodes (``kind: offload-node``): a host CPU socket plus accelerators reached over a host link — a discrete
GPU and a coprocessor over PCIe, an integrated GPU sharing host memory — and the actor runtime's messaging cost,
for the offload family (SEEDS.md S13, S25).

A node file (``catalogs/offload_nodes/<name>.yaml`` or a user file)::

    name: caf-k40-phi
    kind: offload-node
    host: {socket: xeon-8380, efficiency: 0.25, width: simd256}   # or an inline cpu-socket mapping; or ops_per_s
    accelerators:
      - id: tesla-k40
        kind: discrete-gpu              # discrete-gpu | coprocessor | integrated-gpu
        ops_per_s: "4.29 TOP/s"         # peak element-op (FP32) rate; efficiency: the share a kernel reaches
        efficiency: 0.5
        memory: "12 GB"
        memory_bandwidth: "288 GB/s"
        launch: "10 us"                 # kernel launch latency; enqueue: host-side command/argument setup
        enqueue: "5 us"
        h2d: {bandwidth: "12 GB/s", latency: "10 us"}     # omitted for shared_memory: true (zero-copy)
        d2h: {bandwidth: "12 GB/s", latency: "10 us"}
        device: rtx-4090                # optional: memory, memory_bandwidth and FP32 peak from catalogs/hardware/devices
        source: "..."
    actor: {message: "10 us", source: "..."}    # one actor message: mailbox enqueue + dispatch
    network: {name: 10gbe, bandwidth: "1.17 GB/s", latency: "25 us"}   # optional: remote actors

Every quantity is SI once loaded; ``load_offload_node`` takes a path or a catalog id.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import Name, load_yaml_file, locate, validate
from parplan.units import parse_quantity

Quantity = Union[str, float, int]
KINDS = ("discrete-gpu", "coprocessor", "integrated-gpu")
MAX_ACCELERATORS = 16


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class LinkEntry(_Strict):
    bandwidth: Quantity
    latency: Quantity
    name: Optional[Name] = None
    source: Optional[str] = None


class HostEntry(_Strict):
    socket: Optional[Union[Name, dict]] = None  # a catalog socket id or an inline cpu-socket mapping
    ops_per_s: Optional[Quantity] = None  # the host's element-op rate (all cores); else from the socket
    efficiency: float = Field(default=0.25, gt=0, le=1, strict=False)
    width: Literal["scalar", "simd128", "simd256", "simd512"] = "simd256"
    dram_latency: Optional[Quantity] = None  # pointer-chasing miss (octree); else the socket's
    source: Optional[str] = None


class AcceleratorEntry(_Strict):
    id: Name
    kind: Literal["discrete-gpu", "coprocessor", "integrated-gpu"]
    name: Optional[str] = None
    device: Optional[Name] = None  # catalogs/hardware/devices id: memory, bandwidth, FP32 peak
    ops_per_s: Optional[Quantity] = None
    efficiency: float = Field(default=0.5, gt=0, le=1, strict=False)
    memory: Optional[Quantity] = None
    memory_bandwidth: Optional[Quantity] = None
    launch: Quantity
    enqueue: Quantity = "5 us"
    shared_memory: bool = False
    h2d: Optional[LinkEntry] = None
    d2h: Optional[LinkEntry] = None
    source: str = Field(min_length=8)


class ActorEntry(_Strict):
    message: Quantity = "10 us"
    source: Optional[str] = None


class NodeEntry(_Strict):
    name: Name
    kind: Literal["offload-node"]
    description: Optional[str] = None
    host: HostEntry
    accelerators: list[AcceleratorEntry] = Field(min_length=1, max_length=MAX_ACCELERATORS)
    actor: ActorEntry = ActorEntry()
    network: Optional[LinkEntry] = None
    source: str = Field(min_length=8)


@dataclass(frozen=True)
class Host:
    name: str
    ops_per_s: float  # effective element-op rate of the CPU actor (all cores)
    cores: int
    dram_latency_s: float


@dataclass(frozen=True)
class Accelerator:
    id: str
    kind: str
    name: str
    ops_per_s: float  # effective (peak × efficiency)
    memory_bytes: float
    memory_bytes_per_s: float
    launch_s: float
    enqueue_s: float
    shared_memory: bool
    h2d_bytes_per_s: float  # inf for shared memory
    h2d_latency_s: float
    d2h_bytes_per_s: float
    d2h_latency_s: float
    source: str


@dataclass(frozen=True)
class OffloadNode:
    name: str
    host: Host
    accelerators: tuple
    message_s: float
    net_bytes_per_s: Optional[float]
    net_latency_s: Optional[float]
    source: str

    def accelerator(self, ident: str) -> Accelerator:
        for a in self.accelerators:
            if a.id == ident:
                return a
        ids = [a.id for a in self.accelerators]
        raise SpecError(f"unknown accelerator {short(ident)} on {self.name}", key="--plan place",
                        allowed=["cpu"] + ids, hint=did_you_mean(ident, ids))


def _q(v: Any, kind: str, key: str, file: "str | None", positive: bool = True) -> float:
    return parse_quantity(v, kind, key=key, file=file, positive=positive)


def _host(e: HostEntry, file: "str | None") -> Host:
    sock = None
    if e.socket is not None:
        from parplan.hardware.cpu import _resolve_socket

        sock = _resolve_socket(e.socket, "host.socket", file)
    if e.ops_per_s is not None:
        ops = _q(e.ops_per_s, "flops_per_s", "host.ops_per_s", file)
    elif sock is not None:
        # FP32 element ops over every core: twice the socket's FP64 FLOP/cycle at ``width``, × the kernel's efficiency
        ops = 2.0 * sock.core_peak(e.width) * sock.cores * e.efficiency
    else:
        raise SpecError("the host needs a socket or ops_per_s", file=file, key="host")
    lat = (_q(e.dram_latency, "seconds", "host.dram_latency", file) if e.dram_latency is not None
           else (sock.dram_latency_s if sock is not None else 100e-9))
    return Host(sock.name if sock else "host", ops, sock.cores if sock else 1, lat)


def _accel(e: AcceleratorEntry, i: int, file: "str | None") -> Accelerator:
    p = f"accelerators.{i}"
    dev = None
    if e.device is not None:
        from parplan.hardware.catalog import device_ids, get_device

        if e.device not in device_ids():
            raise SpecError(f"unknown device {short(e.device)}", file=file, key=f"{p}.device", allowed=device_ids(),
                            hint=did_you_mean(e.device, device_ids()))
        dev = get_device(e.device)
    peak = (_q(e.ops_per_s, "flops_per_s", f"{p}.ops_per_s", file) if e.ops_per_s is not None
            else (dev.peak_flops_per_s.get("fp32") if dev is not None else None))
    mem = _q(e.memory, "bytes", f"{p}.memory", file) if e.memory is not None else (dev.memory_bytes if dev else None)
    bw = (_q(e.memory_bandwidth, "bytes_per_s", f"{p}.memory_bandwidth", file) if e.memory_bandwidth is not None
          else (dev.memory_bandwidth_bytes_per_s if dev else None))
    for key, v in (("ops_per_s", peak), ("memory", mem), ("memory_bandwidth", bw)):
        if v is None:
            raise SpecError(f"{key} is required (or a catalog device)", file=file, key=f"{p}.{key}")
    if e.shared_memory:
        if e.h2d is not None or e.d2h is not None:
            raise SpecError("a shared-memory accelerator has no h2d/d2h link", file=file, key=f"{p}.h2d")
        links = (float("inf"), 0.0, float("inf"), 0.0)
    else:
        if e.h2d is None or e.d2h is None:
            raise SpecError("h2d and d2h links are required (or shared_memory: true)", file=file, key=f"{p}.h2d")
        links = (_q(e.h2d.bandwidth, "bytes_per_s", f"{p}.h2d.bandwidth", file),
                 _q(e.h2d.latency, "seconds", f"{p}.h2d.latency", file, False),
                 _q(e.d2h.bandwidth, "bytes_per_s", f"{p}.d2h.bandwidth", file),
                 _q(e.d2h.latency, "seconds", f"{p}.d2h.latency", file, False))
    return Accelerator(e.id, e.kind, e.name or e.id, peak * e.efficiency, mem, bw,
                       _q(e.launch, "seconds", f"{p}.launch", file, False),
                       _q(e.enqueue, "seconds", f"{p}.enqueue", file, False), e.shared_memory, *links, e.source)


def node_from_dict(data: Any, file: "str | None" = None) -> OffloadNode:
    e = validate(NodeEntry, data, file=file)
    ids = [a.id for a in e.accelerators]
    if len(set(ids)) != len(ids) or "cpu" in ids:
        raise SpecError("accelerator ids must be distinct and not 'cpu'", file=file, key="accelerators")
    try:
        host = _host(e.host, file)
        accs = tuple(_accel(a, i, file) for i, a in enumerate(e.accelerators))
        msg = _q(e.actor.message, "seconds", "actor.message", file, False)
        net = e.network
        nbw = _q(net.bandwidth, "bytes_per_s", "network.bandwidth", file) if net else None
        nlat = _q(net.latency, "seconds", "network.latency", file, False) if net else None
    except SpecError as err:
        raise locate(err, data, file) from None
    return OffloadNode(e.name, host, accs, msg, nbw, nlat, e.source)


def _catalog() -> Path:
    from parplan.catalogs import catalog_dir

    return catalog_dir("offload_nodes")


def node_ids() -> list[str]:
    return sorted(p.stem for p in _catalog().glob("*.yaml"))


def load_offload_node(ref: "str | Path | OffloadNode") -> OffloadNode:
    """An offload node from a YAML path or a catalog id."""
    if isinstance(ref, OffloadNode):
        return ref
    text = str(ref)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise SpecError(f"file not found: {short(text)}", key="--hw")
        data = load_yaml_file(path)
        if not (isinstance(data, dict) and data.get("kind") == "offload-node"):
            raise SpecError("not an offload node file (kind: offload-node)", file=text, key="kind",
                            hint="offload workloads run on a host + accelerators: see catalogs/offload_nodes/")
        return node_from_dict(data, file=text)
    if text in node_ids():
        p = _catalog() / f"{text}.yaml"
        return node_from_dict(load_yaml_file(p), file=str(p))
    raise SpecError(f"unknown offload node {short(text)}", key="--hw", allowed=node_ids(),
                    hint=did_you_mean(text, node_ids()))
