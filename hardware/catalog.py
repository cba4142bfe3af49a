"""Hardware catalogs (devices, links, clusters) and the cluster file of input contract v1."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.catalogs import entries
from parplan.errors import SpecError, did_you_mean
from parplan.hardware.types import DTYPES, Cluster, Device, Link, NodeGroup
from parplan.spec import load_yaml_file, locate, validate
from parplan.units import parse_quantity

Quantity = Union[str, float, int]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PeakFlopsEntry(_Strict):
    fp64: Optional[Quantity] = None
    fp32: Optional[Quantity] = None
    tf32: Optional[Quantity] = None
    fp16: Optional[Quantity] = None
    bf16: Optional[Quantity] = None
    fp8: Optional[Quantity] = None
    int8: Optional[Quantity] = None


class DeviceEntry(_Strict):
    id: str
    name: str
    kind: Literal["gpu", "cpu", "dsp", "edge", "accelerator"]
    vendor: str
    memory: Quantity
    memory_bandwidth: Quantity
    peak_flops: PeakFlopsEntry
    tdp: Optional[Quantity] = None
    price_per_hour: Optional[Quantity] = None
    price_source: Optional[str] = None
    source: str = Field(min_length=8)
    notes: Optional[str] = None


class LinkEntry(_Strict):
    id: str
    name: str
    kind: Literal["nvlink", "pcie", "infiniband", "roce", "ethernet", "xgmi", "omnipath"]
    scope: Literal["intra_node", "inter_node"]
    bandwidth: Quantity
    latency: Quantity
    source: str = Field(min_length=8)
    latency_source: Optional[str] = None
    notes: Optional[str] = None


class InlineLink(_Strict):
    bandwidth: Quantity
    latency: Quantity
    name: Optional[str] = None


class GroupEntry(_Strict):
    device: str
    nodes: int = Field(gt=0)
    devices_per_node: int = Field(gt=0)
    intra_node: Union[str, InlineLink]
    inter_node: Union[str, InlineLink]
    nics_per_node: Optional[int] = Field(default=None, gt=0)


class ClusterFile(_Strict):
    name: str
    groups: list[GroupEntry] = Field(min_length=1)
    inter_group: Optional[Union[str, InlineLink]] = None
    description: Optional[str] = None
    source: Optional[str] = None


def device_ids() -> list[str]:
    return list(entries("hardware", "devices"))


def link_ids() -> list[str]:
    return list(entries("hardware", "links"))


def cluster_ids() -> list[str]:
    return list(entries("clusters"))


def _unknown(kind: str, ident: str, known: list[str], key: str | None = None, file: str | None = None) -> SpecError:
    hint = did_you_mean(ident, known) or f"see `parplan catalog list {kind}`"
    noun = {"hardware": "device", "links": "link", "clusters": "cluster"}.get(kind, kind)
    return SpecError(f"unknown {noun} id {ident!r}", key=key, file=file, hint=hint)


@lru_cache(maxsize=None)
def get_device(ident: str) -> Device:
    """A device of the hardware catalog by id."""
    files = entries("hardware", "devices")
    if ident not in files:
        raise _unknown("hardware", ident, list(files))
    path = files[ident]
    data = load_yaml_file(path)
    e = validate(DeviceEntry, data, file=str(path))
    if e.id != ident:
        raise SpecError(f"id {e.id!r} does not match the file name", file=str(path), key="id")
    peaks = {}
    for dt in DTYPES:
        v = getattr(e.peak_flops, dt)
        if v is not None:
            peaks[dt] = parse_quantity(v, "flops_per_s", key=f"peak_flops.{dt}", file=str(path))
    if not peaks:
        raise SpecError("no peak FLOP/s given", file=str(path), key="peak_flops", allowed=list(DTYPES))
    return Device(
        id=e.id, name=e.name, kind=e.kind, vendor=e.vendor,
        memory_bytes=parse_quantity(e.memory, "bytes", key="memory", file=str(path)),
        memory_bandwidth_bytes_per_s=parse_quantity(e.memory_bandwidth, "bytes_per_s", key="memory_bandwidth",
                                                    file=str(path)),
        peak_flops_per_s=peaks, source=e.source,
        tdp_w=parse_quantity(e.tdp, "watts", key="tdp", file=str(path)) if e.tdp is not None else None,
        price_per_hour=(parse_quantity(e.price_per_hour, "dollars_per_hour", key="price_per_hour", file=str(path))
                        if e.price_per_hour is not None else None),
    )


@lru_cache(maxsize=None)
def get_link(ident: str) -> Link:
    """A link of the hardware catalog by id (bandwidth per device, per direction)."""
    files = entries("hardware", "links")
    if ident not in files:
        raise _unknown("links", ident, list(files))
    path = files[ident]
    e = validate(LinkEntry, load_yaml_file(path), file=str(path))
    if e.id != ident:
        raise SpecError(f"id {e.id!r} does not match the file name", file=str(path), key="id")
    return Link(id=e.id, name=e.name, kind=e.kind,
                bandwidth_bytes_per_s=parse_quantity(e.bandwidth, "bytes_per_s", key="bandwidth", file=str(path)),
                latency_s=parse_quantity(e.latency, "seconds", key="latency", file=str(path)), source=e.source)


def link_entry(ident: str) -> LinkEntry:
    files = entries("hardware", "links")
    return validate(LinkEntry, load_yaml_file(files[ident]), file=str(files[ident]))


def device_entry(ident: str) -> DeviceEntry:
    files = entries("hardware", "devices")
    return validate(DeviceEntry, load_yaml_file(files[ident]), file=str(files[ident]))


def _resolve_link(spec: Union[str, InlineLink], key: str, file: str | None) -> Link:
    if isinstance(spec, str):
        try:
            return get_link(spec)
        except SpecError as err:
            if err.key is None and err.file is None:
                raise _unknown("links", spec, link_ids(), key=key, file=file) from None
            raise
    return Link(id=f"inline:{key}", name=spec.name or f"inline {key}", kind="inline",
                bandwidth_bytes_per_s=parse_quantity(spec.bandwidth, "bytes_per_s", key=f"{key}.bandwidth", file=file),
                latency_s=parse_quantity(spec.latency, "seconds", key=f"{key}.latency", file=file, positive=False),
                source=f"user input ({file or 'inline'})")


def cluster_from_dict(data: Any, file: str | None = None) -> Cluster:
    """Build a ``Cluster`` from the parsed cluster file (contract v1)."""
    try:
        return _cluster_from_dict(data, file)
    except SpecError as err:
        if err.file in (None, file):
            raise locate(err, data, file) from None
        raise


def _cluster_from_dict(data: Any, file: str | None) -> Cluster:
    cf = validate(ClusterFile, data, file=file)
    groups = []
    for i, g in enumerate(cf.groups):
        key = f"groups[{i}]"
        try:
            dev = get_device(g.device)
        except SpecError as err:
            if err.file is None:
                raise _unknown("hardware", g.device, device_ids(), key=f"{key}.device", file=file) from None
            raise
        groups.append(NodeGroup(device=dev, nodes=g.nodes, devices_per_node=g.devices_per_node,
                                intra_node=_resolve_link(g.intra_node, f"{key}.intra_node", file),
                                inter_node=_resolve_link(g.inter_node, f"{key}.inter_node", file),
                                nics_per_node=g.nics_per_node))
    inter_group = _resolve_link(cf.inter_group, "inter_group", file) if cf.inter_group is not None else None
    return Cluster(name=cf.name, groups=tuple(groups), inter_group=inter_group, source_file=file)


def load_cluster(ref: "str | Path | dict | Cluster") -> Cluster:
    """A cluster from a YAML file path, a cluster catalog id, or an already parsed mapping."""
    if isinstance(ref, Cluster):
        return ref
    if isinstance(ref, dict):
        return cluster_from_dict(ref, file=None)
    ref_s = str(ref)
    path = Path(ref_s)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return cluster_from_dict(load_yaml_file(path), file=ref_s)
    files = entries("clusters")
    if ref_s in files:
        return cluster_from_dict(load_yaml_file(files[ref_s]), file=str(files[ref_s]))
    raise SpecError(f"no cluster file or catalog id {ref_s!r}",
                    hint=did_you_mean(ref_s, list(files)) or "give a cluster YAML file or see `parplan catalog list clusters`")
