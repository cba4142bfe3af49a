"""The task-graph family's remaining seed reproductions (S08 taskgraph, S21 low-sync stealing, S20 ReaxFF hybrid,
S27 PASGAL, S17 TMFG): each benchmark's core function, asserting the claims it reaches, and the tmfg generator."""
from __future__ import annotations

import pytest

import seed_lowsync
import seed_pasgal
import seed_reaxff
import seed_taskgraph
import seed_tmfg
from parplan.errors import SpecError
from parplan.workloads.taskgraph import load_taskgraph


def test_taskgraph_replay_below_vanilla_and_record_cost():
    rs = seed_taskgraph.rows()
    by = {r["g_us"]: r for r in rs}
    assert by[5]["vs_libomp"] >= 2.0 and by[5]["vs_libgomp"] > by[5]["vs_libomp"]  # GCC slower than LLVM
    assert abs(by[1000]["vs_libomp"] - 1) <= 0.1  # coarse grain: ≈ 1×
    assert all(1.0 <= r["first_ratio"] <= 1.1 for r in rs)  # the recording execution costs 0–10 % more
    assert all(r["overhead_taskgraph_s"] < r["overhead_libomp_s"] for r in rs)
    assert by[5]["sim_vs_libomp"] > 2.0  # the executor confirms the fine-grain direction


def test_lowsync_sync_flat_and_fine_grain_gain():
    rs = seed_lowsync.sync_rows()
    t1 = rs[-1]["T1_s"] / rs[0]["T1_s"]
    priv = rs[-1]["lowsync-ws_sim_sync_s"] / rs[0]["lowsync-ws_sim_sync_s"]
    conc = rs[-1]["chase-lev-ws_sim_sync_s"] / rs[0]["chase-lev-ws_sim_sync_s"]
    assert priv < 0.1 * t1 < conc  # private deques: ~flat; concurrent deques: grows with the spawns
    sp = seed_lowsync.speed_rows()
    fine = [r["ratio"] for r in sp if r["task_s"] <= 60e-9]
    coarse = [r["ratio"] for r in sp if r["task_s"] >= 1e-5]
    assert fine and all(1.2 <= x <= 2.0 for x in fine) and all(abs(x - 1) <= 0.1 for x in coarse)


def test_pasgal_vgc_on_large_diameter_graphs():
    rows = {r["graph"]: r for r in seed_pasgal.model_rows()}
    for g in seed_pasgal.LARGE_DIAMETER:
        assert 3.0 <= rows[g]["speedup"] <= 20.0 and rows[g]["rounds_vgc"] < rows[g]["rounds_base"] / 20
    assert rows["social"]["speedup"] < rows["road"]["speedup"]  # small diameter: less to gain


def test_tmfg_generator_rounds_and_speedup_growth():
    s = load_taskgraph({"family": "task-graph", "name": "t", "grain": [1, 100],
                        "kernel": {"name": "tmfg", "n": 1004}}).summary()
    assert list(s.rounds) == [1001, 11]  # ⌈(n − 4)/k⌉ insertion rounds + the APSP round
    assert s.work_s[0] == pytest.approx(s.work_s[1])  # aggregation changes rounds, not work
    assert s.tasks[0] == 3 * 1000 + 1004
    rs = seed_tmfg.rows()
    for n in seed_tmfg.SIZES:
        few, many = (r for r in rs if r["n"] == n)
        assert many["aggregation_only"] > few["aggregation_only"] >= 1.0  # sync-bound A gains more at 48 cores
    with pytest.raises(SpecError, match="variant"):
        load_taskgraph({"family": "task-graph", "name": "t", "kernel": {"name": "fib", "n": 10, "variant": "exact"}})
    with pytest.raises(SpecError, match="tmfg n"):
        load_taskgraph({"family": "task-graph", "name": "t", "kernel": {"name": "tmfg", "n": 4}})


def test_reaxff_hybrid_beats_mpi_only_more_on_many_nodes():
    rs = seed_reaxff.strong_rows()
    assert all(r["speedup"] > 1.0 for r in rs)
    for atoms in (32_000, 16_600_000):
        sp = [r["speedup"] for r in rs if r["atoms"] == atoms]
        assert sp == sorted(sp)  # strong scaling: the hybrid's gain grows with the node count
    assert 1.5 <= max(r["speedup"] for r in rs) <= 4.5 * 1.5
    ws = seed_reaxff.weak_rows()
    assert all(0.5 < r["efficiency"] <= 1.0 + 1e-9 for r in ws)
