"""Core hardware types (frozen dataclasses, SI units; names carry the unit)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from parplan.errors import SpecError

# Math dtypes a device may list a dense peak for.  ``mxfp8`` is OCP MX FP8 (E4M3/E5M2 blocks of 32 with an E8M0
# scale) and ``nvfp4`` is NVIDIA's FP4 (E2M1 blocks of 16 with an FP8 scale); neither is sparse.
DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "int8")

DEVICE_KINDS = ("gpu", "tpu", "cpu", "dsp", "edge", "accelerator")

# Architecture generation ids used by the catalog (a user device may name another one).
GENERATIONS = ("volta", "ampere", "ada", "hopper", "blackwell", "blackwell-ultra", "cdna2", "cdna3", "cdna4",
               "gaudi2", "gaudi3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e")

LINK_KINDS = ("nvlink", "pcie", "infiniband", "roce", "ethernet", "xgmi", "omnipath", "ici", "dcn")

# How the devices of one scale-up domain are wired: one switch level (NVSwitch, or an all-to-all mesh such as
# xGMI / Gaudi RoCE that behaves like one) or a wrap-around torus of chip-to-chip links (TPU ICI).
TOPOLOGIES = ("switch", "torus-2d", "torus-3d")

# Largest accepted cluster (checked where cluster files are read).  Each maximum is far beyond any machine built —
# the largest published training runs use ~10^5 GPUs, an NVL72 rack is 72 devices on one fabric — and small
# enough that every per-device structure of the planner and executor stays cheap.
MAX_DEVICES = 1_048_576  # 2^20 devices in a cluster, all groups together (10× the largest runs)
MAX_NODES = 1_048_576  # nodes of one group (a node may hold a single device)
MAX_DEVICES_PER_NODE = 1024  # devices of one node (8 in a DGX, 4 in a GB200 tray or a TPU host)
MAX_NICS_PER_NODE = 1024  # NICs of one node (8 in a DGX H100)
MAX_GROUPS = 16  # device groups of one cluster (mixed clusters have 2–3 generations)
MAX_COMPUTE_UNITS = 1_000_000  # SMs / CUs per chip (an H100 has 132, a B200 148)
MAX_LINK_LATENCY_S = 1.0  # a link's latency (NICs and switches add microseconds; a second is not a link)


@dataclass(frozen=True)
class Device:
    id: str
    name: str
    kind: str  # gpu | tpu | cpu | dsp | edge | accelerator
    vendor: str
    memory_bytes: float
    memory_bandwidth_bytes_per_s: float
    peak_flops_per_s: Mapping[str, float]  # dense (no structured sparsity), per dtype
    source: str
    tdp_w: float | None = None
    price_per_hour: float | None = None  # USD per device-hour, only where a public list price is cited
    generation: str = ""  # architecture generation id (GENERATIONS), "" when unknown
    compute_units: int | None = None  # SMs (NVIDIA), CUs (AMD), MMEs (Gaudi), TensorCores per chip (TPU)

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
    kind: str  # nvlink | pcie | infiniband | roce | ethernet | xgmi | omnipath | ici | dcn (| inline)
    bandwidth_bytes_per_s: float  # per device, per direction
    latency_s: float
    source: str
    nvls: bool = False  # the switch reduces in-network (NVLink SHARP: NVSwitch gen3 / NVLink5 switch)


def check_scale_up(scale_up_domain: int | None, devices_per_node: int, nodes: int, topology: str = "switch",
                   key: str = "") -> None:
    """Raise ``SpecError`` (key path ``{key}.scale_up_domain`` / ``{key}.topology``) for an impossible domain.

    Rules: the domain is a whole number of nodes (a multiple of ``devices_per_node``), and the group is a whole
    number of domains (``nodes * devices_per_node`` a multiple of the domain).  A group *smaller* than one domain
    (two trays of an NVL72 rack, a few hosts of a TPU pod) is allowed: it is one partial domain, and
    ``NodeGroup.scale_up_devices`` clamps to the group's size.
    """
    prefix = f"{key}." if key else ""
    if topology not in TOPOLOGIES:
        raise SpecError(f"bad value {topology!r}", key=f"{prefix}topology", value=topology, allowed=list(TOPOLOGIES))
    if scale_up_domain is None:
        return
    k = f"{prefix}scale_up_domain"
    if isinstance(scale_up_domain, bool) or not isinstance(scale_up_domain, int) or scale_up_domain < 1:
        raise SpecError(f"bad value {scale_up_domain!r}: expected a positive integer (devices per domain)", key=k,
                        value=scale_up_domain)
    n_devices = nodes * devices_per_node
    if scale_up_domain % devices_per_node:
        lo = scale_up_domain // devices_per_node * devices_per_node
        near = " or ".join(str(v) for v in (lo, lo + devices_per_node) if v > 0)
        raise SpecError(f"scale_up_domain={scale_up_domain} is not a multiple of devices_per_node={devices_per_node}",
                        key=k, value=scale_up_domain,
                        hint=f"a domain holds whole nodes: use a multiple of {devices_per_node}, e.g. {near}")
    if scale_up_domain < n_devices and n_devices % scale_up_domain:
        per = scale_up_domain // devices_per_node
        raise SpecError(f"scale_up_domain={scale_up_domain} does not divide the group's {n_devices} devices "
                        f"({nodes} nodes x {devices_per_node})", key=k, value=scale_up_domain,
                        hint=f"use a multiple of {per} nodes, or a scale_up_domain that divides {n_devices}")


@dataclass(frozen=True)
class NodeGroup:
    """Identical nodes of one device type.

    ``intra_node`` is the scale-up link: it spans ``scale_up_devices`` devices (one node unless
    ``scale_up_domain`` says more: an NVL72 rack of 4-GPU trays, a TPU slice of 4- or 8-chip hosts).
    ``inter_node`` is the per-device scale-out link used between scale-up domains.
    """

    device: Device
    nodes: int
    devices_per_node: int
    intra_node: Link
    inter_node: Link
    nics_per_node: int | None = None  # None: one NIC per device
    scale_up_domain: int | None = None  # devices on one scale-up fabric when it is not one node
    topology: str = "switch"  # switch | torus-2d | torus-3d (of the scale-up fabric)

    def __post_init__(self) -> None:
        if self.scale_up_domain is not None or self.topology != "switch":
            check_scale_up(self.scale_up_domain, self.devices_per_node, self.nodes, self.topology)

    @property
    def n_devices(self) -> int:
        return self.nodes * self.devices_per_node

    @property
    def scale_up_devices(self) -> int:
        """Devices that reach each other over ``intra_node`` (clamped to the group's size)."""
        if self.scale_up_domain is None:
            return self.devices_per_node
        return min(self.scale_up_domain, self.n_devices)

    @property
    def scale_up_domains(self) -> int:
        """Number of scale-up domains in the group (a group smaller than one domain is one)."""
        return -(-self.n_devices // self.scale_up_devices)

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
