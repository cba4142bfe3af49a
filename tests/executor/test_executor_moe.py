"""The executor on mixture-of-experts plans: the all-to-all as transfers on the EP port, agreement with the MoE cost
model, the layer pattern, the family dispatch, the trace and the CLI."""
from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.executor import chrome_trace, compare_plan, model_costs, simulate_costs, simulate_plan
from parplan.executor.engine import EP_A2A, FWD
from parplan.executor.families import check_hetero, executor_module
from parplan.executor.program import build_program
from parplan.hardware.catalog import load_cluster
from parplan.models.plan import parse_plan
from parplan.workloads.loader import load_workload

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "validate_moe.py"
MIXTRAL_64 = ("mixtral-8x7b", "--hw", "dgx-h100-64", "--seq-len", "4096", "--global-batch", "64")


def _bench():
    spec = importlib.util.spec_from_file_location("validate_moe", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def setup(workload, cluster, plan, framework="nemo", seq=4096, gb=64):
    w = load_workload(workload, framework=framework, seq_len=seq, global_batch=gb)
    c = load_cluster(cluster)
    return w, c, parse_plan(plan, c.n_devices)


def a2a_link_events(s):
    return [e for e in s.events if e.kind == "ep_a2a" and e.track.startswith(("nic", "nvlink"))]


@pytest.mark.parametrize("row", _bench().FAST)
def test_moe_matrix_subset_within_5_percent(row):
    mod = _bench()
    [(_, _, _, a, est, _)] = mod.run_matrix([mod.MATRIX[row - 1]])
    assert est.fits and a.has_a2a
    assert abs(a.step_diff) <= 0.05, a.row()
    assert abs(a.memory_diff) <= 0.05, a.row()


def test_ep1_plays_no_all_to_all():
    w, c, plan = setup("mixtral-8x7b", "dgx-h100-64", "tp=2,ep=1,sp=true,pp=2,mbs=1,zero=1,recompute=selective")
    s = simulate_plan(w, c, plan)
    assert not [e for e in s.events if e.kind == "ep_a2a"] and "ep" not in s.exposed_comm_s
    assert abs(s.step_time_s - s.analytical["step_time_s"]) / s.step_time_s < 0.05


def test_four_transfers_per_moe_layer_and_micro_batch():
    w, c, plan = setup("mixtral-8x7b", "dgx-h100-64", "tp=2,ep=8,sp=true,pp=2,mbs=1,zero=1,recompute=selective")
    s = simulate_plan(w, c, plan, mode="replica")
    costs, _ = model_costs(w, c, plan)
    assert costs.moe_layers == (16, 16) and s.micro_batches == 4
    ev = a2a_link_events(s)
    for st in range(2):
        mine = [e for e in ev if e.device == st]
        assert len(mine) == 4 * 16 * s.micro_batches  # dispatch, combine, their gradients; nemo hides nothing
        assert {e.name.split(".")[0][:6] for e in mine} >= {"a2a-d0", "a2a-c0"}
    assert all(e.track == f"nvlink stage {e.device}" for e in ev)  # EP group of 8 inside a DGX node
    assert {"a2a-d0.l0", "a2a-c0.l0", "a2a-cg0.l15", "a2a-dg0.l15"} <= {e.name for e in ev}


@pytest.mark.parametrize("framework,recompute", [("nemo", "selective"), ("nemo", "full"),
                                                 ("megatron-core", "selective"), ("megatron-core", "none")])
def test_unloaded_link_reproduces_the_model(framework, recompute):
    # one stage, no data parallelism: the all-to-all is alone on NVLink; hidden parts end before the next exposed one
    w, c, plan = setup("mixtral-8x7b", "dgx-a100-8", f"tp=8,ep=8,sp=true,pp=1,mbs=1,zero=0,recompute={recompute}",
                       framework=framework, gb=16)
    s = simulate_plan(w, c, plan)
    assert s.has_a2a and len(a2a_link_events(s)) > 0
    assert s.step_time_s == pytest.approx(s.analytical["step_time_s"], rel=1e-9)
    d = s.devices[0]
    parts = d.compute_s + d.recompute_s + d.tp_comm_s + d.pp_p2p_s + d.ep_a2a_s + d.bubble_s + d.dp_comm_exposed_s \
        + d.optimizer_s
    assert parts == pytest.approx(s.step_time_s, rel=1e-9)


def test_compute_pieces_and_exposed_transfers_sum_to_the_stage():
    w, c, plan = setup("deepseek-v3", "dgx-h100-256", "tp=1,ep=32,pp=8,mbs=1,zero=1,recompute=full",
                       framework="megatron-core", gb=256)
    costs, r = model_costs(w, c, plan)
    assert costs.fwd_s[0] == pytest.approx(r["op_stage_first_fwd_s"], rel=1e-9)
    assert costs.bwd_s[-1] == pytest.approx(r["op_stage_last_bwd_s"], rel=1e-9)
    assert costs.layer_moe[0][:3] == (False, False, False) and costs.moe_layers[0] == 5  # 3 dense layers first
    assert costs.layers[-1] == int(r["layers_last_stage"]) + 1 and costs.layer_moe[-1][-1]  # the MTP module
    assert sum(costs.moe_layers) == w.model.n_moe_layers + 1
    built = build_program(costs, "1f1b", 1, [1.0] * costs.pp)
    kind, stream, dur, mb, part = (built.prog.column(x) for x in ("kind", "stream", "dur", "mb", "part"))
    for k in (0, 3, 7):
        comp = built.comp[k]
        f = sum(dur[o] for o in range(len(kind)) if kind[o] == FWD and stream[o] == comp and mb[o] == 0)
        x = sum(dur[o] for o in range(len(kind)) if kind[o] == EP_A2A and mb[o] == 0 and part[o] % 2 == 0
                and part[o] % 16 // 2 in (0, 1) and built.prog.stream_device[stream[o]] == k)
        assert f + x == pytest.approx(costs.fwd_s[k], rel=1e-12)


def test_full_mode_equals_replica_mode_and_plays_joint_transfers():
    w, c, plan = setup("mixtral-8x7b", "dgx-h100-64", "tp=2,ep=8,sp=true,pp=2,mbs=1,zero=1,recompute=selective")
    rep = simulate_plan(w, c, plan, mode="replica")
    full = simulate_plan(w, c, plan, mode="full")
    assert full.replicas == 16 and full.step_time_s == pytest.approx(rep.step_time_s, rel=1e-9)
    prog = full._event_source[0]
    joint = [rec for rec in prog.ops if rec[0] == EP_A2A and rec[7] % 2 == 0 and len(rec[4]) > 1]
    assert joint and all(len(rec[4]) == 4 for rec in joint)  # an EP group of 8 over tp=2: 4 replicas


def test_straggler_on_one_stage_shows_in_the_trace():
    w, c, plan = setup("mixtral-8x7b", "dgx-h100-64", "tp=2,ep=8,sp=true,pp=2,mbs=1,zero=1,recompute=selective")
    base = simulate_plan(w, c, plan)
    slow = simulate_plan(w, c, plan, slowdown=["stage:1=2"])
    assert slow.step_time_s > 1.3 * base.step_time_s

    def busy(s, track, kind):
        ev = chrome_trace(s)["traceEvents"]
        names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
                 and e["pid"] == 1}
        return sum(e["dur"] for e in ev if e["ph"] == "X" and e["pid"] == 1 and names[e["tid"]] == track
                   and e["cat"] == kind)

    assert busy(slow, "stage 1", "forward") == pytest.approx(2 * busy(base, "stage 1", "forward"), rel=1e-9)
    assert busy(slow, "stage 0", "forward") == pytest.approx(busy(base, "stage 0", "forward"), rel=1e-9)
    a2a = [e for e in chrome_trace(slow)["traceEvents"] if e["ph"] == "X" and e["cat"] == "ep_a2a" and e["pid"] == 2]
    assert a2a and {"moe_layer", "transfer", "exposed", "micro_batch"} <= set(a2a[0]["args"])
    assert any(e["name"] == "a2a-d0.l0" for e in a2a)
    base_a2a = sorted(e.end_s - e.start_s for e in a2a_link_events(base))
    slow_a2a = sorted(e.end_s - e.start_s for e in a2a_link_events(slow))
    assert slow_a2a == pytest.approx(base_a2a, rel=1e-6)  # the straggler's compute is slower, not its link


def test_hidden_all_to_all_shares_the_port():
    # megatron-core overlaps the all-to-all: the NVLink port still carries its whole volume, as hidden transfers
    w, c, plan = setup("qwen3-30b-a3b", "dgx-h100-64", "tp=1,ep=8,pp=1,mbs=1,zero=1,recompute=selective",
                       framework="megatron-core", gb=512)
    s = simulate_plan(w, c, plan)
    costs, _ = model_costs(w, c, plan)
    assert s.exposed_comm_s["ep"] == pytest.approx(0.0, abs=1e-12)
    vol = s.micro_batches * sum(costs.moe_layers) * (sum(costs.a2a_fwd_s) + sum(costs.a2a_bwd_s))
    assert s.totals["a2a_hidden_work_s"] == pytest.approx(vol, rel=1e-9)
    nvl = [lk for lk in s.links if lk.name == "nvlink stage 0"][0]
    assert nvl.a2a_work_s == pytest.approx(vol, rel=1e-9) and nvl.busy_s == pytest.approx(nvl.work_s, rel=1e-9)
    assert s.totals["expert_imbalance"] > 1.0 and any("γ" in n for n in s.notes)


def test_ep_across_nodes_uses_the_nic():
    w, c, plan = setup("qwen3-30b-a3b", "dgx-h100-64", "tp=1,ep=16,pp=1,mbs=1,zero=1,recompute=selective", gb=512)
    s = simulate_plan(w, c, plan)
    assert {e.track for e in a2a_link_events(s)} == {"nic stage 0"}
    assert compare_plan(w, c, plan).simulated_ep_exposed_s > 0


def test_family_dispatch():
    dense = load_workload("llama2-7b")
    moe = load_workload("mixtral-8x7b")
    assert executor_module(dense).__name__ == "parplan.executor.dense"
    assert executor_module(moe).__name__ == "parplan.executor.moe"
    check_hetero(dense)
    with pytest.raises(SpecError, match="heterogeneous"):
        check_hetero(moe)
    from parplan.executor.hetero import simulate_hetero

    with pytest.raises(SpecError, match="mixtral|Mixtral"):
        simulate_hetero(moe, load_cluster("mixed-h100-a100-64"), None)


def test_dense_plans_play_no_moe_streams():
    w, c, plan = setup("llama2-7b", "dgx-a100-8", "tp=2,pp=2,mbs=1,zero=1", gb=32)
    costs, _ = model_costs(w, c, plan)
    built = build_program(costs, "1f1b", 1, [1.0, 1.0])
    assert not costs.has_moe and not any("a2a" in n for n in built.prog.stream_name)
    assert EP_A2A not in built.prog.column("kind")


@pytest.mark.parametrize("plan,note", [("tp=1,pp=4,mbs=1,first_layers=5,last_layers=9", False),
                                       ("tp=1,pp=4,mbs=1,first_layers=5", False),
                                       ("tp=1,pp=2,mbs=1,embed_as_layer=true,loss_as_layer=true", False)])
def test_uneven_layer_splits(plan, note):
    w, c, p = setup("llama2-7b", "dgx-a100-8", plan, gb=64)
    costs, r = model_costs(w, c, p)
    assert sum(costs.layers) == w.model.layers and costs.layers[0] == int(r["layers_first_stage"])
    assert any("layer split" in n for n in costs.notes) == note
    a = compare_plan(w, c, p)
    assert abs(a.step_diff) <= (0.05 if note else 0.01)


def test_hand_made_moe_costs():
    # two stages of 2 MoE layers: forward 1 s each with 0.2 s exposed all-to-all per layer
    base = dict(pp=2, vpp=1, micro_batches=4, fwd_s=(2.0, 2.0), bwd_s=(4.0, 4.0), layers=(2, 2), moe_layers=(2, 2),
                moe_fwd_s=1.0, moe_bwd_s=2.0, a2a_fwd_s=(0.1, 0.1), a2a_bwd_s=(0.1, 0.1), a2a_fwd_exposed_s=0.2,
                a2a_bwd_exposed_s=0.2, ep_ranks=8, devices_per_node=8)
    from parplan.executor.costs import PipelineCosts

    plain = simulate_costs(replace(PipelineCosts(**base), moe_layers=(), a2a_fwd_s=(), a2a_bwd_s=()))
    s = simulate_costs(PipelineCosts(**base))
    assert s.step_time_s == pytest.approx(plain.step_time_s, rel=1e-12)  # nothing else on the link
    assert s.devices[0].ep_a2a_s == pytest.approx(4 * 2 * 0.4, rel=1e-9)


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_cli_simulate_prints_the_all_to_all(tmp_path):
    trace = tmp_path / "t.json"
    r = invoke("simulate", *MIXTRAL_64, "--plan", "tp=2,ep=8,sp=true,pp=2,mbs=1,zero=1,recompute=selective",
               "--trace", trace)
    assert r.exit_code == 0, r.output
    for text in ("all-to-all", "exposed", "expert imbalance", "γ", "a2a", "all-to-all s", "NVLink"):
        assert text in r.stdout, text
    t = json.loads(trace.read_text())
    assert any(e.get("cat") == "ep_a2a" for e in t["traceEvents"])
    j = invoke("simulate", *MIXTRAL_64, "--plan", "tp=2,ep=8,sp=true,pp=2,mbs=1,zero=1,recompute=selective",
               "--format", "json")
    d = json.loads(j.stdout)
    assert "ep" in d["exposed_comm_s"] and d["totals"]["a2a_ops"] > 0 and "ep_a2a_s" in d["devices"][0]


def test_cli_validate_prints_the_all_to_all():
    r = invoke("validate", *MIXTRAL_64, "--plan", "tp=2,ep=8,sp=true,pp=2,mbs=1,zero=1,recompute=selective",
               "--plan", "tp=1,ep=8,pp=4,mbs=1,zero=1,recompute=full")
    assert r.exit_code == 0, r.output
    assert "a2a exposed" in r.stdout and r.stdout.count("ok") >= 2 and "ep=8" in r.stdout
    j = invoke("validate", *MIXTRAL_64, "--plan", "tp=2,ep=8,sp=true,pp=2,mbs=1,zero=1,recompute=selective",
               "--format", "json")
    row = json.loads(j.stdout)["plans"][0]
    assert row["analytical_ep_exposed_s"] == pytest.approx(row["simulated_ep_exposed_s"], rel=1e-6)


def test_etp_gathers_travel_on_nvlink_when_the_ep_group_leaves_by_the_nic():
    """ep·etp = 32 ranks span four DGX nodes, so the all-to-all leaves by the NIC; the ETP gather of the received
    copies runs within the 8 expert-tensor ranks of one node (the model prices it on NVLink, ``moe_terms``): the
    executor plays it there, and the NIC carries the all-to-all alone (it used to carry both: −20 % on this plan)."""
    w, c, plan = setup("mixtral-8x7b", "dgx-h100-64",
                       "dp=2,tp=8,pp=2,cp=2,ep=4,mbs=4,zero=3,recompute=modules,sp=true,etp=8", framework="megatron-core",
                       gb=256)
    costs, r = model_costs(w, c, plan)
    assert costs.a2a_etp_s == pytest.approx(r["op_moe_etp_gather_s"] / 2) and costs.a2a_etp_s > 0
    s = simulate_plan(w, c, plan, mode="replica")
    links = {lk.name: lk for lk in s.links}
    per_layer_mb = 16 * s.micro_batches  # MoE layers per stage × micro-batches
    nic_a2a = sum(costs.a2a_fwd_s) + sum(costs.a2a_bwd_s) - 4 * costs.a2a_etp_s
    assert links["nic stage 0"].a2a_work_s == pytest.approx(per_layer_mb * nic_a2a, rel=1e-6)
    assert links["nvlink stage 0"].a2a_work_s == pytest.approx(per_layer_mb * 4 * costs.a2a_etp_s, rel=1e-6)
    assert abs(compare_plan(w, c, plan).step_diff) <= 0.05


def test_etp_inside_one_node_stays_on_nvlink():
    """EP and ETP both inside one node: the all-to-all and its ETP part both travel on NVLink, and the executor still
    agrees with the model."""
    w, c, plan = setup("mixtral-8x7b", "dgx-h100-64", "tp=2,ep=4,etp=2,sp=true,pp=2,mbs=1,zero=1,recompute=selective")
    s = simulate_plan(w, c, plan, mode="replica")
    assert all(e.track == f"nvlink stage {e.device}" for e in a2a_link_events(s))
    assert abs(compare_plan(w, c, plan).step_diff) <= 0.05
