"""`parplan catalog add FILE`: validated like the catalog, copied into the user catalog, then usable by id and in
the `--hw DEVICE:NODESxDPN` shorthand (through typer's CliRunner, as tests/cli do)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from user_devices import MYCLUSTER, MYGPU, MYLINK, no_user_catalog, write  # noqa: F401

from parplan import catalogs
from parplan.hardware import device_ids

runner = CliRunner()


def run(*args):
    from parplan.cli.app import app

    return runner.invoke(app, list(args))


def one_line_error(r, code: int = 2) -> str:
    assert r.exit_code == code, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


@pytest.fixture
def user_cat(tmp_path, monkeypatch):
    folder = tmp_path / "my-catalog"
    monkeypatch.setenv(catalogs.ENV_VAR, str(folder))
    return folder


def test_add_then_estimate_with_the_shorthand(tmp_path, user_cat):
    src = write(tmp_path / "src", "some-name.yaml", MYGPU)  # the copy is named by the entry's id
    r = run("catalog", "add", str(src))
    assert r.exit_code == 0, r.output
    dest = user_cat / "hardware" / "devices" / "mygpu.yaml"
    assert r.stdout.strip() == f"added device 'mygpu': wrote {dest}"
    assert dest.read_text(encoding="utf-8") == MYGPU  # comments kept
    assert "mygpu" in device_ids()
    r = run("estimate", "llama3-8b", "--hw", "mygpu:4x8", "--plan", "tp=2,pp=1", "--seq-len", "4096",
            "--global-batch", "512", "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert "mygpu:4x8" in json.dumps(out)
    from parplan import estimate, load_cluster

    cl = load_cluster("mygpu:4x8")
    g = cl.groups[0]
    assert (cl.n_devices, g.device.id, g.intra_node.id, g.inter_node.id, g.nics_per_node) == \
        (32, "mygpu", "nvlink4", "ib-ndr400", 8)  # the Hopper platform's links
    est = estimate("llama3-8b", "mygpu:4x8", "tp=2,pp=1", seq_len=4096, global_batch=512)
    assert est.step_time_s > 0


def test_add_kinds_link_cluster_workload(tmp_path, user_cat):
    for name, text in (("mygpu.yaml", MYGPU), ("mylink.yaml", MYLINK), ("my-cluster.yaml", MYCLUSTER)):
        r = run("catalog", "add", str(write(tmp_path, name, text)))
        assert r.exit_code == 0, r.output
    assert (user_cat / "hardware" / "links" / "mylink.yaml").is_file()
    assert (user_cat / "clusters" / "my-cluster.yaml").is_file()
    shipped = (catalogs.catalog_dir("workloads") / "llama2-7b.yaml").read_text(encoding="utf-8")
    r = run("catalog", "add", str(write(tmp_path, "w.yaml", shipped.replace("id: llama2-7b", "id: my-7b"))),
            "--kind", "workload")
    assert r.exit_code == 0 and "added workload 'my-7b'" in r.stdout, r.output
    r = run("estimate", "my-7b", "--hw", "my-cluster", "--plan", "tp=8", "--format", "json")
    assert r.exit_code == 0, r.output


def test_duplicates_need_force_and_shipped_ids_never_move(tmp_path, user_cat):
    src = write(tmp_path, "mygpu.yaml", MYGPU)
    assert run("catalog", "add", str(src)).exit_code == 0
    err = one_line_error(run("catalog", "add", str(src)))
    assert "id 'mygpu' is already in the user catalog" in err and "--force" in err
    src.write_text(MYGPU.replace('"96 GiB"', '"141 GiB"'), encoding="utf-8")
    r = run("catalog", "add", str(src), "--force")
    assert r.exit_code == 0 and r.stdout.startswith("replaced device 'mygpu'"), r.output
    from parplan.hardware import get_device

    assert get_device("mygpu").memory_bytes == 141 * 2**30
    b200 = write(tmp_path, "b200.yaml", (catalogs.catalog_dir("hardware", "devices") / "b200.yaml").read_text())
    for extra in ((), ("--force",)):
        err = one_line_error(run("catalog", "add", str(b200), *extra))
        assert "id 'b200' is a shipped catalog entry" in err and "choose another id" in err
    assert not (user_cat / "hardware" / "devices" / "b200.yaml").exists()


def test_add_validates_with_the_catalog_errors(tmp_path, user_cat):
    bad = write(tmp_path, "mygpu.yaml", MYGPU.replace("vendor: acme", "vendor: acme\ncolour: green"))
    err = one_line_error(run("catalog", "add", str(bad)))
    assert f"{bad}:6:1: unknown key 'colour'" in err
    nosrc = write(tmp_path, "mylink.yaml", MYLINK.split("source:")[0])
    assert "source: required key is missing" in one_line_error(run("catalog", "add", str(nosrc)))
    unit = write(tmp_path, "mygpu.yaml", MYGPU.replace('"4 TB/s"', '"-4 TB/s"'))
    assert f"{unit}:7:" in one_line_error(run("catalog", "add", str(unit)))
    assert not user_cat.exists()  # nothing written


def test_add_refuses_what_is_not_an_entry(tmp_path, user_cat):
    err = one_line_error(run("catalog", "add", str(write(tmp_path, "x.yaml", "owner: me\n"))))
    assert "cannot tell which kind of catalog entry" in err and "--kind" in err
    err = one_line_error(run("catalog", "add", str(tmp_path / "missing.yaml")))
    assert "no such file" in err
    evil = write(tmp_path, "evil.yaml", MYGPU.replace("id: mygpu", "id: ../../escape"))
    err = one_line_error(run("catalog", "add", str(evil)))
    assert "bad id '../../escape' for a catalog file name" in err
    cluster = write(tmp_path, "c.yaml", MYCLUSTER.replace("device: mygpu", "device: ./mygpu.yaml"))
    write(tmp_path, "mygpu.yaml", MYGPU)
    err = one_line_error(run("catalog", "add", str(cluster)))
    assert "a catalog cluster names its devices by catalog id or inline" in err
    err = one_line_error(run("catalog", "add", str(write(tmp_path, "mygpu2.yaml", MYGPU)), "--kind", "link"))
    assert "mygpu2.yaml" in err and "unknown key" in err


def test_add_to_the_default_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(catalogs.ENV_VAR, raising=False)
    default = catalogs.default_user_dir()
    assert tmp_path not in default.parents  # the conftest moved it into a tmp folder of its own
    r = run("catalog", "add", str(write(tmp_path, "mygpu.yaml", MYGPU)))
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().endswith(str(default / "hardware" / "devices" / "mygpu.yaml"))
    assert "mygpu" in device_ids()
    monkeypatch.setenv(catalogs.ENV_VAR, "")
    err = one_line_error(run("catalog", "add", str(tmp_path / "mygpu.yaml")))
    assert "PARPLAN_CATALOG_PATH is set but empty" in err
