"""Edge boards and cloud servers (device kinds ``edge`` and ``server``), the networks between them, and edge clusters
(``kind: edge-cluster``: groups of devices joined by networks), for the layer-chain family.

A device file (``catalogs/hardware/edge/<id>.yaml`` or a user file)::

    id: raspberry-pi-5
    kind: edge                        # edge | server
    compute: {fp32: "153.6 GFLOP/s", fp16: "...", int8: "... OP/s"}   # dense peak per dtype
    efficiency: 0.25                  # sustained fraction of the peak on DNN layers (cited or marked assumed)
    memory: "8 GiB"                   # usable by the model
    memory_bandwidth: "17 GB/s"
    power: {idle: "2.7 W", active: "7 W"}
    network: gige                     # the device's own interface (a network id or an inline mapping)

A network file (``catalogs/hardware/networks/<id>.yaml``): ``bandwidth`` (uplink: device → rest), optional
``downlink``, ``rtt``, ``shared_medium`` (wireless: every device on it shares one channel), ``tx_power``.

A cluster file (``catalogs/edge_clusters/<name>.yaml``)::

    kind: edge-cluster
    name: edge-4pi-server
    devices:
      - {device: raspberry-pi-5, count: 4, ids: [pi-0, pi-1, pi-2, pi-3], network: wifi6}
      - {device: gpu-server-a100, count: 1, network: gige}
    links:                            # optional: a network between two groups replaces the default
      - {between: [raspberry-pi-5, gpu-server-a100], network: wifi6}

Between two devices the default link is PipeEdge's (``src-native/schedule.cpp``): bandwidth = the smaller of the two
interfaces' (per direction), RTT = the larger; the pair is on a shared medium when either interface is.  Every
quantity is SI once loaded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import Name, load_yaml_file, locate, validate
from parplan.units import parse_quantity

Quantity = Union[str, float, int]
DTYPES = ("fp32", "fp16", "bf16", "int8")
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}
MAX_DEVICES = 4096  # devices in one edge cluster (the planner's own bounds are tighter)
MAX_RTT_S = 10.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class ComputeEntry(_Strict):
    fp32: Optional[Quantity] = None
    fp16: Optional[Quantity] = None
    bf16: Optional[Quantity] = None
    int8: Optional[Quantity] = None


class PowerEntry(_Strict):
    idle: Quantity
    active: Quantity


class NetworkEntry(_Strict):
    id: Optional[Name] = None
    name: Optional[Name] = None
    kind: Optional[Literal["network"]] = None
    bandwidth: Quantity  # uplink, per direction (effective goodput)
    downlink: Optional[Quantity] = None  # default: the uplink
    rtt: Quantity = 0.0
    shared_medium: bool = False
    tx_power: Optional[Quantity] = None  # radio power while sending (W), for the energy objective
    source: Optional[str] = None
    notes: Optional[str] = None


class DeviceEntry(_Strict):
    id: Name
    name: Name
    kind: Literal["edge", "server"]
    vendor: Name
    compute: ComputeEntry
    efficiency: float = Field(gt=0, le=1, strict=False)
    memory: Quantity
    memory_bandwidth: Quantity
    power: PowerEntry
    network: Optional[Union[Name, dict]] = None
    source: str = Field(min_length=8)
    notes: Optional[str] = None


class GroupEntry(_Strict):
    device: Union[Name, dict]
    count: int = Field(default=1, ge=1, le=MAX_DEVICES)
    ids: Optional[list[Name]] = None
    network: Optional[Union[Name, dict]] = None  # overrides the device's own interface


class LinkEntry(_Strict):
    between: list[Name] = Field(min_length=2, max_length=2)  # two group names (device ids) or device ids
    network: Union[Name, dict]


class ClusterEntry(_Strict):
    name: Name
    kind: Literal["edge-cluster"]
    description: Optional[str] = None
    devices: list[GroupEntry] = Field(min_length=1, max_length=64)
    links: list[LinkEntry] = Field(default_factory=list, max_length=256)
    source: str = Field(min_length=8)


@dataclass(frozen=True)
class Network:
    name: str
    up_bytes_per_s: float
    down_bytes_per_s: float
    rtt_s: float
    shared_medium: bool = False
    tx_power_w: float = 0.0
    source: str = ""
    channel: str = ""  # a shared medium's name: transfers on one channel share its airtime ("" = not shared)


@dataclass(frozen=True)
class EdgeDevice:
    id: str
    name: str
    kind: str  # edge | server
    peak_flops_per_s: dict  # dtype -> dense peak FLOP/s (OP/s for int8)
    efficiency: float
    memory_bytes: float
    memory_bytes_per_s: float
    idle_w: float
    active_w: float
    network: Network | None
    source: str

    def peak(self, dtype: str) -> float:
        """Dense peak for ``dtype``; a dtype the device lacks runs at the fastest one it has that is at least as wide
        (int8 on a board without int8 units runs as fp16 or fp32)."""
        if dtype in self.peak_flops_per_s:
            return self.peak_flops_per_s[dtype]
        wider = [d for d in DTYPES if DTYPE_BYTES[d] >= DTYPE_BYTES[dtype] and d in self.peak_flops_per_s]
        if not wider:
            raise SpecError(f"{self.id} has no compute for {dtype} or a wider type", key="compute",
                            allowed=sorted(self.peak_flops_per_s))
        return max(self.peak_flops_per_s[d] for d in wider)


@dataclass(frozen=True)
class EdgeCluster:
    name: str
    devices: tuple  # EdgeDevice per device slot (one per physical device)
    ids: tuple  # host name per slot
    groups: tuple  # (group name, first slot, count)
    overrides: dict = field(default_factory=dict)  # frozenset({group a, group b}) -> Network
    source: str = ""

    def __len__(self) -> int:
        return len(self.devices)

    def group_of(self, slot: int) -> str:
        for name, first, count in self.groups:
            if first <= slot < first + count:
                return name
        raise IndexError(slot)

    def link(self, a: int, b: int) -> Network:
        """The network from device slot ``a`` to ``b``: an override between their groups, else PipeEdge's min-of-the-
        two-interfaces rule (bandwidth min, RTT max, shared when either is)."""
        ga, gb = self.group_of(a), self.group_of(b)
        key = frozenset((ga, gb))
        if key in self.overrides:
            return self.overrides[key]
        na, nb = self.devices[a].network, self.devices[b].network
        if na is None or nb is None:
            raise SpecError(f"no network between {self.ids[a]} and {self.ids[b]}", key="links",
                            hint="give each device group a network, or a links: entry between their groups")
        return Network(f"{na.name}|{nb.name}", min(na.up_bytes_per_s, nb.down_bytes_per_s),
                       min(na.down_bytes_per_s, nb.up_bytes_per_s), max(na.rtt_s, nb.rtt_s),
                       na.shared_medium or nb.shared_medium, na.tx_power_w, na.source,
                       na.channel or nb.channel)

    def servers(self) -> list[int]:
        return [i for i, d in enumerate(self.devices) if d.kind == "server"]

    def edges(self) -> list[int]:
        return [i for i, d in enumerate(self.devices) if d.kind == "edge"]


def _q(v: Any, kind: str, key: str, file: str | None, positive: bool = True) -> float:
    return parse_quantity(v, kind, key=key, file=file, positive=positive)


def _catalog_dir(*parts: str) -> Path:
    from parplan.catalogs import catalog_dir

    return catalog_dir(*parts)


def device_ids() -> list[str]:
    return sorted(p.stem for p in _catalog_dir("hardware", "edge").glob("*.yaml"))


def network_ids() -> list[str]:
    return sorted(p.stem for p in _catalog_dir("hardware", "networks").glob("*.yaml"))


def cluster_ids() -> list[str]:
    return sorted(p.stem for p in _catalog_dir("edge_clusters").glob("*.yaml"))


def network_from_dict(data: Any, file: str | None = None, prefix: str = "") -> Network:
    e = validate(NetworkEntry, data, file=file, prefix=prefix)
    p = f"{prefix}." if prefix else ""
    try:
        up = _q(e.bandwidth, "bytes_per_s", p + "bandwidth", file)
        down = _q(e.downlink, "bytes_per_s", p + "downlink", file) if e.downlink is not None else up
        rtt = _q(e.rtt, "seconds", p + "rtt", file, positive=False)
        if rtt > MAX_RTT_S:
            raise SpecError(f"bad value {short(e.rtt)}: an RTT is at most {MAX_RTT_S:g} s", file=file, key=p + "rtt")
        tx = _q(e.tx_power, "watts", p + "tx_power", file) if e.tx_power is not None else 0.0
    except SpecError as err:
        raise locate(err, data, file) from None
    name = e.id or e.name or (prefix or "inline")
    return Network(name, up, down, rtt, e.shared_medium, tx, e.source or "inline", name if e.shared_medium else "")


@lru_cache(maxsize=64)
def get_network(ident: str) -> Network:
    path = _catalog_dir("hardware", "networks") / f"{ident}.yaml"
    if not path.is_file():
        raise SpecError(f"unknown network {short(ident)}", allowed=network_ids(), hint=did_you_mean(ident, network_ids()))
    return network_from_dict(load_yaml_file(path), file=str(path))


def _resolve_network(spec: Any, key: str, file: str | None) -> Network:
    if isinstance(spec, dict):
        return network_from_dict(spec, file=file, prefix=key)
    if spec not in network_ids():
        raise SpecError(f"unknown network {short(spec)}", file=file, key=key, allowed=network_ids(),
                        hint=did_you_mean(spec, network_ids()))
    return get_network(spec)


def device_from_dict(data: Any, file: str | None = None, prefix: str = "") -> EdgeDevice:
    """A validated edge board or server; bad or unknown keys are ``SpecError`` naming the key."""
    e = validate(DeviceEntry, data, file=file, prefix=prefix)
    p = f"{prefix}." if prefix else ""
    try:
        peaks = {d: _q(getattr(e.compute, d), "flops_per_s", f"{p}compute.{d}", file)
                 for d in DTYPES if getattr(e.compute, d) is not None}
        if not peaks:
            raise SpecError("a device needs compute for at least one dtype", file=file, key=p + "compute",
                            allowed=list(DTYPES))
        idle = _q(e.power.idle, "watts", p + "power.idle", file, positive=False)
        active = _q(e.power.active, "watts", p + "power.active", file)
        if active < idle:
            raise SpecError(f"power.active ({active:g} W) is below power.idle ({idle:g} W)", file=file,
                            key=p + "power.active")
        net = _resolve_network(e.network, p + "network", file) if e.network is not None else None
        return EdgeDevice(e.id, e.name, e.kind, peaks, float(e.efficiency), _q(e.memory, "bytes", p + "memory", file),
                          _q(e.memory_bandwidth, "bytes_per_s", p + "memory_bandwidth", file), idle, active, net,
                          e.source)
    except SpecError as err:
        raise locate(err, data, file) from None


@lru_cache(maxsize=64)
def get_device(ident: str) -> EdgeDevice:
    path = _catalog_dir("hardware", "edge") / f"{ident}.yaml"
    if not path.is_file():
        raise SpecError(f"unknown edge device {short(ident)}", allowed=device_ids(),
                        hint=did_you_mean(ident, device_ids()))
    return device_from_dict(load_yaml_file(path), file=str(path))


def _resolve_device(spec: Any, key: str, file: str | None) -> EdgeDevice:
    if isinstance(spec, dict):
        return device_from_dict(spec, file=file, prefix=key)
    if file is not None and spec.endswith((".yaml", ".yml")):
        path = Path(file).parent / spec
        if not path.is_file():
            raise SpecError(f"device file {short(spec)} not found", file=file, key=key)
        return device_from_dict(load_yaml_file(path), file=str(path))
    if spec not in device_ids():
        raise SpecError(f"unknown edge device {short(spec)}", file=file, key=key, allowed=device_ids(),
                        hint=did_you_mean(spec, device_ids()))
    return get_device(spec)


def cluster_from_dict(data: Any, file: str | None = None) -> EdgeCluster:
    if isinstance(data, dict) and data.get("kind") in ("edge", "server"):  # one device alone
        d = device_from_dict(data, file=file)
        return EdgeCluster(d.id, (d,), (d.id,), ((d.id, 0, 1),), {}, d.source)
    e = validate(ClusterEntry, data, file=file)
    devices, ids, groups = [], [], []
    try:
        for gi, g in enumerate(e.devices):
            key = f"devices[{gi}]"
            dev = _resolve_device(g.device, f"{key}.device", file)
            if g.network is not None:
                dev = EdgeDevice(**{**dev.__dict__, "network": _resolve_network(g.network, f"{key}.network", file)})
            if g.ids is not None and len(g.ids) != g.count:
                raise SpecError(f"{len(g.ids)} ids for count {g.count}", file=file, key=f"{key}.ids")
            name = dev.id
            if any(name == n for n, _, _ in groups):
                raise SpecError(f"device {name!r} is listed twice: give one group a count", file=file,
                                key=f"{key}.device")
            groups.append((name, len(devices), g.count))
            for k in range(g.count):
                devices.append(dev)
                ids.append(g.ids[k] if g.ids else f"{name}-{k}")
            if len(devices) > MAX_DEVICES:
                raise SpecError(f"more than {MAX_DEVICES} devices", file=file, key=f"{key}.count")
        if len(set(ids)) != len(ids):
            raise SpecError("device ids are not unique", file=file, key="devices")
        names = [n for n, _, _ in groups]
        overrides = {}
        for li, ln in enumerate(e.links):
            for end in ln.between:
                if end not in names:
                    raise SpecError(f"unknown group {short(end)} in a link", file=file, key=f"links[{li}].between",
                                    allowed=names, hint=did_you_mean(end, names))
            overrides[frozenset(ln.between)] = _resolve_network(ln.network, f"links[{li}].network", file)
    except SpecError as err:
        raise locate(err, data, file) from None
    return EdgeCluster(e.name, tuple(devices), tuple(ids), tuple(groups), overrides, e.source)


def is_edge_file(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") in ("edge", "server", "edge-cluster")


def load_edge_cluster(ref: "str | Path | dict | EdgeCluster") -> EdgeCluster:
    """An edge cluster from a cluster/device YAML path, an inline mapping, or a catalog id (cluster ids first, then
    device ids: one device alone)."""
    if isinstance(ref, EdgeCluster):
        return ref
    if isinstance(ref, dict):
        return cluster_from_dict(ref)
    text = str(ref)
    path = Path(text)
    if text.endswith((".yaml", ".yml")):
        if not path.is_file():
            raise SpecError(f"file not found: {short(text)}", key="--hw")
        data = load_yaml_file(path)
        if not is_edge_file(data):
            raise SpecError("not an edge cluster or device file (kind: edge-cluster | edge | server)", file=text,
                            key="kind", hint="layer-chain workloads run on edge clusters: see catalogs/edge_clusters/")
        return cluster_from_dict(data, file=text)
    if text in cluster_ids():
        p = _catalog_dir("edge_clusters") / f"{text}.yaml"
        return cluster_from_dict(load_yaml_file(p), file=str(p))
    if text in device_ids():
        d = get_device(text)
        return EdgeCluster(d.id, (d,), (d.id,), ((d.id, 0, 1),), {}, d.source)
    known = cluster_ids() + device_ids()
    raise SpecError(f"unknown edge cluster {short(text)}", key="--hw", allowed=known, hint=did_you_mean(text, known))
