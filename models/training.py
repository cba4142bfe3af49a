"""Analytical cost of one optimizer step of a dense transformer under a plan (dp, tp, pp, cp, mbs, vpp, zero,
recompute, sp, hybrid sharding, FSDP re-sharding, uneven pipeline stages) — time breakdown, memory per device,
feasibility.

One formula, two uses: every function here works on numpy arrays of plans (``PlanArrays``), so ``estimate`` (one
plan) and the planner's search (millions of plans) run exactly the same code.  All quantities are SI floats.
Per-op costs come from the calibration layer (``models/primitives``: GEMM by shape and dtype, fused attention by
sequence and kernel, HBM fraction, collectives on measured size curves); the framework profile decides which
communication overlaps; a few global framework terms (fitted on published runs) are named parts of the step.

Notation: B global batch (sequences), s sequence length, b micro-batch, h hidden, q = heads·head_dim, k = kv_heads·
head_dim, f FFN hidden, V vocab, L layers, t tp, p pp, c cp, v vpp, D dp, m = B/(D·b) micro-batches per pipeline.
Derivations: docs/cost_model.md.
"""
from __future__ import annotations

import numpy as np

from parplan.models.hardware_context import (HardwareContext, framework_of, hardware_context, math_dtype,  # noqa: F401
                                             ring_allgather_s, ring_allreduce_s)
from parplan.models.plan_arrays import PlanArrays  # noqa: F401  (re-exported: planner and executor import it here)
from parplan.models.primitives.collectives import allreduce_s, gather_s
from parplan.models.primitives.kernels import attention_efficiency, gemm_efficiency
from parplan.models.primitives.uncertainty import interval_factors
from parplan.models.training_memory import (FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES,  # noqa: F401
                                            MEMORY_PARTS, OPTIMIZER_STATE_BYTES, StageShape, memory)
from parplan.workloads.transformer import TransformerSpec, Workload

# Bytes moved per parameter by one Adam step (memory-bound): read master, m, v, fp32 grad (16 B), write master,
# m, v (12 B) and the 16-bit weight copy (2 B), plus one read of the grads for the global-norm clip (4 B).
OPTIMIZER_STEP_BYTES = {"adam": 34.0, "adamw": 34.0, "sgd": 26.0}
# Passes over the fp32 logits made by the vocab-parallel cross entropy (max, exp-sum, loss, grad): bytes per
# logit element, forward + backward (read bf16 2 B, write fp32 4 B, 2× read/write fp32 in softmax+grad).
CROSS_ENTROPY_BYTES_PER_LOGIT = 22.0
# bytes per GEMM input element by math dtype (MX formats add one 8-bit scale per 32 elements, NVFP4 one per 16)
GEMM_INPUT_BYTES = {"fp8": 1.0, "int8": 1.0, "mxfp8": 1.0 + 1.0 / 32, "nvfp4": 0.5 + 1.0 / 16}

# Names of the time parts (seconds per step) and memory parts (bytes per device at the heaviest stage).
TIME_PARTS = (
    "compute_gemm_s", "compute_attention_s", "compute_memory_bound_s", "recompute_s", "tp_comm_exposed_s",
    "cp_comm_exposed_s", "pp_p2p_s", "pipeline_bubble_s", "dp_comm_exposed_s", "optimizer_s",
    "framework_overhead_s", "overlap_interference_s",
)


def _stage_layers(L, pp, P: PlanArrays):
    """Layers on the first, the largest middle and the last stage, and all middle stages together.  Default rule:
    floor((L+e+l)/p) each, the remainder to the first stages, minus the embedding (e) / loss (l) where they count
    as layers; explicit first/last counts split the rest evenly over the middle stages (Megatron-Core)."""
    ea, la = P.embed_as_layer.astype(np.float64), P.loss_as_layer.astype(np.float64)
    Lv = L + ea + la
    base = np.floor(Lv / pp)
    extra = Lv - base * pp
    n_first = np.where(pp > 1, base + (extra > 0) - ea, L)
    n_last = np.where(pp > 1, base - la, n_first)
    n_first = np.where(P.first_layers > 0, P.first_layers, n_first)
    n_last = np.where((P.last_layers > 0) & (pp > 1), P.last_layers, n_last)
    n_mid_total = np.where(pp > 2, np.maximum(L - n_first - n_last, 0.0), 0.0)
    n_mid_max = np.where(pp > 2, np.ceil(n_mid_total / np.maximum(pp - 2, 1)), 0.0)
    return n_first, n_last, n_mid_max, n_mid_total


def evaluate(model: TransformerSpec, job, hw: HardwareContext, P: PlanArrays) -> dict[str, np.ndarray]:
    """Price one optimizer step for every plan in ``P``; returns named arrays (time parts in s, memory in bytes)."""
    f64 = np.float64
    fw, terms, kp = hw.framework, hw.terms, hw.kernels
    dp, tp, pp, cp = (P.dp.astype(f64), P.tp.astype(f64), P.pp.astype(f64), P.cp.astype(f64))
    b, v = P.mbs.astype(f64), P.vpp.astype(f64)
    zero, rc, sp = P.zero, P.recompute, P.sp
    L, h, a = float(model.layers), float(model.hidden), float(model.heads)
    q, k, f, V = float(model.q_dim), float(model.kv_dim), float(model.ffn_hidden), float(model.vocab)
    nmat = float(model.ffn_matrices)
    s, B = float(job.seq_len), float(job.global_batch)
    mixed = job.precision != "fp32"
    e = 2.0 if mixed else 4.0  # bytes per activation / 16-bit weight value
    in_b = GEMM_INPUT_BYTES.get(hw.math_dtype, e)  # bytes per GEMM input element
    m = B / (dp * b)  # micro-batches per pipeline per step
    T = b * s / cp  # tokens of one micro-batch on one device (CP splits the sequence)
    Tsp = np.where(sp, T / tp, T)  # rows handled by token-wise ops (SP splits them over TP ranks)

    derate = 1.0 + terms.compute_derate  # sustained-clock derate (global term)
    peak, peak16 = hw.peak_flops_per_s / derate, hw.peak16_flops_per_s / derate
    bw_mem = hw.memory_bandwidth_bytes_per_s * kp.memory_fraction / derate
    t_k = hw.kernel_overhead_s

    def gemm_s(M, K, N, dtype=hw.math_dtype, pk=peak, ib=in_b):
        """One GEMM (M×K)·(K×N): flops at peak × shape efficiency (kernel layer) vs HBM traffic, + launch."""
        flops = 2.0 * M * K * N
        nbytes = (M * K + K * N) * ib + M * N * e
        return np.maximum(flops / (pk * gemm_efficiency(M, K, N, kp, dtype)), nbytes / bw_mem) + t_k

    def fwd_bwd(M, K, N):
        """Forward, data-gradient (M×N)·(N×K) and weight-gradient (K×M)·(M×N) GEMMs of one linear layer."""
        return gemm_s(M, K, N), gemm_s(M, N, K), gemm_s(K, M, N)

    # --- one transformer layer, one micro-batch, one device (Narayanan et al. 2021 §3; Korthikanti et al. 2022) --
    # GEMMs: QKV (h → q+2k), attention out (q → h), MLP up (h → nmat−1 matrices of f), MLP down (f → h)
    shapes = [(T, h, (q + 2 * k) / tp), (T, q / tp, h), (T, h, (nmat - 1) * f / tp), (T, f / tp, h)]
    parts = [fwd_bwd(*sh) for sh in shapes]
    gemm_fwd = sum(p[0] for p in parts)
    dgrad = sum(p[1] for p in parts)
    wgrad = sum(p[2] for p in parts)  # the weight-gradient half of the backward, which can hide TP comm
    gemm_bwd = dgrad + wgrad
    attn_flops_fwd = 2.0 * b * s * s * q / (tp * cp)  # causal: QKᵀ and AV over the lower triangle
    hd = int(model.head_dim_)
    if job.attention == "flash":
        # fused attention (Dao 2022/2023, Shah et al. 2024): backward = 2.5× forward FLOPs (recomputes QKᵀ); the
        # kernel's efficiency by keys per block (s/c under CP; causal blocks only without CP), on the 16-bit peak
        skv = s / cp
        ac = hw.attention
        eff_f = np.where(P.cp > 1, attention_efficiency(skv, hd, False, False, ac),
                         attention_efficiency(skv, hd, True, False, ac))
        eff_b = np.where(P.cp > 1, attention_efficiency(skv, hd, False, True, ac),
                         attention_efficiency(skv, hd, True, True, ac))
        attn_fwd = attn_flops_fwd / (peak16 * eff_f) + t_k
        attn_bwd = 2.5 * attn_flops_fwd / (peak16 * eff_b) + 2 * t_k
    else:
        # materialized attention (Megatron-LM 2021–22): batched GEMMs over the full s×s scores (masking after the
        # product), scores written to HBM; scale-mask-softmax and dropout as memory-bound kernels; backward = 2
        # GEMMs per forward GEMM (Korthikanti et al. 2022 §4.1)
        heads_local, sq = a / tp, s / cp

        def bmm(M, K, N):
            one = np.maximum(2.0 * M * K * N / (peak16 * gemm_efficiency(M, K, N, kp, "bf16")),
                             (M * K + K * N + M * N) * e / bw_mem)
            return heads_local * b * one + t_k

        scores = heads_local * b * sq * s
        sm_fwd = (2 * e + (2 * e + 1) * (1.0 if model.dropout else 0.0)) * scores / bw_mem
        attn_fwd = bmm(sq, q / a, s) + bmm(sq, s, q / a) + sm_fwd + t_k
        attn_bwd = 2.0 * (bmm(sq, q / a, s) + bmm(sq, s, q / a)) + 1.5 * sm_fwd + t_k
    # memory-bound token-wise ops (bytes moved forward): 2 norms (r h, w h), 2 residual adds (r 2h, w h),
    # dropouts (r h, w h, mask 1 B) if the model uses them, rotary on q,k, activation (gelu r f w f; swiglu r 2f w f)
    norm_res = (2 * 2 * e + 2 * 3 * e + (2 * (2 * e + 1) if model.dropout else 0.0)) * Tsp * h
    rope = (2 * e * T * (q + k) / tp) if model.position == "rope" else 0.0
    act = (nmat * e) * T * f / tp
    cast_b = hw.cast_bytes_per_element  # fp8/MX casts + amax of GEMM inputs (framework's recipe), bytes/element
    fp8_cast = cast_b * T * (h + q / tp + h + f / tp)
    mem_fwd = (norm_res + rope + act + fp8_cast) / bw_mem
    mem_bwd = 2.0 * mem_fwd  # backward reads the saved input and the incoming gradient, writes one gradient

    # TP: 2 all-reduces forward + 2 backward per layer, or with SP 2 all-gather + 2 reduce-scatter, of T·h·e bytes
    dpn = float(hw.devices_per_node)
    nb_tp = T * h * e
    bw_ar, lat_ar, mr_ar = hw.group_busbw(nb_tp, tp, 1.0, tp, "allreduce")
    bw_g, lat_g, mr_g = hw.group_busbw(nb_tp, tp, 1.0, tp, "gather")
    tp_ar = np.where(sp, 2.0 * gather_s(nb_tp, tp, bw_g, lat_g, mr_g), allreduce_s(nb_tp, tp, bw_ar, lat_ar, mr_ar))
    tp_comm = 2.0 * tp_ar  # per direction (forward or backward) per layer
    # overlap (framework profile): none; "wgrad" = input-grad all-reduce behind the weight-grad GEMMs (Megatron
    # async all-reduce); "full" = communication pipelined with the adjacent GEMMs (TE userbuffers / async TP)
    ov = fw.tp_comm_overlap
    if ov == "full":
        tp_fwd = np.maximum(0.0, tp_comm - gemm_fwd)
        tp_bwd_exposed = np.maximum(0.0, tp_comm - gemm_bwd)
    elif ov == "wgrad":
        tp_fwd, tp_bwd_exposed = tp_comm, np.maximum(0.0, tp_comm - wgrad)
    else:
        tp_fwd, tp_bwd_exposed = tp_comm, tp_comm
    tp_hidden = (tp_comm - tp_fwd) + (tp_comm - tp_bwd_exposed)

    # CP: ring exchange of K,V blocks, (c−1) steps forward (K,V) and backward (K,V,dK,dV), hidden behind attention
    kv_block = 2.0 * T * k / tp * e
    cp_bw, cp_lat, _ = hw.group_busbw(kv_block, tp * cp, 1.0, 2.0, "p2p")
    cp_steps = cp - 1.0
    cp_fwd_all = np.where(P.cp > 1, cp_steps * (kv_block / cp_bw + cp_lat), 0.0)
    cp_bwd_all = np.where(P.cp > 1, cp_steps * (2 * kv_block / cp_bw + cp_lat), 0.0)
    cp_fwd = np.maximum(0.0, cp_fwd_all - (attn_fwd if fw.cp_comm_overlap else 0.0))
    cp_bwd = np.maximum(0.0, cp_bwd_all - (attn_bwd if fw.cp_comm_overlap else 0.0))
    cp_hidden = (cp_fwd_all - cp_fwd) + (cp_bwd_all - cp_bwd)

    # global framework terms (fitted): a fixed host/launch gap per layer pass and the slowdown of compute by
    # communication running concurrently on the same device (SM and HBM contention)
    # (XLA compiles a whole TPU step into one program: no per-layer host gap there)
    intf = terms.overlap_interference
    t_layer = terms.layer_overhead_s if hw.launches_kernels else 0.0
    layer_fwd = gemm_fwd + attn_fwd + mem_fwd + tp_fwd + cp_fwd + t_layer
    layer_bwd = gemm_bwd + attn_bwd + mem_bwd + tp_bwd_exposed + cp_bwd + t_layer
    layer_intf = intf * (tp_hidden + cp_hidden)
    layer_bwd = layer_bwd + layer_intf
    # recompute in the backward: selective = attention core forward again; full = the whole layer forward again
    layer_rc = np.where(rc == 2, layer_fwd, np.where(rc == 1, attn_fwd, 0.0))

    # --- stages --------------------------------------------------------------------------------------------------
    n_first, n_last, n_mid_max, n_mid_total = _stage_layers(L, pp, P)
    emb_fwd = 2.0 * e * Tsp * h / bw_mem  # embedding gather forward, scatter-add backward (memory-bound on T·h)
    emb_bwd = (e + 8.0) * Tsp * h / bw_mem
    # output layer (last stage): logits GEMM T×h×V/t, its 2 backward GEMMs, vocab-parallel cross entropy
    g_logit, g_logit_d, g_logit_w = fwd_bwd(T, h, V / tp)
    ce = CROSS_ENTROPY_BYTES_PER_LOGIT * T * V / tp / bw_mem
    out_fwd = g_logit + 0.4 * ce
    out_bwd = g_logit_d + g_logit_w + 0.6 * ce

    # PP p2p per micro-batch per boundary: activations b·(s/c)·h·e, split over TP (scatter-gather optimization)
    p2p_bytes = T * h * e / tp
    pp_bw, pp_lat, _ = hw.group_busbw(p2p_bytes, tp * cp * pp, 1.0, 2.0, "p2p")
    p2p = np.where(P.pp > 1, p2p_bytes / pp_bw + pp_lat, 0.0)
    p2p_stage = 2.0 * v * p2p  # each micro-batch enters and leaves each device v times, forward and backward

    def stage(n, first, last):
        f_ = n * layer_fwd + (emb_fwd if first else 0.0) + (out_fwd if last else 0.0)
        b_ = n * (layer_bwd + layer_rc) + (emb_bwd if first else 0.0) + (out_bwd if last else 0.0)
        return f_, b_

    single = pp == 1
    f_first, b_first = stage(n_first, True, False)
    f_first = f_first + np.where(single, out_fwd, 0.0)
    b_first = b_first + np.where(single, out_bwd, 0.0)
    f_last, b_last = stage(n_last, False, True)
    f_mid, b_mid = stage(n_mid_max, False, False)

    # --- parameters per device (first and last stage), Megatron sharding ---------------------------------------
    P_layer = float(model.layer_params)
    emb_p = float(model.embedding_params)
    out_p = float(model.vocab * model.hidden + model.norm_params_per_norm)  # pp>1: last stage holds the projection
    out_own = float(model.output_params)
    params_first = (n_first * P_layer + emb_p + np.where(single, out_own, 0.0)) / tp
    params_last = np.where(single, params_first, (n_last * P_layer + out_p) / tp)
    params_mid = n_mid_max * P_layer / tp

    # --- data-parallel gradient / parameter traffic (grad-sharing group = dp × cp; ZeRO shard group S) -----------
    zdeg = dp * cp
    S = np.where(P.shard > 0, P.shard.astype(f64), zdeg)  # ZeRO shard group (hybrid sharding: S < dp·cp)
    R = zdeg / S  # replica groups that all-reduce the shards
    per_node = np.where(tp * cp >= dpn, np.maximum(np.floor(dpn / tp), 1.0),
                        np.where(tp * cp * pp < dpn, np.floor(dpn / (tp * pp)), cp))
    g_red = np.where(zero >= 2, e, 4.0) if fw.grad_reduce_dtype == "fp32" else np.full_like(dp, e)
    w_b = 1.0 if (fw.fp8_param_gather and in_b <= 1.05) else e
    bucket = hw.dp_bucket_elements
    n_layers_max = np.maximum(np.maximum(n_first, n_last), n_mid_max)

    def dp_sync(params):
        # message size of one collective: a framework bucket (DDP / distributed optimizer), or one layer (FSDP)
        elems = np.where(zero >= 3, P_layer / tp, np.minimum(params, bucket))
        ext = tp * cp * pp * S
        bw_s, lat_s, mr_s = hw.group_busbw(elems * g_red, ext, np.minimum(per_node, S), S, "gather")
        bw_sa, lat_sa, mr_sa = hw.group_busbw(elems * w_b, ext, np.minimum(per_node, S), S, "gather")
        n_msgs = np.maximum(params / np.maximum(elems, 1.0), 1.0)
        rs = gather_s(params * g_red, S, bw_s, lat_s, mr_s) + (n_msgs - 1) * np.where(S > 1, lat_s, 0.0)
        ag = gather_s(params * w_b, S, bw_sa, lat_sa, mr_sa) + (n_msgs - 1) * np.where(S > 1, lat_sa, 0.0)
        bw_r, lat_r, mr_r = hw.group_busbw(elems * g_red / S, tp * cp * pp * zdeg, np.maximum(per_node / S, 1.0),
                                         R, "allreduce")
        rep = allreduce_s(params * g_red / S, R, bw_r, lat_r, mr_r)  # hybrid sharding: all-reduce of the shards
        bw_a, lat_a, mr_a = hw.group_busbw(elems * g_red, tp * cp * pp * zdeg, per_node, zdeg, "allreduce")
        ar = allreduce_s(params * g_red, zdeg, bw_a, lat_a, mr_a) + (n_msgs - 1) * lat_a
        return rs, ag, ar, rep

    rs_f, ag_f, ar_f, rep_f = dp_sync(params_first)
    rs_l, ag_l, ar_l, rep_l = dp_sync(params_last)
    # zero 0: all-reduce after the last backward, overlapped with that micro-batch's backward (bucketed DDP);
    # zero 1: reduce-scatter (overlapped the same way) + parameter all-gather after the step (overlapped with the
    # next step's first forward); zero 2: reduce-scatter every micro-batch behind its backward, all-gather after
    # the step; zero 3: all-gather parameters forward (and backward when re-sharded) and reduce-scatter every
    # micro-batch (FSDP).  A framework without the overlap exposes the whole collective.
    og = 1.0 if fw.dp_grad_reduce else 0.0
    op_ = 1.0 if fw.dp_param_gather else 0.0
    of_ = 1.0 if fw.fsdp_prefetch else 0.0
    win_f_b, win_l_b = og * b_first, og * (b_last + np.maximum(pp - 1, 0) * b_mid / v)
    x0 = lambda c, w: np.maximum(0.0, c - w)  # noqa: E731
    dp0 = np.maximum(x0(ar_f, win_f_b), x0(ar_l, win_l_b))
    # ZeRO-1/2 parameter all-gather of the next step, chunk by chunk in forward order: chunk c (of v) must arrive
    # before its first forward, which the interleaved warm-up reaches after c·min(p, m) forwards of earlier chunks
    warm = np.minimum(pp, m)

    def gather_exposure(ag, fwd):
        worst = np.zeros_like(ag)
        for c in range(int(np.max(v)) if np.size(v) else 1):
            live = c < v
            need = (c + 1) * ag / v - op_ * (1.0 + c * warm) * fwd / v
            worst = np.where(live, np.maximum(worst, need), worst)
        return np.maximum(worst, 0.0)

    gath = np.maximum(gather_exposure(ag_f, f_first), gather_exposure(ag_l, f_last))
    rep = np.maximum(x0(rep_f, win_f_b), x0(rep_l, win_l_b))
    dp1 = np.maximum(x0(rs_f, win_f_b), x0(rs_l, win_l_b)) + gath + rep
    dp2 = m * np.maximum(x0(rs_f, og * b_first), x0(rs_l, og * b_last)) + gath + rep
    # zero 3 with a pipeline: the per-micro-batch exposure lengthens every slot; in the drain the backward gathers
    # and reduce-scatters sit on the critical path once more per remaining stage: + (p−1)/v backward exposures
    ag_bf = np.where(P.reshard, ag_f, 0.0)
    ag_bl = np.where(P.reshard, ag_l, 0.0)
    x_b = np.maximum(x0(ag_bf + rs_f, of_ * b_first), x0(ag_bl + rs_l, of_ * b_last))
    dp3 = m * np.maximum(x0(ag_f, of_ * f_first) + x0(ag_bf + rs_f, of_ * b_first),
                         x0(ag_l, of_ * f_last) + x0(ag_bl + rs_l, of_ * b_last)) \
        + np.maximum(pp - 1, 0) / v * x_b + rep
    dp_exposed = np.where(P.dp * P.cp > 1, np.select([zero == 0, zero == 1, zero == 2], [dp0, dp1, dp2], dp3), 0.0)
    dp_total = np.select([zero == 0, zero == 1, zero == 2],
                         [np.maximum(ar_f, ar_l), np.maximum(rs_f + ag_f, rs_l + ag_l) + rep,
                          m * np.maximum(rs_f, rs_l) + np.maximum(ag_f, ag_l) + rep],
                         m * np.maximum(ag_f + ag_bf + rs_f, ag_l + ag_bl + rs_l) + rep)
    dp_total = np.where(P.dp * P.cp > 1, dp_total, 0.0)
    dp_intf = intf * np.maximum(dp_total - dp_exposed, 0.0)  # the hidden part slows the compute it overlaps

    # pipeline makespan, 1F1B / interleaved 1F1B (Narayanan et al. 2021 §2.2, bubble (p−1)/(v·m) when balanced),
    # generalized to unequal stages: m·max + (Σ − max)/v
    slot_first = f_first + b_first + p2p_stage
    slot_last = np.where(single, slot_first, f_last + b_last + p2p_stage)
    slot_mid = np.where(pp > 2, f_mid + b_mid + p2p_stage, 0.0)
    sum_slots = np.where(single, slot_first,
                         slot_first + slot_last + n_mid_total * (layer_fwd + layer_bwd + layer_rc)
                         + np.maximum(pp - 2, 0) * p2p_stage)
    t_max = np.maximum(np.maximum(slot_first, slot_last), slot_mid)
    t_pipe = m * t_max + (sum_slots - t_max) / v
    bubble = t_pipe - m * t_max

    # optimizer step: memory-bound over the parameters this device updates (sharded by ZeRO ≥ 1)
    opt_params = np.maximum(np.maximum(params_first, params_last), params_mid) / np.where(zero >= 1, S, 1.0)
    optimizer = opt_params * OPTIMIZER_STEP_BYTES[job.optimizer] / bw_mem

    step = t_pipe + dp_exposed + optimizer + dp_intf

    # --- time breakdown of the critical stage (sums to the step time) -----------------------------------------
    crit = np.where(slot_first >= np.maximum(slot_last, slot_mid), 0, np.where(slot_last >= slot_mid, 2, 1))
    n_crit = np.where(crit == 0, n_first, np.where(crit == 2, n_last, n_mid_max))
    has_out = np.where(crit == 2, 1.0, np.where(single, 1.0, 0.0))
    has_emb = np.where(crit == 0, 1.0, np.where(single, 1.0, 0.0))
    gemm_c = m * (n_crit * (gemm_fwd + gemm_bwd) + has_out * (g_logit + g_logit_d + g_logit_w))
    attn_c = m * n_crit * (attn_fwd + attn_bwd)
    memb_c = m * (n_crit * (mem_fwd + mem_bwd) + has_emb * (emb_fwd + emb_bwd) + has_out * ce)
    rc_c = m * n_crit * layer_rc
    tp_c = m * n_crit * (tp_fwd + tp_bwd_exposed)
    cp_c = m * n_crit * (cp_fwd + cp_bwd)
    p2p_c = m * p2p_stage
    fo_c = m * n_crit * 2.0 * t_layer
    intf_c = m * n_crit * layer_intf + dp_intf
    # attribute the remainder of m·t_max (kernel rounding in stage assembly) to compute_gemm so parts sum exactly
    resid = m * t_max - (gemm_c + attn_c + memb_c + rc_c + tp_c + cp_c + p2p_c + fo_c + m * n_crit * layer_intf)
    gemm_c = gemm_c + resid

    # --- FLOPs: model FLOPs (Megatron convention: non-causal attention, no recompute) and hardware FLOPs -----
    layer_fwd_model = 2.0 * (h * (q + 2 * k) + q * h + nmat * h * f) + 4.0 * s * q  # per token
    model_flops = 3.0 * B * s * (L * layer_fwd_model + 2.0 * h * V)
    rc_flops_per_token = np.where(rc == 2, L * layer_fwd_model, np.where(rc == 1, L * 4.0 * s * q, 0.0))
    hw_flops = model_flops + B * s * rc_flops_per_token
    n_dev = dp * tp * pp * cp
    peak_nom = hw.peak_flops_per_s

    mem = memory(model, job, StageShape(tp=tp, pp=pp, cp=cp, v=v, m=m, T=T, Tsp=Tsp, zero=zero, rc=rc, sp=sp,
                                        reshard=P.reshard, shard=S, n_first=n_first, n_last=n_last,
                                        params_first=params_first, params_last=params_last),
                 hw.memory_capacity_bytes, w_b, e, job.attention == "flash")

    # per-operation costs that the reference executor plays out (it never re-derives them): one micro-batch on
    # one device, per stage kind; comm as bytes + the link (bandwidth after efficiency, latency) it travels on
    ops = {
        "op_layer_fwd_s": layer_fwd, "op_layer_bwd_s": layer_bwd, "op_layer_recompute_s": layer_rc,
        "op_layer_tp_fwd_s": tp_fwd, "op_layer_tp_bwd_exposed_s": tp_bwd_exposed,
        "op_emb_fwd_s": emb_fwd, "op_emb_bwd_s": emb_bwd, "op_out_fwd_s": out_fwd, "op_out_bwd_s": out_bwd,
        "op_stage_first_fwd_s": f_first, "op_stage_first_bwd_s": b_first,
        "op_stage_mid_fwd_s": f_mid, "op_stage_mid_bwd_s": b_mid,
        "op_stage_last_fwd_s": f_last, "op_stage_last_bwd_s": b_last,
        "op_p2p_s": p2p, "op_p2p_bytes": np.where(P.pp > 1, p2p_bytes, 0.0),
        "link_pp_bytes_per_s": pp_bw, "link_pp_latency_s": pp_lat,
        "op_dp_grad_bytes_first": params_first * g_red, "op_dp_grad_bytes_last": params_last * g_red,
        "op_dp_param_bytes_first": params_first * w_b, "op_dp_param_bytes_last": params_last * w_b,
        "op_dp_ranks": dp * cp,
        "op_dp_allreduce_first_s": ar_f, "op_dp_allreduce_last_s": ar_l,
        "op_dp_reduce_scatter_first_s": rs_f, "op_dp_reduce_scatter_last_s": rs_l,
        "op_dp_allgather_first_s": ag_f, "op_dp_allgather_last_s": ag_l,
        "op_optimizer_s": optimizer, "layers_mid_stage": n_mid_max, "pipeline_s": t_pipe,
        "op_dp_interference_s": dp_intf,
    }
    lo, hi = interval_factors(hw.eff.provenance_class)
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
           "compute_bound_s": m * (n_crit * (3.0 * 2.0 * T * (h * (q + 2 * k) + q * h + nmat * h * f) / tp
                                             + 3.0 * attn_flops_fwd) + has_out * 6.0 * T * h * V / tp) / peak_nom,
           }
    return out


def evaluate_workload(workload: Workload, cluster, plans: PlanArrays, eff=None) -> dict[str, np.ndarray]:
    hw = hardware_context(cluster.group, workload.training.precision, eff, framework=framework_of(workload))
    return evaluate(workload.model, workload.training, hw, plans)
