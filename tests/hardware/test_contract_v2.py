"""Input contract v2 for hardware: new dtypes and fields, new catalog entries, scale-up domains, user devices.

Every bad input is one line naming the file, key path and bad value (the message text is asserted).
"""
from __future__ import annotations

import math

import pytest

from parplan.errors import SpecError
from parplan.hardware import cluster_ids, device_ids, get_device, get_link, link_ids, load_cluster
from parplan.hardware.catalog import cluster_from_dict, device_entry, link_entry
from parplan.hardware.types import DTYPES, GENERATIONS, TOPOLOGIES, NodeGroup
from parplan.spec import load_yaml_text

NEW_DEVICES = {"h100-sxm-96gb", "gb300", "b300", "mi325x", "mi350x", "mi355x", "gaudi2", "gaudi3",
               "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"}
NEW_LINKS = {"ib-xdr800", "xgmi4", "gaudi2-roce", "gaudi2-roce-scaleout", "gaudi3-roce", "gaudi3-roce-scaleout",
             "tpu-v4-ici", "tpu-v5e-ici", "tpu-v5p-ici", "tpu-v6e-ici", "tpu-dcn", "tpu-v5e-dcn"}
NEW_CLUSTERS = {"gb200-nvl72-576", "gb300-nvl72-576", "tpu-v5p-1024", "tpu-v5e-256", "mi300x-64", "gaudi3-64"}
BLACKWELL = ["b200", "gb200", "b300", "gb300"]


def test_new_ids_present():
    assert NEW_DEVICES <= set(device_ids()), NEW_DEVICES - set(device_ids())
    assert NEW_LINKS <= set(link_ids()), NEW_LINKS - set(link_ids())
    assert NEW_CLUSTERS <= set(cluster_ids()), NEW_CLUSTERS - set(cluster_ids())


def test_dtype_order():
    assert DTYPES == ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "int8")


@pytest.mark.parametrize("ident", device_ids())
def test_every_device_has_a_generation_and_valid_compute_units(ident):
    dev = get_device(ident)
    assert dev.generation in GENERATIONS, (ident, dev.generation)
    assert dev.compute_units is None or dev.compute_units >= 1
    # a missing SM/CU count must be explained where the YAML is read, not silently absent
    if dev.compute_units is None:
        assert ident in {"a10g", "h100-sxm-96gb", "b300", "gb300"}


@pytest.mark.parametrize("ident", BLACKWELL)
def test_blackwell_low_precision_peaks(ident):
    pk = get_device(ident).peak_flops_per_s
    assert pk["mxfp8"] == pk["fp8"]
    assert pk["nvfp4"] >= 2 * pk["fp8"]


def test_low_precision_only_where_published():
    for ident in device_ids():
        pk = get_device(ident).peak_flops_per_s
        if "nvfp4" in pk or "mxfp8" in pk:
            assert ident in BLACKWELL, ident  # NVIDIA Blackwell only; AMD MX formats are left out
    assert "fp8" not in get_device("tpu-v4").peak_flops_per_s


def test_spot_values_new_devices():
    assert get_device("gb300").peak("nvfp4") == pytest.approx(15e15, rel=1e-9)
    assert get_device("gb300").peak("bf16") == pytest.approx(2.5e15, rel=1e-9)
    assert get_device("b300").peak("nvfp4") == pytest.approx(108e15 / 8, rel=1e-9)
    assert get_device("b200").peak("nvfp4") == pytest.approx(9e15, rel=1e-9)
    assert get_device("gb200").peak("nvfp4") == pytest.approx(10e15, rel=1e-9)
    assert get_device("mi325x").memory_bytes == 256 * 2.0**30
    assert get_device("mi355x").peak("fp8") == pytest.approx(256 * 8192 * 2.4e9, rel=1e-4)
    assert get_device("mi350x").peak("fp8") == pytest.approx(256 * 8192 * 2.2e9, rel=1e-4)
    assert get_device("gaudi3").peak("bf16") == pytest.approx(1835e12) and get_device("gaudi3").compute_units == 8
    assert get_device("gaudi2").compute_units == 2
    assert get_device("tpu-v5p").peak("bf16") == pytest.approx(459e12) and get_device("tpu-v5p").compute_units == 2
    assert get_device("tpu-v5e").compute_units == 1 and get_device("tpu-v6e").peak("bf16") == pytest.approx(918e12)
    assert get_device("tpu-v4").kind == "tpu" and device_entry("tpu-v4").kind == "tpu"
    assert get_device("h100-sxm-96gb").memory_bandwidth_bytes_per_s == pytest.approx(2.4e12)
    assert get_device("h100-sxm-80gb").compute_units == 132 and get_device("mi300x").compute_units == 304


def test_link_nvls_and_new_kinds():
    assert get_link("nvlink4").nvls and get_link("nvlink5").nvls
    assert link_entry("nvlink4").nvls_source and link_entry("nvlink5").nvls_source
    for ident in set(link_ids()) - {"nvlink4", "nvlink5"}:
        assert not get_link(ident).nvls, ident
    assert {link_entry(i).kind for i in ("tpu-v4-ici", "tpu-v5e-ici", "tpu-v5p-ici", "tpu-v6e-ici")} == {"ici"}
    assert link_entry("tpu-dcn").kind == "dcn" and link_entry("tpu-dcn").scope == "inter_node"
    # per chip, per direction: Google's bidirectional per-chip figure / 2
    assert get_link("tpu-v5p-ici").bandwidth_bytes_per_s == pytest.approx(1200e9 / 2)
    assert get_link("tpu-v5e-ici").bandwidth_bytes_per_s == pytest.approx(400e9 / 2)
    assert get_link("tpu-v6e-ici").bandwidth_bytes_per_s == pytest.approx(800e9 / 2)
    assert get_link("tpu-v4-ici").bandwidth_bytes_per_s == pytest.approx(6 * 45e9)
    assert get_link("ib-xdr800").bandwidth_bytes_per_s == pytest.approx(100e9)
    assert get_link("gaudi3-roce").bandwidth_bytes_per_s == pytest.approx(525e9)
    assert get_link("gaudi2-roce").bandwidth_bytes_per_s == pytest.approx(21 * 100e9 / 8)
    assert get_link("xgmi4").bandwidth_bytes_per_s == pytest.approx(7 * 76.8e9)


def test_new_cluster_shapes():
    nvl = load_cluster("gb200-nvl72-576").group
    assert (nvl.n_devices, nvl.devices_per_node, nvl.scale_up_domain, nvl.topology) == (576, 4, 72, "switch")
    assert nvl.scale_up_devices == 72 and nvl.scale_up_domains == 8
    assert nvl.intra_node.id == "nvlink5" and nvl.intra_node.nvls
    assert load_cluster("gb300-nvl72-576").group.inter_node.id == "ib-xdr800"
    v5p = load_cluster("tpu-v5p-1024").group
    assert (v5p.n_devices, v5p.devices_per_node, v5p.scale_up_devices, v5p.topology) == (1024, 4, 1024, "torus-3d")
    assert (v5p.intra_node.id, v5p.inter_node.id) == ("tpu-v5p-ici", "tpu-dcn")
    v5e = load_cluster("tpu-v5e-256").group
    assert (v5e.n_devices, v5e.scale_up_devices, v5e.topology) == (256, 256, "torus-2d")
    assert load_cluster("mi300x-64").group.intra_node.id == "xgmi3"
    g3 = load_cluster("gaudi3-64").group
    assert (g3.n_devices, g3.intra_node.id, g3.inter_node.id) == (64, "gaudi3-roce", "gaudi3-roce-scaleout")


def test_v1_clusters_keep_their_meaning(root):
    for ref in ["dgx-h100-64", "selene-a100-3072", "mixed-h100-a100-v100", str(root / "examples/cluster-h100-64.yaml")]:
        cluster = load_cluster(ref)
        for g in cluster.groups:
            assert g.scale_up_domain is None and g.topology == "switch"
            assert g.scale_up_devices == g.devices_per_node and g.scale_up_domains == g.nodes
            assert g.device.id in device_ids()


# ---------------------------------------------------------------- cluster file v2: scale_up_domain / topology

def group_yaml(extra: str = "", device: str = "gb200", nodes: int = 18, dpn: int = 4) -> str:
    return (f"name: t\ngroups:\n  - device: {device}\n    nodes: {nodes}\n    devices_per_node: {dpn}\n"
            f"    intra_node: nvlink5\n    inter_node: ib-ndr400\n{extra}")


def load_text(text: str, file: str = "c.yaml"):
    return cluster_from_dict(load_yaml_text(text, file), file=file)


def error(text: str, file: str = "c.yaml") -> str:
    with pytest.raises(SpecError) as exc:
        load_text(text, file)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_scale_up_domain_parses_and_clamps():
    g = load_text(group_yaml("    scale_up_domain: 72\n")).group
    assert g.scale_up_domain == 72 and g.scale_up_devices == 72 and g.scale_up_domains == 1
    small = load_text(group_yaml("    scale_up_domain: 72\n", nodes=2)).group  # 2 trays of one rack
    assert small.scale_up_devices == 8 and small.scale_up_domains == 1
    many = load_text(group_yaml("    scale_up_domain: 72\n", nodes=36)).group
    assert many.scale_up_devices == 72 and many.scale_up_domains == 2


@pytest.mark.parametrize("extra,expected", [
    ("    scale_up_domain: 70\n",
     "c.yaml:8:5: groups[0].scale_up_domain: scale_up_domain=70 is not a multiple of devices_per_node=4; "
     "a domain holds whole nodes: use a multiple of 4, e.g. 68 or 72"),
    ("    scale_up_domain: 0\n", "c.yaml:8:5: groups[0].scale_up_domain: bad value 0: input should be greater than 0"),
    ("    scale_up_domain: 7.5\n",
     "c.yaml:8:5: groups[0].scale_up_domain: bad value 7.5: input should be a valid integer"),
    ("    topology: ring\n", "c.yaml:8:5: groups[0].topology: bad value 'ring' (allowed: switch, torus-2d, torus-3d)"),
    ("    scale_up: 72\n",
     "c.yaml:8:5: groups[0]: unknown key 'scale_up' (allowed: device, devices_per_node, inter_node, intra_node, "
     "nics_per_node, nodes, scale_up_domain, topology); did you mean 'scale_up_domain'?"),
])
def test_bad_scale_up_values(extra, expected):
    assert error(group_yaml(extra)) == expected


def test_scale_up_domain_must_divide_the_group():
    assert error(group_yaml("    scale_up_domain: 72\n", nodes=20)) == (
        "c.yaml:8:5: groups[0].scale_up_domain: scale_up_domain=72 does not divide the group's 80 devices "
        "(20 nodes x 4); use a multiple of 18 nodes, or a scale_up_domain that divides 80")


def test_torus_topologies_parse():
    for topo in TOPOLOGIES:
        assert load_text(group_yaml(f"    topology: {topo}\n    scale_up_domain: 8\n", nodes=2)).group.topology == topo


def test_node_group_checks_when_built_directly():
    base = load_cluster("dgx-h100-64").group
    kw = dict(device=base.device, nodes=8, devices_per_node=8, intra_node=base.intra_node, inter_node=base.inter_node)
    assert NodeGroup(**kw, scale_up_domain=16).scale_up_devices == 16
    with pytest.raises(SpecError, match=r"scale_up_domain: scale_up_domain=12 is not a multiple of devices_per_node=8"):
        NodeGroup(**kw, scale_up_domain=12)
    with pytest.raises(SpecError, match=r"topology: bad value 'mesh' \(allowed: switch, torus-2d, torus-3d\)"):
        NodeGroup(**kw, topology="mesh")


# ---------------------------------------------------------------- cluster file v2: inline and file devices

INLINE = ("{id: acme-x1, kind: accelerator, vendor: acme, memory: 64 GiB, memory_bandwidth: 2 TB/s, "
          "peak_flops: {bf16: 500 TFLOP/s, fp8: 1 PFLOP/s}, generation: acme1, compute_units: 64}")


def test_inline_device():
    dev = load_text(group_yaml(device=INLINE, nodes=2)).group.device
    assert (dev.id, dev.name, dev.kind, dev.generation, dev.compute_units) == ("acme-x1", "acme-x1", "accelerator",
                                                                              "acme1", 64)
    assert dev.memory_bytes == 64 * 2.0**30 and math.isclose(dev.peak("fp8"), 1e15)
    anon = load_text(group_yaml(device="{kind: tpu, vendor: acme, memory: 8 GiB, memory_bandwidth: 1 TB/s, "
                                       "peak_flops: {bf16: 100 TFLOP/s}}", nodes=2)).group.device
    assert anon.id == "inline:groups[0]" and anon.kind == "tpu" and anon.generation == "" and anon.source


def col(device: str, key: str) -> int:
    """1-based column of ``key`` in the group's ``  - device: ...`` line."""
    return len("  - device: ") + device.index(key) + 1


@pytest.mark.parametrize("device,key,expected", [
    (INLINE.replace("memory:", "memroy:"), "memroy",
     "groups[0].device: unknown key 'memroy' (allowed: compute_units, generation, id, kind, memory, "
     "memory_bandwidth, name, notes, peak_flops, price_per_hour, price_source, source, tdp, vendor); "
     "did you mean 'memory'?"),
    (INLINE.replace("64 GiB", "64 GiBB"), "memory",
     "groups[0].device.memory: unknown unit 'GiBB' in '64 GiBB' (allowed: B, EB, GB, GiB, KB, KiB, MB, "
     "MiB, PB, PiB, TB, TiB, bytes, kB); write e.g. \"80 GiB\", \"40 GB\""),
    (INLINE.replace("kind: accelerator", "kind: npu"), "kind",
     "groups[0].device.kind: bad value 'npu' (allowed: gpu, tpu, cpu, dsp, edge, accelerator); "
     "did you mean 'tpu' or 'gpu' or 'cpu'?"),
    (INLINE.replace("compute_units: 64", "compute_units: 0"), "compute_units",
     "groups[0].device.compute_units: bad value 0: input should be greater than 0"),
    (INLINE.replace("generation: acme1", "generation: Acme 1"), "generation",
     "groups[0].device.generation: bad value 'Acme 1': a generation id is lower-case, e.g. hopper, cdna3, tpu-v5p"),
])
def test_bad_inline_device(device, key, expected):
    assert error(group_yaml(device=device, nodes=2)) == f"c.yaml:3:{col(device, key)}: {expected}"


@pytest.mark.parametrize("device,expected", [
    ("5", "c.yaml:3:5: groups[0].device: bad value 5: expected a device catalog id, a path to a device YAML, "
          "or an inline device mapping; see `parplan catalog list hardware`"),
    ("gb2000", "c.yaml:3:5: groups[0].device: unknown device id 'gb2000'; did you mean 'gb200' or 'b200' or 'gb300'?"),
])
def test_bad_device_reference(device, expected):
    assert error(group_yaml(device=device, nodes=2)) == expected


DEVICE_YAML = """\
kind: gpu
vendor: acme
name: Acme X2
memory: "100 GiB"
memory_bandwidth: "4 TB/s"
peak_flops:
  bf16: "1 PFLOP/s"
generation: acme2
"""


def test_device_from_a_path_relative_to_the_cluster_file(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "acme-x2.yaml").write_text(DEVICE_YAML)
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(group_yaml(device="hw/acme-x2.yaml", nodes=2))
    dev = load_cluster(str(cluster_file)).group.device
    assert (dev.id, dev.name, dev.generation) == ("acme-x2", "Acme X2", "acme2")
    assert dev.memory_bandwidth_bytes_per_s == pytest.approx(4e12)
    # the same file given as a catalog-style path without a folder, next to the cluster file
    (tmp_path / "acme-x3.yml").write_text(DEVICE_YAML.replace("Acme X2", "Acme X3"))
    cluster_file.write_text(group_yaml(device="acme-x3.yml", nodes=2))
    assert load_cluster(str(cluster_file)).group.device.name == "Acme X3"


def test_device_path_errors_name_the_file(tmp_path):
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(group_yaml(device="hw/missing.yaml", nodes=2))
    with pytest.raises(SpecError) as exc:
        load_cluster(str(cluster_file))
    missing = tmp_path / "hw" / "missing.yaml"
    assert str(exc.value) == (f"{cluster_file}:3:5: groups[0].device: device file 'hw/missing.yaml' not found "
                              f"(looked for {missing}); a relative path is resolved against the cluster file's folder")
    bad = tmp_path / "bad.yaml"
    bad.write_text(DEVICE_YAML.replace('  bf16: "1 PFLOP/s"', '  bf17: "1 PFLOP/s"'))
    cluster_file.write_text(group_yaml(device="bad.yaml", nodes=2))
    with pytest.raises(SpecError) as exc:
        load_cluster(str(cluster_file))
    assert str(exc.value) == (f"{bad}:7:3: peak_flops: unknown key 'bf17' (allowed: bf16, fp16, fp32, fp64, fp8, "
                              "int8, mxfp8, nvfp4, tf32); did you mean 'bf16' or 'fp16'?")
    bad.write_text(DEVICE_YAML.replace('"4 TB/s"', '"4 TB"'))
    with pytest.raises(SpecError) as exc:
        load_cluster(str(cluster_file))
    assert str(exc.value).startswith(f"{bad}:5:1: memory_bandwidth: unknown unit 'TB' in '4 TB'")


def test_mapping_input_without_a_file_resolves_paths_from_cwd(tmp_path, monkeypatch):
    (tmp_path / "acme.yaml").write_text(DEVICE_YAML)
    monkeypatch.chdir(tmp_path)
    data = {"name": "m", "groups": [{"device": "acme.yaml", "nodes": 1, "devices_per_node": 8,
                                     "intra_node": "nvlink4", "inter_node": "ib-ndr400"}]}
    assert load_cluster(data).group.device.id == "acme"
