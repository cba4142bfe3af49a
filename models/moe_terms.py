"""Named cost terms of one mixture-of-experts layer, one micro-batch, one device (vectorized over plans): the
router, the token permutation, the expert-parallel all-to-all dispatch and combine (on the topology: inside the
scale-up domain, or hierarchically across it), the grouped expert GEMMs under expert load imbalance, the shared
experts, the expert-tensor-parallel gathers, and the framework's overlap of the all-to-all with compute.

Token accounting (Megatron-Core MoE, "parallel folding", Liu et al. 2025): attention runs over tp·cp·dp ranks, the
experts over etp·ep·edp ranks of the same devices.  With sequence parallelism a device holds n = T/t tokens
before the MoE layer and routes n·k copies; the ep ranks of an EP group exchange them so that each EP rank (etp
devices) receives on average etp·n·k copies, the busiest γ times as many (γ = expert load imbalance), and every
device of it computes them for f_e/etp of the expert FFN width.  FLOPs are conserved: n·k·γ·2·nmat·h·f_e.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.framework_schema import EP_A2A_OVERLAPS
from parplan.models.layer_terms import (AttentionBlock, LayerTerms, StepContext, attention_block, cp_exchange,
                                        dense_mlp, global_terms, tp_exposure, tp_pair_s)
from parplan.models.primitives.collectives import alltoall_s, curve_for, gather_s, hierarchical_alltoall_s
from parplan.models.primitives.kernels import grouped_gemm_efficiency
from parplan.models.primitives.moe_routing import (dispatch_buffer_bytes, imbalance_factor, permute_bytes_per_token,
                                                   router_bytes_per_token)


@dataclass
class MoEShape:
    """What the MoE terms need of the plans (arrays) and the model (floats)."""

    ep: np.ndarray
    etp: np.ndarray
    n_tok: np.ndarray  # tokens on one device before dispatch
    copies: np.ndarray  # routed copies one device sends (n·k)
    gamma: np.ndarray  # expert load imbalance (max/mean tokens per EP rank)
    m_dev: np.ndarray  # copies one device computes (etp·n·k·γ, the busiest rank)
    local_experts: np.ndarray  # E/ep
    edp: np.ndarray  # expert-data-parallel ranks
    ep_per_domain: np.ndarray  # EP ranks in one scale-up domain


def moe_shape(model, job, c: StepContext) -> MoEShape:
    P = c.P
    ep, etp = P.ep.astype(np.float64), P.etp.astype(np.float64)
    n_tok = c.Tsp
    copies = n_tok * float(model.top_k)
    override = getattr(job, "expert_imbalance", None)
    gamma = imbalance_factor(ep, int(model.experts), int(model.top_k), override)
    dpn = float(c.hw.devices_per_node)
    return MoEShape(ep=ep, etp=etp, n_tok=n_tok, copies=copies, gamma=gamma, m_dev=etp * copies * gamma,
                    local_experts=float(model.experts) / ep, edp=c.dp * c.cp * c.tp / (ep * etp),
                    # expert ranks are ordered etp, ep, edp (Megatron-Core's default order puts pp outermost)
                    ep_per_domain=np.clip(np.floor(dpn / etp), 1.0, ep))


def _grouped_s(c: StepContext, M, K, N, groups):
    """A grouped GEMM of ``groups`` (M×K)·(K×N) problems: flops at the grouped-kernel efficiency vs HBM traffic
    (every expert's weights read once), + one launch (CUTLASS / TE grouped GEMM)."""
    kp, hw = c.hw.kernels, c.hw
    flops = 2.0 * M * K * N * groups
    nbytes = groups * ((M * K + K * N) * c.in_b + M * N * c.e)
    eff = grouped_gemm_efficiency(M, K, N, groups, kp, hw.math_dtype)
    return np.maximum(flops / (c.peak * eff), nbytes / c.bw_mem) + c.t_k


def _alltoall(c: StepContext, nbytes, ms: MoEShape):
    """One all-to-all of ``nbytes`` per device over the EP group: the scale-up link's measured all-to-all curve when
    the group sits in one domain, else the hierarchical exchange (NVLink share ∥ NIC share, DeepEP-style)."""
    hw = c.hw
    ci = curve_for(hw.intra_kind, "alltoall", hw.intra_nvls)
    cx = curve_for(hw.inter_kind, "alltoall")
    bw_i = ci.busbw(nbytes, hw.intra_rate, ms.ep)
    bw_x = cx.busbw(nbytes, hw.inter_rate)
    inside = ms.ep * ms.etp <= hw.devices_per_node
    flat = alltoall_s(nbytes, ms.ep, bw_i, hw.intra_lat, ci.measured_ranks)
    hier = hierarchical_alltoall_s(nbytes, ms.ep, ms.ep_per_domain, bw_i, bw_x, hw.intra_lat, hw.inter_lat)
    return np.where(ms.ep > 1, np.where(inside, flat, hier), 0.0)


def ep_a2a_overlap_mode(job, fw) -> str:
    """How a run hides its EP all-to-all: the training job's own ``ep_a2a_overlap`` when it names one, else the
    framework profile's.  The switch is per recipe, not per framework: Megatron-Core's
    --overlap-moe-expert-parallel-comm defaults to off and Megatron-Bridge's performance recipes turn it on for some
    models only (scripts/performance WorkloadBaseConfig moe_a2a_overlap default False; True for DeepSeek-V3 and
    Qwen3-235B-A22B on H100, False for Qwen3-30B-A3B on H100)."""
    ov = getattr(job, "ep_a2a_overlap", None)
    if ov is None:
        return getattr(fw, "ep_a2a_overlap", "none")
    if ov not in EP_A2A_OVERLAPS:
        raise SpecError(f"ep_a2a_overlap {ov!r} is not one of {', '.join(EP_A2A_OVERLAPS)}",
                        key="training.ep_a2a_overlap")
    return ov


def moe_layer(model, job, c: StepContext, att: AttentionBlock | None = None) -> tuple[LayerTerms, dict]:
    """An MoE layer: the attention block + router, permutation, dispatch, experts, combine, shared experts."""
    hw, fw = c.hw, c.hw.framework
    att = att or attention_block(model, job, c)
    ms = moe_shape(model, job, c)
    h, e = float(model.hidden), c.e
    fe = float(model.moe_ffn_hidden)
    nmat = float(model.ffn_matrices)
    E = float(model.experts)

    # router: (n × h)·(h × E) in 16-bit on the 16-bit peak, then softmax/top-k over E logits per token
    r_f, r_d, r_w = (c.gemm_s(ms.n_tok, h, E, "bf16", c.peak16, e), c.gemm_s(ms.n_tok, E, h, "bf16", c.peak16, e),
                     c.gemm_s(h, ms.n_tok, E, "bf16", c.peak16, e))
    router_mem = router_bytes_per_token(E, float(model.top_k)) * ms.n_tok
    # experts: grouped GEMMs over the local experts, M = copies per local expert (the busiest rank)
    Mg = ms.m_dev / ms.local_experts
    up_n, dn_k = (nmat - 1) * fe / ms.etp, fe / ms.etp
    up = (_grouped_s(c, Mg, h, up_n, ms.local_experts), _grouped_s(c, Mg, up_n, h, ms.local_experts),
          _grouped_s(c, h, Mg, up_n, ms.local_experts))
    dn = (_grouped_s(c, Mg, dn_k, h, ms.local_experts), _grouped_s(c, Mg, h, dn_k, ms.local_experts),
          _grouped_s(c, dn_k, Mg, h, ms.local_experts))
    act = nmat * e * ms.m_dev * fe / ms.etp  # expert activation function (swiglu r 2f w f)
    # permute + unpermute: the device's own tokens out, the busiest rank's received copies back (per token of it)
    permute = 2.0 * permute_bytes_per_token(h, float(model.top_k), e, E) * ms.n_tok * ms.gamma * ms.etp
    cast = hw.cast_bytes_per_element * ms.m_dev * (h + fe / ms.etp)
    # shared experts: a dense MLP of shared·f_s over the device's tokens, TP-split like the dense MLP
    n_sh = float(getattr(model, "shared_experts", 0) or 0)
    fs = float(getattr(model, "shared_ffn_hidden", 0) or 0) or fe
    if n_sh > 0:
        (sf, sd, sw), sh_act = dense_mlp(model, c, ffn_hidden=n_sh * fs)
    else:
        sf = sd = sw = sh_act = 0.0

    gemm_fwd = att.gemm[0] + r_f + up[0] + dn[0] + sf
    dgrad = att.gemm[1] + r_d + up[1] + dn[1] + sd
    wgrad = att.gemm[2] + r_w + up[2] + dn[2] + sw
    mem_fwd = att.mem_fwd + (router_mem + act + permute + cast) / c.bw_mem + sh_act + \
        hw.cast_bytes_per_element * c.T * (2 * h + float(model.q_dim) / c.tp) / c.bw_mem

    # TP: the attention half's pair, and the shared experts' pair when there are shared experts
    tp_comm = tp_pair_s(model, c) * (2.0 if n_sh > 0 else 1.0)
    tp_f, tp_b, tp_h = tp_exposure(fw, tp_comm, gemm_fwd, wgrad, dgrad + wgrad)
    cp_f, cp_b, cp_h = cp_exchange(model, c, att.attn_fwd, att.attn_bwd)

    # expert-parallel all-to-all: dispatch (fp8 where the framework dispatches in fp8) and combine forward, their
    # gradients backward; the busiest rank receives γ× the mean; ETP gathers / scatters the received copies
    disp_b = 1.0 if (getattr(fw, "moe_dispatch_fp8", False) and c.in_b <= 1.05) else e
    a2a_disp = _alltoall(c, ms.copies * h * disp_b, ms) * ms.gamma
    a2a_comb = _alltoall(c, ms.copies * h * e, ms) * ms.gamma
    etp_bytes = ms.m_dev * h * e
    bw_g, lat_g, mr_g = hw.group_busbw(etp_bytes, ms.etp, 1.0, ms.etp, "gather")
    etp_x = np.where(ms.etp > 1, 2.0 * gather_s(etp_bytes, ms.etp, bw_g, lat_g, mr_g), 0.0)
    a2a_f = a2a_disp + a2a_comb + etp_x
    a2a_b = 2.0 * a2a_comb + etp_x  # dispatch-gradient and combine-gradient travel in 16-bit
    # overlap: "1f1b" (Megatron-Core --overlap-moe-expert-parallel-comm) and "dualpipe" (DeepSeek-V3 §3.2.1)
    # run one micro-batch's all-to-all under another's compute: per forward+backward pair only the excess shows
    # (not with full recompute: Megatron-Bridge's expert-parallel-overlap guide, "avoid EP overlap when full
    # activation recompute is enabled"; recipes pair the overlap with selective recompute)
    ov = ep_a2a_overlap_mode(job, fw)
    # the compute that hides the all-to-all is what TP and CP communication have not already claimed (one budget
    # of compute per layer: two overlaps cannot both hide behind the same GEMM)
    compute_f = gemm_fwd + att.attn_fwd
    compute_b = dgrad + wgrad + att.attn_bwd
    free = np.maximum(compute_f + compute_b - tp_h - cp_h, 0.0)
    on = (c.P.recompute != 2) & (ov in ("1f1b", "dualpipe")) & (ms.ep > 1)  # it overlaps the EP all-to-all
    if ov in ("1f1b", "dualpipe"):
        pair = np.maximum(0.0, a2a_f + a2a_b - free)
        # the exposed excess shows in the backward half of the pair (up to the backward's own all-to-all), so
        # that a faster compute never shortens the backward window that hides the gradient collectives
        pb = np.minimum(pair, a2a_b)
        ep_f, ep_b = np.where(on, pair - pb, a2a_f), np.where(on, pb, a2a_b)
    else:
        ep_f, ep_b = a2a_f, a2a_b
    ep_h = (a2a_f - ep_f) + (a2a_b - ep_b)
    etp_nic = np.where(ms.etp > hw.devices_per_node, etp_x / 2, 0.0)  # the ETP half on the EP port (no NVLink)
    t_layer, intf = global_terms(hw)
    terms = LayerTerms(gemm_fwd=gemm_fwd, dgrad=dgrad, wgrad=wgrad, attn_fwd=att.attn_fwd, attn_bwd=att.attn_bwd,
                       mem_fwd=mem_fwd, mem_bwd=2.0 * mem_fwd, tp_fwd=tp_f, tp_bwd=tp_b, tp_hidden=tp_h,
                       cp_fwd=cp_f, cp_bwd=cp_b, cp_hidden=cp_h, ep_fwd=ep_f, ep_bwd=ep_b, ep_hidden=ep_h,
                       ep_fwd_pair=np.where(on, ep_f, 0.0),
                       nic_a2a=np.where(ms.ep * ms.etp > hw.devices_per_node, a2a_disp + 3.0 * a2a_comb, 0.0),
                       # (the ETP gather's half travels on NVLink where the ETP group fits a domain)
                       ep_bwd_lead=np.where(ms.ep > 1, a2a_comb + etp_nic, 0.0),
                       ep_slack=np.where(on, np.maximum(free - a2a_f - a2a_b, 0.0), 0.0),
                       rc_modules=att.rc_modules + act / c.bw_mem,  # + moe_act: the experts' activation again
                       t_layer=t_layer, intf=intf)
    ops = {"pair_on": on, "a2a_dispatch_s": a2a_disp, "a2a_combine_s": a2a_comb, "etp_gather_s": etp_x,
           "a2a_bytes": ms.copies * h * e, "a2a_fwd_s": a2a_f, "a2a_bwd_s": a2a_b, "expert_imbalance": ms.gamma,
           "expert_tokens": ms.m_dev, "shape": ms,
           "buffer_bytes": dispatch_buffer_bytes(getattr(fw, "moe_dispatcher", "alltoall"), ms.n_tok, h,
                                                 float(model.top_k), ms.ep, e, ms.gamma) * ms.etp}
    return terms, ops
