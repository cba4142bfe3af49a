"""Hardware catalogs (devices, links, clusters) and the cluster file (input contract v1, plus the v2 keys).

Contract v2 additions, all optional (a v1 file means the same): a group's ``device`` may be a catalog id, an
inline device mapping (the schema of a device YAML; ``id``, ``name`` and ``source`` optional) or a path to a
device YAML (relative to the cluster file's folder); group keys ``scale_up_domain`` and ``topology``.
Catalog ids are looked up in the shipped catalog and the user's (``parplan.catalogs.entries``: PARPLAN_CATALOG_PATH);
``load_cluster`` also takes the ``DEVICE:NODESxDPN[@INTRA,INTER]`` shorthand (``parplan.hardware.shorthand``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.catalogs import entries, is_user
from parplan.errors import SpecError, did_you_mean, short
from parplan.hardware.types import (DTYPES, MAX_COMPUTE_UNITS, MAX_DEVICES, MAX_DEVICES_PER_NODE, MAX_GROUPS,
                                    MAX_LINK_LATENCY_S, MAX_NICS_PER_NODE, MAX_NODES, Cluster, Device, Link,
                                    NodeGroup, check_scale_up)
from parplan.spec import Name, check_name, load_yaml_file, locate, validate
from parplan.units import parse_quantity

# a number or a unit string; NaN/inf pass the schema here so that parse_quantity reports them with the key's units
Quantity = Union[str, Annotated[float, Field(allow_inf_nan=True)], int]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)


class PeakFlopsEntry(_Strict):
    fp64: Optional[Quantity] = None
    fp32: Optional[Quantity] = None
    tf32: Optional[Quantity] = None
    fp16: Optional[Quantity] = None
    bf16: Optional[Quantity] = None
    fp8: Optional[Quantity] = None
    mxfp8: Optional[Quantity] = None  # OCP MX FP8 (block-scaled), dense
    nvfp4: Optional[Quantity] = None  # NVIDIA NVFP4, dense
    int8: Optional[Quantity] = None


class DeviceEntry(_Strict):
    id: Name
    name: Name
    kind: Literal["gpu", "tpu", "cpu", "dsp", "edge", "accelerator"]
    vendor: Name
    memory: Quantity
    memory_bandwidth: Quantity
    peak_flops: PeakFlopsEntry
    tdp: Optional[Quantity] = None
    price_per_hour: Optional[Quantity] = None
    price_source: Optional[str] = None
    generation: Optional[str] = None  # architecture generation id, e.g. hopper, cdna3, tpu-v5p
    compute_units: Optional[int] = Field(default=None, gt=0, le=MAX_COMPUTE_UNITS)  # SMs / CUs / MMEs / TensorCores per chip
    source: str = Field(min_length=8)
    notes: Optional[str] = None


class UserDeviceEntry(DeviceEntry):
    """A device written inline in a cluster file or in a user's device YAML: ``id``, ``name``, ``source`` optional."""

    id: Optional[Name] = None
    name: Optional[Name] = None
    source: Optional[str] = None


class LinkEntry(_Strict):
    id: Name
    name: Name
    kind: Literal["nvlink", "pcie", "infiniband", "roce", "ethernet", "xgmi", "omnipath", "ici", "dcn"]
    scope: Literal["intra_node", "inter_node"]
    bandwidth: Quantity
    latency: Quantity
    nvls: bool = False  # NVLink SHARP (in-switch reductions)
    source: str = Field(min_length=8)
    latency_source: Optional[str] = None
    nvls_source: Optional[str] = None
    notes: Optional[str] = None


class InlineLink(_Strict):
    bandwidth: Quantity  # > 0, ≤ 1e15 B/s (parse_quantity)
    latency: Quantity  # ≥ 0, ≤ MAX_LINK_LATENCY_S
    name: Optional[Name] = None


class GroupEntry(_Strict):
    device: Any  # catalog id, path to a device YAML, or an inline device mapping (checked in _resolve_device)
    nodes: int = Field(gt=0, le=MAX_NODES)
    devices_per_node: int = Field(gt=0, le=MAX_DEVICES_PER_NODE)
    intra_node: Union[str, InlineLink]
    inter_node: Union[str, InlineLink]
    nics_per_node: Optional[int] = Field(default=None, gt=0, le=MAX_NICS_PER_NODE)
    scale_up_domain: Optional[int] = Field(default=None, gt=0, le=MAX_DEVICES)
    topology: Literal["switch", "torus-2d", "torus-3d"] = "switch"


class ClusterFile(_Strict):
    name: Name
    groups: list[GroupEntry] = Field(min_length=1, max_length=MAX_GROUPS)
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
    return SpecError(f"unknown {noun} id {short(ident)}", key=key, file=file, hint=hint)


_GENERATION = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def _device_from_entry(e: DeviceEntry, *, file: str | None, prefix: str = "", default_id: str = "",
                       default_source: str = "") -> Device:
    """A ``Device`` from a validated entry; ``prefix`` is the key path of the entry inside ``file``."""
    peaks = {}
    for dt in DTYPES:
        v = getattr(e.peak_flops, dt)
        if v is not None:
            peaks[dt] = parse_quantity(v, "flops_per_s", key=f"{prefix}peak_flops.{dt}", file=file)
    if not peaks:
        raise SpecError("no peak FLOP/s given", file=file, key=f"{prefix}peak_flops", allowed=list(DTYPES))
    if e.generation is not None and not _GENERATION.match(e.generation):
        raise SpecError(f"bad value {short(e.generation)}: a generation id is lower-case, e.g. hopper, cdna3, tpu-v5p",
                        file=file, key=f"{prefix}generation", value=e.generation)
    ident = e.id or default_id
    return Device(
        id=ident, name=e.name or ident, kind=e.kind, vendor=e.vendor,
        memory_bytes=parse_quantity(e.memory, "bytes", key=f"{prefix}memory", file=file),
        memory_bandwidth_bytes_per_s=parse_quantity(e.memory_bandwidth, "bytes_per_s",
                                                    key=f"{prefix}memory_bandwidth", file=file),
        peak_flops_per_s=peaks, source=e.source or default_source,
        tdp_w=parse_quantity(e.tdp, "watts", key=f"{prefix}tdp", file=file) if e.tdp is not None else None,
        price_per_hour=(parse_quantity(e.price_per_hour, "dollars_per_hour", key=f"{prefix}price_per_hour",
                                       file=file) if e.price_per_hour is not None else None),
        generation=e.generation or "", compute_units=e.compute_units,
    )


def _stamp(path: Path) -> tuple[int, int]:
    """(mtime, size) of a catalog file: the caches below are keyed on it, so an edited or replaced user file is
    read again (``parplan catalog add --force`` in the same process, a test's tmp folder)."""
    st = path.stat()
    return st.st_mtime_ns, st.st_size


def get_device(ident: str) -> Device:
    """A device of the hardware catalog (shipped or user) by id."""
    files = entries("hardware", "devices")
    if ident not in files:
        raise _unknown("hardware", ident, list(files))
    return _device_at(str(files[ident]), ident, _stamp(files[ident]))


@lru_cache(maxsize=512)
def _device_at(path: str, ident: str, stamp: tuple[int, int]) -> Device:
    data = load_yaml_file(path)
    e = validate(DeviceEntry, data, file=path)
    if e.id != ident:
        raise SpecError(f"id {e.id!r} does not match the file name", file=path, key="id")
    try:
        return _device_from_entry(e, file=path)
    except SpecError as err:
        raise locate(err, data, path) from None


def get_link(ident: str) -> Link:
    """A link of the hardware catalog (shipped or user) by id (bandwidth per device, per direction)."""
    files = entries("hardware", "links")
    if ident not in files:
        raise _unknown("links", ident, list(files))
    return _link_at(str(files[ident]), ident, _stamp(files[ident]))


@lru_cache(maxsize=512)
def _link_at(path: str, ident: str, stamp: tuple[int, int]) -> Link:
    data = load_yaml_file(path)
    e = validate(LinkEntry, data, file=path)
    if e.id != ident:
        raise SpecError(f"id {e.id!r} does not match the file name", file=path, key="id")
    try:
        return Link(id=e.id, name=e.name, kind=e.kind,
                    bandwidth_bytes_per_s=parse_quantity(e.bandwidth, "bytes_per_s", key="bandwidth", file=path),
                    latency_s=parse_quantity(e.latency, "seconds", key="latency", file=path,
                                             maximum=MAX_LINK_LATENCY_S), source=e.source,
                    nvls=e.nvls)
    except SpecError as err:
        raise locate(err, data, path) from None


def link_entry(ident: str) -> LinkEntry:
    files = entries("hardware", "links")
    return validate(LinkEntry, load_yaml_file(files[ident]), file=str(files[ident]))


def device_entry(ident: str) -> DeviceEntry:
    files = entries("hardware", "devices")
    return validate(DeviceEntry, load_yaml_file(files[ident]), file=str(files[ident]))


def check_entry_file(kind: str, path: Path, ident: str) -> None:
    """Validate a device or link catalog file as if it were catalog entry ``ident`` (``parplan catalog add``)."""
    if kind == "device":
        _device_at(str(path), ident, _stamp(path))
    elif kind == "link":
        _link_at(str(path), ident, _stamp(path))
    else:
        raise ValueError(kind)


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
                latency_s=parse_quantity(spec.latency, "seconds", key=f"{key}.latency", file=file, positive=False,
                                         maximum=MAX_LINK_LATENCY_S),
                source=f"user input ({file or 'inline'})")


def cluster_from_dict(data: Any, file: str | None = None) -> Cluster:
    """Build a ``Cluster`` from the parsed cluster file (contract v1, plus the optional v2 keys)."""
    try:
        return _cluster_from_dict(data, file)
    except SpecError as err:
        if err.file in (None, file):
            raise locate(err, data, file) from None
        raise


def _device_file(spec: str, file: str | None) -> Path | None:
    """The device YAML a group's ``device`` string names, or None when it is meant as a catalog id."""
    try:
        p = Path(spec).expanduser()
    except RuntimeError:  # ~user of an unknown user
        p = Path(spec)
    if not p.is_absolute():
        p = (Path(file).parent if file else Path.cwd()) / p
    if spec.endswith((".yaml", ".yml")) or "/" in spec or "\\" in spec or _is_file(p):
        return p
    return None


def _is_file(p: Path) -> bool:
    """``p.is_file()``, False for a path the OS cannot even look up (too long, a NUL byte)."""
    try:
        return p.is_file()
    except (OSError, ValueError):
        return False


def _user_device(data: Any, *, file: str | None, prefix: str, default_id: str, default_source: str) -> Device:
    e = validate(UserDeviceEntry, data, file=file, prefix=prefix.rstrip("."))
    try:
        return _device_from_entry(e, file=file, prefix=prefix, default_id=default_id, default_source=default_source)
    except SpecError as err:
        raise locate(err, data if not prefix else None, file) from None


def _resolve_device(spec: Any, key: str, file: str | None) -> Device:
    """A group's device: a catalog id, a path to a device YAML, or an inline mapping (contract v2)."""
    if isinstance(spec, Mapping):
        return _user_device(spec, file=file, prefix=f"{key}.", default_id=f"inline:{key.rsplit('.', 1)[0]}",
                            default_source=f"user input ({file or 'inline'}, {key})")
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"bad value {short(spec)}: expected a device catalog id, a path to a device YAML, "
                        "or an inline device mapping", key=key, file=file, value=spec,
                        hint="see `parplan catalog list hardware`")
    if spec in device_ids():
        return get_device(spec)
    path = _device_file(spec, file)
    if path is None:
        raise _unknown("hardware", spec, device_ids(), key=key, file=file)
    if not _is_file(path):
        raise SpecError(f"device file {short(spec)} not found (looked for {path})", key=key,
                        file=file, value=spec, hint="a relative path is resolved against the cluster file's folder")
    data = load_yaml_file(path)
    return _user_device(data, file=str(path), prefix="", default_id=check_name(path.stem, key=key, file=file),
                        default_source=f"user device file {path.name}")


def _cluster_from_dict(data: Any, file: str | None) -> Cluster:
    cf = validate(ClusterFile, data, file=file)
    groups = []
    for i, g in enumerate(cf.groups):
        key = f"groups[{i}]"
        raw = data["groups"][i].get("device", g.device) if isinstance(data, Mapping) else g.device
        dev = _resolve_device(raw, f"{key}.device", file)
        check_scale_up(g.scale_up_domain, g.devices_per_node, g.nodes, g.topology, key=key)
        groups.append(NodeGroup(device=dev, nodes=g.nodes, devices_per_node=g.devices_per_node,
                                intra_node=_resolve_link(g.intra_node, f"{key}.intra_node", file),
                                inter_node=_resolve_link(g.inter_node, f"{key}.inter_node", file),
                                nics_per_node=g.nics_per_node, scale_up_domain=g.scale_up_domain,
                                topology=g.topology))
    inter_group = _resolve_link(cf.inter_group, "inter_group", file) if cf.inter_group is not None else None
    total = sum(g.n_devices for g in groups)
    if total > MAX_DEVICES:
        raise SpecError(f"the cluster has {total:,} devices ({' + '.join(f'{g.nodes:,}×{g.devices_per_node}' for g in groups)}): "
                        f"at most {MAX_DEVICES:,} are supported", key="groups", file=file)
    return Cluster(name=cf.name, groups=tuple(groups), inter_group=inter_group, source_file=file)


def load_cluster(ref: "str | Path | dict | Cluster") -> Cluster:
    """A cluster from a YAML file path, a cluster catalog id (shipped or user), the ``DEVICE:NODESxDPN[@INTRA,INTER]``
    shorthand (``hardware/shorthand.py``), or an already parsed mapping."""
    if isinstance(ref, Cluster):
        return ref
    if isinstance(ref, dict):
        return cluster_from_dict(ref, file=None)
    ref_s = str(ref)
    path = Path(ref_s)
    if path.suffix in (".yaml", ".yml") or _exists(path):
        return cluster_from_dict(load_yaml_file(path), file=ref_s)
    files = entries("clusters")
    if ref_s in files:
        return catalog_cluster(files[ref_s])
    from parplan.hardware.shorthand import looks_like_shorthand, shorthand_cluster

    if looks_like_shorthand(ref_s):
        try:
            return cluster_from_dict(shorthand_cluster(ref_s), file=None)
        except SpecError as err:
            if err.file is not None or not (err.key or "").startswith("groups[0]"):
                raise
            what = err.key.split(".", 1)[-1].replace("_node", "-node link").replace("_", " ")
            raise SpecError(f"bad --hw shorthand {short(ref_s)}: {what}: {err.message}", allowed=err.allowed,
                            hint=err.hint) from None
    raise SpecError(f"no cluster file or catalog id {short(ref_s)}",
                    hint=did_you_mean(ref_s, list(files)) or "give a cluster YAML file, DEVICE:NODESxDPN "
                    "(e.g. h100-sxm-80gb:32x8) or see `parplan catalog list clusters`")


def catalog_cluster(path: Path) -> Cluster:
    """A cluster catalog entry; a user's entry must cite its ``source`` (the shipped ones are reviewed here)."""
    data = load_yaml_file(path)
    if is_user(path) and isinstance(data, Mapping) and not data.get("source"):
        raise SpecError("required key is missing: a user catalog cluster cites its source", file=str(path),
                        key="source", hint="add source: \"where the figures come from\"")
    return cluster_from_dict(data, file=str(path))


def _exists(p: Path) -> bool:
    """``p.exists()``, False for a path the OS cannot even look up (too long, a NUL byte)."""
    try:
        return p.exists()
    except (OSError, ValueError):
        return False
