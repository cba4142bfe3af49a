"""Memory per device of a dense-transformer training plan (vectorized over plans): model states under ZeRO/FSDP
(with hybrid sharding and FSDP without re-sharding after forward), activations (Korthikanti et al. 2022 §4,
generalized to GQA, SwiGLU and dropout-free models), logits, transients, framework reserve and fragmentation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models.rtp_terms import shard_buffer_bytes

GiB = float(2**30)
# Bytes of optimizer state per parameter for mixed-precision training: fp32 master weights + Adam m and v
# (ZeRO paper, Rajbhandari et al. SC'20, Sec. 3.1: K = 12); SGD with momentum keeps master + momentum (8).
OPTIMIZER_STATE_BYTES = {("adam", True): 12.0, ("adamw", True): 12.0, ("sgd", True): 8.0,
                         ("adam", False): 8.0, ("adamw", False): 8.0, ("sgd", False): 4.0}
# CUDA context, cuBLAS/NCCL workspaces and allocator reserve that no model accounts for (per device).
# Order of magnitude of `torch.cuda.memory_reserved` minus allocated on an idle 80 GB GPU after NCCL init.
FRAMEWORK_RESERVED_BYTES = 2.0 * GiB
# Allowance for allocator fragmentation and optimizer/misc temporaries: Megatron-LM's theoretical memory
# estimate adds 5 % (megatron/training/theoretical_memory_usage.py); we apply it to the dynamic part.
FRAGMENTATION_FRACTION = 0.05

MEMORY_PARTS = (
    "params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "zero3_gather_buffer_bytes",
    "transient_bytes", "framework_reserved_bytes", "fragmentation_bytes",
)


@dataclass
class StageShape:
    """What the memory formulas need of the plans (arrays) and the model (floats)."""

    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    v: np.ndarray
    m: np.ndarray
    T: np.ndarray  # tokens of one micro-batch on one device
    Tsp: np.ndarray  # rows of token-wise ops (SP splits them over TP)
    zero: np.ndarray
    rc: np.ndarray
    sp: np.ndarray
    reshard: np.ndarray
    shard: np.ndarray  # ranks of one ZeRO shard group
    n_first: np.ndarray
    n_last: np.ndarray
    params_first: np.ndarray  # parameters held by a first-stage device (already / tp)
    params_last: np.ndarray
    rotate: object = None  # RTP plans (bool array; None: none rotates): shard buffers, no gathered layer


def inflight_factors(S: StageShape):
    """Micro-batches whose activations the first stage holds: min(p, m) with 1F1B, and the interleaving penalty
    1 + (p−1)/(p·v) (Narayanan et al. 2021 §2.2; Megatron runs every forward first when m ≤ p)."""
    return np.minimum(S.pp, S.m), np.where((S.v > 1) & (S.m > S.pp), 1.0 + (S.pp - 1) / (S.pp * S.v), 1.0)


def last_stage_inflight(S: StageShape):
    """Micro-batches the last stage holds: one, or all m when the interleaved schedule runs every forward first
    (Megatron-Core's interleaved 1F1B when m ≤ p: num_warmup_microbatches = all)."""
    return np.where((S.v > 1) & (S.m <= S.pp), S.m, 1.0)


def layer_bytes_without_scores(model, T, tp, sp, e):
    """Activation bytes one layer keeps per micro-batch without recompute, the attention scores aside (Korthikanti
    et al. 2022 §4): the replicated part (split over TP only with SP) and the TP-split part."""
    h, q, k, f = float(model.hidden), float(model.q_dim), float(model.kv_dim), float(model.ffn_hidden)
    nmat = float(model.ffn_matrices)
    drop_mask = 1.0 if model.dropout else 0.0
    repl = (4 * e + 2 * drop_mask) * T * h  # LN1 in, QKV in, LN2 in, FC1 in (e bytes each) + 2 dropout masks
    split = (e * T * (q + k) + e * T * k + e * T * q + (nmat + (1 if nmat == 3 else 0)) * e * T * f) / tp
    # ^ Q and K for QKᵀ, V, attention output (out-proj input), MLP: gelu in + fc2 in (2f) | swiglu gate,up,fc2 in (3f)
    return np.where(sp, repl / tp, repl) + split


def allocator_overheads(fw, launches_kernels: bool = True) -> tuple[float, float]:
    """(fragmentation fraction of the dynamic part, reserved bytes) of the runtime that holds the step's buffers: a
    caching allocator (CUDA / ROCm: the constants above) or XLA:TPU's compile-time buffer assignment (no allocator
    to fragment; the framework's ``memory.tpu_reserved_bytes`` that the TPU runtime keeps)."""
    if fw is not None and getattr(fw, "tpu_compiled_buffers", False) and not launches_kernels:
        return 0.0, float(fw.tpu_reserved_bytes)
    return FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES


def matmul_output_bytes(model, T, tp, split, e):
    """Activation bytes one layer keeps under JAX's checkpoint_dots_with_no_batch_dims (MaxText remat_policy
    'minimal'): the layer input and the outputs of the weight matmuls the backward reads — Q, K and V projections,
    the output projection (the second norm's input is rebuilt from it) and the MLP's input projections ((n−1)·f:
    gate + up, or fc1); norms, activations and the attention core (a batched dot) are recomputed."""
    h, q, k, f = float(model.hidden), float(model.q_dim), float(model.kv_dim), float(model.ffn_hidden)
    nmat = float(model.ffn_matrices)
    repl = 2.0 * e * T * h  # layer input + output projection (embed-wide)
    split_part = e * T * (q + 2.0 * k + (nmat - 1.0) * f) / tp
    return np.where(split, repl / tp, repl) + split_part


def memory(model, job, S: StageShape, capacity: float, w_b: float, e: float, flash: bool,
           extra: dict | None = None, fw=None, launches_kernels: bool = True) -> dict:
    """Memory parts per device at the heaviest of the first and the last stage (bytes).  ``extra`` (a family's
    own terms, e.g. MoE experts): ``states_first``/``states_last`` = (weights, grads, optimizer) bytes added to the
    model states, ``act_first``/``act_last`` added to the activations, ``transient`` added to both stages'
    transients, ``zero3_buffer`` added to the ZeRO-3 gather buffer, ``per_layer`` replacing the per-layer activation bytes reported to the executor."""
    tp, pp, cp, v, m, T, Tsp = S.tp, S.pp, S.cp, S.v, S.m, S.T, S.Tsp
    zero, rc, sp = S.zero, S.rc, S.sp
    frag_fraction, reserved = allocator_overheads(fw, launches_kernels)
    if fw is not None and getattr(fw, "activations_split_over_tp", False):
        # the embed axis of every activation is sharded over TP (MaxText logical_axis_rules 'activation_embed')
        sp, Tsp = np.ones_like(T, dtype=bool), T / tp
    h, a = float(model.hidden), float(model.heads)
    q, k, f, V = float(model.q_dim), float(model.kv_dim), float(model.ffn_hidden), float(model.vocab)
    s = float(job.seq_len)
    mixed = job.precision != "fp32"
    single = pp == 1
    opt_b = OPTIMIZER_STATE_BYTES[(job.optimizer, mixed)]
    grad_b = np.where(zero >= 2, e, 4.0) if mixed else np.full_like(T, 4.0)
    zd = S.shard
    P_layer = float(model.layer_params)
    resh = S.reshard if S.rotate is None else S.reshard | S.rotate  # RTP keeps no gathered layer (``rtp_terms``)

    def model_state(params, n_layers):
        w = params * w_b / np.where(zero >= 3, zd, 1.0)
        # FSDP without re-sharding after forward keeps every gathered layer of the stage until its backward
        w = w + np.where((zero >= 3) & ~resh, n_layers * P_layer / tp * w_b * (1.0 - 1.0 / zd), 0.0)
        g = params * grad_b / np.where(zero >= 2, zd, 1.0)
        o = params * opt_b / np.where(zero >= 1, zd, 1.0)
        return w, g, o

    drop_mask = 1.0 if model.dropout else 0.0
    score = (e + (1 + e) * drop_mask) * a * s * (s / cp) * (T * cp / s) / tp  # softmax out (+ dropout mask, out)
    if flash:
        score = 0.0  # fused attention keeps only the softmax statistics (b·a·s fp32, negligible)
    per_layer_sel = layer_bytes_without_scores(model, T, tp, sp, e)
    per_layer_none = per_layer_sel + np.where(cp > 1, 0.0, score)
    working_set = per_layer_sel  # the layer being recomputed under full recompute holds its whole forward
    if fw is not None and getattr(fw, "selective_keeps", "korthikanti") == "matmul-outputs":
        per_layer_sel = matmul_output_bytes(model, T, tp, sp, e)
    per_layer_full = e * np.where(sp, T / tp, T) * h  # only the layer input is kept
    # recompute=modules (Megatron-Core fine-grained): the two norm outputs (QKV and FC1 inputs) are not kept, nor,
    # with MLA, the up-projected Q, K, V (only the compressed latents q_lora + kv_lora + rope are)
    ln_saving = 2 * e * Tsp * h
    mla_saving = 0.0
    if getattr(model, "is_mla", False):
        latent = float(model.q_lora_rank or model.hidden) + float(model.kv_lora_rank + model.qk_rope_head_dim)
        mla_saving = np.maximum(e * T * (q + k) / tp + e * T * k / tp - e * T * latent, 0.0)
    per_layer_mod = np.maximum(per_layer_sel - ln_saving - mla_saving, per_layer_full)
    per_layer = np.select([rc == 0, rc == 1, rc == 3], [per_layer_none, per_layer_sel, per_layer_mod], per_layer_full)
    # in-flight micro-batches on the first stage: min(p, m) with 1F1B; interleaving adds (p−1)/(p·v) of a stage
    # (Megatron runs every forward first when m ≤ p: then m micro-batches of the whole stage are in flight)
    inflight, penalty = inflight_factors(S)
    emb_extra = drop_mask * Tsp * h  # embedding dropout mask (its output is layer 0's input, counted per layer)
    act_first = (S.n_first * per_layer * inflight * penalty
                 + np.where(rc == 2, working_set, 0.0)  # working set of the layer being recomputed
                 + inflight * penalty * emb_extra)
    logits = 4.0 * T * h / tp + 4.0 * T * V / tp  # final norm input + fp32 logits for the loss (Korthikanti §4.3)
    act_first = act_first + np.where(single, logits, 0.0)
    # the last stage keeps one micro-batch in flight, except when Megatron's interleaved schedule runs every forward
    # first (m ≤ p): then all m micro-batches of the stage, and their loss buffers, are held at once
    last_inflight = last_stage_inflight(S)
    act_last = np.where(single, act_first, last_inflight * (S.n_last * per_layer + logits)
                        + np.where(rc == 2, working_set, 0.0))
    transient_first = 2.0 * e * T * f / tp  # the largest single backward buffer (an f-wide activation gradient)
    transient_last = np.maximum(transient_first, e * T * V / tp)  # and the logit gradients
    z3_buf = np.where((zero >= 3) & resh, 2.0 * P_layer * w_b / tp, 0.0)  # prefetched full layers (FSDP)
    if S.rotate is not None:  # RTP: the shard being computed on + the one arriving
        z3_buf = np.where(S.rotate, shard_buffer_bytes(P_layer, w_b, tp, zd), z3_buf)

    wf, gf, of = model_state(S.params_first, S.n_first)
    wl, gl, ol = model_state(S.params_last, S.n_last)
    if extra is not None:
        (xwf, xgf, xof), (xwl, xgl, xol) = extra["states_first"], extra["states_last"]
        wf, gf, of, wl, gl, ol = wf + xwf, gf + xgf, of + xof, wl + xwl, gl + xgl, ol + xol
        act_first = act_first + extra["act_first"]
        act_last = act_last + extra["act_last"]
        transient_first = transient_first + extra["transient"]
        transient_last = transient_last + extra["transient"]
        z3_buf = z3_buf + extra.get("zero3_buffer", 0.0)
        per_layer = extra.get("per_layer", per_layer)
    dyn_first = wf + gf + of + act_first + transient_first + z3_buf
    dyn_last = wl + gl + ol + act_last + transient_last + z3_buf
    heavy_last = dyn_last > dyn_first
    pick = lambda first, last: np.where(heavy_last, last, first)  # noqa: E731
    dyn = pick(dyn_first, dyn_last)
    frag = frag_fraction * dyn
    peak = dyn + frag + reserved
    out = {
        "params_bytes": pick(wf, wl), "grads_bytes": pick(gf, gl), "optimizer_bytes": pick(of, ol),
        "activations_bytes": pick(act_first, act_last), "zero3_gather_buffer_bytes": z3_buf,
        "transient_bytes": pick(transient_first, transient_last),
        "framework_reserved_bytes": np.full_like(peak, reserved), "fragmentation_bytes": frag,
        "memory_peak_bytes": peak, "memory_capacity_bytes": np.full_like(peak, capacity),
        "fits": peak <= capacity, "heaviest_memory_stage": np.where(heavy_last, pp - 1, 0),
        "op_activation_bytes_per_layer": per_layer, "op_activation_bytes_last_stage_extra": logits,
        "op_activation_bytes_first_stage_extra": np.broadcast_to(emb_extra, peak.shape) if np.ndim(emb_extra)
        else np.full_like(peak, emb_extra),
        "op_params_bytes_first": wf, "op_params_bytes_last": wl,
    }
    if extra is not None and "per_moe_layer" in extra:  # an MoE layer's activations (the executor allocates them)
        out["op_moe_activation_bytes_per_layer"] = per_layer + extra["per_moe_layer"]
    return out
