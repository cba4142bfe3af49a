"""The MoE family's cost model by hand: FLOPs counted on active parameters, the all-to-all volume of one layer,
and its invariants (ep = 1 has no all-to-all; more EP never raises the expert memory per device)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parplan.hardware import load_cluster
from parplan.models.families import cost_model
from parplan.models.plan import parse_plan
from parplan.models.plan_arrays import PlanArrays
from parplan.models.primitives.collectives import alltoall_s, curve_for
from parplan.workloads import load_workload

H100_64 = load_cluster("dgx-h100-64")


def one(w, c, plan: str) -> dict:
    r = cost_model(w).evaluate_workload(w, c, PlanArrays.from_plans([parse_plan(plan, c.n_devices)]))
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in r.items()}


def attention_flops_per_token(m, s: int) -> float:
    # Megatron convention, non-causal: QKᵀ over qk dims + AV over v dims, forward, per layer
    return 2.0 * s * (m.attn_qk_dim + m.attn_v_dim)


@pytest.mark.parametrize("wid", ["deepseek-v3", "mixtral-8x7b", "qwen3-235b-a22b", "gpt-oss-120b"])
def test_model_flops_are_six_times_the_active_parameters_plus_attention(wid):
    """3 × (forward 2 FLOP per active weight + attention), the output head counted once (MTP adds its own)."""
    s, B = 4096, 64
    w = load_workload(wid, seq_len=s, global_batch=B, mtp_layers=0)
    m = w.model
    r = one(w, load_cluster("dgx-h100-1024"), "tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=none")
    per_token = r["model_flops_per_step"] / (B * s)
    # active weights of the GEMMs: every layer's attention, top-k routed + shared experts and the router on MoE
    # layers, the dense FFN on the others, the output projection
    nmat = m.ffn_matrices
    attn = sum(K * N for K, N, _ in m.attention_projections)
    fs = m.shared_ffn_hidden or m.moe_ffn_hidden
    moe = attn + m.top_k * nmat * m.hidden * m.moe_ffn_hidden + m.shared_experts * nmat * m.hidden * fs \
        + m.hidden * m.experts
    dense = attn + nmat * m.hidden * m.ffn_hidden
    linear = m.n_moe_layers * moe + m.n_dense_layers * dense + m.hidden * m.vocab
    want = 6.0 * linear + 3.0 * m.layers * attention_flops_per_token(m, s)
    assert per_token == pytest.approx(want, rel=1e-12)
    # and the active weights agree with the spec's own count (which adds norms and biases): within 1 %
    assert 6.0 * linear == pytest.approx(6.0 * (m.active_params_no_embedding), rel=0.01)


def test_deepseek_v3_active_flops_match_the_published_37b():
    """DeepSeek-V3: 37 B activated parameters per token (DeepSeek-AI 2024, §1) ⇒ ≈ 6 × 37e9 linear FLOPs."""
    s = 4096
    w = load_workload("deepseek-v3", seq_len=s, global_batch=64, mtp_layers=0)
    r = one(w, load_cluster("dgx-h100-1024"), "tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=none")
    linear = r["model_flops_per_step"] / (64 * s) - 3.0 * w.model.layers * attention_flops_per_token(w.model, s)
    assert linear / 6.0 == pytest.approx(37e9, rel=0.02)


def test_all_to_all_volume_and_time_of_one_layer_by_hand():
    """Mixtral 8x7B, ep=8 inside one node, tp=1, mbs=1, s=4096, balanced routing: each device routes 4096·2
    copies of h=4096 bf16 values = 64 MiB per dispatch and per combine; one all-to-all over 8 NVLink ranks takes
    (p−1)/p·n/busbw on the measured all-to-all curve."""
    w = load_workload("mixtral-8x7b", seq_len=4096, global_batch=64, expert_imbalance=1.0, framework="nemo")
    r = one(w, H100_64, "tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=none")
    n = 4096 * 2 * 4096 * 2
    assert r["op_moe_a2a_bytes"] == n == 64 * 2**20
    g = H100_64.group
    cv = curve_for(g.intra_node.kind, "alltoall", g.intra_node.nvls)
    bw = float(cv.busbw(n, g.intra_node.bandwidth_bytes_per_s, 8))
    want = float(alltoall_s(n, 8, bw, g.intra_node.latency_s, cv.measured_ranks))
    assert want == pytest.approx(7 / 8 * n / bw, rel=1e-12)
    assert r["op_moe_a2a_dispatch_s"] == pytest.approx(want, rel=1e-12)
    assert r["op_moe_a2a_combine_s"] == pytest.approx(want, rel=1e-12)
    # nemo has no all-to-all overlap: dispatch + combine forward, their gradients backward, all exposed
    assert r["op_moe_ep_fwd_exposed_s"] == pytest.approx(2 * want, rel=1e-12)
    assert r["op_moe_ep_bwd_exposed_s"] == pytest.approx(2 * want, rel=1e-12)


def test_imbalance_scales_the_all_to_all_and_is_settable():
    base = load_workload("mixtral-8x7b", seq_len=4096, global_batch=64, expert_imbalance=1.0)
    hot = load_workload("mixtral-8x7b", seq_len=4096, global_batch=64, expert_imbalance=1.5)
    a = one(base, H100_64, "tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=none")
    b = one(hot, H100_64, "tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=none")
    assert b["op_moe_a2a_dispatch_s"] == pytest.approx(1.5 * a["op_moe_a2a_dispatch_s"], rel=1e-12)
    assert b["expert_tokens_per_device"] == pytest.approx(1.5 * a["expert_tokens_per_device"], rel=1e-12)
    assert b["step_time_s"] > a["step_time_s"]
    # the default comes from published routing statistics (catalogs/calibration/moe.yaml) and grows with ep
    d = load_workload("mixtral-8x7b", seq_len=4096, global_batch=64)
    g2, g8 = (one(d, H100_64, f"tp=1,pp=1,ep={e},mbs=1,zero=1,recompute=none")["expert_imbalance"] for e in (2, 8))
    assert 1.0 < g2 < g8
    # at the anchor's EP degree the default is the measured max/mean (DeepSeek-R1 with EPLB at EP32: 1.109)
    q = load_workload("qwen3-30b-a3b", seq_len=4096, global_batch=64)
    g32 = one(q, H100_64, "tp=1,pp=1,ep=32,mbs=1,zero=1,recompute=none")["expert_imbalance"]
    assert g32 == pytest.approx(1.109, rel=1e-12)


def test_ep1_has_no_all_to_all():
    w = load_workload("mixtral-8x7b", seq_len=4096, global_batch=64)
    r = one(w, H100_64, "tp=8,pp=2,ep=1,mbs=1,zero=1,recompute=full,sp=true")
    assert r["op_moe_a2a_bytes"] > 0  # the copies exist, they just stay on the device
    assert r["op_moe_a2a_dispatch_s"] == r["op_moe_a2a_combine_s"] == r["ep_comm_exposed_s"] == 0.0


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite"]), st.integers(0, 3),
       st.sampled_from(["none", "full"]), st.sampled_from([1, 2]))
def test_more_ep_never_raises_expert_memory_per_device(wid, zero, rc, pp):
    w = load_workload(wid, seq_len=4096, global_batch=256)
    E = w.model.experts
    states = []
    for ep in [d for d in (1, 2, 4, 8, 16, 32) if E % d == 0 and 64 // pp % d == 0]:
        r = one(w, H100_64, f"tp=1,pp={pp},ep={ep},mbs=1,zero={zero},recompute={rc}")
        states.append(r["params_bytes"] + r["grads_bytes"] + r["optimizer_bytes"])
    assert all(b <= a * (1 + 1e-12) for a, b in zip(states, states[1:])), states


def _job_with_overlap(job, ov):
    """The training job with its own EP all-to-all overlap setting (a recipe's moe_a2a_overlap), set directly so
    that a value the loader would refuse reaches the cost model too."""
    from dataclasses import replace

    return replace(job, ep_a2a_overlap=ov)


def test_a_jobs_own_ep_overlap_setting_wins_over_the_framework_profile():
    """megatron-core's profile overlaps the EP all-to-all (1f1b); a job that names 'none' (a recipe with
    moe_a2a_overlap off) exposes all of it, and naming '1f1b' reproduces the profile's default exactly."""
    from dataclasses import replace

    w = load_workload("qwen3-30b-a3b", seq_len=4096, global_batch=256, expert_imbalance=1.0)
    c = load_cluster("dgx-h100-64")
    plan = "tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=none"
    base = one(w, c, plan)
    same = one(load_workload(w, ep_a2a_overlap="1f1b"), c, plan)
    off = one(load_workload(w, ep_a2a_overlap="none"), c, plan)
    assert same["step_time_s"] == base["step_time_s"]
    a2a_f = off["op_moe_a2a_dispatch_s"] + off["op_moe_a2a_combine_s"]
    assert off["op_moe_ep_fwd_exposed_s"] == pytest.approx(a2a_f, rel=1e-12)
    assert off["op_moe_ep_bwd_exposed_s"] == pytest.approx(2.0 * off["op_moe_a2a_combine_s"], rel=1e-12)
    assert base["op_moe_ep_fwd_exposed_s"] + base["op_moe_ep_bwd_exposed_s"] < 3.0 * a2a_f
    assert off["step_time_s"] > base["step_time_s"]


def test_an_unknown_ep_overlap_setting_is_a_spec_error():
    from dataclasses import replace

    from parplan.errors import SpecError

    w = load_workload("qwen3-30b-a3b", seq_len=4096, global_batch=256)
    bad = replace(w, training=_job_with_overlap(w.training, "always"))
    with pytest.raises(SpecError, match="ep_a2a_overlap 'always'"):
        one(bad, load_cluster("dgx-h100-64"), "tp=1,pp=1,ep=8,mbs=1,zero=1,recompute=none")


def test_ep_a2a_overlap_training_key_is_checked_at_the_door():
    """`training.ep_a2a_overlap` takes none | 1f1b | dualpipe on MoE workloads and is refused on dense ones."""
    from parplan.errors import SpecError

    assert load_workload("qwen3-30b-a3b", ep_a2a_overlap="none").training.ep_a2a_overlap == "none"
    assert load_workload({"model": "qwen3-30b-a3b", "training": {"ep_a2a_overlap": "1f1b"}}).training.ep_a2a_overlap \
        == "1f1b"
    with pytest.raises(SpecError, match="allowed: none, 1f1b, dualpipe"):
        load_workload("qwen3-30b-a3b", ep_a2a_overlap="always")
    with pytest.raises(SpecError, match="applies to moe-transformer workloads"):
        load_workload("llama3-8b", ep_a2a_overlap="none")


def test_a_port_bound_stage_also_holds_its_output_heads_compute():
    """port_terms.port_contention by hand: stages of m micro-batches whose NIC carries 3 s of all-to-all per slot of
    2 s, and idles 0.5 s while the heads compute: the step gains m·(3 + 0.5 − 2)."""
    from parplan.models.port_terms import PortStage, port_contention

    one = np.array([1.0])
    over = lambda counts, fn: counts[0] * fn(_Kind())  # noqa: E731

    def contention(idle):
        st = PortStage([one], 2.0 * one, 0.0 * one, 0.0 * one, 0.0 * one, idle * one)
        return port_contention([st, st, st], over=over, zero=np.array([0]), rc=np.array([0]), pp=np.array([2]),
                               m=4.0, t_max=2.0 * one, steady_dp=0.0 * one, gath=0.0 * one,
                               share=np.array([False]), dp_on=np.array([False]), dp_span=one, ep_span=16.0 * one,
                               dpn=8.0)

    assert contention(0.0)[0] == pytest.approx(4 * (3.0 - 2.0))
    assert contention(0.5)[0] == pytest.approx(4 * (3.0 + 0.5 - 2.0))


class _Terms:
    nic_a2a, ep_fwd, ep_bwd, ep_hidden = 3.0, 0.0, 0.0, 0.0


class _Kind:
    terms = _Terms()
