"""Core hardware types (frozen dataclasses, SI units; names carry the unit)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")


@dataclass(frozen=True)
class Device:
    id: str
    name: str
    kind: str  # gpu | cpu | dsp | edge | accelerator
    vendor: str
    memory_bytes: float
    memory_bandwidth_bytes_per_s: float
    peak_flops_per_s: Mapping[str, float]  # dense (no structured sparsity), per dtype
    source: str
    tdp_w: float | None = None
    price_per_hour: float | None = None  # USD per device-hour, only where a public list price is cited

    def peak(self, dtype: str) -> float:
        """Peak dense FLOP/s for a math dtype (``fp32`` precision trains in tf32 where the device has it)."""
        if dtype in self.peak_flops_per_s:
            return self.peak_flops_per_s[dtype]
        raise KeyError(dtype)

    def supports(self, dtype: str) -> bool:
        return dtype in self.peak_flops_per_s


@dataclass(frozen=True)
class Link:
    id: str
    name: str
    kind: str  # nvlink | pcie | infiniband | roce | ethernet | xgmi | omnipath
    bandwidth_bytes_per_s: float  # per device, per direction
    latency_s: float
    source: str


@dataclass(frozen=True)
class NodeGroup:
    """Identical nodes of one device type."""

    device: Device
    nodes: int
    devices_per_node: int
    intra_node: Link
    inter_node: Link
    nics_per_node: int | None = None  # None: one NIC per device

    @property
    def n_devices(self) -> int:
        return self.nodes * self.devices_per_node

    @property
    def inter_node_bandwidth_per_device_bytes_per_s(self) -> float:
        """NIC bandwidth available to one device when every device of a node talks off-node at once."""
        if self.nics_per_node is None:
            return self.inter_node.bandwidth_bytes_per_s
        return self.inter_node.bandwidth_bytes_per_s * self.nics_per_node / self.devices_per_node


@dataclass(frozen=True)
class Cluster:
    name: str
    groups: tuple[NodeGroup, ...]
    inter_group: Link | None = None
    source_file: str | None = field(default=None, compare=False)

    @property
    def n_devices(self) -> int:
        return sum(g.n_devices for g in self.groups)

    @property
    def is_homogeneous(self) -> bool:
        return len(self.groups) == 1

    @property
    def group(self) -> NodeGroup:
        """The single group of a homogeneous cluster."""
        if len(self.groups) != 1:
            raise ValueError(f"cluster {self.name!r} has {len(self.groups)} groups; this path needs one")
        return self.groups[0]
