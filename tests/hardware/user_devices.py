"""Custom hardware written as users write it (a made-up GPU, link and cluster), shared by the tests, and the
fixture that keeps the developer's own user catalog out of them (imported by each test module: a conftest.py here
would shadow tests/conftest.py, which other tests import as ``conftest``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from parplan import catalogs


@pytest.fixture(autouse=True)
def no_user_catalog(tmp_path_factory, monkeypatch):
    """PARPLAN_CATALOG_PATH unset and the default user folder (XDG_CONFIG_HOME, %APPDATA%, ~) inside a tmp folder,
    so no test reads or writes the real config dir."""
    monkeypatch.delenv(catalogs.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    monkeypatch.setenv("APPDATA", str(tmp_path_factory.mktemp("appdata")))  # Windows default folder
    home = tmp_path_factory.mktemp("home")  # macOS default folder (~/Library/Application Support)
    monkeypatch.setattr(catalogs.Path, "home", classmethod(lambda cls: home))

MYGPU = """\
# a made-up GPU: Hopper-class, so `--hw mygpu:4x8` gets the Hopper platform (NVLink4 + NDR 400)
id: mygpu
name: My GPU 96GB
kind: gpu
vendor: acme
memory: "96 GiB"
memory_bandwidth: "4 TB/s"
peak_flops:
  bf16: "1200 TFLOP/s"
  fp8: "2400 TFLOP/s"
generation: hopper
source: "ACME MyGPU datasheet, rev. 1 (made up for the tests)"
"""

MYLINK = """\
id: mylink
name: ACME fabric 800 Gb/s
kind: ethernet
scope: inter_node
bandwidth: "100 GB/s"
latency: "4 us"
source: "ACME fabric brief, rev. 1 (made up for the tests)"
"""

MYCLUSTER = """\
name: my-cluster
source: "our lab, rack A (made up for the tests)"
groups:
  - device: mygpu
    nodes: 2
    devices_per_node: 8
    intra_node: nvlink4
    inter_node: mylink
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(text, encoding="utf-8")
    return p


def catalog_folder(root: Path) -> Path:
    """A user catalog laid out like the shipped one, holding mygpu and mylink (and my-cluster)."""
    write(root / "hardware" / "devices", "mygpu.yaml", MYGPU)
    write(root / "hardware" / "links", "mylink.yaml", MYLINK)
    write(root / "clusters", "my-cluster.yaml", MYCLUSTER)
    return root
