"""One optimizer step assembled from per-layer terms (vectorized over plans): pipeline stages (uneven splits,
embedding and loss as layers), p2p, the pipeline makespan, data-parallel gradient / parameter traffic under
ZeRO/FSDP/HSDP with the framework's overlaps, the optimizer step, FLOPs, memory and the named breakdown.

Families hand in a ``LayerMix`` (``models/layer_mix.py``): the kinds of layers the model has (a dense layer; an MoE
layer), their per-layer terms, how many of each every stage holds, and their parameters by synchronization class
(parameters reduced over dp·cp, expert parameters over the expert-data-parallel group).  With one kind this is
exactly the dense model (a test pins its numbers).
"""
from __future__ import annotations

import numpy as np

from parplan.models.dp_sync import DpGroup, dp_sync, with_experts
from parplan.models.layer_mix import LayerMix, stage_layers
from parplan.models.layer_terms import StepContext
from parplan.models.primitives.pipeline import one_f_one_b_makespan
from parplan.models.primitives.uncertainty import interval_factors
from parplan.models.training_memory import StageShape, memory
from parplan.models.port_terms import (PortStage, coincident_shares, dp_slot_work, fwd_hidden_a2a, p2p_shares,
                                       pair_bucket_delays, port_contention, port_floor, reduction_beside_a2a,
                                       rs_beside_a2a)
from parplan.models import rtp_terms
from parplan.models.flops_terms import step_flops
from parplan.models.optimizer_terms import optimizer_step_s, updated_params
from parplan.models.zero1_terms import gather_exposure, reduce_exposure
from parplan.models.zero2_terms import Zero2Stage, zero2_terms
from parplan.models.zero3_terms import Zero3Stage, zero3_terms

# Passes over the fp32 logits made by the vocab-parallel cross entropy (max, exp-sum, loss, grad): bytes per
# logit element, forward + backward (read bf16 2 B, write fp32 4 B, 2× read/write fp32 in softmax+grad).
CROSS_ENTROPY_BYTES_PER_LOGIT = 22.0

# Names of the time parts (seconds per step) every family reports; a family may add its own after them.
TIME_PARTS = (
    "compute_gemm_s", "compute_attention_s", "compute_memory_bound_s", "recompute_s", "tp_comm_exposed_s",
    "cp_comm_exposed_s", "pp_p2p_s", "pipeline_bubble_s", "dp_comm_exposed_s", "optimizer_s",
    "framework_overhead_s", "overlap_interference_s",
)


def assemble(model, job, c: StepContext, mix: LayerMix) -> dict[str, np.ndarray]:
    """Price one optimizer step for every plan from its layers' terms; named arrays (s, bytes, FLOP)."""
    hw, P = c.hw, c.P
    fw = hw.framework
    f64 = np.float64
    dp, tp, pp, cp, v, m, T, Tsp, e = c.dp, c.tp, c.pp, c.cp, c.v, c.m, c.T, c.Tsp, c.e
    zero, rc = P.zero, P.recompute
    L, h, V = float(model.layers), float(model.hidden), float(model.vocab)
    s, B = c.s, c.B
    bw_mem = c.bw_mem
    K = mix.kinds
    one_kind = len(K) == 1

    def counts(n, where):
        """Layers of each kind on a stage holding n layers."""
        if one_kind:
            return [n]
        return [count(i, n, where) for i in range(len(K))]

    def over(ns, fn):
        """Σ over kinds of n_kind · fn(kind)."""
        tot = None
        for n_i, kd in zip(ns, K):
            x = n_i * fn(kd)
            tot = x if tot is None else tot + x
        return tot

    rot = rtp_terms.rotate_layers(model, c, K[0]) if one_kind else None  # RTP: GEMMs on the shards (``rtp_terms``)
    for kd in K:
        kd.rc = kd.terms.recompute(rc)

    # --- stages --------------------------------------------------------------------------------------------------
    n_first, n_last, n_mid_max, n_mid_total = stage_layers(L, pp, P)
    count = None if one_kind else mix.counter(n_first, n_last)
    c_first, c_last, c_mid = counts(n_first, "first"), counts(n_last, "last"), counts(n_mid_max, "mid")
    c_midt = counts(n_mid_total, "mid_total")
    emb_fwd = 2.0 * e * Tsp * h / bw_mem  # embedding gather forward, scatter-add backward (memory-bound on T·h)
    emb_bwd = (e + 8.0) * Tsp * h / bw_mem
    # output layer (last stage): logits GEMM T×h×V/t, its 2 backward GEMMs, vocab-parallel cross entropy
    # (16-bit unless the framework's fp8 recipe covers the output layer: ``fp8.output_layer_fp8``)
    g_logit, g_logit_d, g_logit_w = c.fwd_bwd(T, h, V / tp, sixteen=not getattr(fw, "fp8_output_layer", False))
    ce = CROSS_ENTROPY_BYTES_PER_LOGIT * T * V / tp / bw_mem
    out_fwd = g_logit + 0.4 * ce
    out_bwd = g_logit_d + g_logit_w + 0.6 * ce

    # PP p2p per micro-batch per boundary: activations b·(s/c)·h·e, split over TP (scatter-gather optimization)
    p2p_bytes = T * h * e / tp
    pp_bw, pp_lat, _ = hw.group_busbw(p2p_bytes, tp * cp * pp, 1.0, 2.0, "p2p")
    p2p = np.where(P.pp > 1, p2p_bytes / pp_bw + pp_lat, 0.0)
    p2p_stage = 2.0 * v * p2p  # each micro-batch enters and leaves each device v times, forward and backward

    heads = mix.output_heads

    def stage(ns, first, last):
        f_ = over(ns, lambda k: k.terms.fwd) + (emb_fwd if first else 0.0) + (heads * out_fwd if last else 0.0)
        b_ = over(ns, lambda k: k.terms.bwd + k.rc) + (emb_bwd if first else 0.0) + (heads * out_bwd if last else 0.0)
        return f_, b_

    single = pp == 1
    f_first, b_first = stage(c_first, True, False)
    f_first = f_first + np.where(single, heads * out_fwd, 0.0)
    b_first = b_first + np.where(single, heads * out_bwd, 0.0)
    f_last, b_last = stage(c_last, False, True)
    f_mid, b_mid = stage(c_mid, False, False)

    # --- parameters per device (first and last stage), Megatron sharding ---------------------------------------
    emb_p = float(model.embedding_params)
    out_p = float(model.vocab * model.hidden + model.norm_params_per_norm)  # pp>1: last stage holds the projection
    out_own = float(model.output_params)
    params_first = (over(c_first, lambda k: k.params_tp) + emb_p + np.where(single, out_own, 0.0)) / tp
    params_last = np.where(single, params_first, (over(c_last, lambda k: k.params_tp) + out_p) / tp)
    params_mid = over(c_mid, lambda k: k.params_tp) / tp
    x_first = over(c_first, lambda k: k.expert_params_dev)  # expert parameters (sharded by EP / ETP already)
    x_last = np.where(single, x_first, over(c_last, lambda k: k.expert_params_dev))
    x_mid = over(c_mid, lambda k: k.expert_params_dev)
    has_experts = not one_kind and any(np.any(np.asarray(k.expert_params_dev) > 0) for k in K)

    # --- data-parallel gradient / parameter traffic (grad-sharing group = dp × cp; ZeRO shard group S) -----------
    dpn = float(hw.devices_per_node)
    zdeg = dp * cp
    S = np.where(P.shard > 0, P.shard.astype(f64), zdeg)  # ZeRO shard group (hybrid sharding: S < dp·cp)
    R = zdeg / S  # replica groups that all-reduce the shards
    per_node = np.where(tp * cp >= dpn, np.maximum(np.floor(dpn / tp), 1.0),
                        np.where(tp * cp * pp < dpn, np.floor(dpn / (tp * pp)), cp))
    g_red = np.where(zero >= 2, e, 4.0) if fw.grad_reduce_dtype == "fp32" else np.full_like(dp, e)
    w_b = 1.0 if (fw.fp8_param_gather and c.in_b <= 1.05) else e
    n_layers_max = np.maximum(np.maximum(n_first, n_last), n_mid_max)
    P_layer = float(K[0].params_tp)

    dg = DpGroup(hw, zero, tp, cp, pp, g_red, w_b)
    rs_f, ag_f, ar_f, rep_f = dp_sync(dg, params_first, P_layer / tp, zdeg, S, R, per_node)
    rs_l, ag_l, ar_l, rep_l = dp_sync(dg, params_last, P_layer / tp, zdeg, S, R, per_node)
    rs_m, ag_m, _, _ = dp_sync(dg, params_mid, P_layer / tp, zdeg, S, R, per_node)  # a middle stage (ZeRO-3 drain)
    rs_fx = rs_lx = 0.0  # the experts' share of the reduce-scatters (their buckets are layers' buckets)
    if has_experts:  # expert gradients: the expert-data-parallel group (``dp_sync.with_experts``)
        (rs_f, ag_f, ar_f, rs_fx), (rs_l, ag_l, ar_l, rs_lx), (rs_m, ag_m, _, _) = with_experts(
            dg, ((rs_f, ag_f, ar_f), (rs_l, ag_l, ar_l), (rs_m, ag_m, 0.0)), (x_first, x_last, x_mid), K, mix.edp,
            mix.edp_per_node)
    # the layers' share of a stage's gradients (the rest: the first's embedding, the last's output projection)
    lay_f = np.where(params_first > 0, over(c_first, lambda k: k.params_tp) / tp / np.maximum(params_first, 1.0), 1.0)
    lay_l = np.where(params_last > 0, over(c_last, lambda k: k.params_tp) / tp / np.maximum(params_last, 1.0), 1.0)
    dp_span = np.where(P.dp > 1, (P.dp - 1) * tp * cp * pp + tp * cp, tp * cp)  # ranks the DP group spans
    bw_f = bw_l = bw_m = bx_f = bx_l = bx_m = bx_ms = bx_mt = bx_once = 0.0
    ar1_f, ar1_l, rs1_f, rs1_l = ar_f, ar_l, rs_f, rs_l  # the once-per-step reductions as they run (MoE: beside
    if not one_kind:  # the all-to-all where the DP and EP groups leave by the same port, ``port_terms``)
        ep_span = np.asarray(mix.ep_ranks, dtype=f64)
        same_port = ((dp_span <= dpn) == (ep_span <= dpn)) & (ep_span > 1)
        ar1_f, ar1_l, rs1_f, rs1_l = (reduction_beside_a2a(r_, cs, over, same_port) for r_, cs in ((ar_f, c_first),
                                    (ar_l, c_last), (rs_f, c_first), (rs_l, c_last)))
        # the gradient buckets beside the pair's opening transfer: the backward windows, per slot, once per step
        mid_, less_ = (rs_m, 0.0, 1.0, n_mid_max), counts(np.maximum(n_mid_max - 1, 0), "mid")
        (bw_f, bw_l, bw_m), (bx_f, bx_l, bx_m, bx_ms, bx_mt), bx_once = pair_bucket_delays([(
            c_first, rs_f, rs_fx, lay_f, n_first), (c_last, rs_l, rs_lx, lay_l, n_last), (c_mid, *mid_), (less_, *mid_),
            (c_midt, *mid_)], over, same_port & np.asarray(mix.pair_on, dtype=bool) & (P.dp * P.cp > 1), zero, single,
            np.where(zero == 0, ar_f / np.maximum(rs_f, 1e-300), 1.0))
    # zero 0: all-reduce after the last backward, overlapped with that micro-batch's backward (bucketed DDP);
    # zero 1: reduce-scatter (overlapped the same way) + parameter all-gather after the step (overlapped with the
    # next step's first forward); zero 2: reduce-scatter every micro-batch behind its backward, all-gather after
    # the step; zero 3: all-gather parameters forward (and backward when re-sharded) and reduce-scatter every
    # micro-batch (FSDP).  A framework without the overlap exposes the whole collective.
    og = 1.0 if fw.dp_grad_reduce else 0.0
    op_ = 1.0 if fw.dp_param_gather else 0.0
    of_ = 1.0 if fw.fsdp_prefetch else 0.0
    # the per-micro-batch windows: the backward, and (MoE) the forward's exposed all-to-all wait of the same pair
    # (the overlap books the pair's excess there: the window then never shrinks faster than the slot)
    if one_kind:
        wb_f, wb_l, wb_m, wf_f, wf_l = b_first, b_last, b_mid, f_first, f_last
    else:  # the pair's excess moves from the forward window to the backward one (the windows partition the slot)
        px_f, px_l = over(c_first, lambda k: k.terms.ep_fwd_pair), over(c_last, lambda k: k.terms.ep_fwd_pair)
        wb_f, wb_l = b_first + px_f + bw_f, b_last + px_l + bw_l
        wb_m = b_mid + over(c_mid, lambda k: k.terms.ep_fwd_pair) + bw_m
        wf_f, wf_l = f_first - px_f, f_last - px_l
    slack_l = np.maximum(pp - 1, 0) * wb_m / v  # the last stage's last backward ends that much before stage 0's
    win_f_b, win_l_b = og * wb_f, og * (wb_l + slack_l)
    x0 = lambda c_, w: np.maximum(0.0, c_ - w)  # noqa: E731
    # zero 0/1: each chunk's buckets after its own last backward, behind the cool-down's later backwards
    # (``zero1_terms.reduce_exposure``; experts' gradients belong to the layers' chunks)
    warm = np.minimum(pp, m)
    lr_f = (lay_f * params_first + x_first) / np.maximum(params_first + x_first, 1.0)
    lr_l = (lay_l * params_last + x_last) / np.maximum(params_last + x_last, 1.0)
    red_x = lambda c_f, c_l: np.maximum(  # noqa: E731
        reduce_exposure(c_f, lr_f, wb_f, 0.0, v, warm, og, False),
        reduce_exposure(c_l, np.where(single, lr_f, lr_l), wb_l, slack_l, v, warm, og, True))
    dp0 = red_x(ar1_f, ar1_l)
    # pipeline makespan, interleaved 1F1B (Narayanan et al. 2021 §2.2, bubble (p−1)/(v·m) when balanced),
    # generalized to unequal stages: m·max + (Σ − max)/v; one chunk per device: the 1F1B makespan below
    slot_first = f_first + b_first + p2p_stage + bx_f
    slot_last = np.where(single, slot_first, f_last + b_last + p2p_stage + bx_l)
    slot_mid = np.where(pp > 2, f_mid + b_mid + p2p_stage + bx_m, 0.0)
    # the sends and the per-micro-batch DP collectives (ZeRO-2 reduce-scatters, ZeRO-3 gathers) on one NIC
    # (``port_terms.p2p_shares``): every boundary crosses nodes where a stage spans them (tp·cp ≥ node)
    nic_both = (pp > 1) & (tp * cp >= dpn) & (dp_span > dpn) & (P.dp * P.cp > 1)
    # ZeRO-3's backward gathers (re-sharded after the forward)
    ag_bf, ag_bl, ag_bm = (np.where(P.reshard, a_, 0.0) for a_ in (ag_f, ag_l, ag_m))
    if rot is not None:  # RTP: the shard rotations replace ZeRO-3's gathers and reduce-scatters (``rtp_terms``)
        rots, (ag_f, ag_bf, rs_f), (ag_l, ag_bl, rs_l), (ag_m, ag_bm, rs_m) = rtp_terms.stage_collectives(
            hw, rot, ((params_first, n_first, ag_f, ag_bf, rs_f), (params_last, n_last, ag_l, ag_bl, rs_l),
                      (params_mid, n_mid_max, ag_m, ag_bm, rs_m)), w_b, g_red, tp * cp * pp * S, rc)
    dp_slot = [dp_slot_work(zero, r_, a_, b_) for r_, a_, b_ in ((rs_f, ag_f, ag_bf), (rs_l, ag_l, ag_bl),
                                                                   (rs_m, ag_m, ag_bm))]
    sh_f, sh_l, sh_m = coincident_shares(p2p_shares(p2p_stage, (slot_first, slot_last, slot_mid), dp_slot, nic_both),
                                         p2p, v, zero if rot is None else np.where(rot.on, 0, zero), nic_both,
                                         ((ag_f, ag_bf, rs_f, n_first), (ag_l, ag_bl, rs_l, n_last),
                                          (ag_m, ag_bm, rs_m, n_mid_max)))
    slot_first, slot_last = slot_first + sh_f, slot_last + np.where(single, 0.0, sh_l)
    slot_mid = np.where(pp > 2, slot_mid + sh_m, 0.0)
    sum_slots = np.where(single, slot_first,
                         slot_first + slot_last + over(c_midt, lambda k: k.terms.fwd + k.terms.bwd + k.rc) + bx_mt
                         + np.maximum(pp - 2, 0) * (p2p_stage + sh_m))
    t_max = np.maximum(np.maximum(slot_first, slot_last), slot_mid)
    t_pipe = m * t_max + (sum_slots - t_max) / v
    # v = 1: 1F1B over unequal stages in order: first, middles with the split's extra layer, other middles, last
    n_mids = np.maximum(pp - 2, 0)
    n_big = np.where(n_mid_max * n_mids > n_mid_total, n_mid_total - n_mids * (n_mid_max - 1), n_mids)
    f_ms, b_ms = stage(counts(np.maximum(n_mid_max - 1, 0), "mid"), False, False)
    half = p2p_stage / 2.0
    t_pipe = np.where(v > 1, t_pipe, one_f_one_b_makespan(
        [(slot_first, f_first + half, 1.0), (slot_mid, f_mid + half, n_big), (f_ms + b_ms + p2p_stage + sh_m + bx_ms,
         f_ms + half, n_mids - n_big), (slot_last, f_last + half, np.where(single, 0.0, 1.0))], m))
    bubble = t_pipe - m * t_max
    # ZeRO-1/2 parameter all-gather of the next step, chunk by chunk in forward order (``zero1_terms``)
    gf_, gl_ = ag_f, ag_l
    if not one_kind:  # (MoE) the gather shares its port with the forwards' overlapped all-to-all (``port_terms``)
        gf_ = ag_f + np.where(same_port & (ag_f > 0), over(c_first, fwd_hidden_a2a), 0.0)
        gl_ = ag_l + np.where(same_port & (ag_l > 0), over(c_last, fwd_hidden_a2a), 0.0)
    gath = np.maximum(gather_exposure(gf_, f_first, v, warm, op_), gather_exposure(gl_, f_last, v, warm, op_))
    rep = np.maximum(x0(rep_f, win_f_b), x0(rep_l, win_l_b))
    dp1 = red_x(rs1_f, rs1_l) + gath + rep
    # ZeRO-2: the layers' buckets go behind their own backward; the embedding's gradient (first stage) comes last,
    # its reduce-scatter behind the op that follows — exposed once, at the end of the step; the output projection
    # (last stage) is the backward's first op: its bucket is in every micro-batch's stream, ahead of the layers'
    tail_f, head_l = (rs_f - rs_fx) * (1 - lay_f), (rs_l - rs_lx) * (1 - lay_l)
    # ZeRO-2 (``zero2_terms``): the stretched pipeline of the two-bucket backward, and the port chain; (MoE) where
    # the all-to-all and the DP collectives leave by the same port (``port_c`` below), the reduce-scatters run
    # beside the all-to-all volume (``port_terms.rs_beside_a2a``)
    share = np.zeros_like(dp, dtype=bool)
    rs2 = [rs_f, rs_l, rs_m]
    if not one_kind:
        share = same_port & (P.dp * P.cp > 1) & ~np.asarray(mix.pair_on, dtype=bool)
        rs2 = rs_beside_a2a(rs2, (0.0, head_l, 0.0), (c_first, c_last, c_mid), over, share, rc)
    wf_m = f_mid if one_kind else f_mid - over(c_mid, lambda k: k.terms.ep_fwd_pair)
    grow2, steady2, chain2 = zero2_terms(
        Zero2Stage(slot_first, rs_f, rs2[0] - tail_f, wb_f, wf_f, ag_f, n_first),
        Zero2Stage(slot_last, rs_l, rs2[1], wb_l, wf_l, ag_l, n_last),
        Zero2Stage(slot_mid, rs_m, rs2[2], wb_m, wf_m, ag_m, n_mid_max),
        og=og, v=v, m=m, pp=pp, warm=warm, sum_slots=sum_slots, t_pipe=t_pipe, n_mid_total=n_mid_total,
        n_mid_max=n_mid_max)
    dp2 = grow2 + tail_f * np.where(og > 0, 1.0, 0.0) + gath + rep
    chain2 = chain2 + rep
    # zero 3 with a pipeline: the per-micro-batch exposure and the drain (``zero3_terms``; RTP: ``rtp_terms``)
    fb = (K[0].terms.fwd, K[0].terms.bwd + K[0].rc) if one_kind else None  # one layer's work (``zero3_terms``)
    dp3, steady3 = zero3_terms(
        Zero3Stage(ag_f, ag_bf, rs_f, wf_f, wb_f, f_first + b_first + bx_f, rot and rots[0], n_first, slot_first,
                   lay_f, fb, (emb_fwd, emb_bwd)),
        Zero3Stage(ag_l, ag_bl, rs_l, wf_l, wb_l, f_last + b_last + bx_l, rot and rots[1], n_last, slot_last,
                   lay_l, fb, (heads * out_fwd, heads * out_bwd)),
        Zero3Stage(ag_m, ag_bm, rs_m, wf_m, wb_m, f_mid + b_mid + bx_m, rot and rots[2], n_mid_max, slot_mid, 1.0, fb),
        of_=of_, pp=pp, m=m, v=v, n_mid_total=n_mid_total, n_mid_max=n_mid_max, rep=rep, t_max=t_max, bubble=bubble,
        pair_on=None if one_kind else mix.pair_on, rotate=None if rot is None else rot.on, p2p=p2p, reshard=P.reshard)
    dp_exposed = np.where(P.dp * P.cp > 1, np.select([zero == 0, zero == 1, zero == 2], [dp0, dp1, dp2], dp3), 0.0)
    dp_total = np.select([zero == 0, zero == 1, zero == 2],
                         [np.maximum(ar_f, ar_l), np.maximum(rs_f + ag_f, rs_l + ag_l) + rep,
                          m * np.maximum(rs_f, rs_l) + np.maximum(ag_f, ag_l) + rep],
                         m * np.maximum(ag_f + ag_bf + rs_f, ag_l + ag_bl + rs_l) + rep)
    dp_total = np.where(P.dp * P.cp > 1, dp_total, 0.0)

    # optimizer step: memory-bound over the parameters this device updates (sharded by ZeRO ≥ 1)
    optimizer = optimizer_step_s(updated_params((params_first, params_last, params_mid), zero, S,
                                                (x_first, x_last, x_mid) if has_experts else None, mix.edp),
                                 job.optimizer, bw_mem)

    # one port, one budget (MoE): where the expert all-to-all and the per-micro-batch data-parallel collectives
    # (ZeRO-2 reduce-scatters, ZeRO-3 gathers) share a device's NIC, a steady-state slot is at least the NIC's work
    # in it; what the overlap formulas hid beyond that budget is contention, charged to the all-to-all part
    port_c = 0.0
    if not one_kind:  # one port, one budget; one port, two flows (``port_terms``)
        steady_dp = np.select([zero == 2, zero == 3], [steady2, steady3], 0.0)
        heads_s = heads * (out_fwd + out_bwd)  # the output heads' compute, with the port idle (``port_terms``)
        port_c = port_contention(
            [PortStage(c_first, slot_first, rs_f, ag_f, ag_bf, np.where(single, heads_s, 0.0)),
             PortStage(c_last, slot_last, rs_l, ag_l, ag_bl, heads_s),
             PortStage(c_mid, slot_mid, rs_m, ag_m, ag_bm)],
            over=over, zero=zero, rc=rc, pp=pp, m=m, t_max=t_max, steady_dp=steady_dp, gath=gath, share=share,
            dp_on=P.dp * P.cp > 1, dp_span=dp_span, ep_span=ep_span, dpn=dpn) + bx_once
    # ZeRO-2 bound by its port: what the chain of all-gather and reduce-scatters needs beyond the step so far
    dp_exposed = dp_exposed + np.where((zero == 2) & (P.dp * P.cp > 1), x0(chain2, t_pipe + dp_exposed + port_c), 0.0)
    # the step holds its busiest port's work, however much the overlap formulas above hid (``port_terms.port_floor``)
    floor = port_floor(P, tp, cp, pp, v, m, dpn, dp_span, p2p_bytes / pp_bw, dp_total,
                       edp=mix.edp if has_experts else None, edp_per_node=mix.edp_per_node)
    dp_exposed = dp_exposed + x0(floor, t_pipe + dp_exposed + port_c)
    intf = K[0].terms.intf
    dp_intf = intf * np.maximum(dp_total - dp_exposed, 0.0)  # the hidden part slows the compute it overlaps
    # fp8/MX weights: each layer weight is quantized (+ its transpose for the dgrad GEMM) once per step — TE keeps
    # them across micro-batches (``is_first_microbatch``, Megatron-Core TE layers) — memory-bound, cast bytes + 1 B
    cast_w = (hw.cast_bytes_per_element + 1.0) if hw.cast_bytes_per_element > 0 else 0.0
    wcast = cast_w * np.maximum(np.maximum(over(c_first, lambda k: k.params_tp), over(c_last, lambda k: k.params_tp)),
                                over(c_mid, lambda k: k.params_tp)) / tp / bw_mem
    step = t_pipe + dp_exposed + optimizer + dp_intf + port_c + wcast

    # --- time breakdown of the critical stage (sums to the step time) -----------------------------------------
    crit = np.where(slot_first >= np.maximum(slot_last, slot_mid), 0, np.where(slot_last >= slot_mid, 2, 1))
    c_crit = [np.where(crit == 0, a, np.where(crit == 2, b_, c_)) for a, b_, c_ in zip(c_first, c_last, c_mid)]
    has_out = np.where(crit == 2, 1.0, np.where(single, 1.0, 0.0))
    has_emb = np.where(crit == 0, 1.0, np.where(single, 1.0, 0.0))
    t_ = lambda fn: m * over(c_crit, fn)  # noqa: E731
    gemm_c = t_(lambda k: k.terms.gemm_fwd + k.terms.gemm_bwd) + m * has_out * heads * (g_logit + g_logit_d + g_logit_w)
    attn_c = t_(lambda k: k.terms.attn_fwd + k.terms.attn_bwd)
    memb_c = t_(lambda k: k.terms.mem_fwd + k.terms.mem_bwd) + m * (has_emb * (emb_fwd + emb_bwd) + has_out * heads * ce)
    rc_c = t_(lambda k: k.rc)
    tp_c = t_(lambda k: k.terms.tp_fwd + k.terms.tp_bwd)
    cp_c = t_(lambda k: k.terms.cp_fwd + k.terms.cp_bwd)
    ep_c = t_(lambda k: k.terms.ep_fwd + k.terms.ep_bwd) + m * np.where(crit == 0, bx_f, np.where(
        crit == 2, bx_l, bx_m)) if not one_kind else 0.0
    p2p_c = m * (p2p_stage + np.where(crit == 0, sh_f, np.where(crit == 2, sh_l, sh_m)))
    fo_c = t_(lambda k: 2.0 * k.terms.t_layer)
    li_c = t_(lambda k: k.terms.interference)
    intf_c = li_c + dp_intf
    # attribute the remainder of m·t_max (kernel rounding in stage assembly) to compute_gemm so parts sum exactly
    resid = m * t_max - (gemm_c + attn_c + memb_c + rc_c + tp_c + cp_c + p2p_c + fo_c + li_c + ep_c)
    gemm_c = gemm_c + resid
    memb_c = memb_c + wcast  # once per step, outside the pipeline slots

    # --- FLOPs: model FLOPs (Megatron convention: non-causal attention, no recompute) and hardware FLOPs -----
    model_flops, hw_flops = step_flops(K, [float(x) for x in (mix.layer_counts or [L])], job, B, s, heads, h, V, rc)
    n_dev = dp * tp * pp * cp
    peak_nom = hw.peak_flops_per_s

    shape = StageShape(tp=tp, pp=pp, cp=cp, v=v, m=m, T=T, Tsp=Tsp, zero=zero, rc=rc, sp=P.sp,
                       reshard=P.reshard, shard=S, n_first=n_first, n_last=n_last,
                       params_first=params_first, params_last=params_last, rotate=None if rot is None else rot.on)
    mem = memory(model, job, shape, hw.memory_capacity_bytes, w_b, e, job.attention == "flash",
                 extra=(mix.memory_extra(shape, x_first, x_last, c_first, c_last, w_b) if mix.memory_extra else None),
                 fw=fw, launches_kernels=hw.launches_kernels)

    # per-operation costs that the reference executor plays out (it never re-derives them): one micro-batch on
    # one device, per stage kind; comm as bytes + the link (bandwidth after efficiency, latency) it travels on
    d = K[0]
    ops = {
        "op_layer_fwd_s": d.terms.fwd, "op_layer_bwd_s": d.terms.bwd, "op_layer_recompute_s": d.rc,
        "op_layer_tp_fwd_s": d.terms.tp_fwd, "op_layer_tp_bwd_exposed_s": d.terms.tp_bwd,
        "op_emb_fwd_s": emb_fwd, "op_emb_bwd_s": emb_bwd, "op_out_fwd_s": out_fwd, "op_out_bwd_s": out_bwd,
        "op_stage_first_fwd_s": f_first, "op_stage_first_bwd_s": b_first,
        "op_stage_mid_fwd_s": f_mid, "op_stage_mid_bwd_s": b_mid,
        "op_stage_last_fwd_s": f_last, "op_stage_last_bwd_s": b_last,
        "op_p2p_s": p2p, "op_p2p_bytes": np.where(P.pp > 1, p2p_bytes, 0.0),
        "link_pp_bytes_per_s": pp_bw, "link_pp_latency_s": pp_lat,
        "op_dp_grad_bytes_first": (params_first + x_first) * g_red, "op_dp_grad_bytes_last": (params_last + x_last) * g_red,
        "op_dp_param_bytes_first": (params_first + x_first) * w_b, "op_dp_param_bytes_last": (params_last + x_last) * w_b,
        "op_dp_ranks": dp * cp,
        "op_dp_allreduce_first_s": ar_f, "op_dp_allreduce_last_s": ar_l,
        "op_dp_reduce_scatter_first_s": rs_f, "op_dp_reduce_scatter_last_s": rs_l,
        "op_dp_allgather_first_s": ag_f, "op_dp_allgather_last_s": ag_l,
        "op_optimizer_s": optimizer, "layers_mid_stage": n_mid_max, "pipeline_s": t_pipe,
        "op_dp_interference_s": dp_intf,
    }
    if rot is not None:  # what the executor plays of the rotation (``executor/dense.py``)
        ops.update(rtp_terms.executor_ops(rot, rots))
    if getattr(c, "lc_parts", None) is not None:  # long-context layouts: what the executor plays per layer
        ops.update({"op_layer_attn_fwd_s": d.terms.attn_fwd, "op_layer_attn_bwd_s": d.terms.attn_bwd,
                    "op_layer_cp_fwd_s": d.terms.cp_fwd, "op_layer_cp_bwd_s": d.terms.cp_bwd,
                    **{f"op_{k}": v for k, v in c.lc_parts.items()}})
    lo, hi = interval_factors(hw.eff.provenance_class, mix.interval_family)
    out = {**ops, **mem,
           "step_time_s": step,
           "step_time_low_s": step * lo,
           "step_time_high_s": step * hi,
           "tokens_per_s": B * s / step,
           "model_flops_per_step": np.broadcast_to(model_flops, step.shape).astype(f64),
           "hardware_flops_per_step": hw_flops,
           "mfu": model_flops / (step * n_dev * peak_nom),
           "hfu": hw_flops / (step * n_dev * peak_nom),
           "micro_batches": m,
           "layers_first_stage": n_first,
           "layers_last_stage": n_last,
           "layers_max_stage": n_layers_max,
           "critical_stage": crit,
           "compute_gemm_s": gemm_c,
           "compute_attention_s": attn_c,
           "compute_memory_bound_s": memb_c,
           "recompute_s": rc_c,
           "tp_comm_exposed_s": tp_c,
           "cp_comm_exposed_s": cp_c,
           "pp_p2p_s": p2p_c,
           "pipeline_bubble_s": bubble,
           "dp_comm_exposed_s": dp_exposed,
           "optimizer_s": optimizer,
           "framework_overhead_s": fo_c,
           "overlap_interference_s": intf_c,
           # compute-only lower bound: model+recompute FLOPs of the critical stage at full peak, no comm, no bubble
           "compute_bound_s": m * (over(c_crit, lambda k: k.bound_flops) + has_out * heads * 6.0 * T * h * V / tp)
           / peak_nom,
           }
    if not one_kind:
        out["ep_comm_exposed_s"] = ep_c + port_c
    return out
