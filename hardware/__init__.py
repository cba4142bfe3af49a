"""Devices, links and clusters; catalog loading and validation."""
from parplan.hardware.types import Cluster, Device, Link, NodeGroup
from parplan.hardware.catalog import (
    device_ids,
    get_device,
    get_link,
    link_ids,
    cluster_ids,
    load_cluster,
)

__all__ = ["Cluster", "Device", "Link", "NodeGroup", "device_ids", "get_device", "get_link", "link_ids",
           "cluster_ids", "load_cluster"]
