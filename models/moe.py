"""The mixture-of-experts family's cost model: one optimizer step of an MoE decoder (Mixtral, DeepSeek-V3,
Qwen3-MoE, gpt-oss, Llama 4, Grok) under a plan with expert parallelism — the same step assembly as the dense
family (``models/step_terms.py``) over two kinds of layers: dense-FFN layers (DeepSeek's first layers, Llama 4
Maverick's interleaved ones) and MoE layers (``models/moe_terms.py``); multi-token-prediction modules on the last
stage; expert parameters sharded by EP·ETP and reduced over the expert-data-parallel group.
"""
from __future__ import annotations

import numpy as np

from parplan.errors import SpecError
from parplan.models.hardware_context import HardwareContext, framework_of, hardware_context
from parplan.models.layer_terms import dense_layer, step_context
from parplan.models.moe_terms import moe_layer
from parplan.models.plan_arrays import PlanArrays
from parplan.models.step_terms import TIME_PARTS as _BASE_PARTS
from parplan.models.layer_mix import LayerKind, LayerMix
from parplan.models.step_terms import assemble
from parplan.models.training_memory import (MEMORY_PARTS, OPTIMIZER_STATE_BYTES, inflight_factors,  # noqa: F401
                                            last_stage_inflight)

TIME_PARTS = _BASE_PARTS + ("ep_comm_exposed_s",)
EXTRA_KNOBS = ("ep", "etp")  # a partial plan may leave them out: chosen like the shared knobs
RECOMPUTE_MODES = ("none", "selective", "full", "modules")  # + Megatron-Core's fine-grained recompute modules


def _linear_attention(model) -> float:
    """Weight elements of one layer's attention projections (per token FLOPs = 2× this)."""
    return float(sum(K * N for K, N, _ in model.attention_projections))


def _layer_counts(model):
    """Cumulative dense-FFN layers over the layer index (prefix sums of the model's layer pattern)."""
    mask = np.asarray(model.moe_layer_mask, dtype=bool)
    return np.concatenate([[0], np.cumsum(~mask)]).astype(np.float64)


def _counter(model, L: float, n_first, n_last, mtp: float, pp):
    """count(kind, n, where): MoE layers (kind 0) and dense layers (kind 1) on a stage of n layers.  First and last
    stages exactly from the layer pattern; a middle stage holds its share of the middle range's MoE layers
    (rounded up: the heaviest middle stage); the MTP modules (MoE layers) sit on the last stage (the only one when
    pp = 1)."""
    cum = _layer_counts(model)
    Li = int(L)
    take = lambda i: cum[np.clip(np.asarray(i, dtype=np.int64), 0, Li)]  # noqa: E731
    d_first = take(n_first)
    d_last = take(Li) - take(Li - n_last)
    mid_range = np.maximum(L - n_first - n_last, 0.0)
    d_mid_total = np.maximum(take(Li - n_last) - d_first, 0.0)
    moe_frac_mid = np.where(mid_range > 0, (mid_range - d_mid_total) / np.maximum(mid_range, 1.0), 1.0)

    def count(kind, n, where):
        if where == "first":
            dense = np.minimum(d_first, n)
        elif where == "last":
            dense = np.minimum(d_last, n)
        elif where == "mid_total":
            dense = np.minimum(d_mid_total, n)
        else:
            dense = n - np.minimum(np.ceil(n * moe_frac_mid), n)
        extra = np.where(pp == 1, mtp, 0.0) if where == "first" else (mtp if where == "last" else 0.0)
        moe = n - dense + extra
        return moe if kind == 0 else dense

    return count


def evaluate(model, job, hw: HardwareContext, P: PlanArrays) -> dict[str, np.ndarray]:
    """Price one optimizer step of an MoE model for every plan in ``P`` (named arrays, SI units)."""
    c = step_context(job, hw, P)
    dense_terms, att = dense_layer(model, job, c)
    moe_terms, ops = moe_layer(model, job, c, att)
    ms = ops["shape"]
    h, s, E, k = float(model.hidden), c.s, float(model.experts), float(model.top_k)
    nmat, fe = float(model.ffn_matrices), float(model.moe_ffn_hidden)
    lin_att = _linear_attention(model)
    attn_tok = 2.0 * s * (float(model.attn_qk_dim) + float(model.attn_v_dim))  # non-causal convention, per token
    n_sh = float(model.shared_experts)
    fs = float(model.shared_ffn_hidden or model.moe_ffn_hidden)
    lin_moe_active = lin_att + k * nmat * h * fe + n_sh * nmat * h * fs + h * E
    lin_dense = lin_att + nmat * h * float(model.ffn_hidden)
    expert_dev = float(model.expert_params) * ms.local_experts / ms.etp
    moe_kind = LayerKind(
        terms=moe_terms, params_tp=float(model.moe_layer_params) - E * float(model.expert_params),
        expert_params_dev=expert_dev, flops_per_token_fwd=2.0 * lin_moe_active + attn_tok,
        attn_flops_per_token_fwd=attn_tok,
        bound_flops=3.0 * 2.0 * (c.T * (lin_att + n_sh * nmat * h * fs + h * E) / c.tp
                                 + ms.m_dev * nmat * h * fe / ms.etp) + 3.0 * att.attn_flops_fwd)
    dense_kind = LayerKind(terms=dense_terms, params_tp=float(model.dense_layer_params),
                           flops_per_token_fwd=2.0 * lin_dense + attn_tok, attn_flops_per_token_fwd=attn_tok,
                           bound_flops=3.0 * 2.0 * c.T * lin_dense / c.tp + 3.0 * att.attn_flops_fwd)
    mtp = float(getattr(job, "mtp_layers", None) if getattr(job, "mtp_layers", None) is not None
                else getattr(model, "mtp_layers", 0))
    mix = LayerMix(kinds=[moe_kind, dense_kind],
                   counter=lambda n_first, n_last: _counter(model, float(model.layers), n_first, n_last, mtp, c.pp),
                   edp=ms.edp, edp_per_node=np.maximum(np.floor(hw.devices_per_node / (ms.etp * ms.ep)), 1.0),
                   ep_ranks=ms.ep * ms.etp,
                   layer_counts=(float(model.n_moe_layers) + mtp, float(model.n_dense_layers)),
                   memory_extra=_memory_extra(model, job, c, ms, ops["buffer_bytes"], expert_dev),
                   output_heads=1.0 + mtp, interval_family="moe-transformer", pair_on=ops["pair_on"])
    out = assemble(model, job, c, mix)
    out.update({"op_moe_a2a_dispatch_s": ops["a2a_dispatch_s"], "op_moe_a2a_combine_s": ops["a2a_combine_s"],
                "op_moe_etp_gather_s": ops["etp_gather_s"], "op_moe_a2a_bytes": ops["a2a_bytes"],
                "op_moe_layer_fwd_s": moe_terms.fwd, "op_moe_layer_bwd_s": moe_terms.bwd,
                "op_moe_layer_recompute_s": moe_kind.rc,
                # the dense-FFN layer (DeepSeek's first layers): op_layer_* above are the default kind, the MoE layer
                "op_dense_layer_fwd_s": dense_terms.fwd, "op_dense_layer_bwd_s": dense_terms.bwd,
                "op_dense_layer_recompute_s": dense_kind.rc,
                "op_moe_ep_fwd_exposed_s": moe_terms.ep_fwd, "op_moe_ep_bwd_exposed_s": moe_terms.ep_bwd,
                "expert_imbalance": ms.gamma, "expert_tokens_per_device": ms.m_dev, "edp": ms.edp})
    return out


def _memory_extra(model, job, c, ms, buffer_bytes, expert_dev):
    """Expert states (sharded by EP·ETP, ZeRO over the EDP group; FSDP's gathered expert layers: two prefetched,
    or every layer of the stage without re-sharding), expert activations instead of the dense MLP's, and the
    all-to-all receive buffers of the framework's dispatcher."""
    e, h = c.e, float(model.hidden)
    fe, nmat = float(model.moe_ffn_hidden), float(model.ffn_matrices)
    f = float(model.ffn_hidden)
    mixed = job.precision != "fp32"
    opt_b = OPTIMIZER_STATE_BYTES[(job.optimizer, mixed)]

    def extra(shape, x_first, x_last, c_first, c_last, w_b):
        zero = shape.zero
        grad_b = np.where(zero >= 2, e, 4.0) if mixed else np.full_like(shape.T, 4.0)

        keep = (zero >= 3) & ~shape.reshard

        def states(x, n_moe):
            w = x * w_b / np.where(zero >= 3, ms.edp, 1.0)
            w = w + np.where(keep, n_moe * expert_dev * w_b * (1.0 - 1.0 / ms.edp), 0.0)
            return (w, x * grad_b / np.where(zero >= 2, ms.edp, 1.0), x * opt_b / np.where(zero >= 1, ms.edp, 1.0))

        # per MoE layer per micro-batch: permuted expert inputs, the FC1 outputs / activation inputs (as the dense
        # MLP's (nmat + swiglu)·f rule) for the busiest rank's copies, routing probabilities and indices (12 B per
        # copy); minus the dense MLP activations the base formula counted for the layer
        moe_act = e * ms.m_dev * h + (nmat + (1 if nmat == 3 else 0)) * e * ms.m_dev * fe / ms.etp + 12.0 * ms.copies
        dense_mlp = (nmat + (1 if nmat == 3 else 0)) * e * shape.T * f / shape.tp
        # recompute=modules also drops the experts' activation output (moe_act: FC2's input is recomputed)
        per = np.where(shape.rc == 2, 0.0, moe_act - dense_mlp
                       - np.where(shape.rc == 3, e * ms.m_dev * fe / ms.etp, 0.0))
        inflight, penalty = inflight_factors(shape)
        n_moe_first, n_moe_last = c_first[0], c_last[0]
        buffers = buffer_bytes  # dispatch / combine receive buffers of the framework's dispatcher (moe.yaml)
        return {"states_first": states(x_first, n_moe_first), "states_last": states(x_last, n_moe_last),
                "zero3_buffer": np.where((zero >= 3) & shape.reshard, 2.0 * expert_dev * w_b, 0.0),
                "act_first": n_moe_first * per * inflight * penalty,
                "act_last": np.where(shape.pp == 1, n_moe_first * per * inflight * penalty,
                                     n_moe_last * per * last_stage_inflight(shape)),
                "transient": np.where(ms.ep > 1, buffers, 0.0), "per_moe_layer": per}

    return extra


def validate(workload, cluster, plan) -> None:
    """MoE plan rules (Megatron-Core): ep divides the experts; ep·etp divides dp·cp·tp (parallel folding); etp
    divides the expert FFN; sequence parallelism with tp > 1."""
    mdl = workload.model
    for key, what in (("helix", "HelixPipe's attention-parallel pipeline"), ("rotate", "RTP's rotated weight shards")):
        if getattr(plan, key):
            raise SpecError(f"{key}=true ({what}) is priced for dense transformers; {workload.name} is a "
                            "mixture of experts", key=f"plan.{key}", allowed=["false"])
    E = int(mdl.experts)
    if E % plan.ep:
        raise SpecError(f"ep={plan.ep} does not divide the {E} experts", key="plan.ep",
                        hint="choose ep among " + ", ".join(str(d) for d in range(1, E + 1) if E % d == 0))
    span = plan.dp * plan.cp * plan.tp
    if span % (plan.ep * plan.etp):
        raise SpecError(f"ep×etp = {plan.ep}×{plan.etp} does not divide dp×cp×tp = {span}", key="plan.ep",
                        hint="the experts are laid out over the attention ranks of a stage (MoE parallel folding)")
    if int(mdl.moe_ffn_hidden) % plan.etp:
        raise SpecError(f"etp={plan.etp} does not divide moe_ffn_hidden={mdl.moe_ffn_hidden}", key="plan.etp")
    if plan.tp > 1 and not plan.sp:
        raise SpecError("an MoE layer with tp > 1 needs sequence parallelism (sp=true)", key="plan.sp",
                        hint="Megatron-Core requires --sequence-parallel with tensor and expert parallelism")


def layer_params_lower_bound(model) -> float:
    """Parameters of the lightest layer without its experts (EP shards them; the planner's bound ignores them)."""
    return float(min(model.dense_layer_params, model.moe_layer_params - model.experts * model.expert_params))


def evaluate_workload(workload, cluster, plans: PlanArrays, eff=None) -> dict[str, np.ndarray]:
    hw = hardware_context(cluster.group, workload.training.precision, eff, framework=framework_of(workload))
    return evaluate(workload.model, workload.training, hw, plans)
