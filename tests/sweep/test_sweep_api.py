"""``parplan.planner.sweep.sweep``: the table of a 2 × 2 sweep against single ``suggest`` searches, top-K ranks,
infeasible and error cells with their reasons, the local process pool."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parplan.api import suggest
from parplan.planner.export import EXPORT_COLUMNS
from parplan.planner.sweep import sweep
from parplan.planner.sweep_io import SWEEP_COLUMNS

from sweep_helpers import MODELS, SIZES, small_sweep  # noqa: F401  (a fixture)


def test_two_models_two_sizes_table(small_sweep):
    df = small_sweep
    assert list(df.columns) == list(SWEEP_COLUMNS)
    assert list(df.columns[-len(EXPORT_COLUMNS):]) == list(EXPORT_COLUMNS)
    assert list(df.columns[:6]) == ["model", "hw", "size", "options", "status", "message"]
    # one row per cell, in models × sizes order, each the best plan (rank 1)
    assert list(zip(df["model"], df["size"])) == [(m, s) for m in MODELS for s in SIZES]
    assert (df["hw"] == "dgx-h100-64").all()
    assert (df["status"] == "ok").all() and df["message"].isna().all()
    assert (df["rank"] == 1).all()
    assert (df["n_devices"] == df["size"]).all()
    assert list(df["n_nodes"]) == [s // 8 for _ in MODELS for s in SIZES]
    assert df.attrs["sweep"]["computed"] == 4 and df.attrs["sweep"]["reused"] == 0
    for c in ("size", "rank", "n_devices", "tp", "pp", "dp", "mbs", "micro_batches"):
        assert str(df[c].dtype) == "Int64", c


def test_cells_are_suggest_searches(small_sweep):
    """Each row is what `suggest --top 1` says for that model on that many devices."""
    from parplan.hardware.catalog import load_cluster
    from parplan.planner.sizing import scale_cluster

    c = load_cluster("dgx-h100-64")
    for row in small_sweep.itertuples(index=False):
        best = suggest(row.model, scale_cluster(c, row.size // 8), top=1).to_frame().iloc[0]
        assert row.plan == best["plan"]
        assert row.tokens_per_s == pytest.approx(best["tokens_per_s"], rel=1e-12)
        assert row.workload == best["workload"] and row.cluster == best["cluster"]


def test_top_k_ranks():
    df = sweep(["llama2-7b"], ["dgx-h100-64"], sizes=[8, 16], top=3, workers=1)
    assert list(df["size"]) == [8, 8, 8, 16, 16, 16]
    assert list(df["rank"]) == [1, 2, 3, 1, 2, 3]
    for _, g in df.groupby("size"):
        assert np.all(np.diff(g["tokens_per_s"].to_numpy()) <= 0)  # best first under the throughput objective
    assert set(df["options"]) == {'{"top":3}'}


def test_infeasible_cell_says_what_would_fit():
    df = sweep(["llama3-70b", "llama2-7b"], ["dgx-a100-8"], workers=1)
    bad, good = df.iloc[0], df.iloc[1]
    assert bad["status"] == "infeasible" and good["status"] == "ok"
    assert pd.isna(bad["rank"]) and pd.isna(bad["tokens_per_s"])
    assert bad["n_devices"] == 8 and bad["workload"] == "Llama 3 70B"
    assert bad["message"].startswith("no plan fits in 76.0 GiB per device")  # 80 GiB less the 5 % default headroom
    assert "what would fit: more devices: 2 nodes (16 devices)" in bad["message"]
    assert df.attrs["sweep"]["infeasible"] == 1 and df.attrs["sweep"]["ok"] == 1


def test_no_valid_plan_is_infeasible_and_refusals_are_errors():
    df = sweep(["llama2-7b"], ["dgx-h100-64", "dgx-a100-8"], sizes=[8], fix="tp=3", workers=1)
    assert set(df["status"]) == {"infeasible"}
    assert df["message"].str.startswith("no valid plan for Llama 2 7B on 8 devices with tp=3").all()
    # fp8 on an A100: the planner refuses the cell, the sweep goes on
    df = sweep(["llama2-7b"], ["dgx-a100-8", "dgx-h100-64"], sizes=[8], precision="fp8", workers=1)
    assert list(df["status"]) == ["error", "ok"]
    assert "has no fp8 math" in df["message"].iloc[0]
    # a cell over its plan budget
    df = sweep(["llama2-7b"], ["dgx-h100-64"], sizes=[8], max_plans=10, workers=1)
    assert df["status"].iloc[0] == "error" and "above the budget of 10" in df["message"].iloc[0]


def test_without_sizes_clusters_as_they_are():
    df = sweep(["llama2-7b"], ["dgx-a100-8", "dgx-h100-64"], workers=1)
    assert list(df["size"]) == [8, 64] and list(df["n_devices"]) == [8, 64]
    assert list(df["cluster"]) == ["dgx-a100-8", "dgx-h100-64"]


def test_multi_group_cluster_without_sizes():
    df = sweep(["llama2-7b"], ["mixed-h100-a100-64"], workers=1, top=2)
    assert list(df["status"]) == ["ok", "ok"] and list(df["rank"]) == [1, 2]
    assert (df["n_devices"] == 64).all() and (df["tokens_per_s"] > 0).all()


def test_local_pool_matches_in_process(small_sweep):
    df = sweep(list(MODELS), ["dgx-h100-64"], sizes=list(SIZES), workers=2)
    pd.testing.assert_frame_equal(df, small_sweep)


def test_training_overrides_are_part_of_the_cell():
    df = sweep(["llama2-7b"], ["dgx-h100-64"], sizes=[8], seq_len=2048, global_batch=256, workers=1)
    assert df["options"].iloc[0] == '{"global_batch":256,"seq_len":2048,"top":1}'
    ref = suggest("llama2-7b", "dgx-a100-8", top=1, seq_len=2048, global_batch=256).to_frame().iloc[0]
    assert df["tokens_per_s"].iloc[0] != ref["tokens_per_s"]  # another device: the sweep's cell is its own search
    own = suggest("llama2-7b", {"name": "h100-8", "groups": [{"device": "h100-sxm-80gb", "nodes": 1,
                                                             "devices_per_node": 8, "intra_node": "nvlink4",
                                                             "inter_node": "ib-ndr400", "nics_per_node": 8}]},
                  top=1, seq_len=2048, global_batch=256).to_frame().iloc[0]
    assert df["plan"].iloc[0] == own["plan"]
    assert df["tokens_per_s"].iloc[0] == pytest.approx(own["tokens_per_s"], rel=1e-12)
