"""Shared fixtures: small, fast workloads and clusters built from the catalogs."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # published_runs (golden tests against published measurements)
# the repo root last, for helpers imported as `tests.…`: runs against an installed wheel (.ci/run, python -P) keep
# the checkout off the front of sys.path, so `parplan` still resolves to the installed package
sys.path.append(str(ROOT))
# no user catalog (an empty PARPLAN_CATALOG_PATH means none): a developer's own ~/.config/parplan/catalog must not
# change what the tests see, collection-time parametrizations over catalog ids included
os.environ["PARPLAN_CATALOG_PATH"] = ""


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def cluster_dict(device: str = "a100-sxm-80gb", nodes: int = 8, dpn: int = 8, intra: str = "nvlink3",
                 inter: str = "ib-hdr200") -> dict:
    return {"name": f"{device}-{nodes * dpn}", "groups": [{"device": device, "nodes": nodes, "devices_per_node": dpn,
                                                          "intra_node": intra, "inter_node": inter}]}


def faster(c, flops=1.0, hbm=1.0, intra=1.0, inter=1.0, memory=1.0):
    """``c`` (a one-group cluster) with its device's FLOP/s, HBM bandwidth and memory and its links' bandwidths
    scaled by the factors: the physics tests' "faster hardware"."""
    from dataclasses import replace

    g = c.group
    d = g.device
    dev = replace(d, peak_flops_per_s={k: v * flops for k, v in d.peak_flops_per_s.items()},
                  memory_bandwidth_bytes_per_s=d.memory_bandwidth_bytes_per_s * hbm, memory_bytes=d.memory_bytes * memory)
    g2 = replace(g, device=dev,
                 intra_node=replace(g.intra_node, bandwidth_bytes_per_s=g.intra_node.bandwidth_bytes_per_s * intra),
                 inter_node=replace(g.inter_node, bandwidth_bytes_per_s=g.inter_node.bandwidth_bytes_per_s * inter))
    return replace(c, groups=(g2,))
