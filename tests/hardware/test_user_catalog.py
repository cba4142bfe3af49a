"""The user catalog (PARPLAN_CATALOG_PATH): custom devices, links, clusters and workloads beside the shipped ones,
validated like them; a clash with a shipped id is an error naming both files."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner
from user_devices import MYCLUSTER, MYGPU, MYLINK, catalog_folder, no_user_catalog, write  # noqa: F401

from parplan import catalogs
from parplan.errors import SpecError
from parplan.hardware import device_ids, get_device, get_link, link_ids, load_cluster
from parplan.hardware.catalog import cluster_from_dict

runner = CliRunner()


def app():
    from parplan.cli.app import app as full

    return full


def use(monkeypatch, *folders) -> None:
    monkeypatch.setenv(catalogs.ENV_VAR, os.pathsep.join(str(f) for f in folders))


def test_custom_gpu_file_in_a_cluster_file(tmp_path):
    """A device YAML next to the cluster file, named by its path (contract v2), with no user catalog at all."""
    write(tmp_path, "mygpu.yaml", MYGPU)
    cl = cluster_from_dict({"name": "lab", "groups": [{"device": "mygpu.yaml", "nodes": 2, "devices_per_node": 8,
                                                       "intra_node": "nvlink4", "inter_node": "ib-ndr400"}]},
                           file=str(tmp_path / "cluster.yaml"))
    dev = cl.groups[0].device
    assert (dev.id, dev.memory_bytes, dev.peak_flops_per_s["bf16"]) == ("mygpu", 96 * 2**30, 1200e12)
    assert "mygpu" not in device_ids()


def test_laid_out_user_folder(tmp_path, monkeypatch):
    use(monkeypatch, catalog_folder(tmp_path / "cat"))
    assert "mygpu" in device_ids() and "mylink" in link_ids()
    assert device_ids()[-1] == "mygpu"  # shipped entries first
    assert get_device("mygpu").memory_bandwidth_bytes_per_s == 4e12
    assert get_link("mylink").bandwidth_bytes_per_s == 100e9
    cl = load_cluster("my-cluster")
    assert cl.n_devices == 16 and cl.groups[0].device.id == "mygpu" and cl.groups[0].inter_node.id == "mylink"
    # a cluster file of the user's may name the user device by id
    cf = write(tmp_path, "c.yaml", MYCLUSTER.replace("my-cluster", "other"))
    assert load_cluster(str(cf)).groups[0].device.name == "My GPU 96GB"


def test_flat_user_folder_sorted_by_kind(tmp_path, monkeypatch):
    flat = tmp_path / "flat"
    write(flat, "mygpu.yaml", MYGPU)
    write(flat, "mylink.yml", MYLINK)
    write(flat, "my-cluster.yaml", MYCLUSTER)
    use(monkeypatch, flat)
    assert "mygpu" in device_ids() and "mygpu" not in link_ids()
    assert "mylink" in link_ids() and "mylink" not in device_ids()
    assert load_cluster("my-cluster").groups[0].inter_node.id == "mylink"


def test_several_folders_and_missing_ones(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a / "hardware" / "devices", "mygpu.yaml", MYGPU)
    write(b, "mylink.yaml", MYLINK)
    use(monkeypatch, tmp_path / "does-not-exist", a, b)  # skipped, like a PATH entry that does not exist
    assert "mygpu" in device_ids() and "mylink" in link_ids()


def test_shipped_id_clash_names_both_files(tmp_path, monkeypatch):
    flat = tmp_path / "flat"
    write(flat, "h100-sxm-80gb.yaml", MYGPU.replace("id: mygpu", "id: h100-sxm-80gb"))
    use(monkeypatch, flat)
    with pytest.raises(SpecError) as e:
        device_ids()
    msg = str(e.value)
    assert "catalog id 'h100-sxm-80gb' is defined twice" in msg
    assert str(catalogs.entries.__globals__["catalog_dir"]("hardware", "devices") / "h100-sxm-80gb.yaml") in msg
    assert str(flat / "h100-sxm-80gb.yaml") in msg and "(the shipped catalog)" in msg


def test_user_user_clash(tmp_path, monkeypatch):
    write(tmp_path / "a", "mygpu.yaml", MYGPU)
    write(tmp_path / "b" / "hardware" / "devices", "mygpu.yaml", MYGPU)
    use(monkeypatch, tmp_path / "a", tmp_path / "b")
    with pytest.raises(SpecError, match="defined twice: .*another user catalog file"):
        get_device("mygpu")


def test_user_entries_are_validated_like_shipped_ones(tmp_path, monkeypatch):
    d = tmp_path / "cat" / "hardware" / "devices"
    use(monkeypatch, tmp_path / "cat")
    write(d, "mygpu.yaml", MYGPU.replace('source: "ACME', 'oops: 1\nsource: "ACME'))
    with pytest.raises(SpecError, match=r"mygpu.yaml:12:1: unknown key .oops. \(allowed: compute_units"):
        get_device("mygpu")
    write(d, "mygpu.yaml", MYGPU.replace('source: "ACME MyGPU datasheet, rev. 1 (made up for the tests)"\n', ""))
    with pytest.raises(SpecError, match=r"mygpu.yaml:2:1: source: required key is missing"):
        get_device("mygpu")
    write(d, "mygpu.yaml", MYGPU.replace("id: mygpu", "id: yourgpu"))
    with pytest.raises(SpecError, match="id 'yourgpu' does not match the file name"):
        get_device("mygpu")
    write(d, "mygpu.yaml", MYGPU.replace('"4 TB/s"', '"4 parsecs"'))
    with pytest.raises(SpecError, match=r"mygpu.yaml:7:\d+: memory_bandwidth"):
        get_device("mygpu")


def test_edited_user_file_is_read_again(tmp_path, monkeypatch):
    d = tmp_path / "cat" / "hardware" / "devices"
    use(monkeypatch, tmp_path / "cat")
    write(d, "mygpu.yaml", MYGPU)
    assert get_device("mygpu").memory_bytes == 96 * 2**30
    write(d, "mygpu.yaml", MYGPU.replace('"96 GiB"', '"144 GiB"  # more'))
    assert get_device("mygpu").memory_bytes == 144 * 2**30


def test_unknown_flat_file_is_an_error(tmp_path, monkeypatch):
    write(tmp_path, "notes.yaml", "owner: me\n")
    use(monkeypatch, tmp_path)
    with pytest.raises(SpecError, match="notes.yaml: not a catalog entry of a known kind"):
        device_ids()


def test_user_cluster_entry_must_cite_a_source(tmp_path, monkeypatch):
    catalog_folder(tmp_path)
    no_source = "".join(line for line in MYCLUSTER.splitlines(True) if not line.startswith("source:"))
    write(tmp_path / "clusters", "my-cluster.yaml", no_source)
    use(monkeypatch, tmp_path)
    with pytest.raises(SpecError, match="my-cluster.yaml: source: required key is missing"):
        load_cluster("my-cluster")


def test_user_workload_entry(tmp_path, monkeypatch):
    from parplan.workloads.loader import load_workload, workload_ids

    shipped = (catalogs.catalog_dir("workloads") / "llama2-7b.yaml").read_text(encoding="utf-8")
    write(tmp_path / "workloads", "my-7b.yaml", shipped.replace("id: llama2-7b", "id: my-7b"))
    use(monkeypatch, tmp_path)
    assert "my-7b" in workload_ids()
    assert load_workload("my-7b").model.layers == load_workload("llama2-7b").model.layers


def test_catalog_list_and_show_mark_user_entries(tmp_path, monkeypatch):
    r = runner.invoke(app(), ["catalog", "list", "hardware"])
    assert r.exit_code == 0 and "user" not in r.stdout  # the shipped-only listing is unchanged
    use(monkeypatch, catalog_folder(tmp_path))
    r = runner.invoke(app(), ["catalog", "list", "hardware"])
    assert r.exit_code == 0, r.output
    row = next(line for line in r.stdout.splitlines() if "mygpu" in line)
    assert "My GPU 96GB" in row and row.rstrip(" │").endswith("user")
    assert next(line for line in r.stdout.splitlines() if "h100-sxm-80gb" in line).rstrip(" │").endswith("shipped")
    for section, ident in (("links", "mylink"), ("clusters", "my-cluster")):
        r = runner.invoke(app(), ["catalog", "list", section])
        assert r.exit_code == 0 and ident in r.stdout and "user" in r.stdout, r.output
    r = runner.invoke(app(), ["catalog", "show", "mygpu"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == f"# user catalog: {tmp_path / 'hardware' / 'devices' / 'mygpu.yaml'}"
    assert "ACME MyGPU datasheet" in r.stdout


def test_a_user_catalog_error_is_one_line_exit_2(tmp_path, monkeypatch):
    write(tmp_path, "b200.yaml", (catalogs.catalog_dir("hardware", "devices") / "b200.yaml").read_text())
    use(monkeypatch, tmp_path)
    r = runner.invoke(app(), ["estimate", "llama2-7b", "--hw", "dgx-h100-64", "--plan", "tp=8"])
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "'b200' is defined twice" in r.stderr


def test_help_reads_no_catalog(tmp_path):
    """`parplan --help` must not enumerate catalogs: a broken user catalog does not stop it."""
    write(tmp_path, "broken.yaml", "key: [unclosed\n")
    env = {**os.environ, catalogs.ENV_VAR: str(tmp_path)}
    for args in (["--help"], ["estimate", "--help"], ["--version"]):
        r = subprocess.run([sys.executable, "-m", "parplan", *args], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=120)
        assert r.returncode == 0, (args, r.stderr)
    r = subprocess.run([sys.executable, "-m", "parplan", "catalog", "list"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "broken.yaml" in r.stderr


def test_default_user_folder_follows_xdg(tmp_path, monkeypatch):
    if sys.platform in ("win32", "darwin"):
        pytest.skip("XDG_CONFIG_HOME is the Linux/BSD default")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert catalogs.default_user_dir() == tmp_path / "cfg" / "parplan" / "catalog"
    assert catalogs.user_dirs() == [catalogs.default_user_dir()]
    write(catalogs.default_user_dir(), "mygpu.yaml", MYGPU)
    assert "mygpu" in device_ids()
    monkeypatch.setenv(catalogs.ENV_VAR, "")  # set but empty: no user folder
    assert catalogs.user_dirs() == [] and "mygpu" not in device_ids()
