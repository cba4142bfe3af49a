"""The 256-GPU DGX H100 cluster of the catalog: 32 nodes of 8 H100 on NVLink4, one NDR 400 port per GPU."""
from __future__ import annotations

from parplan.hardware.catalog import load_cluster


def test_dgx_h100_256_loads():
    c = load_cluster("dgx-h100-256")
    assert c.name == "dgx-h100-256"
    assert sum(g.nodes * g.devices_per_node for g in c.groups) == 256
    (g,) = c.groups
    assert (g.nodes, g.devices_per_node, g.nics_per_node) == (32, 8, 8)
    assert g.device.id == "h100-sxm-80gb" and g.intra_node.id == "nvlink4" and g.inter_node.id == "ib-ndr400"
    assert g.intra_node.kind == "nvlink" and g.inter_node.kind == "infiniband"
