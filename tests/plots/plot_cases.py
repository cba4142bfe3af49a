"""Small cases and the sweep-table fixture of the plot tests (tests/plots is on sys.path: pytest's rootdir-relative
import).  Not a conftest.py: a second module named ``conftest`` on sys.path shadows tests/conftest.py for the test
modules that import from it."""
from __future__ import annotations

import pandas as pd
import pytest

# a search of a few thousand plans (well under a second): Llama 2 7B on one DGX A100 node
SMALL = ("llama2-7b", "dgx-a100-8")
SMALL_OPTS = {"global_batch": 64}
# a short pipelined step: 4 stages, 16 micro-batches
TIMELINE_PLAN = "tp=2,pp=4,mbs=1,zero=1"
TIMELINE_OPTS = {"global_batch": 16}


@pytest.fixture(scope="session")
def sweep_frame() -> pd.DataFrame:
    """A sweep table as `parplan sweep` writes it (contract: the export columns plus ``status``): two workloads
    on dgx-h100 clusters of 1, 2 and 4 nodes, the top 3 plans of each cell."""
    from parplan.hardware.catalog import load_cluster
    from parplan.planner.planset import suggest_plans
    from parplan.planner.sizing import scale_cluster
    from parplan.workloads.loader import load_workload

    base = load_cluster("dgx-h100-64")
    frames = []
    for name in ("llama2-7b", "llama3-8b"):
        w = load_workload(name, global_batch=256)
        for nodes in (1, 2, 4):
            df = suggest_plans(w, scale_cluster(base, nodes), top=3).to_frame()
            df["status"] = "ok"
            frames.append(df)
    return pd.concat(frames, ignore_index=True)
