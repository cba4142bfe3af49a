"""The planner's time-to-train objective: ranks by the goodput-aware time, exports the breakdown, sizes for a
deadline; through the API, the planner and the CLI (objective name patched in until cli/suggest_cmd.py lists it)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import parplan
from parplan.cli import suggest_cmd
from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.hardware.catalog import load_cluster
from parplan.models.primitives.reliability import FailureRates, Reliability
from parplan.planner import EXPORT_COLUMNS
from parplan.planner.planset import suggest_plans
from parplan.workloads.loader import load_workload

GOODPUT_COLS = ("goodput", "time_to_train_s", "time_to_train_p10_s", "time_to_train_p90_s", "checkpoint_interval_s",
                "checkpoint_stall_s", "useful_compute_s", "checkpoint_stalls_s", "failure_lost_s", "restarts_s",
                "redundancy_overhead_s", "expected_failures", "mtbf_s")


def test_goodput_columns_are_appended_after_the_earlier_ones():
    # stable order: columns are only ever added at the end; the goodput block follows equivalent_plans, and the
    # context-parallel layout (added later) follows the goodput block, then the helix and rotate knobs
    i = EXPORT_COLUMNS.index("equivalent_plans")
    assert EXPORT_COLUMNS[i + 1:i + 1 + len(GOODPUT_COLS)] == GOODPUT_COLS
    assert EXPORT_COLUMNS[i + 1 + len(GOODPUT_COLS):] == ("cp_kind", "helix", "rotate")


def test_api_ranks_by_time_to_train_with_breakdown():
    ps = parplan.suggest("llama2-7b", "dgx-a100-8", global_batch=64, objective="time-to-train", token_budget="2B",
                         top=6)
    df = ps.to_frame()
    t = df["time_to_train_s"].to_numpy()
    assert np.all(np.diff(t) >= -1e-9 * t[:-1])
    parts = df[["useful_compute_s", "checkpoint_stalls_s", "failure_lost_s", "restarts_s", "redundancy_overhead_s"]]
    assert np.allclose(parts.sum(axis=1), t, rtol=1e-9)
    assert np.all((df["goodput"] > 0) & (df["goodput"] < 1))
    d = ps.to_dict()
    assert d["objective"] == "time-to-train" and d["training_time_s"] == pytest.approx(t[0])
    f = d["failures"]
    assert f["time_to_train_s"] > f["failure_free_time_s"] and set(f["breakdown_s"]) >= {"lost_s", "restart_s"}
    assert f["failures_per_hour_by_cause"]["faulty_gpu"] > 0


def test_time_to_train_needs_a_token_budget():
    with pytest.raises(SpecError, match="the time-to-train objective needs a token budget"):
        parplan.suggest("llama2-7b", "dgx-a100-8", global_batch=64, objective="time-to-train")


def test_ranking_differs_from_throughput_when_checkpoints_cost():
    """Slow snapshots and frequent failures: plans with more checkpoint state per device fall behind equally fast
    plans that shard it."""
    w, c = load_workload("llama2-7b", global_batch=64), load_cluster("dgx-a100-8")
    cfg = Reliability(mode="async", host_copy_bandwidth=2e8, rates=FailureRates.from_profile().scaled(3e3))
    ttt = suggest_plans(w, c, objective="time-to-train", token_budget="1B", top=8, reliability=cfg).to_frame()
    thr = suggest_plans(w, c, objective="throughput", token_budget="1B", top=8, reliability=cfg).to_frame()
    assert list(ttt["plan"]) != list(thr["plan"])
    assert np.all(np.diff(ttt["time_to_train_s"]) >= 0)
    # the throughput order's plans, priced by the same model, are never better than the time-to-train order's
    assert np.all(np.sort(thr["time_to_train_s"].to_numpy()) >= ttt["time_to_train_s"].to_numpy() - 1e-6)


def test_sizing_for_a_deadline_uses_goodput_aware_time():
    w, c = load_workload("llama2-7b", global_batch=256), load_cluster("dgx-a100-8")
    budget, deadline = 2e10, 4 * 86400.0
    free = suggest_plans(w, c, objective="devices", token_budget=budget, deadline=deadline, top=1, max_nodes=16)
    cfg = Reliability(rates=FailureRates.from_profile().scaled(300))
    aware = suggest_plans(w, c, objective="time-to-train", token_budget=budget, deadline=deadline, top=1,
                          max_nodes=16, reliability=cfg)
    assert aware.sizing.n_nodes is not None and free.sizing.n_nodes is not None
    assert aware.sizing.n_nodes >= free.sizing.n_nodes
    assert aware.training_time_s <= deadline


def test_cli_suggest_time_to_train():
    assert "time-to-train" in suggest_cmd.OBJECTIVE_NAMES
    r = CliRunner().invoke(app, ["suggest", "llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "64",
                                 "--objective", "time-to-train", "--token-budget", "2B", "--top", "3",
                                 "--format", "json", "--quiet"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["objective"] == "time-to-train" and len(d["plans"]) == 3
    assert [p["time_to_train_s"] for p in d["plans"]] == sorted(p["time_to_train_s"] for p in d["plans"])
    assert d["failures"]["goodput"] == d["plans"][0]["goodput"]
    r = CliRunner().invoke(app, ["suggest", "llama2-7b", "--hw", "dgx-a100-8", "--objective", "time-to-train"])
    assert r.exit_code == 2 and "token budget" in r.stderr
    # the table run says the goodput-aware time and its breakdown on stderr
    r = CliRunner().invoke(app, ["suggest", "llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "64",
                                 "--objective", "time-to-train", "--token-budget", "2B", "--top", "1"])
    assert r.exit_code == 0, r.output
    assert "(failures, checkpoints and restarts included)" in r.stderr and "goodput " in r.stderr
