"""The af-disaggregated deployment's iteration (MegaScale-Infer, ``../shared/SEEDS.md`` S09; vectorized over
deployments): an attention replica's batch split into micro-batches that ping-pong between the attention pool and a
separate expert pool through every MoE layer — the attention side, the expert side and the M2N exchange of one
micro-batch (``af_sides``), the iteration they make (``af_iteration_parts``) and the expert pool's busy time.  Built
on the aggregated iteration's parts (``serving_terms.iteration_parts``); SI units."""
from __future__ import annotations

import numpy as np

from parplan.models.serving_terms import ATTN_SIDE, PARTS, PoolShape, ServingContext, experts_s, iteration_parts


def af_sides(c: ServingContext, s: PoolShape, e_ep, e_tp, attn_per_expert, micro_batches, prefill_tokens,
             decode_seqs, kv_tokens, *, fused=False, cross_node=True):
    """Per MoE layer of an af-disaggregated deployment (MegaScale-Infer, S09), for ONE micro-batch of an attention
    replica's batch (prefill_tokens, decode_seqs, kv_tokens split m ways): the attention side Ta (its weights are
    read once per micro-batch), the expert side Te and the one-way M2N exchange Tc; with the micro-batch's parts."""
    m = c.model
    mb = np.asarray(micro_batches, dtype=np.float64)
    Tp, Td = np.asarray(prefill_tokens, dtype=np.float64), np.asarray(decode_seqs, dtype=np.float64)
    KV = np.asarray(kv_tokens, dtype=np.float64)
    micro = iteration_parts(c, s, Tp / mb, Td / mb, KV / mb, fused=fused)
    Ta = sum(micro[k] for k in ATTN_SIDE) / max(c.layers, 1.0)
    tokens_e = (Tp + Td) * np.asarray(attn_per_expert, dtype=np.float64) / mb  # per expert replica, micro-batch
    e_ep, e_tp = np.asarray(e_ep, dtype=np.float64), np.asarray(e_tp, dtype=np.float64)
    Te = experts_s(c, tokens_e, e_ep * e_tp, e_ep, e_tp)
    Tc = m2n_s(c, s, e_ep, e_tp, attn_per_expert, (Tp + Td) / mb, cross_node)
    del m
    return Ta, Te, Tc, micro


def m2n_s(c: ServingContext, s: PoolShape, e_ep, e_tp, attn_per_expert, tokens, cross_node):
    """One-way M2N exchange of one MoE layer for a micro-batch of ``tokens`` tokens of one attention replica: each
    attention rank sends its tokens' top-k copies to the expert devices (and receives them back the same way); the
    expert side receives the copies of attn_per_expert replicas (one NIC per device; S09)."""
    m, hw = c.model, c.hw
    tp, dp = np.asarray(s.tp, dtype=np.float64), np.asarray(s.dp, dtype=np.float64)
    tokens = np.asarray(tokens, dtype=np.float64)
    rate = np.where(cross_node, hw.inter_rate, hw.intra_rate)
    lat = np.where(cross_node, hw.inter_lat, hw.intra_lat)
    row = float(m.top_k) * float(m.hidden) * c.ab
    send = tokens / (dp * tp) * row
    recv = tokens * np.asarray(attn_per_expert, dtype=np.float64) * row / (
        np.asarray(e_ep, dtype=np.float64) * np.asarray(e_tp, dtype=np.float64))
    return np.maximum(send, recv) / rate + lat


def af_iteration_parts(c: ServingContext, s: PoolShape, e_ep, e_tp, attn_per_expert, micro_batches,
                       prefill_tokens, decode_seqs, kv_tokens, *, fused=False, cross_node=True) -> dict:
    """One iteration of an attention replica of an af-disaggregated deployment (MegaScale-Infer, S09): per MoE
    layer the attention side Ta, the expert side Te and the exchange Tc of one micro-batch (``af_sides``); the m
    micro-batches ping-pong, a layer taking max(m·max(Ta, Te, Tc), Ta + Te + 2·Tc), plus one round trip
    Ta + Te + 2·Tc of fill and drain per iteration (seed S09 (b), derived; executor/serving.py ``ping_pong_s``
    composes the same from ``PoolCost.attention_s``, ``m2n_s`` and ``layers``).  The LM head, host and PP parts
    run once per iteration for the whole batch."""
    n_moe = float(getattr(c.model, "n_moe_layers", 0))
    mb = np.asarray(micro_batches, dtype=np.float64)
    Ta, Te, Tc, micro = af_sides(c, s, e_ep, e_tp, attn_per_expert, mb, prefill_tokens, decode_seqs, kv_tokens,
                                 fused=fused, cross_node=cross_node)
    # the whole batch's LM head, host and PP parts (its layers are the ping-pong's: priced only where the engine's
    # host time hides behind them)
    whole = iteration_parts(c, s, prefill_tokens, decode_seqs, kv_tokens, fused=fused, layers=False)
    parts = {k: whole[k] * 1.0 for k in PARTS}
    for k in ATTN_SIDE:  # every micro-batch runs the attention side with its own weight reads
        parts[k] = mb * micro[k]
    trip = Ta + Te + 2.0 * Tc
    layer = np.maximum(mb * np.maximum(np.maximum(Ta, Te), Tc), trip)
    base = mb * Ta
    with_e = np.maximum(base, mb * Te)
    parts["af_expert_exposed_s"] = n_moe * (with_e - base)
    parts["af_comm_exposed_s"] = n_moe * (layer - with_e) + trip
    parts["expert_gemm_s"] = parts["expert_gemm_s"] * 0.0
    parts["ep_comm_s"] = parts["ep_comm_s"] * 0.0
    return parts


def expert_busy_s(c: ServingContext, e_ep, e_tp, tokens_per_micro_batch, micro_batches) -> np.ndarray:
    """Busy time of one expert replica per iteration: the routed experts of every MoE layer for every micro-batch."""
    n_moe = float(getattr(c.model, "n_moe_layers", 0))
    mb = np.asarray(micro_batches, dtype=np.float64)
    return n_moe * mb * experts_s(c, np.asarray(tokens_per_micro_batch, dtype=np.float64), None,
                                 np.asarray(e_ep, dtype=np.float64), np.asarray(e_tp, dtype=np.float64))
