"""RTP's rotated weight shards in the dense cost model (``models/rtp_terms.py``): hand-derived shard buffers, GEMM
and exposure terms, the invariants (rotate=false plans untouched, faster hardware never slower, parts sum to the
totals, finite), and the plan rules (rotate needs zero=3), through the API and the CLI."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import cluster_dict
from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.hardware import load_cluster
from parplan.models.estimate import validate_plan
from parplan.models.hardware_context import framework_of, hardware_context
from parplan.models.layer_terms import step_context
from parplan.models.plan import parse_plan
from parplan.models.training import TIME_PARTS, PlanArrays, evaluate_workload
from parplan.models.training_memory import FRAGMENTATION_FRACTION, MEMORY_PARTS
from parplan.workloads import load_workload

W1 = load_workload("mpt-1b", seq_len=1024, global_batch=64)
W7 = load_workload("mpt-7b", seq_len=1024, global_batch=64)
L7 = load_workload("llama2-7b", seq_len=4096, global_batch=512)
A100 = load_cluster("dgx-a100-8")
H64 = load_cluster("dgx-h100-64")
PCIE = load_cluster(cluster_dict(device="a100-pcie-80gb", nodes=1, intra="pcie4-x16", inter="eth-25"))


def run(w, c, plans) -> dict:
    ps = [parse_plan(p, c.n_devices) if isinstance(p, str) else p for p in plans]
    for p in ps:
        validate_plan(w, c, p)
    return evaluate_workload(w, c, PlanArrays.from_plans(ps))


def one(w, c, plan) -> dict:
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in run(w, c, [plan]).items()}


# --- memory ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("w,plan,S,tp", [(W7, "dp=8,zero=3,mbs=4", 8, 1), (W7, "dp=4,tp=2,sp=true,zero=3,mbs=4", 4, 2),
                                         (W1, "dp=8,zero=3,shard=4,mbs=2", 4, 1)])
def test_shard_buffers_are_two_shards_not_two_layers(w, plan, S, tp):
    fsdp, rtp = one(w, A100, plan), one(w, A100, plan + ",rotate=true")
    layer = float(w.model.layer_params)
    assert rtp["zero3_gather_buffer_bytes"] == pytest.approx(2 * layer * 2 / (tp * S), rel=1e-12)  # 2·|W_l|/S
    assert fsdp["zero3_gather_buffer_bytes"] == pytest.approx(2 * layer * 2 / tp, rel=1e-12)  # FSDP: 2 full layers
    for k in ("params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "transient_bytes"):
        assert rtp[k] == fsdp[k], k  # the model states of ZeRO-3: 16Ψ/S
    saved = (fsdp["zero3_gather_buffer_bytes"] - rtp["zero3_gather_buffer_bytes"]) * (1 + FRAGMENTATION_FRACTION)
    assert fsdp["memory_peak_bytes"] - rtp["memory_peak_bytes"] == pytest.approx(saved, rel=1e-9)


def test_mpt7b_model_states_by_hand():
    r = one(W7, A100, "dp=8,zero=3,rotate=true,mbs=4")
    psi = float(W7.model.total_params)
    # 2 B weights + 2 B gradients + 12 B fp32 master, m, v (ZeRO, Rajbhandari et al. 2020), over 8 ranks
    assert r["params_bytes"] + r["grads_bytes"] + r["optimizer_bytes"] == pytest.approx(16 * psi / 8, rel=1e-9)


def test_rotate_refuses_reshard_false():
    """RTP keeps only shards: FSDP's reshard=false (gathered layers kept until their backward) does not apply."""
    keep = one(W1, A100, "dp=8,zero=3,reshard=false,mbs=2")
    base = one(W1, A100, "dp=8,zero=3,rotate=true,mbs=2")
    assert base["params_bytes"] < keep["params_bytes"]
    with pytest.raises(SpecError, match="reshard"):
        one(W1, A100, "dp=8,zero=3,reshard=false,rotate=true,mbs=2")


# --- time --------------------------------------------------------------------------------------------------------
def _ctx(w, c, plan):
    hw = hardware_context(c.group, w.training.precision, None, framework=framework_of(w))
    return hw, step_context(w.training, hw, PlanArrays.from_plans([parse_plan(plan, c.n_devices)]))


def test_shard_gemms_by_hand():
    """Every linear (T×K)·(K×N) runs as S kernels of N/S columns: the GEMM part grows by m·L·Σ (S·g(N/S) − g(N))."""
    plan = "dp=8,zero=3,mbs=4"
    fsdp, rtp = one(W1, A100, plan), one(W1, A100, plan + ",rotate=true")
    _, c = _ctx(W1, A100, plan)
    mdl = W1.model
    h, f = float(mdl.hidden), float(mdl.ffn_hidden)
    T, S = 4.0 * 1024, 8.0
    extra = 0.0
    for K, N in ((h, 3 * h), (h, h), (h, f), (f, h)):  # QKV, out-projection, MLP up, MLP down (MHA, GELU)
        extra += sum(S * float(a) - float(b) for a, b in zip(c.fwd_bwd(T, K, N / S), c.fwd_bwd(T, K, N)))
    m, L = fsdp["micro_batches"], float(mdl.layers)
    assert rtp["compute_gemm_s"] - fsdp["compute_gemm_s"] == pytest.approx(m * L * extra, rel=1e-9)
    assert extra > 0  # narrower GEMMs are less efficient and launch S times (kernel model)
    assert rtp["dp_comm_exposed_s"] == 0.0  # b·s = 4,096 tokens per GPU: every hop hides behind its sub-step


def test_exposure_by_hand_on_pcie():
    """Hop t = (layer part's shard bytes) / p2p bandwidth + latency; a pass exposes (S − 1)·max(0, t − c) per layer."""
    plan = "dp=8,zero=3,rotate=true,mbs=1"
    r = one(W1, PCIE, plan)
    hw, _ = _ctx(W1, PCIE, plan)
    L, S = float(W1.model.layers), 8.0
    part = r["op_params_bytes_first"] / 2.0 * S / L  # the stage's parameters (per TP rank) over its layers
    bw, lat, _ = hw.group_busbw(part * 2.0 / S, 8, 1.0, 2.0, "p2p")
    t_f = part * 2.0 / S / float(bw) + float(lat)
    assert r["op_rtp_xfer_fwd_first_s"] == pytest.approx(t_f, rel=1e-12)
    c_f, c_b = r["op_rtp_sub_fwd_s"], r["op_rtp_sub_bwd_s"]
    t_b = r["op_rtp_xfer_bwd_first_s"]
    assert t_f > c_f  # 1,024 tokens per GPU on 31.5 GB/s PCIe: the hops are exposed
    per_mb = L * (S - 1) * (max(0.0, t_f - c_f) + max(0.0, t_b - c_b))
    assert r["dp_comm_exposed_s"] == pytest.approx(r["micro_batches"] * per_mb, rel=1e-9)


def test_exposure_shrinks_with_tokens_per_gpu():
    """The arithmetic-intensity condition: more tokens per sub-step hide more of each hop (per token)."""
    per_tok = [one(W1, PCIE, f"dp=8,zero=3,rotate=true,mbs={b}")["dp_comm_exposed_s"] for b in (1, 2, 4)]
    assert per_tok[0] > per_tok[1] > per_tok[2] >= 0.0


ROTATE = [(W1, A100, "dp=8,zero=3,rotate=true,mbs=4"), (W1, A100, "dp=4,pp=2,zero=3,rotate=true,mbs=2"),
          (W7, A100, "dp=4,tp=2,sp=true,zero=3,rotate=true,mbs=4"),
          (W7, A100, "dp=2,pp=4,zero=3,rotate=true,mbs=2,recompute=full"),
          (W1, PCIE, "dp=8,zero=3,rotate=true,mbs=1"), (W7, PCIE, "dp=2,pp=2,tp=2,zero=3,rotate=true,mbs=1"),
          (L7, H64, "dp=64,zero=3,rotate=true,mbs=1"), (L7, H64, "dp=16,pp=4,zero=3,rotate=true,mbs=1"),
          (L7, H64, "dp=16,tp=4,sp=true,zero=3,shard=8,rotate=true,mbs=1,recompute=selective"),
          (L7, H64, "dp=8,pp=4,vpp=2,tp=2,sp=true,zero=3,rotate=true,mbs=1,recompute=full")]


@pytest.mark.parametrize("w,c,plan", ROTATE)
def test_parts_sum_to_totals_and_finite(w, c, plan):
    r = one(w, c, plan)
    assert all(np.isfinite(v) for v in r.values()), [k for k, v in r.items() if not np.isfinite(v)]
    assert sum(r[k] for k in TIME_PARTS) == pytest.approx(r["step_time_s"], rel=1e-9)
    assert sum(r[k] for k in MEMORY_PARTS) == pytest.approx(r["memory_peak_bytes"], rel=1e-9)
    assert all(r[k] >= 0.0 for k in TIME_PARTS)


def test_rotate_false_rows_are_untouched():
    """Among rotate plans (one array: the search's vectorized path) every rotate=false plan keeps its numbers."""
    for w, c, plans in ((W7, A100, ["dp=8,zero=3,mbs=4", "dp=4,pp=2,zero=3,mbs=2,recompute=full",
                                    "dp=4,tp=2,sp=true,zero=3,mbs=4", "dp=8,zero=0,mbs=1", "dp=8,zero=1,mbs=2"]),
                        (L7, H64, ["dp=16,pp=4,zero=3,mbs=1", "dp=16,tp=4,sp=true,zero=3,shard=8,mbs=1"])):
        alone = run(w, c, plans)
        mixed = run(w, c, [q for p in plans for q in (p, p + ",rotate=true" if "zero=3" in p else p)])
        for k, v in alone.items():
            assert np.array_equal(np.asarray(mixed[k])[0::2], np.asarray(v), equal_nan=True), k


def faster(c, flops=1.0, hbm=1.0, intra=1.0, inter=1.0):
    g = c.group
    d = g.device
    dev = replace(d, peak_flops_per_s={k: v * flops for k, v in d.peak_flops_per_s.items()},
                  memory_bandwidth_bytes_per_s=d.memory_bandwidth_bytes_per_s * hbm)
    g2 = replace(g, device=dev,
                 intra_node=replace(g.intra_node, bandwidth_bytes_per_s=g.intra_node.bandwidth_bytes_per_s * intra),
                 inter_node=replace(g.inter_node, bandwidth_bytes_per_s=g.inter_node.bandwidth_bytes_per_s * inter))
    return replace(c, groups=(g2,))


@pytest.mark.parametrize("w,c,plan", ROTATE)
@pytest.mark.parametrize("k", [(2.0, 1, 1, 1), (1, 2.0, 1, 1), (1, 1, 2.0, 1), (1, 1, 1, 2.0), (1.5, 1.5, 1.5, 1.5)])
def test_faster_hardware_is_never_slower(w, c, plan, k):
    base = one(w, c, plan)["step_time_s"]
    assert one(w, faster(c, *k), plan)["step_time_s"] <= base * (1 + 1e-9)


# --- rules -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("zero", [0, 1, 2])
def test_rotate_needs_zero3(zero):
    with pytest.raises(SpecError) as e:
        validate_plan(W1, A100, parse_plan(f"dp=8,zero={zero},rotate=true,mbs=4", 8))
    assert e.value.key == "plan.rotate" and "zero=3" in str(e.value)


def test_cli_estimate_rotate():
    runner = CliRunner()
    bad = runner.invoke(app, ["estimate", "mpt-1b", "--hw", "dgx-a100-8", "--plan", "dp=8,zero=1,rotate=true,mbs=4",
                              "--global-batch", "64", "--seq-len", "1024"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "rotate" in bad.output and "zero=3" in bad.output
    ok = runner.invoke(app, ["estimate", "mpt-1b", "--hw", "dgx-a100-8", "--plan",
                             "dp=8,zero=3,rotate=true,mbs=4,recompute=none", "--global-batch", "64", "--seq-len",
                             "1024", "--format", "json"])
    assert ok.exit_code == 0, ok.output
    d = json.loads(ok.stdout)["plans"][0]
    assert "rotate=true" in d["plan"]
    assert d["step_time_s"] == pytest.approx(one(W1, A100, "dp=8,zero=3,rotate=true,mbs=4")["step_time_s"], rel=1e-12)
    assert sum(d["breakdown"]["time_s"].values()) == pytest.approx(d["step_time_s"], rel=1e-9)
