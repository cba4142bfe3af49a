"""Named cost terms of one transformer layer, one micro-batch, one device (vectorized over plans): the attention
block (projection GEMMs, the attention core, token-wise memory-bound kernels, tensor- and context-parallel
communication with the framework's overlaps) and the dense MLP block.  Families compose them: the dense family
uses both in every layer, the MoE family replaces the MLP block of its sparse layers (``models/moe_terms.py``).

All quantities are SI floats (seconds, bytes, FLOP).  Notation as in ``models/training.py``; derivations in
docs/cost_model.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models import longctx_terms
from parplan.models.hardware_context import HardwareContext
from parplan.models.plan_arrays import PlanArrays
from parplan.models.primitives.collectives import allreduce_s, gather_s
from parplan.models.primitives.kernels import attention_efficiency, gemm_efficiency

# bytes per GEMM input element by math dtype (MX formats add one 8-bit scale per 32 elements, NVFP4 one per 16)
GEMM_INPUT_BYTES = {"fp8": 1.0, "int8": 1.0, "mxfp8": 1.0 + 1.0 / 32, "nvfp4": 0.5 + 1.0 / 16}


@dataclass
class StepContext:
    """What every term of one optimizer step needs of the plans, the job and the hardware (arrays over plans)."""

    hw: HardwareContext
    P: PlanArrays
    dp: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    b: np.ndarray  # micro-batch size (sequences)
    v: np.ndarray  # interleaving degree
    s: float  # sequence length
    B: float  # global batch (sequences)
    e: float  # bytes per activation / 16-bit weight value
    in_b: float  # bytes per GEMM input element
    m: np.ndarray  # micro-batches per pipeline per step
    T: np.ndarray  # tokens of one micro-batch on one device (CP splits the sequence)
    Tsp: np.ndarray  # rows of token-wise ops (SP splits them over TP ranks)
    peak: float  # GEMM dtype peak after the sustained-clock derate
    peak16: float
    bw_mem: float  # sustained HBM bandwidth
    t_k: float  # per-kernel launch overhead
    job: object = None  # the training job (its sequence workload: models/longctx_terms.py)
    lc: object = None  # the context-parallel layout statistics, computed once per step context
    lc_parts: object = None  # their communication parts by name (reported as op_cp_* for the executor)

    def gemm_s(self, M, K, N, dtype=None, pk=None, ib=None):
        """One GEMM (M×K)·(K×N): flops at peak × shape efficiency (kernel layer) vs HBM traffic, + launch."""
        dtype = self.hw.math_dtype if dtype is None else dtype
        pk = self.peak if pk is None else pk
        ib = self.in_b if ib is None else ib
        flops = 2.0 * M * K * N
        nbytes = (M * K + K * N) * ib + M * N * self.e
        return np.maximum(flops / (pk * gemm_efficiency(M, K, N, self.hw.kernels, dtype)), nbytes / self.bw_mem) + self.t_k

    def fwd_bwd(self, M, K, N, sixteen: bool = False):
        """Forward, data-gradient (M×N)·(N×K) and weight-gradient (K×M)·(M×N) GEMMs of one linear layer;
        ``sixteen``: in 16-bit whatever the math dtype (a layer the fp8 recipe leaves out)."""
        kw = {"dtype": "bf16", "pk": self.peak16, "ib": self.e} if sixteen and self.in_b < self.e else {}
        return self.gemm_s(M, K, N, **kw), self.gemm_s(M, N, K, **kw), self.gemm_s(K, M, N, **kw)


def step_context(job, hw: HardwareContext, P: PlanArrays) -> StepContext:
    f64 = np.float64
    terms, kp = hw.terms, hw.kernels
    dp, tp, pp, cp = (P.dp.astype(f64), P.tp.astype(f64), P.pp.astype(f64), P.cp.astype(f64))
    b, v = P.mbs.astype(f64), P.vpp.astype(f64)
    s, B = float(job.seq_len), float(job.global_batch)
    e = 2.0 if job.precision != "fp32" else 4.0
    T = b * s / cp
    # sustained-clock derate (global term) of kernels measured in short bursts at the boost clock (GPUs); a TPU runs
    # its compiled step at a fixed clock, like global_terms' per-layer host gap it does not apply there
    derate = 1.0 + (terms.compute_derate if hw.launches_kernels else 0.0)
    return StepContext(hw=hw, P=P, dp=dp, tp=tp, pp=pp, cp=cp, b=b, v=v, s=s, B=B, e=e,
                       in_b=GEMM_INPUT_BYTES.get(hw.math_dtype, e), m=B / (dp * b), T=T,
                       Tsp=np.where(P.sp, T / tp, T), peak=hw.peak_flops_per_s / derate,
                       peak16=hw.peak16_flops_per_s / derate,
                       bw_mem=hw.memory_bandwidth_bytes_per_s * kp.memory_fraction / derate,
                       t_k=hw.kernel_overhead_s, job=job)


@dataclass
class LayerTerms:
    """One layer, one micro-batch, one device: GEMM, attention and memory-bound time forward / backward, the
    exposed and hidden tensor-/context-/expert-parallel communication, and the assembled forward, backward and
    recompute time (seconds)."""

    gemm_fwd: np.ndarray
    dgrad: np.ndarray
    wgrad: np.ndarray
    attn_fwd: np.ndarray
    attn_bwd: np.ndarray
    mem_fwd: np.ndarray
    mem_bwd: np.ndarray
    tp_fwd: np.ndarray  # exposed TP communication, forward
    tp_bwd: np.ndarray  # exposed TP communication, backward
    tp_hidden: np.ndarray
    cp_fwd: np.ndarray
    cp_bwd: np.ndarray
    cp_hidden: np.ndarray
    ep_fwd: object = 0.0  # exposed expert-parallel all-to-all (MoE layers), forward
    ep_bwd: object = 0.0
    ep_hidden: object = 0.0
    ep_fwd_pair: object = 0.0  # the part of ep_fwd that is a co-scheduled pair's excess (the overlap books it there)
    nic_a2a: object = 0.0  # all-to-all work of the layer (fwd + bwd) that travels on the NICs (EP across domains)
    ep_bwd_lead: object = 0.0  # the combine-gradient transfer that opens the layer's backward, on the EP port
    ep_slack: object = 0.0  # the compute a co-scheduled pair leaves free beyond hiding its all-to-all
    rc_modules: object = 0.0  # extra forward work recomputed under recompute=modules (norms, activation, MLA up)
    rc_selective: object = None  # what recompute=selective replays (None: the attention core forward)
    t_layer: float = 0.0  # host/launch gap per layer pass (global framework term)
    intf: float = 0.0  # overlap-interference coefficient (global framework term)

    @property
    def gemm_bwd(self):
        return self.dgrad + self.wgrad

    @property
    def fwd(self):
        return (self.gemm_fwd + self.attn_fwd + self.mem_fwd + self.tp_fwd + self.cp_fwd + self.ep_fwd
                + self.t_layer)

    @property
    def interference(self):
        # the slowdown of compute by communication running concurrently on the same device (SM and HBM contention)
        return self.intf * (self.tp_hidden + self.cp_hidden + self.ep_hidden)

    @property
    def bwd(self):
        return (self.gemm_bwd + self.attn_bwd + self.mem_bwd + self.tp_bwd + self.cp_bwd + self.ep_bwd
                + self.t_layer + self.interference)

    def recompute(self, rc):
        """Recompute in the backward: selective = the attention core forward again (or what the framework's
        selective policy replays, ``rc_selective``); full = the layer forward; modules = the attention core and the
        fine-grained modules (norms, activation, MLA up-projections)."""
        sel = self.attn_fwd if self.rc_selective is None else self.rc_selective
        return np.where(rc == 2, self.fwd, np.where(rc == 1, sel,
                                                    np.where(rc == 3, self.attn_fwd + self.rc_modules, 0.0)))


@dataclass
class AttentionBlock:
    gemm: tuple  # (fwd, dgrad, wgrad) of the projections
    attn_fwd: np.ndarray
    attn_bwd: np.ndarray
    attn_flops_fwd: np.ndarray
    mem_fwd: np.ndarray  # norms, residuals, dropout, rotary, fp8 casts of the attention inputs
    rc_modules: object = 0.0  # recompute=modules: both layer norms and MLA's up-projections forward again


def _core_flops_fwd(model, c: StepContext, window: float):
    """Causal attention core forward FLOPs of one micro-batch on one device: QKᵀ over qk dims and AV over v dims
    for the mean keys per query (s/2 causal; w − w²/(2s) with a w-token window) (Dao 2022; DeepSeek-V2 MLA)."""
    qk, vd = float(getattr(model, "attn_qk_dim", model.q_dim)), float(getattr(model, "attn_v_dim", model.q_dim))
    keys = c.s / 2.0 if window <= 0 or window >= c.s else window * (1.0 - window / (2.0 * c.s))
    return 2.0 * c.b * c.s * keys * (qk + vd) / (c.tp * c.cp)


def attention_block(model, job, c: StepContext) -> AttentionBlock:
    """Projections, attention core and the token-wise memory-bound kernels of the attention half of a layer."""
    hw, P, tp, e = c.hw, c.P, c.tp, c.e
    h, q, k = float(model.hidden), float(model.q_dim), float(model.kv_dim)
    T = c.T
    projections = getattr(model, "attention_projections", None)
    if projections is None:  # dense GQA: QKV (h → q+2k, column-parallel) and the output (q → h, row-parallel)
        projections = ((h, q + 2 * k, "col"), (q, h, "row"))
    f_, d_, w_ = 0.0, 0.0, 0.0
    for K_, N_, split in projections:
        K_, N_ = float(K_), float(N_)
        shape = (T, K_, N_ / tp) if split == "col" else (T, K_ / tp, N_) if split == "row" else (T, K_, N_)
        g = c.fwd_bwd(*shape)
        f_, d_, w_ = f_ + g[0], d_ + g[1], w_ + g[2]
    hd = int(model.head_dim_)
    window = float(getattr(model, "sliding_window", 0) or 0)
    every = int(getattr(model, "full_attention_every", 1) or 1)
    share_windowed = (every - 1) / every if window > 0 else 0.0
    lay = longctx_terms.layout(model, job, c) if longctx_terms.active(job, P) else None
    flops_ring = _core_flops_fwd(model, c, 0.0)
    flops_full = flops_ring if lay is None else longctx_terms.core_flops_fwd(model, c, lay)

    def core(flops, skv):
        if job.attention == "flash":
            return _flash(c, hw, flops, skv, hd)
        return _materialized(model, c, hw)

    if lay is not None and job.attention == "flash":  # the masks' pairs at the layout's kernel key span
        a_f, a_b = longctx_terms.flash_times(c, hw, flops_full, lay, hd)
    else:
        a_f, a_b = core(flops_full, c.s / c.cp)
    if lay is not None and getattr(job, "sequences", None) is None:
        # a layout axis over fixed-length sequences (the search's cp_kind): the ring plans among them keep the
        # static ring's terms, so a plan is priced alike alone (estimate) and among others (search)
        ring = lay.kind == 0
        r_f, r_b = core(flops_ring, c.s / c.cp)
        a_f, a_b, flops_full = np.where(ring, r_f, a_f), np.where(ring, r_b, a_b), np.where(ring, flops_ring,
                                                                                            flops_full)
    attn_flops = flops_full
    if share_windowed > 0:  # local-window layers (gpt-oss, Llama 4): the mean over the layer pattern
        flops_w = _core_flops_fwd(model, c, window)
        w_f, w_b = core(flops_w, np.minimum(window, c.s / c.cp))
        a_f = (1 - share_windowed) * a_f + share_windowed * w_f
        a_b = (1 - share_windowed) * a_b + share_windowed * w_b
        attn_flops = (1 - share_windowed) * flops_full + share_windowed * flops_w
    # memory-bound token-wise ops (bytes moved forward): 2 norms (r h, w h), 2 residual adds (r 2h, w h),
    # dropouts (r h, w h, mask 1 B) if the model uses them, rotary on q,k
    norm_res = (2 * 2 * e + 2 * 3 * e + (2 * (2 * e + 1) if model.dropout else 0.0)) * c.Tsp * h
    rope = (2 * e * T * (q + k) / tp) if model.position == "rope" else 0.0
    # recompute=modules (Megatron-Core --recompute-modules layernorm mla_up_proj): the two norms (r h, w h each)
    # and the column-parallel up-projections that read a compressed latent (MLA: K < h) run again in backward
    norms = 2 * 2 * e * c.Tsp * h / c.bw_mem
    ups = sum(c.gemm_s(T, float(K_), float(N_) / tp) for K_, N_, split in projections
              if split == "col" and float(K_) < h)
    return AttentionBlock(gemm=(f_, d_, w_), attn_fwd=a_f, attn_bwd=a_b, attn_flops_fwd=attn_flops,
                          mem_fwd=(norm_res + rope) / c.bw_mem, rc_modules=norms + ups)


def _flash(c: StepContext, hw, flops, skv, hd):
    """Fused attention (Dao 2022/2023, Shah et al. 2024): backward = 2.5× forward FLOPs (recomputes QKᵀ); the
    kernel's efficiency by keys per block (s/c under CP; causal blocks only without CP), on the 16-bit peak."""
    ac = hw.attention
    cp = c.P.cp
    # CP (the load-balanced ring of Megatron-Core / Transformer Engine, AttnFuncWithCPAndKVP2P): a rank holds chunks
    # r and 2cp−1−r of s/(2cp) tokens; of its 2cp − 1 blocks' worth of work the diagonal step's (one block) runs
    # causal, the rest are full blocks — kernels over s/(2cp) keys
    phi = 1.0 / np.maximum(2.0 * cp - 1.0, 1.0)
    L = np.where(cp > 1, skv / 2.0, skv)

    def inv(backward):
        causal = 1.0 / attention_efficiency(L, hd, True, backward, ac)
        full = 1.0 / attention_efficiency(L, hd, False, backward, ac)
        return np.where(cp > 1, phi * causal + (1.0 - phi) * full, causal)

    return flops * inv(False) / c.peak16 + c.t_k, 2.5 * flops * inv(True) / c.peak16 + 2 * c.t_k


def _materialized(model, c: StepContext, hw):
    """Materialized attention (Megatron-LM 2021–22): batched GEMMs over the full s×s scores (masking after the
    product), scores written to HBM; scale-mask-softmax and dropout as memory-bound kernels; backward = 2 GEMMs
    per forward GEMM (Korthikanti et al. 2022 §4.1)."""
    a, q, e, s = float(model.heads), float(model.q_dim), c.e, c.s
    heads_local, sq = a / c.tp, s / c.cp
    kp = hw.kernels

    def bmm(M, K, N):
        one = np.maximum(2.0 * M * K * N / (c.peak16 * gemm_efficiency(M, K, N, kp, "bf16")),
                         (M * K + K * N + M * N) * e / c.bw_mem)
        return heads_local * c.b * one + c.t_k

    scores = heads_local * c.b * sq * s
    sm_fwd = (2 * e + (2 * e + 1) * (1.0 if model.dropout else 0.0)) * scores / c.bw_mem
    fwd = bmm(sq, q / a, s) + bmm(sq, s, q / a) + sm_fwd + c.t_k
    bwd = 2.0 * (bmm(sq, q / a, s) + bmm(sq, s, q / a)) + 1.5 * sm_fwd + c.t_k
    return fwd, bwd


def dense_mlp(model, c: StepContext, ffn_hidden: float | None = None):
    """MLP GEMMs (up: h → (nmat−1)·f, down: f → h, TP-split) and the activation kernel (gelu r f w f; swiglu
    r 2f w f) of one layer: ((fwd, dgrad, wgrad), memory-bound forward seconds)."""
    h = float(model.hidden)
    f = float(model.ffn_hidden if ffn_hidden is None else ffn_hidden)
    nmat = float(model.ffn_matrices)
    up = c.fwd_bwd(c.T, h, (nmat - 1) * f / c.tp)
    down = c.fwd_bwd(c.T, f / c.tp, h)
    act = (nmat * c.e) * c.T * f / c.tp
    return (up[0] + down[0], up[1] + down[1], up[2] + down[2]), act / c.bw_mem


def fp8_cast_s(model, c: StepContext, ffn_hidden: float | None = None):
    """fp8/MX casts + amax of GEMM inputs (the framework's recipe), bytes per element of h, q/t, h, f/t inputs."""
    f = float(model.ffn_hidden if ffn_hidden is None else ffn_hidden)
    h, q = float(model.hidden), float(model.q_dim)
    return c.hw.cast_bytes_per_element * c.T * (h + q / c.tp + h + f / c.tp) / c.bw_mem


def tp_exposure(fw, tp_comm, gemm_fwd, wgrad, gemm_bwd):
    """Exposed TP time per the framework: none; "wgrad" = input-grad all-reduce behind the weight-grad GEMMs
    (Megatron async all-reduce); "full" = communication pipelined with the adjacent GEMMs (TE userbuffers)."""
    ov = fw.tp_comm_overlap
    if ov == "full":
        tp_f, tp_b = np.maximum(0.0, tp_comm - gemm_fwd), np.maximum(0.0, tp_comm - gemm_bwd)
    elif ov == "wgrad":
        tp_f, tp_b = tp_comm, np.maximum(0.0, tp_comm - wgrad)
    else:
        tp_f, tp_b = tp_comm, tp_comm
    return tp_f, tp_b, (tp_comm - tp_f) + (tp_comm - tp_b)


def cp_exchange(model, c: StepContext, attn_fwd, attn_bwd):
    """CP ring of K,V blocks: (c−1) steps forward (K,V) and backward (K,V,dK,dV), hidden behind attention when the
    framework overlaps it (Liu et al. 2023, Ring Attention; Megatron-Core context parallelism).  Other layouts and
    sequence workloads: ``models/longctx_terms.py``."""
    if c.job is not None and longctx_terms.active(c.job, c.P):
        lay = longctx_terms.layout(model, c.job, c)
        f_, b_, h_, parts = longctx_terms.cp_comm(model, c, lay, attn_fwd, attn_bwd)
        c.lc_parts = {**parts, "cp_pairs_dev": lay.pairs_dev, "cp_tokens_max": lay.tokens_max}
        if getattr(c.job, "sequences", None) is None:  # ring plans among other layouts: the static ring (above)
            ring = lay.kind == 0
            r_f, r_b, r_h = _ring_exchange(model, c, attn_fwd, attn_bwd)
            f_, b_, h_ = np.where(ring, r_f, f_), np.where(ring, r_b, b_), np.where(ring, r_h, h_)
        return f_, b_, h_
    return _ring_exchange(model, c, attn_fwd, attn_bwd)


def _ring_exchange(model, c: StepContext, attn_fwd, attn_bwd):
    """The static ring over fixed-length sequences: (c−1) K,V blocks forward, K,V,dK,dV backward."""
    hw, fw = c.hw, c.hw.framework
    kv_block = 2.0 * c.T * float(model.kv_dim) / c.tp * c.e
    cp_bw, cp_lat, _ = hw.group_busbw(kv_block, c.tp * c.cp, 1.0, 2.0, "p2p")
    steps = c.cp - 1.0
    f_all = np.where(c.P.cp > 1, steps * (kv_block / cp_bw + cp_lat), 0.0)
    b_all = np.where(c.P.cp > 1, steps * (2 * kv_block / cp_bw + cp_lat), 0.0)
    f_ = np.maximum(0.0, f_all - (attn_fwd if fw.cp_comm_overlap else 0.0))
    b_ = np.maximum(0.0, b_all - (attn_bwd if fw.cp_comm_overlap else 0.0))
    return f_, b_, (f_all - f_) + (b_all - b_)


def global_terms(hw: HardwareContext) -> tuple[float, float]:
    """(per-layer host gap, interference coefficient): XLA compiles a whole TPU step, so no per-layer host gap."""
    terms = hw.terms
    return (terms.layer_overhead_s if hw.launches_kernels else 0.0), terms.overlap_interference


def dense_layer(model, job, c: StepContext) -> tuple[LayerTerms, AttentionBlock]:
    """A dense layer: attention block + MLP block, with TP/CP communication (Narayanan et al. 2021 §3)."""
    att = attention_block(model, job, c)
    (mf, md, mw), act_s = dense_mlp(model, c)
    gemm_fwd, dgrad, wgrad = att.gemm[0] + mf, att.gemm[1] + md, att.gemm[2] + mw
    mem_fwd = att.mem_fwd + act_s + fp8_cast_s(model, c)
    tp_comm = 2.0 * tp_pair_s(model, c)  # per direction: one pair for the attention half, one for the MLP
    tp_f, tp_b, tp_h = tp_exposure(c.hw.framework, tp_comm, gemm_fwd, wgrad, dgrad + wgrad)
    cp_f, cp_b, cp_h = cp_exchange(model, c, att.attn_fwd, att.attn_bwd)
    t_layer, intf = global_terms(c.hw)
    lt = LayerTerms(gemm_fwd=gemm_fwd, dgrad=dgrad, wgrad=wgrad, attn_fwd=att.attn_fwd, attn_bwd=att.attn_bwd,
                    mem_fwd=mem_fwd, mem_bwd=2.0 * mem_fwd, tp_fwd=tp_f, tp_bwd=tp_b, tp_hidden=tp_h,
                    cp_fwd=cp_f, cp_bwd=cp_b, cp_hidden=cp_h, rc_modules=att.rc_modules, t_layer=t_layer,
                    intf=intf)
    if getattr(c.hw.framework, "selective_recompute", "attention-core") == "op-sac":
        # op-level SAC saves the matmuls' and attention's outputs "except every second mm" and recomputes the
        # rest: half the projection/MLP GEMMs forward + the memory-bound forward ops (torchtitan
        # _apply_ac_to_transformer_block, _custom_policy)
        lt.rc_selective = 0.5 * gemm_fwd + mem_fwd
    return lt, att


def tp_pair_s(model, c: StepContext):
    """TP collectives of one layer half and direction: an all-reduce, or with SP an all-gather + a reduce-scatter,
    of T·h·e bytes (Shoeybi et al. 2019; Korthikanti et al. 2022)."""
    hw, tp = c.hw, c.tp
    nb_tp = c.T * float(model.hidden) * c.e
    bw_ar, lat_ar, mr_ar = hw.group_busbw(nb_tp, tp, 1.0, tp, "allreduce")
    bw_g, lat_g, mr_g = hw.group_busbw(nb_tp, tp, 1.0, tp, "gather")
    return np.where(c.P.sp, 2.0 * gather_s(nb_tp, tp, bw_g, lat_g, mr_g), allreduce_s(nb_tp, tp, bw_ar, lat_ar, mr_ar))
