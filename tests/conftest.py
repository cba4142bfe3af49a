"""Shared fixtures: small, fast workloads and clusters built from the catalogs."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # published_runs (golden tests against published measurements)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def cluster_dict(device: str = "a100-sxm-80gb", nodes: int = 8, dpn: int = 8, intra: str = "nvlink3",
                 inter: str = "ib-hdr200") -> dict:
    return {"name": f"{device}-{nodes * dpn}", "groups": [{"device": device, "nodes": nodes, "devices_per_node": dpn,
                                                          "intra_node": intra, "inter_node": inter}]}
