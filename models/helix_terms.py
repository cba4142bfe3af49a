"""HelixPipe's attention-parallel pipeline (S19: "HelixPipe: Efficient Distributed Training of Long Sequence
Transformers with Attention Parallel Pipeline Parallelism", arXiv 2507.00394), vectorized over plans.

What ``helix=true`` prices (the parts of the technique this model expresses; docs/cost_model.md "HelixPipe"):

* **helix placement**: the layers are dealt to the stages round-robin — layer l on stage l mod p — instead of
  L/p consecutive layers per stage; a micro-batch spirals through the stages L/p times, so the p micro-batches in
  flight compute their attentions on p different stages at once (the attention-parallel partition) and the
  pipeline's fill and drain last one layer per stage, not L/p of them;
* **FILO order**: every forward first, then the backwards in reverse micro-batch order — each stage holds the
  activations of every micro-batch at the turn, the same on every stage (1F1B's first stage holds p of them,
  its last one);
* **recomputation without attention** (recompute=full): the backward replays a layer's forward except the
  attention core, whose output and softmax statistics are kept.

Per micro-batch and layer on one device (its tp ranks in lockstep): forward F, backward B' (its recompute
included), one hop h_f / h_b of the layer input x / its gradient to the next / previous stage.  With n = L/p
layers per stage:

* stage work  W = m·n·(F + B') (+ the embedding on stage 0, the output layer and loss on stage p − 1);
* makespan    W_max + (p − 1)·(F + B' + h_f + h_b) — GPipe's fill and drain of one layer per stage (every stage
  idles p − 1 − k slots at the end of the forwards and k at the start, forward and backward alike); with fewer
  micro-batches than stages the chain of one micro-batch through all L layers and back bounds it instead;
* the busiest port carries every layer's x out (forward) and dx back (backward): the step is at least that
  volume at the pipeline link's bandwidth; the sends are asynchronous, so only the excess is exposed.

Not priced: the paper's chunked MLP (the transient working set stays the dense model's); placing a micro-batch's
attention on a stage other than its layer's (the paper's QKV-weight shipping, 2·b·s·h + 3·h² per layer and
micro-batch) — the reference executor's list schedules gain ≤ 5 % from it with m = p micro-batches and lose with
m ≥ 2p, so the layer's own stage computes it.  Everything outside the pipeline (data-parallel reduction, optimizer,
weight casts) is the dense model's for the same plan (``models/step_terms.py``).
"""
from __future__ import annotations

import numpy as np

from parplan.errors import SpecError

HELIX_RECOMPUTE = ("none", "full")  # full = HelixPipe's recomputation without attention
LSE_BYTES = 4.0  # fp32 log-sum-exp per (token, head) kept by flash attention for its backward (FlashAttention-2 §3)


def validate_helix(workload, plan) -> None:
    """HelixPipe plans: a pipeline (pp ≥ 2) whose stages divide the layers, no context parallelism, no
    interleaving (the helix is its own), ZeRO ≤ 1, recompute none or full, fused attention."""
    L = int(workload.model.layers)
    if plan.pp < 2:
        raise SpecError("helix=true (HelixPipe) is a pipeline schedule: it needs pp ≥ 2", key="plan.pp")
    if L % plan.pp:
        raise SpecError(f"helix=true deals layers={L} round-robin to the stages: pp={plan.pp} must divide it",
                        key="plan.pp", hint="choose pp among " + ", ".join(str(d) for d in range(2, L + 1) if L % d == 0))
    for key, bad in (("cp", plan.cp != 1), ("vpp", plan.vpp != 1)):
        if bad:
            raise SpecError(f"helix=true has its own layer placement and replaces context parallelism: {key} must be "
                            f"1, got {getattr(plan, key)}", key=f"plan.{key}", allowed=["1"])
    if plan.zero > 1:
        raise SpecError(f"helix=true is priced with zero ≤ 1, got zero={plan.zero}", key="plan.zero",
                        allowed=["0", "1"])
    if plan.recompute not in HELIX_RECOMPUTE:
        raise SpecError(f"helix=true recomputes without attention (recompute=full) or not at all; recompute="
                        f"{plan.recompute} would replay the attention HelixPipe keeps", key="plan.recompute",
                        allowed=list(HELIX_RECOMPUTE))
    if plan.first_layers or plan.last_layers or plan.embed_as_layer or plan.loss_as_layer:
        raise SpecError("helix=true deals the layers round-robin: uneven stages do not apply",
                        key="plan.first_layers")
    if getattr(workload.training, "attention", "flash") != "flash":
        raise SpecError("helix=true keeps only the attention output and its softmax statistics: it needs fused "
                        "(flash) attention", key="training.attention", allowed=["flash"])


def kept_bytes(model, c, per_layer_none):
    """Activation bytes one layer keeps per micro-batch until its backward: recompute=full keeps the layer input,
    the attention output and its softmax statistics (recomputation without attention); none keeps what the dense
    model keeps (``per_layer_none``: ``training_memory.layer_bytes_without_scores``, fused attention)."""
    h, q = float(model.hidden), float(model.q_dim)
    tp, T, e, sp = c.tp, c.T, c.e, c.P.sp
    x_keep = e * np.where(sp, T / tp, T) * h  # the layer input (replicated over TP unless sequence-parallel)
    full = x_keep + e * T * q / tp + LSE_BYTES * T * float(model.heads) / tp
    return np.where(c.P.recompute == 2, full, per_layer_none)


def helix_step(model, job, c, d, out: dict) -> dict:
    """HelixPipe's step for the plans with ``helix`` (``d``: the dense layer's terms; ``out``: the dense model's
    arrays for the same plans); the other plans keep ``out``.  Named arrays in SI units, the time parts summing to
    ``step_time_s``."""
    P = c.P
    on = np.asarray(P.helix, dtype=bool)
    p, m = c.pp, c.m
    L = float(model.layers)
    n = L / p
    full = P.recompute == 2
    F = d.fwd
    rc = np.where(full, d.fwd - d.attn_fwd, 0.0)  # recomputation without attention
    Bp = d.bwd + rc
    bw, lat = out["link_pp_bytes_per_s"], out["link_pp_latency_s"]
    x = c.T * float(model.hidden) * c.e / c.tp  # a layer input, one TP rank's share (Megatron's scatter-gather)
    hop = x / bw + lat  # one direction
    emb_f, emb_b = out["op_emb_fwd_s"], out["op_emb_bwd_s"]
    out_fb = out["op_out_fwd_s"] + out["op_out_bwd_s"]
    w_first = m * n * (F + Bp) + m * (emb_f + emb_b)
    w_last = m * n * (F + Bp) + m * out_fb
    last_crit = w_last > w_first
    w_max = np.maximum(w_first, w_last)
    fill = (p - 1.0) * (F + Bp + 2.0 * hop)  # GPipe's idle slots, one layer per stage (module docstring)
    # fewer micro-batches than stages: the last forward ends when the last micro-batch has passed every layer (it
    # enters m − 1 passes of stage 0 late) or when the last stage has run its last layer and loss for all m; the
    # backwards then follow the first one's chain down, one backward apart
    f_end = np.maximum(emb_f + (m - 1.0) * (F + emb_f) + L * (F + hop) + out_fb,
                       emb_f + (L - 1.0) * (F + hop) + m * (F + out_fb))
    chain = f_end + L * (Bp + hop) + emb_b + (m - 1.0) * Bp
    t_pipe = np.maximum(w_max + fill, chain)
    link = 2.0 * m * n * (x / bw + lat)  # the busiest port: x out forward and dx back backward, every layer
    pipe = np.maximum(t_pipe, link)
    dp_x, dp_total = helix_dp(out, P, n, p, F, Bp, hop, emb_f, emb_b)
    dp_intf = d.intf * np.maximum(dp_total - dp_x, 0.0)  # hidden DP traffic slows the compute it overlaps
    # the dense model's weight casts (what its step holds beyond pipeline, DP exposure, optimizer, interference)
    wcast = out["step_time_s"] - out["pipeline_s"] - out["dp_comm_exposed_s"] - out["optimizer_s"] \
        - out["op_dp_interference_s"]
    step = pipe + dp_x + out["optimizer_s"] + dp_intf + wcast

    # hardware FLOPs: the dense model's full recompute replays the attention core (4·s·q per token and layer, the
    # Megatron convention of its model FLOPs); recomputation without attention does not
    hw_dense = out["hardware_flops_per_step"]
    hw = hw_dense - np.where(full, c.B * c.s * L * 4.0 * c.s * float(model.q_dim), 0.0)
    # the critical stage's breakdown (sums to the step); the residual of kernel rounding goes to compute_gemm
    mn = m * n
    gemm = mn * (d.gemm_fwd + d.gemm_bwd) + np.where(last_crit, m * out_fb, 0.0)
    attn = mn * (d.attn_fwd + d.attn_bwd)
    memb = mn * (d.mem_fwd + d.mem_bwd) + np.where(last_crit, 0.0, m * (emb_f + emb_b))
    tpc = mn * (d.tp_fwd + d.tp_bwd)
    fo = mn * 2.0 * d.t_layer
    li = mn * d.interference
    rcs = mn * rc
    resid = w_max - (gemm + attn + memb + rcs + tpc + fo + li)
    new = {
        "step_time_s": step, "pipeline_s": pipe,
        "compute_gemm_s": gemm + resid, "compute_attention_s": attn, "compute_memory_bound_s": memb + wcast,
        "recompute_s": rcs, "tp_comm_exposed_s": tpc, "cp_comm_exposed_s": 0.0 * step,
        "pp_p2p_s": pipe - t_pipe, "pipeline_bubble_s": t_pipe - w_max, "framework_overhead_s": fo,
        "overlap_interference_s": li + dp_intf, "critical_stage": np.where(last_crit, 2, 0),
        "dp_comm_exposed_s": dp_x, "op_dp_interference_s": dp_intf,
        "tokens_per_s": c.B * c.s / step,
        "mfu": out["mfu"] * out["step_time_s"] / step, "hfu": out["hfu"] * out["step_time_s"] / step * hw / hw_dense,
        "hardware_flops_per_step": hw,
        "step_time_low_s": out["step_time_low_s"] * step / out["step_time_s"],
        "step_time_high_s": out["step_time_high_s"] * step / out["step_time_s"],
        # per-op costs the executor plays (``executor/helix.py``)
        "op_helix_fwd_s": F, "op_helix_bwd_s": Bp, "op_helix_rc_s": rc,
        "op_helix_tp_fwd_s": d.tp_fwd, "op_helix_tp_bwd_s": d.tp_bwd + np.where(full, d.tp_fwd, 0.0),
        "op_helix_x_bytes": x, "op_helix_fill_s": fill, "op_helix_chain_s": chain, "op_helix_link_s": link,
    }
    new.update(helix_memory(model, c, out, m * n))
    merged = dict(out)
    for k_, v_ in new.items():
        merged[k_] = np.where(on, v_, out[k_]) if k_ in out else np.where(on, v_, 0.0)
    return merged


def helix_dp(out: dict, P, n, p, F, Bp, hop, emb_f, emb_b):
    """Exposed data-parallel time under the helix and the staggered FILO order (zero 0: all-reduce; 1:
    reduce-scatter + all-gather), each stage's collective ``g`` split evenly over its n layer buckets on its DP port:

    * gradients: a layer's bucket is final when micro-batch 0's backward (the last in FILO) has passed it; in the
      staggered order stage k then still runs, after the bucket of its layer k + i·p, the ops of smaller slot
      priority — Σ_{d=1..i} min(m, d·p) backwards — or at least micro-batch 0's descent to layer k, i·p layer
      passes (B' + h) (``_buckets``); the buckets queue on the port, the last one ends
      max_i [(i+1)·g/n − slack_i] after the stage's last backward (stage p − 1's last backward is p − 1 passes
      before stage 0's);
    * ZeRO-1's parameter all-gather at the start of the step, bucket by bucket ahead of each layer's first forward
      (micro-batch 0's, after the same count of forwards, or its climb to the layer): it delays the step by
      max_i [(i+1)·g_a/n − lead_i].
    Returns (exposed seconds, the whole DP traffic of the busiest stage)."""
    zero1 = P.zero >= 1
    g_f = np.where(zero1, out["op_dp_reduce_scatter_first_s"], out["op_dp_allreduce_first_s"])
    g_l = np.where(zero1, out["op_dp_reduce_scatter_last_s"], out["op_dp_allreduce_last_s"])
    a_f = np.where(zero1, out["op_dp_allgather_first_s"], 0.0)
    a_l = np.where(zero1, out["op_dp_allgather_last_s"], 0.0)
    m = out["micro_batches"]
    last = p - 1.0
    grad = np.maximum(_buckets(g_f, n, Bp, Bp + hop, m, p, 0.0), _buckets(g_l, n, Bp, Bp + hop, m, p, last)) - emb_b
    gath = np.maximum(_buckets(a_f, n, F, F + hop, m, p, 0.0), _buckets(a_l, n, F, F + hop, m, p, last)) - emb_f
    on = P.dp * P.cp > 1
    exposed = np.where(on, np.maximum(grad, 0.0) + np.maximum(gath, 0.0), 0.0)
    total = np.where(on, np.maximum(g_f + a_f, g_l + a_l), 0.0)
    return exposed, total


def _buckets(g, n, per_op, beat, m, p, k):
    """max over a stage's buckets i = 0..n−1 (i = 0: the one nearest the end) of (i+1)·g/n − slack_i, slack_i =
    max(per_op·Σ_{d=1..i} min(m, d·p), i·p·beat) + k·beat (stage k ends k layer passes before stage 0)."""
    n = np.asarray(n, dtype=float)
    best = g / n - k * beat
    ops = np.zeros_like(best)
    for i in range(1, int(np.max(n)) if np.size(n) else 0):
        ops = ops + np.minimum(m, i * p)
        val = (i + 1.0) * g / n - np.maximum(per_op * ops, i * p * beat) - k * beat
        best = np.where(i < n, np.maximum(best, val), best)
    return best


def helix_memory(model, c, out: dict, mn) -> dict:
    """Peak memory per device under the FILO order: at the turn from the last forward to the first backward every
    stage keeps its n layers' activations of all m micro-batches, and holds the layer being recomputed (full) or,
    on the last stage, the logits of the last loss — whichever is larger — and there the gradients of the final
    hidden of every micro-batch (the loss backward runs with its forward).  Model states and transients are the
    dense model's for the same plan (first and last stage hold the same layer count)."""
    from parplan.models.training_memory import FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES, \
        layer_bytes_without_scores

    per_none = layer_bytes_without_scores(model, c.T, c.tp, c.P.sp, c.e)  # fused attention: no scores kept
    k = kept_bytes(model, c, per_none)
    ws = np.where(c.P.recompute == 2, per_none, 0.0)
    dx_last = c.e * np.where(c.P.sp, c.T / c.tp, c.T) * float(model.hidden)
    logits = out["op_activation_bytes_last_stage_extra"]
    act_first = mn * k + ws + c.m * out["op_activation_bytes_first_stage_extra"]
    act_last = mn * k + c.m * dx_last + np.maximum(ws, logits)
    static = sum(out[key] for key in ("params_bytes", "grads_bytes", "optimizer_bytes", "transient_bytes",
                                      "zero3_gather_buffer_bytes"))
    heavy_last = act_last > act_first
    dyn = static + np.maximum(act_first, act_last)
    frag = FRAGMENTATION_FRACTION * dyn
    peak = dyn + frag + FRAMEWORK_RESERVED_BYTES
    return {"activations_bytes": np.maximum(act_first, act_last), "fragmentation_bytes": frag,
            "memory_peak_bytes": peak, "fits": peak <= out["memory_capacity_bytes"],
            "heaviest_memory_stage": np.where(heavy_last, c.pp - 1, 0),
            "op_helix_kept_bytes": k, "op_helix_working_bytes": ws, "op_helix_kept_last_bytes": dx_last}
