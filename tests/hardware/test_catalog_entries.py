"""Every shipped hardware catalog entry loads, is cited, and passes sanity checks that can actually fail."""
from __future__ import annotations

import math

import pytest

from parplan.hardware import (
    cluster_ids,
    device_ids,
    get_device,
    get_link,
    link_ids,
    load_cluster,
)
from parplan.hardware.catalog import device_entry, link_entry

GiB = 2.0**30

REQUIRED_DEVICES = {
    "v100-sxm-32gb", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm-80gb",
    "h100-pcie-80gb", "h800-sxm-80gb", "h200-sxm-141gb", "b200", "gb200", "mi250x", "mi300x",
    "l40s", "a10g", "rtx-4090",
}
REQUIRED_LINKS = {
    "nvlink2", "nvlink3", "nvlink4", "nvlink5", "pcie4-x16", "pcie5-x16", "ib-hdr200", "ib-ndr400",
    "roce-100", "roce-200", "roce-400", "eth-25", "eth-100", "xgmi3",
    "opa-100", "ib-edr100", "nvlink4-h800",
}
REQUIRED_CLUSTERS = {
    "dgx-a100-8", "selene-a100-3072", "dgx-h100-64", "dgx-h100-1024", "h100-16384",
    "jean-zay-a100-384", "a100-40gb-roce-128", "mixed-h100-a100-v100",
}
# Devices with an FP8 tensor mode whose FP8 peak is exactly twice the BF16 peak.
HOPPER_BLACKWELL = ["h100-sxm-80gb", "h100-pcie-80gb", "h800-sxm-80gb", "h200-sxm-141gb", "b200", "gb200",
                    "h100-sxm-96gb", "b300", "gb300"]
# dtypes the architecture has no tensor-core / matrix-unit mode for.
UNSUPPORTED = {
    "v100-sxm-32gb": {"bf16", "tf32", "fp8", "int8"},
    "a100-sxm-40gb": {"fp8"},
    "a100-sxm-80gb": {"fp8"},
    "a100-pcie-80gb": {"fp8"},
    "a10g": {"fp8"},
    "mi250x": {"tf32", "fp8"},
    "mi350x": {"tf32"},  # CDNA 4 emulates TF32 through BF16
    "mi355x": {"tf32"},
}
# RoCE is either: a NIC fabric between nodes, or Gaudi's on-die all-to-all ports inside a server.
INTER_NODE_KINDS = {"infiniband", "ethernet", "omnipath", "dcn"}
INTRA_NODE_KINDS = {"nvlink", "pcie", "xgmi", "ici"}


def test_required_ids_present():
    assert REQUIRED_DEVICES <= set(device_ids()), REQUIRED_DEVICES - set(device_ids())
    assert REQUIRED_LINKS <= set(link_ids()), REQUIRED_LINKS - set(link_ids())
    assert REQUIRED_CLUSTERS <= set(cluster_ids()), REQUIRED_CLUSTERS - set(cluster_ids())


@pytest.mark.parametrize("ident", device_ids())
def test_device_loads_and_is_sane(ident):
    dev = get_device(ident)
    entry = device_entry(ident)
    assert dev.id == ident
    assert dev.source.strip() and len(dev.source) >= 20
    assert 16 * GiB <= dev.memory_bytes <= 300 * GiB
    assert 100e9 <= dev.memory_bandwidth_bytes_per_s <= 20e12
    peaks = dev.peak_flops_per_s
    assert all(1e12 <= v <= 20e15 for v in peaks.values()), peaks
    if "bf16" in peaks and "fp32" in peaks:
        assert peaks["bf16"] >= peaks["fp32"]
    if "fp16" in peaks and "fp32" in peaks:
        assert peaks["fp16"] >= peaks["fp32"]
    if "tf32" in peaks and "bf16" in peaks:
        assert peaks["tf32"] <= peaks["bf16"]
    if "fp8" in peaks and "bf16" in peaks:
        assert peaks["fp8"] >= peaks["bf16"]
    if dev.tdp_w is not None:
        assert 50 <= dev.tdp_w <= 2000
    # A price is only allowed together with a cited public list price.
    if entry.price_per_hour is not None:
        assert entry.price_source and entry.price_source.strip()


@pytest.mark.parametrize("ident", HOPPER_BLACKWELL)
def test_fp8_is_twice_bf16_on_hopper_blackwell(ident):
    peaks = get_device(ident).peak_flops_per_s
    assert math.isclose(peaks["fp8"], 2 * peaks["bf16"], rel_tol=1e-3)
    assert math.isclose(peaks["fp16"], peaks["bf16"], rel_tol=1e-9)


@pytest.mark.parametrize("ident,missing", sorted(UNSUPPORTED.items()))
def test_unsupported_dtypes_absent(ident, missing):
    assert not missing & set(get_device(ident).peak_flops_per_s)


def test_spot_values():
    a100 = get_device("a100-sxm-80gb")
    assert a100.peak("bf16") == pytest.approx(312e12, rel=1e-9)
    assert a100.memory_bandwidth_bytes_per_s == pytest.approx(2.039e12, rel=1e-9)
    assert a100.memory_bytes == 80 * GiB
    assert get_device("a100-sxm-40gb").peak("bf16") == pytest.approx(312e12, rel=1e-9)
    assert get_device("a100-sxm-40gb").memory_bytes == 40 * GiB
    assert get_device("h100-sxm-80gb").peak("bf16") == pytest.approx(989.4e12, rel=5e-3)
    assert get_device("mi300x").memory_bytes == 192 * GiB
    assert get_device("v100-sxm-32gb").peak("fp16") == pytest.approx(125e12, rel=1e-9)
    assert get_device("rtx-4090").peak("bf16") == pytest.approx(165.2e12, rel=1e-3)  # FP32 accumulate
    assert get_device("h800-sxm-80gb").peak("fp64") < 2e12
    assert get_link("nvlink3").bandwidth_bytes_per_s == pytest.approx(300e9, rel=1e-9)
    assert get_link("nvlink4").bandwidth_bytes_per_s == pytest.approx(450e9, rel=1e-9)
    assert get_link("nvlink4-h800").bandwidth_bytes_per_s == pytest.approx(200e9, rel=1e-9)
    assert get_link("ib-hdr200").bandwidth_bytes_per_s == pytest.approx(25e9, rel=1e-9)


@pytest.mark.parametrize("ident", link_ids())
def test_link_loads_and_is_sane(ident):
    link = get_link(ident)
    entry = link_entry(ident)
    assert link.id == ident
    assert link.source.strip() and len(link.source) >= 20
    assert entry.latency_source and entry.latency_source.strip()
    assert 1e9 <= link.bandwidth_bytes_per_s < 2e12  # per device, per direction
    assert 0.1e-6 <= link.latency_s <= 100e-6
    if entry.kind in INTER_NODE_KINDS:
        assert entry.scope == "inter_node"
    if entry.kind in INTRA_NODE_KINDS:
        assert entry.scope == "intra_node"


def test_inter_node_links_slower_than_nvlink_and_not_faster_in_latency():
    inter = [get_link(i) for i in link_ids() if link_entry(i).scope == "inter_node"]
    nvlinks = [get_link(i) for i in link_ids() if link_entry(i).kind == "nvlink"]
    assert inter and nvlinks
    slowest_nvlink = min(l.bandwidth_bytes_per_s for l in nvlinks)
    fastest_nvlink_alpha = min(l.latency_s for l in nvlinks)
    for link in inter:
        assert link.bandwidth_bytes_per_s < slowest_nvlink, link.id
        assert link.latency_s >= fastest_nvlink_alpha, link.id


@pytest.mark.parametrize("ident", cluster_ids())
def test_cluster_loads_and_is_sane(ident):
    cluster = load_cluster(ident)
    assert cluster.name == ident
    assert cluster.n_devices > 0
    for group in cluster.groups:
        assert group.device.id in device_ids()
        assert group.intra_node.id in link_ids() and group.inter_node.id in link_ids()
        assert link_entry(group.intra_node.id).scope == "intra_node"
        assert link_entry(group.inter_node.id).scope == "inter_node"
        assert group.inter_node_bandwidth_per_device_bytes_per_s < group.intra_node.bandwidth_bytes_per_s
    if len(cluster.groups) > 1:
        assert cluster.inter_group is not None


def test_cluster_spot_values():
    assert load_cluster("selene-a100-3072").n_devices == 3072
    assert load_cluster("h100-16384").n_devices == 16384
    assert load_cluster("h100-16384").group.inter_node.id == "roce-400"
    jz = load_cluster("jean-zay-a100-384").group
    assert jz.n_devices == 384 and jz.nics_per_node == 4
    # 4 x 100 Gb/s shared by 8 GPUs = 50 Gb/s = 6.25 GB/s per GPU
    assert jz.inter_node_bandwidth_per_device_bytes_per_s == pytest.approx(6.25e9, rel=1e-9)
    mosaic = load_cluster("a100-40gb-roce-128").group
    assert mosaic.n_devices == 128
    # 1600 Gb/s per node = 200 Gb/s per GPU
    assert mosaic.inter_node_bandwidth_per_device_bytes_per_s * 8 * 8 == pytest.approx(1600e9, rel=1e-9)
    mixed = load_cluster("mixed-h100-a100-v100")
    assert [g.device.id for g in mixed.groups] == ["h100-sxm-80gb", "a100-sxm-80gb", "v100-sxm-32gb"]
    assert [g.nodes for g in mixed.groups] == [2, 4, 2]
    assert mixed.inter_group is not None and mixed.inter_group.id == "roce-100"
