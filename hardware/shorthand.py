"""``--hw DEVICE:NODESxDPN[@INTRA,INTER]``: a homogeneous cluster of one catalog (or user) device.

``DEVICE:N`` is N devices on nodes of the device's usual size (one partial node when N is smaller).  Without
``@INTRA,INTER`` the links are the device's usual platform's (``PLATFORMS``), the ones the shipped
``catalogs/clusters/*.yaml`` use for that device; a device of a generation without a platform here needs them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from parplan.errors import SpecError, short

FORM = "DEVICE:NODESxDPN or DEVICE:N, optionally @INTRA,INTER (e.g. h100-sxm-80gb:32x8, b200:64@nvlink5,roce-400)"
_SHORTHAND = re.compile(r"^(?P<device>[^:@,\s]+):(?:(?P<nodes>\d{1,9})x(?P<dpn>\d{1,9})|(?P<count>\d{1,12}))"
                        r"(?:@(?P<intra>[^:@,\s]+),(?P<inter>[^:@,\s]+))?$")


@dataclass(frozen=True)
class Platform:
    """The usual node of a device: devices per node, links, NICs, scale-up domain (``"all"``: the whole group)."""

    devices_per_node: int
    intra_node: str
    inter_node: str
    source: str
    nics_per_node: Optional[int] = None
    scale_up_domain: "int | str | None" = None
    topology: str = "switch"


_DGX_H100 = Platform(8, "nvlink4", "ib-ndr400", "NVIDIA DGX H100 datasheet: 8 H100 SXM5 on NVSwitch, 8 ConnectX-7 "
                     "400 Gb/s ports (as catalogs/clusters/dgx-h100-64.yaml)", nics_per_node=8)

# by architecture generation (``generation`` of a device YAML): the SXM / OAM baseboard system of that generation
PLATFORMS_BY_GENERATION: dict[str, Platform] = {
    "hopper": _DGX_H100,
    # NVIDIA DGX A100 datasheet: 8 A100 SXM4 on six NVSwitches, 8 HDR 200 Gb/s ports (catalogs/clusters/dgx-a100-8.yaml)
    "ampere": Platform(8, "nvlink3", "ib-hdr200", "NVIDIA DGX A100 datasheet: 8 A100 SXM4, NVSwitch, 8 HDR 200 Gb/s "
                       "InfiniBand ports (as catalogs/clusters/dgx-a100-8.yaml)", nics_per_node=8),
    # DGX-1 with V100 system architecture whitepaper: hybrid cube-mesh NVLink2, 4 EDR 100 Gb/s ports per 8 GPUs
    "volta": Platform(8, "nvlink2", "ib-edr100", "DGX-1 with V100 system architecture whitepaper: 8 V100 SXM2, "
                      "NVLink2 hybrid cube mesh, 4 EDR 100 Gb/s ports (as catalogs/clusters/mixed-a100-v100-32.yaml)",
                      nics_per_node=4),
    # NVIDIA DGX B200 datasheet: 8 B200 on NVLink5 (1.8 TB/s per GPU), 8 ConnectX-7 400 Gb/s ports (not re-read here)
    "blackwell": Platform(8, "nvlink5", "ib-ndr400", "NVIDIA DGX B200 datasheet: 8 B200 on NVLink5, 8 ConnectX-7 "
                          "400 Gb/s ports (datasheet figures, not re-read here)", nics_per_node=8),
    # NVIDIA HGX B300: 8 GPUs on NVLink5, 8 ConnectX-8 800 Gb/s SuperNICs (catalogs/hardware/devices/b300.yaml notes)
    "blackwell-ultra": Platform(8, "nvlink5", "ib-xdr800", "NVIDIA HGX B300: 8 GPUs on NVLink5, one ConnectX-8 "
                                "800 Gb/s SuperNIC per GPU (as catalogs/hardware/devices/b300.yaml notes)",
                                nics_per_node=8),
    # Azure ND MI300X v5: 8 MI300X, Infinity Fabric full mesh, 8 x 400 Gb/s NDR (catalogs/clusters/mi300x-64.yaml)
    "cdna3": Platform(8, "xgmi3", "ib-ndr400", "Microsoft Azure ND MI300X v5-series: 8 MI300X on an Infinity Fabric "
                      "mesh, 8 x 400 Gb/s NDR InfiniBand (as catalogs/clusters/mi300x-64.yaml)", nics_per_node=8),
    # Intel Gaudi docs 'Network Configuration': HLS-3 box of 8, 21 scale-up + 3 scale-out 200 GbE ports per card
    "gaudi3": Platform(8, "gaudi3-roce", "gaudi3-roce-scaleout", "Intel Gaudi documentation, 'Intel Gaudi Network "
                       "Configuration': 8 cards per HLS-3 box, 21 + 3 RoCE ports (as "
                       "catalogs/clusters/gaudi3-64.yaml)"),
    # Intel Gaudi 2 HLS-Gaudi2 server of 8 cards: 21 scale-up + 3 scale-out 100 GbE ports (links gaudi2-roce*.yaml)
    "gaudi2": Platform(8, "gaudi2-roce", "gaudi2-roce-scaleout", "Intel Gaudi 2: 8-card HLS-Gaudi2 server, 21 + 3 "
                       "on-die 100 GbE RoCE ports (as catalogs/hardware/links/gaudi2-roce.yaml)"),
    # Google Cloud TPU docs 'TPU v5e': 8 chips per host, 16x16 2D-torus pod of 256 (clusters/tpu-v5e-256.yaml)
    "tpu-v5e": Platform(8, "tpu-v5e-ici", "tpu-v5e-dcn", "Google Cloud TPU docs 'TPU v5e': 8 chips per host, "
                        "2D-torus pod of 256 chips (as catalogs/clusters/tpu-v5e-256.yaml)", scale_up_domain=256,
                        topology="torus-2d"),
    # Google Cloud TPU docs 'TPU v5p': 4 chips per host, one 3D ICI torus per slice (clusters/tpu-v5p-1024.yaml)
    "tpu-v5p": Platform(4, "tpu-v5p-ici", "tpu-dcn", "Google Cloud TPU docs 'TPU v5p': 4 chips per host, one 3D ICI "
                        "torus per slice (as catalogs/clusters/tpu-v5p-1024.yaml)", scale_up_domain="all",
                        topology="torus-3d"),
}

# shipped devices whose usual node is not their generation's baseboard system (None: no usual platform, e.g. a
# PCIe card, whose server and network vary: give @INTRA,INTER and NODESxDPN)
PLATFORMS_BY_DEVICE: dict[str, Optional[Platform]] = {
    # DeepSeek-V3 technical report (arXiv 2412.19437) Sec. 3.1-3.2: 8 H800 per node on NVLink/NVSwitch, IB across
    "h800-sxm-80gb": Platform(8, "nvlink4-h800", "ib-ndr400", "DeepSeek-V3 technical report (arXiv 2412.19437), "
                              "Sec. 3.1: 8 H800 per node on NVLink and NVSwitch, InfiniBand across nodes (about "
                              "50 GB/s per GPU)", nics_per_node=8),
    # NVIDIA GB200 NVL72: 18 trays of 4 GPUs in one 72-GPU NVLink5 domain (catalogs/clusters/gb200-nvl72-576.yaml)
    "gb200": Platform(4, "nvlink5", "ib-ndr400", "NVIDIA GB200 NVL72 datasheet and multi-node NVLink tuning guide: "
                      "compute trays of 4 GPUs, 72 GPUs per NVLink domain, one ConnectX-7 400 Gb/s per GPU (as "
                      "catalogs/clusters/gb200-nvl72-576.yaml)", nics_per_node=4, scale_up_domain=72),
    # NVIDIA GB300 NVL72 reference architecture: trays of 4, 72 per domain, ConnectX-8 (gb300-nvl72-576.yaml)
    "gb300": Platform(4, "nvlink5", "ib-xdr800", "NVIDIA GB300 NVL72 Enterprise Reference Architecture: compute trays "
                      "of 4 GPUs, 72 GPUs per NVLink domain, one ConnectX-8 800 Gb/s per GPU (as "
                      "catalogs/clusters/gb300-nvl72-576.yaml)", nics_per_node=4, scale_up_domain=72),
    "h100-pcie-80gb": None, "a100-pcie-80gb": None, "l40s": None, "rtx-4090": None, "a10g": None,
}


def platform_of(device_id: str, generation: str) -> Optional[Platform]:
    """The usual platform of a device (by id for the exceptions above, else by generation), or None."""
    if device_id in PLATFORMS_BY_DEVICE:
        return PLATFORMS_BY_DEVICE[device_id]
    return PLATFORMS_BY_GENERATION.get(generation)


def looks_like_shorthand(ref: str) -> bool:
    """Whether ``--hw`` was meant as the shorthand (it has a ``:`` and is not a file)."""
    return ":" in ref and len(ref) <= 400


def _bad(ref: str, why: str) -> SpecError:
    return SpecError(f"bad --hw shorthand {short(ref)}: {why}", hint=f"write {FORM}")


def shorthand_cluster(ref: str) -> dict:
    """The cluster file mapping the shorthand ``ref`` means (validated by ``cluster_from_dict`` like any file)."""
    from parplan.hardware.catalog import _unknown, device_entry, device_ids, get_device

    m = _SHORTHAND.match(ref)
    if m is None:
        raise _bad(ref, "not of the allowed form")
    dev_id = m["device"]
    if dev_id not in device_ids():
        near = [i for i in device_ids() if i.startswith(dev_id)][:3]  # h100 → h100-pcie-80gb, h100-sxm-80gb, …
        hint = ("did you mean " + " or ".join(map(repr, near)) + "?") if near else \
            _unknown("hardware", dev_id, device_ids()).hint
        raise SpecError(f"bad --hw shorthand {short(ref)}: unknown device id {short(dev_id)}", hint=hint)
    get_device(dev_id)  # validates the entry
    plat = platform_of(dev_id, device_entry(dev_id).generation or "")
    links = (m["intra"], m["inter"]) if m["intra"] else None
    if m["count"] is not None:
        if plat is None:
            raise _bad(ref, f"{dev_id} has no usual node size here; give NODESxDPN")
        count, usual = int(m["count"]), plat.devices_per_node
        if count < 1:
            raise _bad(ref, "the device count must be ≥ 1")
        if count > usual and count % usual:
            raise _bad(ref, f"{count} devices do not fill whole nodes of {usual}; give NODESxDPN")
        nodes, dpn = (1, count) if count <= usual else (count // usual, usual)
    else:
        nodes, dpn = int(m["nodes"]), int(m["dpn"])
        if nodes < 1 or dpn < 1:
            raise _bad(ref, "NODES and DPN must be ≥ 1")
    if links is None and plat is None:
        raise _bad(ref, f"{dev_id} has no usual platform links here; add @INTRA,INTER (see `parplan catalog list "
                        "links`)")
    group: dict = {"device": dev_id, "nodes": nodes, "devices_per_node": dpn,
                   "intra_node": links[0] if links else plat.intra_node,
                   "inter_node": links[1] if links else plat.inter_node}
    if plat is not None and group["intra_node"] == plat.intra_node:  # the platform's own fabric
        su = nodes * dpn if plat.scale_up_domain == "all" else plat.scale_up_domain
        if su is not None and su % dpn == 0:
            group["scale_up_domain"] = su
        group["topology"] = plat.topology
    if plat is not None and group["inter_node"] == plat.inter_node and dpn == plat.devices_per_node:
        if plat.nics_per_node is not None:
            group["nics_per_node"] = plat.nics_per_node
    source = f"--hw {ref}" + (f": {plat.source}" if plat is not None and links is None else "")
    return {"name": ref, "groups": [group], "source": source}
