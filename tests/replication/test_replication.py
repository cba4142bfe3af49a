"""Replicated-service family: the catalog machine and example, the closed form's hand-derivable limits (SEEDS.md
S01(b), ANCHORS.md Part B §4.2–4.3), the exact barrier imbalance, physics invariants, the planner and the verbs
through the CLI, and the executor's agreement."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.hardware.cpu import load_cpu_machine, machine_from_dict
from parplan.models.replication import EXEC_PARTS, LATENCY_PARTS, estimate_plan, evaluate
from parplan.models.replication_terms import expected_max, imbalance_commands
from parplan.planner.spaces.replication import search
from parplan.workloads.registry import verbs_for
from parplan.workloads.replication import load_replication

runner = CliRunner()
HW = "smr-3x-16c-10gbe"


def kv(d: float, cost: str = "20 us", **extra) -> object:
    cmds = []
    if d < 1:
        cmds.append({"name": "put", "fraction": 1 - d, "cost": cost, "bytes": 1024})
    if d > 0:
        cmds.append({"name": "all", "fraction": d, "cost": cost, "bytes": 1024, "threads": "all"})
    return load_replication({"family": "replicated-service", "name": "kv", "commands": cmds, **extra})


def plan(s, n=8, g=4, b=32):
    return {"scheme": s, "threads": n, "rings": g, "batch": b}


def test_catalog_machine_and_example_load(root):
    m = load_cpu_machine(HW)
    assert (m.nodes, m.socket.cores, m.network.name) == (3, 16, "10gbe") and len(m.source) > 8
    s = load_replication(root / "examples/kv-store.yaml")
    assert s.dependent_fraction == pytest.approx(0.01) and s.t_independent_s == pytest.approx(20e-6)
    assert verbs_for(str(root / "examples/kv-store.yaml")).__name__ == "parplan.cli.replication_out"


def test_bad_workloads_are_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="sum to 0.9"):
        load_replication({"family": "replicated-service", "name": "x",
                          "commands": [{"name": "a", "fraction": 0.9, "cost": "1 us"}]})
    with pytest.raises(SpecError, match="bogus"):
        load_replication({"family": "replicated-service", "name": "x",
                          "commands": [{"name": "a", "fraction": 1, "cost": "1 us", "bogus": 1}]})
    with pytest.raises(SpecError, match="threads"):
        load_replication({"family": "replicated-service", "name": "x",
                          "commands": [{"name": "a", "fraction": 1, "cost": "1 us", "threads": "some"}]})


def test_seed_limits_by_hand():
    m = load_cpu_machine(HW)
    assert estimate_plan(kv(0), m, plan("smr", 1, 1)).throughput_per_s == pytest.approx(1 / 20e-6)
    assert estimate_plan(kv(0), m, plan("psmr", 8)).throughput_per_s == pytest.approx(8 / 20e-6)  # linear, d = 0
    e = estimate_plan(kv(0), m, plan("sched-psmr", 16, 1))
    assert e.throughput_per_s == pytest.approx(1 / 5e-6) and e.limit == "central scheduler"  # 1/t_sched
    e = estimate_plan(kv(1), m, plan("psmr", 8))  # d = 1: 1/(t_d + t_sync(n)), below SMR
    assert e.throughput_per_s == pytest.approx(1 / (20e-6 + 8 * 0.5e-6))
    assert sum(e.exec_parts_s.values()) == pytest.approx(e.capacity_s["exec_s"])


def test_leader_bound_and_compartmentalization_s1():
    """ANCHORS §4.2: X ≤ 1/max(c_L, (r−1)m/B, c_replica); S1: spreading the leader's work over six rings (proxy
    leaders) lifts a leader-bound service ≈ 6× until the next bound."""
    m = load_cpu_machine(HW)
    w = kv(0, cost="0.1 us")
    one = estimate_plan(w, m, plan("psmr", 12, 1, 1))
    c_l = 2e-6 + 0.5e-6 + 2 * 1e-6 + 2 * 1e-6  # recv + per_command + (r−1)·send + ⌈r/2⌉·ack
    assert one.limit == "ring leader CPU" and one.throughput_per_s == pytest.approx(1 / c_l)
    six = estimate_plan(w, m, plan("psmr", 12, 6, 1))  # 12 threads: two per ring, the rings evenly loaded
    assert six.throughput_per_s / one.throughput_per_s == pytest.approx(6.0, rel=0.01)
    uneven = estimate_plan(w, m, plan("psmr", 16, 6, 1))  # 16 threads on 6 rings: the busiest ring has 3/16
    assert uneven.throughput_per_s / one.throughput_per_s == pytest.approx(16 / 3, rel=0.01)
    many = estimate_plan(w, m, plan("psmr", 16, 16, 1))
    assert many.limit in ("replica NIC (in)", "leader NIC (out)")  # the NIC caps it next


def test_imbalance_is_exact_for_small_segments():
    assert expected_max(2, np.array([2]))[0] == pytest.approx(1.5)  # (2,0),(0,2) w.p. 1/2, (1,1) w.p. 1/2
    assert expected_max(3, np.array([2]))[0] == pytest.approx(1 + 1 / 3)
    assert imbalance_commands(1, 0.1, "psmr") == 0.0 and imbalance_commands(8, 0.0, "psmr") == 0.0
    assert imbalance_commands(8, 0.01, "psmr") > imbalance_commands(8, 0.01, "sched-psmr") > 0


@settings(max_examples=30, deadline=None)
@given(d=st.sampled_from([0.0, 0.01, 0.3, 1.0]), n=st.sampled_from([1, 2, 4, 16]), g=st.sampled_from([1, 2, 5]),
       b=st.sampled_from([1, 7, 64]), bw=st.floats(1e8, 1e11), faster=st.floats(1.0, 10.0),
       scheme=st.sampled_from(["smr", "sched-psmr", "psmr"]))
def test_physics(d, n, g, b, bw, faster, scheme):
    def machine(bwx):
        return machine_from_dict({"name": "m", "kind": "cpu-cluster", "socket": "xeon-8380", "sockets_per_node": 1,
                                  "nodes": 3, "network": {"name": "n", "bandwidth": bwx, "latency": "20 us"},
                                  "source": "test machine"})
    w = kv(d)
    slow = evaluate(w, machine(bw), scheme, n, g, b, None)
    fast = evaluate(w, machine(bw * faster), scheme, n, g, b, None)
    assert fast["throughput_per_s"] >= slow["throughput_per_s"] * (1 - 1e-12)
    for out in (slow, fast):
        assert np.isfinite(out["throughput_per_s"]) and np.isfinite(out["latency_s"])
        assert sum(out[k] for k in EXEC_PARTS) == pytest.approx(float(out["exec_s"]))
        assert sum(out["latency_parts"][k] for k in LATENCY_PARTS) == pytest.approx(float(out["latency_s"]))
    # the network's share of a command scales with 1/bandwidth; the CPU's does not move
    for k in ("nic_out_s", "nic_in_s"):
        assert float(fast[k]) == pytest.approx(float(slow[k]) / faster, rel=1e-9)
    for k in ("exec_s", "scheduler_s", "leader_cpu_s", "learner_cpu_s"):
        assert float(fast[k]) == pytest.approx(float(slow[k]), rel=1e-12)


def test_planner_ranks_psmr_first_and_names_the_bound(root):
    ps = search(load_replication(root / "examples/kv-store.yaml"), load_cpu_machine(HW), top=0)
    best = ps.rows[0]
    assert best["scheme"] == "psmr" and best["fits"] and best["limit"]
    assert [r["throughput_per_s"] for r in ps.rows if r["fits"]] == sorted(
        (r["throughput_per_s"] for r in ps.rows if r["fits"]), reverse=True)
    smr = [r for r in ps.rows if r["scheme"] == "smr"][0]
    assert not smr["fits"] and "offered load" in smr["reasons"][0]  # 300 kcmd/s is above 1/t_i
    lat = search(load_replication(root / "examples/kv-store.yaml"), load_cpu_machine(HW), objective="latency", top=3)
    assert lat.rows[0]["latency_s"] <= lat.rows[-1]["latency_s"]


def test_cli_done_when_suggest_with_breakdown(root):
    r = runner.invoke(app, ["suggest", str(root / "examples/kv-store.yaml"), "--hw", HW])
    assert r.exit_code == 0, r.output
    assert "psmr" in r.stdout and "limit" in r.stdout and "que" in r.stdout
    r = runner.invoke(app, ["suggest", str(root / "examples/kv-store.yaml"), "--hw", HW, "--format", "json"])
    rows = json.loads(r.stdout)["plans"]
    assert rows[0]["throughput_per_s"] > 0


def test_cli_estimate_check_and_errors(root):
    args = ["estimate", str(root / "examples/kv-store.yaml"), "--hw", HW]
    r = runner.invoke(app, args + ["--plan", "scheme=psmr,threads=16,rings=2,batch=8", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert sum(doc["latency_breakdown_s"].values()) == pytest.approx(doc["latency_s"])
    for bad in (["--plan", "scheme=pmsr"], ["--plan", "threads=999"], ["--global-batch", "8"]):
        r = runner.invoke(app, args + bad)
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    chk = ["check", str(root / "examples/kv-store.yaml"), "--hw", HW]
    assert runner.invoke(app, chk + ["--min-tokens-per-s", "100000"]).exit_code == 0
    assert runner.invoke(app, chk + ["--min-tokens-per-s", "1e7"]).exit_code == 1
    assert runner.invoke(app, chk + ["--plan", "scheme=smr"]).exit_code == 1  # offered load above SMR's capacity


def test_executor_agrees(tmp_path):
    from parplan.executor.replication import simulate_plan

    m = load_cpu_machine(HW)
    for d, p in ((0.01, plan("psmr", 8)), (0.1, plan("sched-psmr", 4, 1)), (0.0, plan("psmr", 16, 2, 8))):
        w = kv(d)
        e = estimate_plan(w, m, p)
        sim = simulate_plan(w, m, p, n_cmds=20_000)
        assert sim.throughput_per_s == pytest.approx(e.throughput_per_s, rel=0.05)


def test_seed_claims_reached():
    from seed_psmr import claims, table

    t = table(simulate=False)
    assert all(ok for _, ok, _ in claims(t))
