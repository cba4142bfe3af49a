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
