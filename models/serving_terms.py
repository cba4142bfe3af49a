"""Named time parts of one engine iteration of one serving replica (vectorized over candidate pools and batches):
the linear layers (GEMMs on the kernel layer's shape efficiency, or the weight read when that is longer), routed
experts (grouped GEMMs; only the experts a token reaches are read), the attention core over the prompt (prefill,
compute-bound) and over the cache (decode, KV-read-bound), token-wise memory-bound kernels, the LM head, TP
all-reduces on the measured collective curves (their latency regime at small messages), EP dispatch/combine
all-to-all, PP hand-offs and the engine's host overhead.  Every part in seconds; ``total`` is their sum.

A replica of pp stages runs pp micro-batches in flight (vLLM virtual engines): one iteration — every sequence of
the batch advancing one token — is the whole model's layers at batch/pp plus the (pp−1) hand-offs (derived).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError
from parplan.models.hardware_context import HardwareContext, hardware_context
from parplan.models.primitives.calibration import load_calibration
from parplan.models.primitives.collectives import allreduce_s, alltoall_s, hierarchical_alltoall_s
from parplan.models.primitives.kernels import attention_efficiency, gemm_efficiency, grouped_gemm_efficiency
from parplan.models.primitives.moe_routing import imbalance_factor
from parplan.models.serving_memory import VALUE_BYTES, WEIGHT_BYTES, kv_bytes_per_token_layer, kv_layer_equivalents

# fp8 activations quantize the GEMM inputs only: the GEMMs write 16-bit outputs and the residual stream, norms and
# TP all-reduces stay 16-bit (vLLM fp8 W8A8: dynamic per-token activation scales before each linear layer,
# docs.vllm.ai/en/latest/features/quantization/fp8.html; TensorRT-LLM FP8 GEMM plugins output fp16/bf16)
RESIDUAL_BYTES = 2.0

PARTS = ("gemm_s", "expert_gemm_s", "attention_prefill_s", "attention_decode_s", "memory_bound_s", "lm_head_s",
         "tp_comm_s", "ep_comm_s", "pp_p2p_s", "af_expert_exposed_s", "af_comm_exposed_s", "host_s")


class _Engine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host_base_s: float = Field(ge=0)
    host_per_seq_s: float = Field(ge=0)
    overlap: bool
    gpu_memory_utilization: float = Field(gt=0, le=1)
    block_tokens: int = Field(ge=1)
    # decode attention kernel: "grouped" reads each KV head once for its query-head group (XQA, FlashInfer,
    # FlashAttention); "per-query-head" loads a KV head once per query head (masked MHA, one block per head)
    decode_attention: Literal["grouped", "per-query-head"]
    # per-query-head kernels: share of the repeated KV-head loads that miss L2 and reach HBM (1: every query head's
    # load streams from HBM; 0: the group's blocks run together and hit L2) — a global engine term fitted by
    # benchmarks/serving_accuracy.py (leave-one-source-out), 1.0 until fitted
    reload_hbm_fraction: float = Field(default=1.0, ge=0, le=1)
    # fp8 GEMMs of the engine's kernel library as a fraction of the measured fp8 MAMF (1: the measured kernels)
    fp8_gemm_scale: float = Field(default=1.0, gt=0, le=1)
    source: str


class _Band(BaseModel):
    model_config = ConfigDict(extra="forbid")
    low: float = Field(gt=0, le=1)
    high: float = Field(ge=1)
    rows: int = Field(ge=0)
    source: str


class _ServingFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    engines: dict[str, _Engine]
    reserved_bytes: float = Field(ge=0)
    reserved_source: str
    interval: _Band


@lru_cache(maxsize=1)
def serving_file() -> _ServingFile:
    return load_calibration("serving.yaml", _ServingFile)


def math_precision(serving) -> str:
    """GEMM dtype: fp8 tensor cores when activations are fp8 (W8A8 / fp8 weights), else 16-bit with weight-only
    quantized weights dequantized in the kernel (Marlin/AWQ: weight bytes shrink, math stays bf16)."""
    return "fp8" if serving.activations == "fp8" else "bf16"


@dataclass(frozen=True)
class ServingContext:
    """What every term needs of the model, the device group and the serving spec (scalars)."""

    model: object
    hw: HardwareContext
    engine: _Engine
    wb: float  # bytes per linear-layer weight
    ab: float  # bytes per GEMM input activation (fp8 when activations are fp8)
    rb: float  # bytes per residual-stream value: GEMM outputs, norms, all-reduces, hand-offs (16-bit)
    kvb_prec: str
    peak: float
    peak16: float
    bw: float  # sustained HBM bandwidth (streaming fraction)
    t_k: float
    isl: float
    is_moe: bool

    @property
    def layers(self) -> float:
        return float(self.model.layers)


def serving_context(workload, cluster, serving, engine_terms: dict | None = None) -> ServingContext:
    """``engine_terms``: values replacing fields of the engine's profile (the accuracy harness's fitted terms)."""
    from parplan.models.efficiency import efficiency_for

    group = cluster.group
    prec = math_precision(serving)
    try:
        hw = hardware_context(group, prec, efficiency_for(group.device))
    except SpecError as err:  # the serve file's precision, not a training key
        raise SpecError(err.message, key="precision.activations", allowed=err.allowed,
                        hint="the serve file's precision: block sets the math (bf16 or fp8 activations)") from None
    eng = serving_file().engines[serving.engine]
    if engine_terms:
        from pydantic import ValidationError

        try:
            eng = _Engine.model_validate({**eng.model_dump(), **engine_terms})
        except ValidationError as err:
            raise SpecError(f"bad engine terms {sorted(engine_terms)}: {err.errors()[0]['msg']}",
                            key="engine_terms") from None
    return ServingContext(model=workload.model, hw=hw, engine=eng, wb=WEIGHT_BYTES[serving.weights],
                          ab=VALUE_BYTES[serving.activations], rb=RESIDUAL_BYTES, kvb_prec=serving.kv_cache,
                          peak=hw.peak_flops_per_s, peak16=hw.peak16_flops_per_s,
                          bw=hw.memory_bandwidth_bytes_per_s * hw.kernels.memory_fraction, t_k=hw.kernel_overhead_s,
                          isl=float(serving.isl_mean), is_moe=hasattr(workload.model, "experts"))


@dataclass
class PoolShape:
    """Parallel degrees of candidate replicas (arrays broadcasting together)."""

    tp: np.ndarray
    pp: np.ndarray
    ep: np.ndarray
    dp: np.ndarray
    n_devices_span: np.ndarray  # devices the replica's collectives span (to tell intra- from cross-node)


def _gemm(c: ServingContext, M, K, N):
    """One linear layer: max(FLOPs at peak × shape efficiency, activations + weights through HBM) + launch.

    The shape efficiency never exceeds the measured maximum-achievable fraction (MAMF: the best over a brute-force
    shape search, ml-engineering compute/accelerator/README.md; kernels.gemm_efficiency caps it the same way, the
    min here keeps serving figures independent of that).  The engine's ``fp8_gemm_scale`` prices an older fp8
    kernel library (serving.yaml)."""
    M = np.maximum(M, 0.0)
    flops = 2.0 * M * K * N
    mamf = c.hw.kernels.gemm_for(c.hw.math_dtype)[0]
    eff = np.minimum(gemm_efficiency(np.maximum(M, 1.0), K, N, c.hw.kernels, c.hw.math_dtype), mamf)
    if c.hw.math_dtype == "fp8":
        eff = eff * c.engine.fp8_gemm_scale
    nbytes = M * K * c.ab + M * N * c.rb + K * N * c.wb
    return np.maximum(flops / (c.peak * eff), nbytes / c.bw) + c.t_k


def _allreduce(c: ServingContext, nbytes, ranks, span):
    bw, lat, mr = c.hw.group_busbw(nbytes, span, np.minimum(ranks, c.hw.devices_per_node), ranks, "allreduce")
    return allreduce_s(nbytes, ranks, bw, lat, mr)


def _alltoall(c: ServingContext, nbytes, ranks):
    """Dispatch or combine all-to-all of the bytes one rank holds: flat inside a scale-up domain, hierarchical
    across domains (DeepEP; collectives.hierarchical_alltoall_s)."""
    hw = c.hw
    dpn = float(hw.devices_per_node)
    ci, cx = hw.curve_intra("alltoall"), hw.curve_inter("alltoall")
    intra_bw = ci.busbw(nbytes, hw.intra_rate)
    flat = alltoall_s(nbytes, ranks, intra_bw, hw.intra_lat, ci.measured_ranks)
    if not np.any(ranks > dpn):  # every group inside one domain
        return flat
    inter_bw = cx.busbw(nbytes, hw.inter_rate) * dpn
    hier = hierarchical_alltoall_s(nbytes, ranks, dpn, intra_bw, inter_bw, hw.intra_lat, hw.inter_lat)
    return np.where(ranks > dpn, hier, flat)


def kv_loads_per_head(c: ServingContext, tp):
    """Times a decode step loads each cached KV head: 1 for a grouped kernel; for a per-query-head kernel the query
    heads a KV head serves on one device, ⌈heads/tp⌉ / ⌈kv_heads/tp⌉ (GQA; MHA and MLA: 1).  TensorRT-LLM's masked
    MHA generation kernel ran one thread block per (sequence, query head) until the XQA kernel for MQA/GQA
    (TensorRT-LLM blog 'New XQA-kernel provides 2.4x more Llama-70B throughput', nvidia.github.io/TensorRT-LLM/
    blogs/XQA-kernel.html; docs/source/advanced/gpt_attention.md 'XQA Optimization')."""
    tp = np.asarray(tp, dtype=np.float64)
    m = c.model
    if c.engine.decode_attention == "grouped" or getattr(m, "is_mla", False):
        return np.ones_like(tp)
    group = np.ceil(float(m.heads) / tp) / np.ceil(float(m.kv_heads) / tp)
    return 1.0 + c.engine.reload_hbm_fraction * (group - 1.0)


def _attention_half(c: ServingContext, s: PoolShape, x, xp, xd, kv):
    """One layer's attention projections (GEMM seconds) and attention core over the prompt (prefill) and over the
    cache (decode) on one device, for x tokens per attention rank (xp prefill, xd decode) over kv cached tokens."""
    m, tp = c.model, s.tp
    h = float(m.hidden)
    projections = getattr(m, "attention_projections", None) or ((h, float(m.q_dim + 2 * m.kv_dim), "col"),
                                                               (float(m.q_dim), h, "row"))
    g = 0.0
    for K_, N_, split in projections:
        K_, N_ = float(K_), float(N_)
        g = g + (_gemm(c, x, K_, N_ / tp) if split == "col" else _gemm(c, x, K_ / tp, N_) if split == "row"
                 else _gemm(c, x, K_, N_))
    # attention core: prefill tokens attend causally over their prompt (mean keys isl/2 over a prompt, chunked or
    # not); decode tokens read the whole cache of their sequence (Dao 2023 FlashAttention-2; Kwon et al. 2023)
    qk, vd = float(getattr(m, "attn_qk_dim", m.q_dim)), float(getattr(m, "attn_v_dim", m.q_dim))
    hd = int(m.head_dim_)
    keys_p = c.isl / 2.0
    fl_p = 2.0 * xp * keys_p * (qk + vd) / tp
    a_p = np.where(xp > 0, fl_p / (c.peak16 * attention_efficiency(max(c.isl, 1.0), hd, True, False,
                                                                   c.hw.attention)) + c.t_k, 0.0)
    ctx = kv / np.maximum(xd, 1e-9)
    fl_d = 2.0 * kv * (qk + vd) / tp
    kv_read = kv * kv_bytes_per_token_layer(m, c.kvb_prec, tp) * kv_loads_per_head(c, tp)
    eff_d = attention_efficiency(np.maximum(ctx, 1.0), hd, False, False, c.hw.attention)
    a_d = np.where(xd > 0, np.maximum(kv_read / c.bw, fl_d / (c.peak16 * eff_d)) + c.t_k, 0.0)
    return g, a_p, a_d


def _layer_dense_parts(c: ServingContext, s: PoolShape, x, xp, xd, kv, mlp_f, nmat, attn_only=False, half=None):
    """One layer's attention half (+ a dense MLP of width ``mlp_f`` unless attn_only) on one device, for x tokens
    per attention rank (xp prefill, xd decode) attending over kv cached tokens: dict of seconds.  ``half``: the
    layer's ``_attention_half`` when already priced (the dense and the MoE layers of a model share it)."""
    m, tp = c.model, s.tp
    h = float(m.hidden)
    g, a_p, a_d = half if half is not None else _attention_half(c, s, x, xp, xd, kv)
    if not attn_only and mlp_f > 0:
        g = g + _gemm(c, x, h, (nmat - 1.0) * mlp_f / tp) + _gemm(c, x, mlp_f / tp, h)
    # token-wise kernels (bytes per token): 2 norms (r h, w h), 2 residual adds (r 2h, w h), rotary on q and k,
    # the MLP activation (r (nmat−1)·f, w f per token), the new tokens' K,V written to the cache
    q, kvd = float(m.q_dim), float(m.kv_dim)
    per_tok = (2 * 2 + 2 * 3) * h * c.rb + 2 * c.rb * (q + kvd) / tp
    if not attn_only and mlp_f > 0:
        per_tok = per_tok + nmat * mlp_f / tp * c.rb
    mem = x * (per_tok + kv_bytes_per_token_layer(m, c.kvb_prec, tp)) / c.bw
    return {"gemm_s": g, "attention_prefill_s": a_p, "attention_decode_s": a_d, "memory_bound_s": mem}


def experts_s(c: ServingContext, tokens, devices, ep, local_split):
    """Routed experts of one MoE layer on one device: ``tokens`` tokens of the whole group routed top-k over E
    experts spread over ``devices`` devices (E/ep experts each, split ``local_split`` ways along f).  Grouped GEMM
    at the kernel layer's grouped efficiency; the weights of every expert that receives a token are read
    (P(expert hit) = 1 − (1 − k/E)^tokens, uniform routing); the busiest rank sets the time (imbalance, moe.yaml)."""
    m = c.model
    E, k, h = float(m.experts), float(m.top_k), float(m.hidden)
    f, nmat = float(m.moe_ffn_hidden), float(m.ffn_matrices)
    gamma = imbalance_factor(ep, int(m.experts), int(m.top_k))
    local = E / ep
    m_e = tokens * k / E * gamma  # tokens per expert on the busiest rank
    fl = 2.0 * m_e * local * nmat * h * f / local_split
    eff = np.minimum(grouped_gemm_efficiency(np.maximum(m_e, 1.0), h, nmat * f / local_split, local, c.hw.kernels,
                                             c.hw.math_dtype), c.hw.kernels.gemm_for(c.hw.math_dtype)[0])
    hit = 1.0 - np.power(1.0 - k / E, np.maximum(tokens, 0.0))
    w_read = local * hit * nmat * h * f / local_split * c.wb
    act = m_e * local * (h * (c.ab + c.rb) + nmat * f / local_split * c.rb)
    del devices
    return np.where(tokens > 0, np.maximum(fl / (c.peak * eff), (w_read + act) / c.bw) + 2 * c.t_k, 0.0)


def _add_layers(c: ServingContext, s: PoolShape, parts: dict, x, xp, xd, kv, x_all, spd_drop, fused) -> None:
    """The model's layers' parts of one iteration (``iteration_parts``), added to ``parts``."""
    m = c.model
    tp, dp, ep = (np.asarray(a, dtype=np.float64) for a in (s.tp, s.dp, s.ep))
    h, nmat = float(m.hidden), float(m.ffn_matrices)
    n_moe = float(getattr(m, "n_moe_layers", 0))
    n_dense = c.layers - n_moe
    half = _attention_half(c, s, x, xp, xd, kv)  # the same in dense and MoE layers
    # (a model of MoE layers only has no dense-layer parts: they would be added × 0, finite parts adding nothing)
    if n_dense:
        dense = _layer_dense_parts(c, s, x, xp, xd, kv, float(m.ffn_hidden), nmat, half=half)
        for k, v in dense.items():
            parts[k] = parts[k] + n_dense * v
    ar = _allreduce(c, x * h * c.rb, tp, s.n_devices_span)
    # SPD (S07): in a fraction spd_drop of the blocks the all-reduce after attention is dropped
    attn_ar = (1.0 - np.asarray(spd_drop, dtype=np.float64)) * ar
    if n_dense:
        parts["tp_comm_s"] = parts["tp_comm_s"] + n_dense * (attn_ar + ar)
    if n_moe:
        att = _layer_dense_parts(c, s, x, xp, xd, kv, 0.0, nmat, attn_only=True, half=half)
        shared_f = float(m.shared_experts) * float(m.shared_ffn_hidden_)
        g_sh = (_gemm(c, x, h, (nmat - 1.0) * shared_f / tp) + _gemm(c, x, shared_f / tp, h)) if shared_f else 0.0
        router = _gemm(c, x, h, float(m.experts))
        for k, v in att.items():
            parts[k] = parts[k] + n_moe * v
        parts["gemm_s"] = parts["gemm_s"] + n_moe * (g_sh + router)
        devices = tp * dp
        expert_t = experts_s(c, x_all, devices, ep, devices / ep)
        parts["expert_gemm_s"] = parts["expert_gemm_s"] + n_moe * expert_t
        # dispatch may travel in fp8, the combine returns 16-bit partial outputs (DeepEP README: FP8 dispatch,
        # BF16 combine)
        tok = x * float(m.top_k) * h
        dispatch = _alltoall(c, tok * c.ab, ep)
        combine = dispatch if c.rb == c.ab else _alltoall(c, tok * c.rb, ep)  # 16-bit dispatch: the same message
        a2a = np.where(ep > 1, dispatch + combine, 0.0)
        moe_ar = np.where(devices / ep > 1, ar, 0.0)  # expert-TP partial sums reduced over tp
        # MixServe (S15): the fused AR–A2A overlaps the intra-node all-reduce with the all-to-all
        both = fused & (moe_ar > 0) & (a2a > 0)
        moe_comm = np.where(both, np.maximum(moe_ar, a2a) + c.t_k, moe_ar + a2a)
        parts["tp_comm_s"] = parts["tp_comm_s"] + n_moe * (attn_ar + np.where(both, 0.0, moe_ar))
        parts["ep_comm_s"] = parts["ep_comm_s"] + n_moe * np.where(both, moe_comm, a2a)


def iteration_parts(c: ServingContext, s: PoolShape, prefill_tokens, decode_seqs, kv_tokens, *, spd_drop=0.0,
                    fused=False, prefill_seqs=None, prefill_rank_tokens=None, layers=True) -> dict[str, np.ndarray]:
    """Seconds of one iteration of one replica (aggregated or disaggregated pools), by named part.

    Attention-DP ranks (dp > 1) each run their own requests, in lock-step where MoE layers join them: the
    attention half and dense layers take the busiest rank's tokens, the routed experts every rank's.  The
    decodes and cache spread evenly, a whole sequence at least on the busiest rank; the prompt tokens too unless
    ``prefill_rank_tokens`` names the busiest rank's (a prompt alone sits on one rank: SGLang's DP attention,
    each worker's own scheduler).  ``layers=False``: the LM head, PP hand-offs and host time alone (the layers'
    parts 0) where the engine does not overlap its host time (the layers' parts would not change it)."""
    m = c.model
    tp, pp, dp = (np.asarray(a, dtype=np.float64) for a in (s.tp, s.pp, s.dp))
    Tp, Td = np.asarray(prefill_tokens, dtype=np.float64), np.asarray(decode_seqs, dtype=np.float64)
    KV = np.asarray(kv_tokens, dtype=np.float64)
    split = dp * pp  # tokens per attention rank and micro-batch
    xp, xd, kv = Tp / split, Td / split, KV / split
    x_all = (xp + xd) * dp  # the replica's tokens per micro-batch, every rank's (the routed experts)
    # a sequence decodes on one rank: the busiest holds at least one whole one (and its cache) while any decodes
    xd1 = np.maximum(xd, np.minimum(Td, 1.0) / pp)
    kv = kv * np.where(xd > 0, xd1 / np.where(xd > 0, xd, 1.0), 1.0)
    xd = xd1
    seq_split = split
    if prefill_rank_tokens is not None:  # the busiest rank's prompt tokens (never fewer than an even share)
        xp = np.maximum(np.asarray(prefill_rank_tokens, dtype=np.float64) / pp, xp)
        seq_split = pp + 0.0 * split
    x = xp + xd
    h = float(m.hidden)
    parts = {k: np.zeros(np.broadcast(tp, Tp, Td, KV).shape) for k in PARTS}
    if layers or c.engine.overlap:  # (an overlapping engine's host time hides behind all of the GPU's)
        _add_layers(c, s, parts, x, xp, xd, kv, x_all, spd_drop, fused)
    # LM head on the sampled rows (each decode sequence, the last token of each finished prompt), vocab-parallel
    rows = xd + (np.asarray(prefill_seqs, dtype=np.float64) / seq_split if prefill_seqs is not None
                 else np.where(xp > 0, np.maximum(xp / max(c.isl, 1.0), 1.0 / seq_split), 0.0))
    parts["lm_head_s"] = _gemm(c, rows, h, float(m.vocab) / tp)
    hop_bytes = x * h * c.rb
    p2p = c.hw.intra_lat + hop_bytes / c.hw.intra_rate
    parts["pp_p2p_s"] = (pp - 1.0) * p2p
    gpu = sum(parts[k] for k in PARTS if k != "host_s")
    seqs = Td + (np.asarray(prefill_seqs, dtype=np.float64) if prefill_seqs is not None
                 else np.where(Tp > 0, np.maximum(Tp / max(c.isl, 1.0), 1.0), 0.0))
    host = pp * c.engine.host_base_s + c.engine.host_per_seq_s * seqs
    parts["host_s"] = np.maximum(host - gpu, 0.0) if c.engine.overlap else host + 0.0 * gpu
    return parts


ATTN_SIDE = ("gemm_s", "attention_prefill_s", "attention_decode_s", "memory_bound_s", "tp_comm_s")


def total(parts: dict) -> np.ndarray:
    return sum(parts[k] for k in PARTS)


def kv_transfer_fn(c, serving, P, n_dev):
    """KV of one prompt from the prefill replica to a decode replica: every prefill device sends its shard at once
    (KV heads over tp, layers over pp), over NVLink when the deployment sits in one scale-up domain, else over
    the device's NIC (one message: the p2p curve; Mooncake / vLLM NIXL connector, transfer after prefill)."""
    m, hw = c.model, c.hw
    per_tok = kv_bytes_per_token_layer(m, serving.kv_cache, P.tp) * kv_layer_equivalents(
        m, serving.isl_mean) / P.pp
    intra = n_dev <= hw.devices_per_node

    def f(tokens):
        nb = np.asarray(tokens, dtype=np.float64) * per_tok
        bw = np.where(intra, hw.curve_intra("p2p").busbw(nb, hw.intra_rate), hw.curve_inter("p2p").busbw(nb, hw.inter_rate))
        return nb / bw + np.where(intra, hw.intra_lat, hw.inter_lat)
    return f
