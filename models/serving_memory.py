"""Memory of one serving device (vectorized over candidate pools): weights by precision and sharding, the KV cache
per token (MHA / GQA / MLA, paged blocks), the activation workspace of one iteration, the engine's reserve — and the
KV-cache tokens one replica holds after all of them.  SI units (bytes, tokens)."""
from __future__ import annotations

import numpy as np

# bytes per stored weight of a quantized linear layer: int4 (AWQ/GPTQ, one fp16 scale per group of 128:
# +2/128 B; Lin et al. 2024 AWQ §4), nvfp4 (E2M1 + one fp8 scale per 16: +1/16 B; NVIDIA Blackwell NVFP4 blog),
# fp8 per-channel/per-tensor scales negligible (vLLM fp8 docs); embeddings, norms and the LM head stay 16-bit
# (vLLM quantizes the Linear layers of the decoder only: docs.vllm.ai/en/latest/features/quantization/)
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5 + 2.0 / 128, "nvfp4": 0.5 + 1.0 / 16}
VALUE_BYTES = {"bf16": 2.0, "fp8": 1.0}  # activations and KV cache
LOGIT_BYTES = 4.0  # fp32 logits for sampling (vLLM Sampler upcasts logits to float32)


def kv_bytes_per_token_layer(model, kv_precision: str, tp) -> np.ndarray:
    """KV-cache bytes of one token in one full-attention layer on one device of a tp group.

    GQA/MHA: K and V of the device's KV heads, 2·⌈kv_heads/tp⌉·head_dim·bytes (heads replicate when tp > kv_heads:
    vLLM ``get_num_kv_heads``); MLA: the compressed latent and the rotary key, (kv_lora_rank + qk_rope_head_dim)·
    bytes, replicated on every TP rank (DeepSeek-V2 §2.1.3; vLLM MLA backend caches the latent per rank)."""
    b = VALUE_BYTES[kv_precision]
    tp = np.asarray(tp, dtype=np.float64)
    if getattr(model, "is_mla", False):
        return np.full_like(tp, float(model.kv_lora_rank + model.qk_rope_head_dim) * b)
    return 2.0 * np.ceil(float(model.kv_heads) / tp) * float(model.head_dim_) * b


def kv_layer_equivalents(model, ctx_mean: float) -> float:
    """Layers whose cache grows with the context: full-attention layers, plus windowed layers at the share of the
    context their window keeps (min(1, w/ctx); vLLM's hybrid allocator frees blocks beyond the window)."""
    full = float(getattr(model, "n_full_attention_layers", model.layers))
    win = float(getattr(model, "sliding_window", 0) or 0)
    return full + (model.layers - full) * (min(1.0, win / max(ctx_mean, 1.0)) if win > 0 else 0.0)


def _linear_params(model) -> dict[str, float]:
    """Linear-layer parameter counts of the whole model by sharding class (what quantization applies to)."""
    L = float(model.layers)
    attn = float(model.attention_params)
    out = {"attention": L * attn}
    if hasattr(model, "experts"):
        n_moe, n_dense = float(model.n_moe_layers), float(model.n_dense_layers)
        out["dense_mlp"] = n_dense * float(model.mlp_params)
        out["shared"] = n_moe * float(model.shared_expert_params)
        out["router"] = n_moe * float(model.router_params)
        out["experts"] = float(model.expert_layer_params_total)
    else:
        out["dense_mlp"] = L * float(model.mlp_params)
        out["shared"] = out["router"] = out["experts"] = 0.0
    return out


def weight_bytes(model, weights: str, tp, pp, attn_dp, ep, role: str, expert_tp=1) -> np.ndarray:
    """Weight bytes on one device (the heaviest pipeline stage).

    Attention, dense MLP and shared experts are tensor-parallel over tp and replicated over attention-DP ranks
    (Shoeybi et al. 2019; SGLang DP attention); the router is replicated; routed experts are spread over all
    tp·attn_dp ranks of the replica (expert parallelism with the remaining factor as expert TP: vLLM/SGLang
    ``--enable-expert-parallel``), or over ep·expert_tp devices of an af-disaggregated expert pool
    (MegaScale-Infer §3).  Embedding and LM head: vocab-parallel over tp, 16-bit, on the first / last stage."""
    tp, pp = np.asarray(tp, dtype=np.float64), np.asarray(pp, dtype=np.float64)
    dp, ep = np.asarray(attn_dp, dtype=np.float64), np.asarray(ep, dtype=np.float64)
    wb = WEIGHT_BYTES[weights]
    lin = _linear_params(model)
    if role == "expert":
        return lin["experts"] * wb / (ep * np.asarray(expert_tp, dtype=np.float64))
    dense = (lin["attention"] + lin["dense_mlp"] + lin["shared"]) * wb / tp + lin["router"] * 2.0
    experts = 0.0 if role == "attention" else lin["experts"] * wb / (tp * dp)
    norms = float(model.layers) * 2.0 * float(model.norm_params_per_norm) * 2.0
    per_stage = (dense + experts + norms) / pp
    emb, head = float(model.embedding_params) * 2.0 / tp, float(model.output_params) * 2.0 / tp
    return per_stage + np.where(pp > 1, np.maximum(emb, head), emb + head)


def activation_bytes(model, act: str, tokens, max_seqs, tp) -> np.ndarray:
    """Peak workspace of one iteration of ``tokens`` tokens on one device: the residual stream and norms (4·h),
    the fused QKV output and the widest MLP intermediate ((nmat)·f/tp; MoE: top_k routed copies of the expert
    intermediate), plus fp32 logits of the sampled rows (vLLM profiles exactly this peak with a dummy batch of
    max_num_batched_tokens: docs.vllm.ai, 'gpu_memory_utilization')."""
    e = VALUE_BYTES[act]
    tp = np.asarray(tp, dtype=np.float64)
    h, nmat = float(model.hidden), float(model.ffn_matrices)
    width = 4.0 * h + (float(model.q_dim) + 2.0 * float(model.kv_dim)) / tp + nmat * float(model.ffn_hidden) / tp
    if hasattr(model, "experts"):
        width = np.maximum(width, 4.0 * h + float(model.top_k) * (nmat * float(model.moe_ffn_hidden) + 2 * h) / tp)
    logits = np.asarray(max_seqs, dtype=np.float64) * float(model.vocab) / tp * LOGIT_BYTES
    return np.asarray(tokens, dtype=np.float64) * width * e + logits


def kv_capacity_tokens(capacity_bytes: float, weights, activations, reserved, kv_per_token_device, block_tokens: int,
                       attn_dp) -> np.ndarray:
    """KV tokens one replica holds: the free bytes of a device over its KV bytes per token, rounded down to whole
    paged blocks (vLLM PagedAttention, Kwon et al. 2023), times the attention-DP ranks (each holds its own
    sequences); 0 when nothing is free."""
    free = capacity_bytes - np.asarray(weights) - np.asarray(activations) - np.asarray(reserved)
    per_rank = np.floor(np.maximum(free, 0.0) / np.maximum(kv_per_token_device, 1e-30) / block_tokens) * block_tokens
    return per_rank * np.asarray(attn_dp, dtype=np.float64)


MEMORY_PARTS = ("weights_bytes", "kv_cache_bytes", "activations_bytes", "reserved_bytes")


def pool_memory(c, s, serving, P, cap):
    """(weights, KV-cache, activation, reserved bytes per device, KV tokens per replica, KV bytes per token per
    device) of the pools ``P`` (arrays over candidates)."""
    from parplan.models.serving_terms import serving_file as _serving_file

    m, eng = c.model, c.engine
    I99 = serving.isl.quantile(0.99)
    ctx = serving.isl_mean + serving.osl_mean / 2.0
    w = weight_bytes(m, serving.weights, P.tp, P.pp, P.dp, P.ep, P.role, expert_tp=P.tp)
    reserved = np.full_like(P.tp, (1.0 - eng.gpu_memory_utilization) * cap + _serving_file().reserved_bytes)
    if P.role == "expert":
        z = np.zeros_like(P.tp)
        return w, z, z, reserved, z, z
    tokens = np.where(P.C > 0, P.C, np.where(P.role == "decode", P.B, np.maximum(I99, P.B)))
    act = activation_bytes(m, serving.activations, tokens / P.dp, P.B / P.dp, P.tp)
    kvpt = kv_bytes_per_token_layer(m, serving.kv_cache, P.tp) * kv_layer_equivalents(m, ctx) / P.pp
    K = kv_capacity_tokens(cap, w, act, reserved, kvpt, eng.block_tokens, P.dp)
    return w, K / P.dp * kvpt, act, reserved, K, kvpt
