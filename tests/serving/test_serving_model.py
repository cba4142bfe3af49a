"""Serving cost model: hand-derivable cases (KV bytes, decode floor, prefill compute) and invariants."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from parplan.errors import SpecError
from parplan.hardware.catalog import load_cluster
from parplan.models.serving import estimate_serving, pool_cost
from parplan.models.serving_memory import kv_bytes_per_token_layer
from parplan.models.serving_plan import Deployment, Pool, parse_deployment
from parplan.workloads.loader import load_workload
from parplan.workloads.serving import load_serving

CHAT = {"isl": 2048, "osl": 256, "concurrency": 64, "slo": {"ttft_p99_s": 1.0, "tpot_s": 0.05}}


@pytest.fixture(scope="module")
def w70():
    return load_workload("llama3-70b", seq_len=1, global_batch=1)


@pytest.fixture(scope="module")
def h100():
    return load_cluster("h100-sxm-80gb:1x8")


def test_kv_bytes_per_token_llama3_70b_gqa(w70):
    # 2 (K and V) · 80 layers · 8 KV heads · 128 head dim · 2 bytes (bf16)
    per_layer = kv_bytes_per_token_layer(w70.model, "bf16", np.array([1.0]))[0]
    assert per_layer * w70.model.layers == 2 * 80 * 8 * 128 * 2
    # tp=8 splits the 8 KV heads; tp=16 would replicate (one head per rank)
    assert kv_bytes_per_token_layer(w70.model, "bf16", np.array([8.0]))[0] == 2 * 1 * 128 * 2
    assert kv_bytes_per_token_layer(w70.model, "fp8", np.array([1.0]))[0] == per_layer / 2


def test_mla_caches_the_latent():
    w = load_workload("deepseek-v3", seq_len=1, global_batch=1)
    m = w.model
    got = kv_bytes_per_token_layer(m, "bf16", np.array([8.0]))[0]
    assert got == (m.kv_lora_rank + m.qk_rope_head_dim) * 2  # 576 · 2 B, replicated on each TP rank


def test_decode_step_at_least_weights_over_bandwidth(w70, h100):
    e = estimate_serving(w70, h100, CHAT, "tp=8,batch=64")
    dev = h100.group.device
    weights_per_device = e.memory_bytes["weights_bytes"]
    assert weights_per_device == pytest.approx(w70.model.total_params * 2 / 8, rel=0.02)
    assert e.decode_iteration_s >= weights_per_device / dev.memory_bandwidth_bytes_per_s


def test_prefill_close_to_compute_bound(w70, h100):
    e = estimate_serving(w70, h100, CHAT, "tp=8,batch=64")
    peak = h100.group.device.peak("bf16")
    ideal = 2 * w70.model.total_params * 2048 / (peak * 8)  # 2·params·tokens / (FLOP/s of 8 GPUs)
    gemm = e.prefill_breakdown_s["gemm_s"]
    assert ideal < gemm < ideal / 0.5  # the GEMMs run at 50–100 % of peak on prompt-sized shapes


def test_breakdowns_sum_and_memory_parts(w70, h100):
    e = estimate_serving(w70, h100, CHAT, "tp=4,batch=64,chunk=2048")
    pc = pool_cost(w70, h100, CHAT, e.deployment, 0)
    assert pc.iteration_s(0, 64, 64 * 2176) > 0 and pc.max_batch == 64 and pc.chunk_tokens == 2048
    assert e.prefill_s == pytest.approx(sum(e.prefill_breakdown_s.values()))
    assert pc.kv_capacity_tokens == e.kv_capacity_tokens > 0
    assert pc.kv_transfer_s(2048) == 0.0
    assert sum(e.memory_bytes.values()) <= e.memory_capacity_bytes * 1.0001


def test_pool_cost_iteration_matches_estimate(w70, h100):
    dep = parse_deployment("tp=8,batch=64,chunk=2048", 8)
    e = estimate_serving(w70, h100, CHAT, dep)
    pc = pool_cost(w70, h100, CHAT, dep, 0)
    b = e.batch_per_replica
    assert pc.iteration_s(0, b, b * (2048 + 128)) == pytest.approx(e.decode_iteration_s, rel=1e-9)
    assert pc.iteration_s(0, 64, 10) < pc.iteration_s(2048, 64, 10)


def test_disaggregated_has_kv_transfer(w70, h100):
    e = estimate_serving(w70, h100, CHAT, "prefill:1x(tp=4)+decode:1x(tp=4,batch=64)")
    assert e.kv_transfer_s > 0
    pc = pool_cost(w70, h100, CHAT, e.deployment, 0)
    assert pc.kv_transfer_s(2048) > pc.kv_transfer_s(128) > 0


def test_spd_drop_lowers_decode_latency(w70, h100):
    a = estimate_serving(w70, h100, CHAT, "tp=8,batch=8")
    b = estimate_serving(w70, h100, CHAT, "tp=8,batch=8;spd_drop=0.9")
    assert b.tpot_p50_s < a.tpot_p50_s
    assert b.decode_breakdown_s["tp_comm_s"] < a.decode_breakdown_s["tp_comm_s"]


def test_moe_af_disaggregated_and_fused():
    w = load_workload("mixtral-8x7b", seq_len=1, global_batch=1)
    c = load_cluster("h100-sxm-80gb:2x8")
    s = {"isl": 1024, "osl": 256}
    af = estimate_serving(w, c, s, "attention:2x(tp=4,batch=128)+expert:1x(ep=8);micro_batches=2")
    assert af.fits and math.isfinite(af.tpot_p50_s) and af.n_devices == 16
    plain = estimate_serving(w, c, s, "tp=8,ep=4,batch=128")  # hybrid: expert TP 2 × EP 4 (MixServe, S15)
    fused = estimate_serving(w, c, s, "tp=8,ep=4,batch=128;fused=true")
    assert fused.decode_breakdown_s["ep_comm_s"] > 0
    assert fused.decode_iteration_s < plain.decode_iteration_s


def test_open_loop_overload_is_reported(w70, h100):
    s = {**CHAT, "concurrency": None, "arrival_rate_per_s": 1000.0}
    s.pop("concurrency")
    e = estimate_serving(w70, h100, s, "tp=8,batch=64")
    assert not e.slo_ok and any("load exceeds" in r for r in e.reasons)


def test_weights_that_do_not_fit(h100):
    w = load_workload("llama3-405b", seq_len=1, global_batch=1)
    e = estimate_serving(w, h100, CHAT, "tp=8")
    assert not e.fits and "exceed" in e.reasons[0]


@pytest.mark.parametrize("text", ["tp=3", "tp=16", "pp=200", "tp=8;micro_batches=2", "tp=8,ep=2"])
def test_bad_deployments(w70, h100, text):
    with pytest.raises(SpecError):
        estimate_serving(w70, h100, CHAT, text)


def test_deployment_strings_round_trip():
    for t in ("tp=8,batch=64,chunk=2048", "prefill:2x(tp=4,batch=256)+decode:1x(tp=8,batch=128)",
              "attention:2x(tp=4,dp=2,batch=256)+expert:1x(tp=1,ep=8);micro_batches=2", "tp=8,batch=64;spd_drop=0.5"):
        d = parse_deployment(t, 32)
        assert parse_deployment(d.to_string(), 32) == d
    assert parse_deployment("tp=2", 8).pools[0].replicas == 4


SMALL = {"isl": 512, "osl": 128, "concurrency": 16}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tp=st.sampled_from([1, 2, 4, 8]), batch=st.sampled_from([8, 32, 128]), chunk=st.sampled_from([0, 512, 2048]),
       scale=st.floats(1.0, 4.0), dp=st.sampled_from([1, 2, 4]))
def test_invariants_faster_and_bigger_hardware(tp, batch, chunk, scale, dp):
    w = load_workload("llama3-8b", seq_len=1, global_batch=1)
    c = load_cluster("h100-sxm-80gb:1x8")
    dp = max(1, min(dp, 8 // tp))  # attention-DP ranks within the node
    dep = Deployment("aggregated", (Pool("mixed", 1, tp, 1, 1, dp, batch, chunk),))
    base = estimate_serving(w, c, SMALL, dep)
    g = c.group
    dev = g.device
    faster = replace(dev, memory_bandwidth_bytes_per_s=dev.memory_bandwidth_bytes_per_s * scale,
                     peak_flops_per_s={k: v * scale for k, v in dev.peak_flops_per_s.items()})
    bigger = replace(dev, memory_bytes=dev.memory_bytes * scale)
    f = estimate_serving(w, replace(c, groups=(replace(g, device=faster),)), SMALL, dep)
    b = estimate_serving(w, replace(c, groups=(replace(g, device=bigger),)), SMALL, dep)
    for e in (base, f, b):
        for v in (e.ttft_p50_s, e.ttft_p99_s, e.tpot_p50_s, e.tpot_p99_s, e.output_tokens_per_s):
            assert math.isfinite(v) and v >= 0
        assert e.ttft_p99_s >= e.ttft_p50_s and e.tpot_p99_s >= e.tpot_p50_s
        assert e.decode_iteration_s == pytest.approx(sum(e.decode_breakdown_s.values()))
    assert f.tpot_p50_s <= base.tpot_p50_s * (1 + 1e-9)
    assert f.prefill_s <= base.prefill_s * (1 + 1e-9)
    assert b.kv_capacity_tokens >= base.kv_capacity_tokens and (b.fits or not base.fits)


def test_serving_spec_errors(tmp_path):
    p = tmp_path / "serve.yaml"
    p.write_text("isl: 2048\nosl: 256\nbogus: 1\n")
    with pytest.raises(SpecError, match="unknown key"):
        load_serving(str(p))
    with pytest.raises(SpecError, match="not both"):
        load_serving({"isl": 1, "osl": 1, "concurrency": 2, "arrival_rate_per_s": 1.0})
    with pytest.raises(SpecError, match="p99"):
        load_serving({"isl": {"dist": "lognormal", "mean": 100, "p99": 10000}, "osl": 8})
    s = load_serving({"serving": {"isl": {"dist": "uniform", "min": 100, "max": 300}, "osl": 8}})
    assert s.isl.mean == 200 and s.load == "saturated"
    rng = np.random.default_rng(0)
    assert (s.isl.sample(rng, 100) >= 100).all()


# --- static batching, closed-loop queueing, 16-bit residual stream, decode attention kernels, GEMM cap ----------
FP8 = {"weights": "fp8", "activations": "fp8", "kv_cache": "fp8"}


def _static(w, c, isl, osl, dep, engine="trtllm", **prec):
    from parplan.models.serving_static import static_batch

    s = load_serving({"isl": isl, "osl": osl, "engine": "trtllm", "precision": prec or FP8})
    # serve.yaml names the engine; the release profile (serving.yaml trtllm-0.6) is chosen by the accuracy harness
    return static_batch(w, c, replace(s, engine=engine), dep)


def test_static_batch_prices_the_context_then_a_growing_cache(w70, h100):
    s = _static(w70, h100, 128, 256, "tp=4,batch=64")
    assert s.context_s == pytest.approx(sum(s.context_breakdown_s.values()))
    assert s.generation_s == pytest.approx(sum(s.generation_breakdown_s.values()))
    # gptSessionBenchmark: output tokens of the batch over the whole generate call (context phase included)
    assert s.output_tokens_per_s == pytest.approx(64 * 256 / (s.context_s + s.generation_s))
    assert s.output_tokens_per_s_per_device == pytest.approx(s.output_tokens_per_s / 4)
    longer = _static(w70, h100, 128, 512, "tp=4,batch=64")
    # the second half of the answer attends over a longer cache: it costs more than the first half
    assert longer.generation_s > 2 * s.generation_s
    assert longer.context_s == pytest.approx(s.context_s)
    one = _static(w70, h100, 128, 1, "tp=4,batch=1")
    assert one.generation_s == 0.0 and one.kv_tokens_needed == 129 and one.fits


def test_static_batch_faster_hardware_never_slower(w70):
    h100, h200 = load_cluster("h100-sxm-80gb:1x8"), load_cluster("h200-sxm-141gb:1x8")
    for isl, osl in ((128, 128), (2048, 512)):
        a, b = _static(w70, h100, isl, osl, "tp=4,batch=32"), _static(w70, h200, isl, osl, "tp=4,batch=32")
        assert b.latency_s <= a.latency_s * (1 + 1e-9) and b.kv_capacity_tokens >= a.kv_capacity_tokens


def test_static_batch_refuses_what_it_cannot_price(w70, h100):
    from parplan.models.serving_static import static_batch

    with pytest.raises(SpecError, match="fixed"):
        static_batch(w70, h100, {"isl": {"dist": "uniform", "min": 1, "max": 9}, "osl": 8}, "tp=4,batch=8")
    with pytest.raises(SpecError, match="aggregated"):
        static_batch(w70, h100, {"isl": 8, "osl": 8}, "prefill:1x(tp=4)+decode:1x(tp=4,batch=8)")
    with pytest.raises(SpecError, match="engine terms"):
        static_batch(w70, h100, {"isl": 8, "osl": 8}, "tp=4,batch=8", engine_terms={"bogus": 1.0})


def test_one_user_never_queues(w70, h100):
    # a closed loop of one user: its prompt waits behind nobody (arrival theorem), TTFT = its own prefill
    e = estimate_serving(w70, h100, {"isl": 2048, "osl": 1, "concurrency": 1}, "tp=4,batch=1")
    assert e.ttft_p50_s == pytest.approx(e.prefill_s, rel=1e-9)
    many = estimate_serving(w70, h100, {"isl": 2048, "osl": 1, "concurrency": 8}, "tp=4,batch=8")
    assert many.ttft_p50_s >= e.ttft_p50_s


def test_fp8_activations_keep_a_16_bit_residual_stream(w70, h100):
    # saturated: both decode at the full batch of 64 (a closed loop's batch depends on each one's own latencies)
    sat = {k: v for k, v in CHAT.items() if k != "concurrency"}
    bf = estimate_serving(w70, h100, {**sat, "precision": {"weights": "fp8"}}, "tp=8,batch=64")
    f8 = estimate_serving(w70, h100, {**sat, "precision": {"weights": "fp8", "activations": "fp8"}}, "tp=8,batch=64")
    assert bf.batch_per_replica == f8.batch_per_replica == 64
    # the TP all-reduces carry the 16-bit GEMM outputs either way
    assert f8.decode_breakdown_s["tp_comm_s"] == pytest.approx(bf.decode_breakdown_s["tp_comm_s"])
    assert f8.prefill_breakdown_s["gemm_s"] < bf.prefill_breakdown_s["gemm_s"]  # fp8 tensor cores


def test_per_query_head_decode_reads_the_cache_per_head(w70, h100):
    kw = dict(isl=128, osl=1024, dep="tp=4,batch=64")
    grouped = _static(w70, h100, kw["isl"], kw["osl"], kw["dep"], engine="trtllm")
    legacy = _static(w70, h100, kw["isl"], kw["osl"], kw["dep"], engine="trtllm-0.6")
    assert legacy.generation_breakdown_s["attention_decode_s"] > 2 * grouped.generation_breakdown_s[
        "attention_decode_s"]
    # multi-head attention (one query head per KV head): the kernels read the same bytes
    mha = load_workload("llama2-7b", seq_len=1, global_batch=1)
    a = _static(mha, h100, 128, 256, "tp=1,batch=32", engine="trtllm")
    b = _static(mha, h100, 128, 256, "tp=1,batch=32", engine="trtllm-0.6",
                weights="bf16", activations="bf16", kv_cache="fp8")
    c = _static(mha, h100, 128, 256, "tp=1,batch=32", engine="trtllm", weights="bf16", activations="bf16",
                kv_cache="fp8")
    assert b.generation_breakdown_s["attention_decode_s"] == pytest.approx(c.generation_breakdown_s[
        "attention_decode_s"])
    assert a.fits


def test_prompt_gemms_never_beat_the_measured_mamf(w70, h100):
    from parplan.models.serving_terms import serving_context

    s = load_serving({"isl": 2048, "osl": 1, "concurrency": 1, "precision": FP8})
    e = estimate_serving(w70, h100, s, "tp=8,batch=1")
    c = serving_context(w70, h100, s)
    mamf = c.hw.kernels.gemm_for("fp8")[0]
    m = w70.model
    lin = 2.0 * 2048 * (m.layers * (m.attention_params + m.mlp_params)) / 8  # FLOPs of the decoder's linears
    assert e.prefill_breakdown_s["gemm_s"] >= lin / (c.peak * mamf) * (1 - 1e-6)
