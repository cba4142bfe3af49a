"""Analytical cost of one optimizer step of a dense transformer under a plan (dp, tp, pp, cp, mbs, vpp, zero,
recompute, sp) — time breakdown, memory breakdown per device, feasibility.

One formula, two uses: every function here works on numpy arrays of plans (``PlanArrays``), so ``estimate`` (one
plan) and the planner's search (millions of plans) run exactly the same code.  All quantities are SI floats.

Notation: B global batch (sequences), s sequence length, b micro-batch, h hidden, q = heads·head_dim, k = kv_heads·
head_dim, f FFN hidden, V vocab, L layers, t tp, p pp, c cp, v vpp, D dp, m = B/(D·b) micro-batches per pipeline.
Derivations: docs/cost_model.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.hardware.types import Cluster, Link, NodeGroup
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.plan import RECOMPUTE, Plan
from parplan.workloads.transformer import TransformerSpec, Workload

GiB = float(2**30)

# --- named constants (global; each with its source) -----------------------------------------------------------
# Bytes of optimizer state per parameter for mixed-precision training: fp32 master weights + Adam m and v
# (ZeRO paper, Rajbhandari et al. SC'20, Sec. 3.1: K = 12); SGD with momentum keeps master + momentum (8).
OPTIMIZER_STATE_BYTES = {("adam", True): 12.0, ("adamw", True): 12.0, ("sgd", True): 8.0,
                         ("adam", False): 8.0, ("adamw", False): 8.0, ("sgd", False): 4.0}
# Bytes moved per parameter by one Adam step (memory-bound): read master, m, v, fp32 grad (16 B), write master,
# m, v (12 B) and the 16-bit weight copy (2 B), plus one read of the grads for the global-norm clip (4 B).
OPTIMIZER_STEP_BYTES = {"adam": 34.0, "adamw": 34.0, "sgd": 26.0}
# CUDA context, cuBLAS/NCCL workspaces and allocator reserve that no model accounts for (per device).
# Order of magnitude of `torch.cuda.memory_reserved` minus allocated on an idle 80 GB GPU after NCCL init.
FRAMEWORK_RESERVED_BYTES = 2.0 * GiB
# Allowance for allocator fragmentation and optimizer/misc temporaries: Megatron-LM's theoretical memory
# estimate adds 5 % (megatron/training/theoretical_memory_usage.py); we apply it to the dynamic part.
FRAGMENTATION_FRACTION = 0.05
# Passes over the fp32 logits made by the vocab-parallel cross entropy (max, exp-sum, loss, grad): bytes per
# logit element, forward + backward (read bf16 2 B, write fp32 4 B, 2× read/write fp32 in softmax+grad).
CROSS_ENTROPY_BYTES_PER_LOGIT = 22.0


@dataclass
class PlanArrays:
    """Struct-of-arrays view of many plans (the vectorized form of ``Plan``)."""

    dp: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    mbs: np.ndarray
    vpp: np.ndarray
    zero: np.ndarray
    recompute: np.ndarray  # 0 none, 1 selective, 2 full
    sp: np.ndarray  # bool

    @classmethod
    def from_plans(cls, plans: "list[Plan]") -> "PlanArrays":
        def col(name: str) -> np.ndarray:
            return np.array([getattr(p, name) for p in plans], dtype=np.int64)

        return cls(dp=col("dp"), tp=col("tp"), pp=col("pp"), cp=col("cp"), mbs=col("mbs"), vpp=col("vpp"),
                   zero=col("zero"), recompute=np.array([RECOMPUTE.index(p.recompute) for p in plans], dtype=np.int64),
                   sp=np.array([bool(p.sp) for p in plans], dtype=bool))

    def __len__(self) -> int:
        return int(self.dp.shape[0])

    def plan(self, i: int) -> Plan:
        return Plan(dp=int(self.dp[i]), tp=int(self.tp[i]), pp=int(self.pp[i]), cp=int(self.cp[i]),
                    mbs=int(self.mbs[i]), vpp=int(self.vpp[i]), zero=int(self.zero[i]),
                    recompute=RECOMPUTE[int(self.recompute[i])], sp=bool(self.sp[i]))

    def subset(self, idx: np.ndarray) -> "PlanArrays":
        return PlanArrays(**{k: getattr(self, k)[idx] for k in self.__dataclass_fields__})


# Names of the time parts (seconds per step) and memory parts (bytes per device at the heaviest stage).
TIME_PARTS = (
    "compute_gemm_s", "compute_attention_s", "compute_memory_bound_s", "recompute_s", "tp_comm_exposed_s",
    "cp_comm_exposed_s", "pp_p2p_s", "pipeline_bubble_s", "dp_comm_exposed_s", "optimizer_s",
)
MEMORY_PARTS = (
    "params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "zero3_gather_buffer_bytes",
    "transient_bytes", "framework_reserved_bytes", "fragmentation_bytes",
)


# --- communication primitives (α–β, ring algorithms) ---------------------------------------------------------
def ring_allreduce_s(nbytes, ranks, bw, lat):
    """Ring all-reduce: 2(p−1)/p·n/β + 2(p−1)·α (Thakur et al. 2005; Patarasuk & Yuan 2009)."""
    p = np.maximum(ranks, 1)
    return np.where(p > 1, 2.0 * (p - 1) / p * nbytes / bw + 2.0 * (p - 1) * lat, 0.0)


def ring_allgather_s(nbytes, ranks, bw, lat):
    """Ring all-gather or reduce-scatter of n total bytes: (p−1)/p·n/β + (p−1)·α."""
    p = np.maximum(ranks, 1)
    return np.where(p > 1, (p - 1) / p * nbytes / bw + (p - 1) * lat, 0.0)


@dataclass(frozen=True)
class HardwareContext:
    """What the formulas need of a homogeneous group, with link efficiencies already applied."""

    peak_flops_per_s: float  # dense peak for the GEMM dtype
    peak16_flops_per_s: float  # 16-bit peak (attention kernels run in 16-bit even under fp8)
    memory_bandwidth_bytes_per_s: float
    memory_capacity_bytes: float
    devices_per_node: int
    intra_bw: float
    intra_lat: float
    inter_bw: float
    inter_lat: float
    eff: Efficiency
    gemm_eff: float
    math_dtype: str


def math_dtype(device_supports, precision: str) -> str:
    """dtype whose peak prices the GEMMs: fp32 training uses tf32 tensor cores where present."""
    if precision == "fp32":
        return "tf32" if device_supports("tf32") else "fp32"
    return precision


def hardware_context(group: NodeGroup, precision: str, eff: Efficiency | None = None) -> HardwareContext:
    dev = group.device
    eff = eff or efficiency_for(dev.id)
    dt = math_dtype(dev.supports, precision)
    if not dev.supports(dt):
        from parplan.errors import SpecError

        raise SpecError(f"device {dev.id} has no {precision} math", key="training.precision",
                        allowed=sorted(d for d in dev.peak_flops_per_s if d in ("fp32", "fp16", "bf16", "fp8")))
    p16 = dev.peak_flops_per_s.get("bf16", dev.peak_flops_per_s.get("fp16", dev.peak_flops_per_s.get(dt)))
    if precision == "fp32":
        p16 = dev.peak(dt)

    def link_bw(link: Link, bw: float) -> float:
        return bw * eff.link(link.kind)

    return HardwareContext(
        peak_flops_per_s=dev.peak(dt), peak16_flops_per_s=p16,
        memory_bandwidth_bytes_per_s=dev.memory_bandwidth_bytes_per_s, memory_capacity_bytes=dev.memory_bytes,
        devices_per_node=group.devices_per_node,
        intra_bw=link_bw(group.intra_node, group.intra_node.bandwidth_bytes_per_s), intra_lat=group.intra_node.latency_s,
        inter_bw=link_bw(group.inter_node, group.inter_node_bandwidth_per_device_bytes_per_s),
        inter_lat=group.inter_node.latency_s, eff=eff, gemm_eff=eff.gemm.get(dt, eff.gemm.get("bf16", 0.7)),
        math_dtype=dt,
    )


def _group_link(extent, per_node, hw: HardwareContext):
    """Bandwidth/latency seen by a collective over a group whose ranks occupy ``extent`` consecutive devices with
    ``per_node`` members on each node.  Inside a node: the intra-node link.  Across nodes: NCCL runs one ring per
    NIC, so the r members of a node drive r NICs in parallel and the bottleneck is min(intra, r·NIC) per device
    (NCCL multi-ring design; e.g. 8 GPUs with one NIC each reach ≈ 8× the NIC rate of bus bandwidth)."""
    cross = extent > hw.devices_per_node
    bw = np.where(cross, np.minimum(hw.intra_bw, np.maximum(per_node, 1) * hw.inter_bw), hw.intra_bw)
    return bw, np.where(cross, hw.inter_lat, hw.intra_lat)


def evaluate(model: TransformerSpec, job, hw: HardwareContext, P: PlanArrays) -> dict[str, np.ndarray]:
    """Price one optimizer step for every plan in ``P``; returns named arrays (time parts in s, memory in bytes)."""
    f64 = np.float64
    dp, tp, pp, cp = (P.dp.astype(f64), P.tp.astype(f64), P.pp.astype(f64), P.cp.astype(f64))
    b, v = P.mbs.astype(f64), P.vpp.astype(f64)
    zero, rc, sp = P.zero, P.recompute, P.sp
    L, h, a = float(model.layers), float(model.hidden), float(model.heads)
    q, k, f, V = float(model.q_dim), float(model.kv_dim), float(model.ffn_hidden), float(model.vocab)
    nmat = float(model.ffn_matrices)
    s, B = float(job.seq_len), float(job.global_batch)
    mixed = job.precision != "fp32"
    e = 2.0 if mixed else 4.0  # bytes per activation / 16-bit weight value
    in_b = 1.0 if job.precision == "fp8" else e  # bytes per GEMM input element (fp8 GEMMs read 1-byte operands)
    m = B / (dp * b)  # micro-batches per pipeline per step
    T = b * s / cp  # tokens of one micro-batch on one device (CP splits the sequence)
    Tsp = np.where(sp, T / tp, T)  # rows handled by token-wise ops (SP splits them over TP ranks)

    peak, peak16 = hw.peak_flops_per_s, hw.peak16_flops_per_s
    eta_g, eta_a, eta_m = hw.gemm_eff, hw.eff.attention, hw.eff.memory
    bw_mem = hw.memory_bandwidth_bytes_per_s * eta_m
    t_k = hw.eff.kernel_overhead_s
    d_half = hw.eff.gemm_half_dim

    def gemm_s(M, K, N):
        """One GEMM (M×K)·(K×N): roofline of dense peak·η and HBM traffic, plus a fixed kernel overhead."""
        flops = 2.0 * M * K * N
        nbytes = (M * K + K * N) * in_b + M * N * e
        d = np.minimum(np.minimum(M, K), N)
        return np.maximum(flops / (peak * eta_g * d / (d + d_half)), nbytes / bw_mem) + t_k

    # --- one transformer layer, one micro-batch, one device (Narayanan et al. 2021 §3; Korthikanti et al. 2022) --
    # forward GEMMs: QKV (h → q+2k), attention out (q → h), MLP up (h → nmat−1 matrices of f), MLP down (f → h)
    g_qkv = gemm_s(T, h, (q + 2 * k) / tp)
    g_out = gemm_s(T, q / tp, h)
    g_up = gemm_s(T, h, (nmat - 1) * f / tp)
    g_down = gemm_s(T, f / tp, h)
    gemm_fwd = g_qkv + g_out + g_up + g_down
    # backward = data-gradient + weight-gradient GEMM of the same size each (2× forward)
    gemm_bwd = 2.0 * gemm_fwd
    wgrad = gemm_fwd  # the weight-gradient half of the backward, which can hide TP comm (async all-reduce)
    attn_flops_fwd = 2.0 * b * s * s * q / (tp * cp)  # causal: QKᵀ and AV over the lower triangle
    if job.attention == "flash":
        # fused attention (Dao et al. 2022/2023): scores stay on chip; backward = 2.5× forward FLOPs (it recomputes
        # QKᵀ), at the device's attention-kernel efficiency on the 16-bit peak
        attn_fwd = attn_flops_fwd / (peak16 * eta_a) + t_k
        attn_bwd = 2.5 * attn_flops_fwd / (peak16 * eta_a) + 2 * t_k
    else:
        # materialized attention (Megatron-LM 2021–22): batched GEMMs over the full s×s scores (masking after the
        # product, so no causal saving), scores written to HBM; scale-mask-softmax (r/w 16-bit) and dropout
        # (r/w 16-bit + 1-byte mask) as separate memory-bound kernels; backward = 2 GEMMs per forward GEMM and
        # the gradient kernels read output + gradient and write one gradient (Korthikanti et al. 2022 §4.1)
        heads_local = a / tp
        sq = s / cp
        def bmm(M, K, N):
            d = np.minimum(np.minimum(M, K), N)
            one = np.maximum(2.0 * M * K * N / (peak16 * eta_g * d / (d + d_half)), (M * K + K * N + M * N) * e / bw_mem)
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
    fp8_cast = (3.0 * T * (h + q / tp + h + f / tp)) if job.precision == "fp8" else 0.0  # bf16→fp8 casts of inputs
    mem_fwd = (norm_res + rope + act + fp8_cast) / bw_mem
    mem_bwd = 2.0 * mem_fwd  # backward reads the saved input and the incoming gradient, writes one gradient

    # TP: 2 all-reduces forward + 2 backward per layer (or AG+RS pairs with SP, same volume) of T·h·e bytes
    dpn = float(hw.devices_per_node)
    tp_bw, tp_lat = _group_link(tp, 1.0, hw)
    tp_ar = ring_allreduce_s(T * h * e, P.tp, tp_bw, tp_lat)
    tp_fwd = 2.0 * tp_ar
    tp_bwd_exposed = np.maximum(0.0, 2.0 * tp_ar - wgrad)  # Megatron overlaps input-grad all-reduce with wgrad GEMMs

    # CP: ring exchange of K,V blocks, (c−1) steps forward (K,V) and backward (K,V,dK,dV), hidden behind attention
    cp_bw, cp_lat = _group_link(tp * cp, 1.0, hw)  # ring p2p: one neighbour pair per step
    kv_block = 2.0 * T * k / tp * e
    cp_steps = cp - 1.0
    cp_fwd = np.where(P.cp > 1, np.maximum(0.0, cp_steps * (kv_block / cp_bw + cp_lat) - attn_fwd), 0.0)
    cp_bwd = np.where(P.cp > 1, np.maximum(0.0, cp_steps * (2 * kv_block / cp_bw + cp_lat) - attn_bwd), 0.0)

    layer_fwd = gemm_fwd + attn_fwd + mem_fwd + tp_fwd + cp_fwd
    layer_bwd = gemm_bwd + attn_bwd + mem_bwd + tp_bwd_exposed + cp_bwd
    # recompute in the backward: selective = attention core forward again; full = the whole layer forward again
    layer_rc = np.where(rc == 2, layer_fwd, np.where(rc == 1, attn_fwd, 0.0))

    # --- stages: uneven layer split rule: floor(L/p) each, the L mod p extra layers go to the first stages -----
    base = np.floor(L / pp)
    extra = L - base * pp
    n_first = base + (extra > 0)
    n_last = np.where(pp > 1, base, n_first)
    n_mid_total = np.maximum(L - n_first - np.where(pp > 1, n_last, 0.0), 0.0)
    n_mid_max = np.where(pp > 2, base + (extra > 1), 0.0)

    # embedding (first stage): gather forward, scatter-add backward (memory-bound on T·h)
    emb_fwd = 2.0 * e * Tsp * h / bw_mem
    emb_bwd = (e + 8.0) * Tsp * h / bw_mem
    # output layer (last stage): logits GEMM T×h×V/t, its 2 backward GEMMs, vocab-parallel cross entropy
    g_logit = gemm_s(T, h, V / tp)
    ce = CROSS_ENTROPY_BYTES_PER_LOGIT * T * V / tp / bw_mem
    out_fwd = g_logit + 0.4 * ce
    out_bwd = 2.0 * g_logit + 0.6 * ce

    # PP p2p per micro-batch per boundary: activations b·(s/c)·h·e, split over TP (scatter-gather optimization)
    pp_bw, pp_lat = _group_link(tp * cp * pp, 1.0, hw)  # each device sends its own slice to its peer
    p2p = np.where(P.pp > 1, T * h * e / tp / pp_bw + pp_lat, 0.0)
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
    slot_first = f_first + b_first + p2p_stage
    slot_last = np.where(single, slot_first, f_last + b_last + p2p_stage)
    slot_mid = np.where(pp > 2, f_mid + b_mid + p2p_stage, 0.0)
    sum_slots = np.where(single, slot_first,
                         slot_first + slot_last + n_mid_total * (layer_fwd + layer_bwd + layer_rc)
                         + np.maximum(pp - 2, 0) * p2p_stage)
    t_max = np.maximum(np.maximum(slot_first, slot_last), slot_mid)
    # pipeline makespan, 1F1B / interleaved 1F1B (Narayanan et al. 2021 §2.2, bubble (p−1)/(v·m) when balanced),
    # generalized to unequal stages: m·max + (Σ − max)/v
    t_pipe = m * t_max + (sum_slots - t_max) / v
    bubble = t_pipe - m * t_max

    # critical stage: which slot is the max (0 first, 1 middle, 2 last) — for the breakdown
    crit = np.where(slot_first >= np.maximum(slot_last, slot_mid), 0, np.where(slot_last >= slot_mid, 2, 1))
    n_crit = np.where(crit == 0, n_first, np.where(crit == 2, n_last, n_mid_max))
    has_out = np.where(crit == 2, 1.0, np.where(single, 1.0, 0.0))
    has_emb = np.where(crit == 0, 1.0, 0.0)

    # --- parameters per device (first and last stage), Megatron sharding ---------------------------------------
    P_layer = float(model.layer_params)
    emb_p = float(model.embedding_params)
    # output projection + final norm; with pp>1 the last stage holds the projection even if tied (Megatron)
    out_p = float(model.vocab * model.hidden + model.norm_params_per_norm)
    out_own = float(model.output_params)
    params_first = (n_first * P_layer + emb_p + np.where(single, out_own, 0.0)) / tp
    params_last = np.where(single, params_first, (n_last * P_layer + out_p) / tp)
    params_mid = n_mid_max * P_layer / tp

    # --- data-parallel gradient / parameter traffic (grad-sharing group = dp × cp) ----------------------------
    zdeg = dp * cp
    # members of the gradient group (dp × cp) that share a node: the CP members inside it, and the DP members
    # when a whole model replica (tp·cp·pp) is smaller than a node
    per_node = np.where(tp * cp >= dpn, np.maximum(np.floor(dpn / tp), 1.0),
                        np.where(tp * cp * pp < dpn, np.floor(dpn / (tp * pp)), cp))
    dp_bw, dp_lat = _group_link(tp * cp * pp * dp, per_node, hw)
    g_red = np.where(zero >= 2, e, 4.0)  # Megatron reduces fp32 main grads; ZeRO-2/3 (DeepSpeed, FSDP) reduce in 16-bit
    w_b = e

    def dp_sync(params):
        rs = ring_allgather_s(params * g_red, P.dp * P.cp, dp_bw, dp_lat)
        ag = ring_allgather_s(params * w_b, P.dp * P.cp, dp_bw, dp_lat)
        ar = ring_allreduce_s(params * g_red, P.dp * P.cp, dp_bw, dp_lat)
        return rs, ag, ar

    rs_f, ag_f, ar_f = dp_sync(params_first)
    rs_l, ag_l, ar_l = dp_sync(params_last)
    # zero 0: all-reduce after the last backward, overlapped with that micro-batch's backward (bucketed DDP);
    # zero 1: reduce-scatter (overlapped the same way) + parameter all-gather after the step (overlapped with the
    # next step's first forward); zero 2: reduce-scatter every micro-batch behind its backward, all-gather after
    # the step; zero 3: all-gather parameters forward and backward and reduce-scatter every micro-batch (FSDP).
    win_f_b, win_l_b = b_first, b_last + np.maximum(pp - 1, 0) * b_mid / v
    dp0 = np.maximum(np.maximum(0.0, ar_f - win_f_b), np.maximum(0.0, ar_l - win_l_b))
    dp1 = (np.maximum(np.maximum(0.0, rs_f - win_f_b), np.maximum(0.0, rs_l - win_l_b))
           + np.maximum(np.maximum(0.0, ag_f - f_first), np.maximum(0.0, ag_l - f_last)))
    dp2 = (m * np.maximum(np.maximum(0.0, rs_f - b_first), np.maximum(0.0, rs_l - b_last))
           + np.maximum(np.maximum(0.0, ag_f - f_first), np.maximum(0.0, ag_l - f_last)))
    # zero 3 with a pipeline: the per-micro-batch exposure lengthens every slot; in the fill a stage prefetches its
    # forward gathers while it waits for its input (hidden), in the drain the backward gathers and reduce-scatters
    # sit on the critical path once more per remaining stage: + (p−1)/v backward exposures (checked against the
    # reference executor, benchmarks/validate_matrix.py)
    x_b = np.maximum(np.maximum(0.0, ag_f + rs_f - b_first), np.maximum(0.0, ag_l + rs_l - b_last))
    dp3 = m * np.maximum(np.maximum(0.0, ag_f - f_first) + np.maximum(0.0, ag_f + rs_f - b_first),
                         np.maximum(0.0, ag_l - f_last) + np.maximum(0.0, ag_l + rs_l - b_last)) \
        + np.maximum(pp - 1, 0) / v * x_b
    dp_exposed = np.where(P.dp * P.cp > 1, np.select([zero == 0, zero == 1, zero == 2], [dp0, dp1, dp2], dp3), 0.0)

    # optimizer step: memory-bound over the parameters this device updates (sharded by ZeRO ≥ 1)
    opt_params = np.maximum(np.maximum(params_first, params_last), params_mid) / np.where(zero >= 1, zdeg, 1.0)
    optimizer = opt_params * OPTIMIZER_STEP_BYTES[job.optimizer] / bw_mem

    step = t_pipe + dp_exposed + optimizer

    # --- time breakdown of the critical stage (sums to the step time) -----------------------------------------
    gemm_c = m * (n_crit * gemm_fwd * 3.0 + has_out * 3.0 * g_logit)
    attn_c = m * n_crit * (attn_fwd + attn_bwd)
    memb_c = m * (n_crit * (mem_fwd + mem_bwd) + has_emb * (emb_fwd + emb_bwd) + has_out * ce)
    rc_c = m * n_crit * layer_rc
    tp_c = m * n_crit * (tp_fwd + tp_bwd_exposed)
    cp_c = m * n_crit * (cp_fwd + cp_bwd)
    p2p_c = m * p2p_stage
    # attribute the remainder of m·t_max (kernel rounding in stage assembly) to compute_gemm so parts sum exactly
    resid = m * t_max - (gemm_c + attn_c + memb_c + rc_c + tp_c + cp_c + p2p_c)
    gemm_c = gemm_c + resid

    # --- FLOPs: model FLOPs (Megatron convention: non-causal attention, no recompute) and hardware FLOPs -----
    layer_fwd_model = 2.0 * (h * (q + 2 * k) + q * h + nmat * h * f) + 4.0 * s * q  # per token
    model_flops = 3.0 * B * s * (L * layer_fwd_model + 2.0 * h * V)
    rc_flops_per_token = np.where(rc == 2, L * layer_fwd_model, np.where(rc == 1, L * 4.0 * s * q, 0.0))
    hw_flops = model_flops + B * s * rc_flops_per_token
    n_dev = dp * tp * pp * cp

    # --- memory per device at the heaviest stage -------------------------------------------------------------
    opt_b = OPTIMIZER_STATE_BYTES[(job.optimizer, mixed)]
    grad_b = np.where(zero >= 2, e, 4.0) if mixed else np.full_like(dp, 4.0)
    zd = zdeg

    def model_state(params):
        w = params * w_b / np.where(zero >= 3, zd, 1.0)
        g = params * grad_b / np.where(zero >= 2, zd, 1.0)
        o = params * opt_b / np.where(zero >= 1, zd, 1.0)
        return w, g, o

    # activations per layer per micro-batch (Korthikanti et al. 2022 §4, Table 2, generalized to GQA, SwiGLU and
    # no-dropout models): replicated part (not split by TP unless SP) and TP-split part, bytes
    drop_mask = 1.0 if model.dropout else 0.0
    repl = (4 * e + 2 * drop_mask) * T * h  # LN1 in, QKV in, LN2 in, FC1 in (e bytes each) + 2 dropout masks
    split = (e * T * (q + k) + e * T * k + e * T * q + (nmat + (1 if nmat == 3 else 0)) * e * T * f) / tp
    # ^ Q and K for QKᵀ, V, attention output (out-proj input), MLP: gelu in + fc2 in (2f) | swiglu gate,up,fc2 in (3f)
    score = (e + (1 + e) * drop_mask) * a * s * (s / cp) * b / tp  # softmax out (+ dropout mask and output)
    if job.attention == "flash":
        score = 0.0  # fused attention keeps only the softmax statistics (b·a·s fp32, negligible)
    per_layer_none = np.where(sp, repl / tp, repl) + split + np.where(P.cp > 1, 0.0, score)
    per_layer_sel = np.where(sp, repl / tp, repl) + split
    per_layer_full = e * np.where(sp, T / tp, T) * h  # only the layer input is kept
    per_layer = np.select([rc == 0, rc == 1], [per_layer_none, per_layer_sel], per_layer_full)
    # in-flight micro-batches on the first stage: min(p, m) with 1F1B; interleaving adds (p−1)/(p·v) of a stage
    # (Megatron runs every forward first when m ≤ p: then m micro-batches of the whole stage are in flight)
    inflight = np.minimum(pp, m)
    penalty = np.where((v > 1) & (m > pp), 1.0 + (pp - 1) / (pp * v), 1.0)
    emb_extra = drop_mask * Tsp * h  # embedding dropout mask (its output is layer 0's input, counted per layer)
    act_first = (n_first * per_layer * inflight * penalty
                 + np.where(rc == 2, per_layer_sel, 0.0)  # working set of the layer being recomputed
                 + inflight * penalty * emb_extra)
    logits = 4.0 * T * h / tp + 4.0 * T * V / tp  # final norm input + fp32 logits for the loss (Korthikanti §4.3)
    act_first = act_first + np.where(single, logits, 0.0)
    act_last = np.where(single, act_first, n_last * per_layer + np.where(rc == 2, per_layer_sel, 0.0) + logits)
    # transient working set: the largest single backward buffer (an f-wide activation gradient) and logit grads
    transient_first = 2.0 * e * T * f / tp
    transient_last = np.maximum(transient_first, e * T * V / tp)
    z3_buf = np.where(zero >= 3, 2.0 * P_layer * w_b / tp, 0.0)  # prefetched full layers under FSDP/ZeRO-3

    wf, gf, of = model_state(params_first)
    wl, gl, ol = model_state(params_last)
    dyn_first = wf + gf + of + act_first + transient_first + z3_buf
    dyn_last = wl + gl + ol + act_last + transient_last + z3_buf  # (one stage: its memory is the last-stage view)
    heavy_last = dyn_last > dyn_first
    pick = lambda first, last: np.where(heavy_last, last, first)  # noqa: E731
    dyn = pick(dyn_first, dyn_last)
    frag = FRAGMENTATION_FRACTION * dyn
    mem_peak = dyn + frag + FRAMEWORK_RESERVED_BYTES

    tokens = B * s
    # per-operation costs that the reference executor plays out (it never re-derives them): one micro-batch on
    # one device, per stage kind; comm as bytes + the link (bandwidth after efficiency, latency) it travels on
    ops = {
        "op_layer_fwd_s": layer_fwd, "op_layer_bwd_s": layer_bwd, "op_layer_recompute_s": layer_rc,
        "op_layer_tp_fwd_s": tp_fwd, "op_layer_tp_bwd_exposed_s": tp_bwd_exposed,
        "op_emb_fwd_s": emb_fwd, "op_emb_bwd_s": emb_bwd, "op_out_fwd_s": out_fwd, "op_out_bwd_s": out_bwd,
        "op_stage_first_fwd_s": f_first, "op_stage_first_bwd_s": b_first,
        "op_stage_mid_fwd_s": f_mid, "op_stage_mid_bwd_s": b_mid,
        "op_stage_last_fwd_s": f_last, "op_stage_last_bwd_s": b_last,
        "op_p2p_s": p2p, "op_p2p_bytes": np.where(P.pp > 1, T * h * e / tp, 0.0),
        "link_pp_bytes_per_s": pp_bw, "link_pp_latency_s": pp_lat,
        "op_dp_grad_bytes_first": params_first * g_red, "op_dp_grad_bytes_last": params_last * g_red,
        "op_dp_param_bytes_first": params_first * w_b, "op_dp_param_bytes_last": params_last * w_b,
        "op_dp_ranks": dp * cp, "link_dp_bytes_per_s": dp_bw, "link_dp_latency_s": dp_lat,
        "op_dp_allreduce_first_s": ar_f, "op_dp_allreduce_last_s": ar_l,
        "op_dp_reduce_scatter_first_s": rs_f, "op_dp_reduce_scatter_last_s": rs_l,
        "op_dp_allgather_first_s": ag_f, "op_dp_allgather_last_s": ag_l,
        "op_optimizer_s": optimizer, "op_activation_bytes_per_layer": per_layer,
        "op_activation_bytes_first_stage_extra": np.broadcast_to(emb_extra, step.shape) if np.ndim(emb_extra)
        else np.full_like(step, emb_extra),
        "op_activation_bytes_last_stage_extra": logits,
        "op_params_bytes_first": wf, "op_params_bytes_last": wl,
        "layers_mid_stage": n_mid_max, "pipeline_s": t_pipe,
    }
    out = {**ops,
        "step_time_s": step,
        "tokens_per_s": tokens / step,
        "model_flops_per_step": np.broadcast_to(model_flops, step.shape).astype(f64),
        "hardware_flops_per_step": hw_flops,
        "mfu": model_flops / (step * n_dev * peak),
        "hfu": hw_flops / (step * n_dev * peak),
        "micro_batches": m,
        "layers_first_stage": n_first,
        "layers_last_stage": n_last,
        "critical_stage": crit,
        "heaviest_memory_stage": np.where(heavy_last, pp - 1, 0),
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
        "params_bytes": pick(wf, wl),
        "grads_bytes": pick(gf, gl),
        "optimizer_bytes": pick(of, ol),
        "activations_bytes": pick(act_first, act_last),
        "zero3_gather_buffer_bytes": z3_buf,
        "transient_bytes": pick(transient_first, transient_last),
        "framework_reserved_bytes": np.full_like(step, FRAMEWORK_RESERVED_BYTES),
        "fragmentation_bytes": frag,
        "memory_peak_bytes": mem_peak,
        "memory_capacity_bytes": np.full_like(step, hw.memory_capacity_bytes),
        "fits": mem_peak <= hw.memory_capacity_bytes,
        # compute-only lower bound: model+recompute FLOPs of the critical stage at full peak, no comm, no bubble
        "compute_bound_s": m * (n_crit * (3.0 * 2.0 * T * (h * (q + 2 * k) + q * h + nmat * h * f) / tp
                                          + 3.0 * attn_flops_fwd) + has_out * 6.0 * T * h * V / tp) / peak,
    }
    return out


def evaluate_workload(workload: Workload, cluster: Cluster, plans: PlanArrays,
                      eff: Efficiency | None = None) -> dict[str, np.ndarray]:
    hw = hardware_context(cluster.group, workload.training.precision, eff)
    return evaluate(workload.model, workload.training, hw, plans)
