"""The dense-transformer family's cost model: one optimizer step of a dense decoder-only transformer under a plan
(dp, tp, pp, cp, mbs, vpp, zero, recompute, sp, hybrid sharding, FSDP re-sharding, uneven pipeline stages) — time
breakdown, memory per device, feasibility.

One formula, two uses: every function works on numpy arrays of plans (``PlanArrays``), so ``estimate`` (one plan)
and the planner's search (millions of plans) run exactly the same code.  All quantities are SI floats.  The terms
live below the families: one layer's attention and MLP blocks with TP/CP communication (``models/layer_terms.py``),
the step assembled from layers — stages, pipeline makespan, data-parallel traffic, optimizer, breakdown
(``models/step_terms.py``); per-op costs come from the calibration layer (``models/primitives``).

Notation: B global batch (sequences), s sequence length, b micro-batch, h hidden, q = heads·head_dim, k = kv_heads·
head_dim, f FFN hidden, V vocab, L layers, t tp, p pp, c cp, v vpp, D dp, m = B/(D·b) micro-batches per pipeline.
Derivations: docs/cost_model.md.
"""
from __future__ import annotations

import numpy as np

from parplan.models.hardware_context import (HardwareContext, framework_of, hardware_context, math_dtype,  # noqa: F401
                                             ring_allgather_s, ring_allreduce_s)
from parplan.models.layer_terms import GEMM_INPUT_BYTES, dense_layer, step_context  # noqa: F401
from parplan.models.plan_arrays import PlanArrays  # noqa: F401  (re-exported: planner and executor import it here)
from parplan.models.layer_mix import LayerKind, LayerMix, stage_layers
from parplan.models.optimizer_terms import OPTIMIZER_STEP_BYTES  # noqa: F401  (re-exported)
from parplan.models.step_terms import CROSS_ENTROPY_BYTES_PER_LOGIT, TIME_PARTS, assemble  # noqa: F401
from parplan.models.training_memory import (FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES,  # noqa: F401
                                            MEMORY_PARTS, OPTIMIZER_STATE_BYTES, StageShape, memory)
from parplan.workloads.transformer import TransformerSpec, Workload

_stage_layers = stage_layers  # the name the heterogeneous model and older callers use
RECOMPUTE_MODES = ("none", "selective", "full")  # the recompute modes this family prices


def dense_kind(model, job, c) -> LayerKind:
    """A dense layer as a ``LayerKind``: its terms, parameters and FLOPs (Narayanan et al. 2021 §3, Eq. 3)."""
    terms, att = dense_layer(model, job, c)
    h, q, k, f = float(model.hidden), float(model.q_dim), float(model.kv_dim), float(model.ffn_hidden)
    nmat, s = float(model.ffn_matrices), c.s
    linear = h * (q + 2 * k) + q * h + nmat * h * f  # weight elements of one layer's GEMMs
    return LayerKind(terms=terms, params_tp=float(model.layer_params),
                     flops_per_token_fwd=2.0 * linear + 4.0 * s * q, attn_flops_per_token_fwd=4.0 * s * q,
                     bound_flops=3.0 * 2.0 * c.T * linear / c.tp + 3.0 * att.attn_flops_fwd)


def evaluate(model: TransformerSpec, job, hw: HardwareContext, P: PlanArrays) -> dict[str, np.ndarray]:
    """Price one optimizer step for every plan in ``P``; returns named arrays (time parts in s, memory in bytes)."""
    c = step_context(job, hw, P)
    kind = dense_kind(model, job, c)
    out = assemble(model, job, c, LayerMix(kinds=[kind]))
    if P.helix is not None and np.any(P.helix):  # HelixPipe's attention-parallel pipeline (models/helix_terms.py)
        from parplan.models.helix_terms import helix_step

        out = helix_step(model, job, c, kind.terms, out)
    return out


def evaluate_workload(workload: Workload, cluster, plans: PlanArrays, eff=None) -> dict[str, np.ndarray]:
    hw = hardware_context(cluster.group, workload.training.precision, eff, framework=framework_of(workload))
    return evaluate(workload.model, workload.training, hw, plans)


def validate(workload, cluster, plan) -> None:
    """Dense plans have no experts: ep = etp = 1."""
    from parplan.errors import SpecError

    if plan.recompute == "modules":
        raise SpecError("recompute=modules (Megatron-Core's fine-grained MoE/MLA recompute modules) applies to "
                        f"mixture-of-experts workloads; {workload.name} is dense", key="plan.recompute",
                        allowed=["none", "selective", "full"])
    for key in ("ep", "etp"):
        if getattr(plan, key) != 1:
            raise SpecError(f"{key}={getattr(plan, key)} needs a mixture-of-experts workload; {workload.name} is dense",
                            key=f"plan.{key}", allowed=["1"])
    if plan.helix:
        from parplan.models.helix_terms import validate_helix

        validate_helix(workload, plan)
    if plan.rotate and plan.zero != 3:
        raise SpecError(f"rotate=true (RTP's rotated weight shards) replaces ZeRO-3's gathers: it needs zero=3, got "
                        f"zero={plan.zero}", key="plan.rotate", hint="add zero=3, or drop rotate")
    if plan.rotate and not plan.reshard:
        raise SpecError("rotate=true keeps only shards (two shard buffers): reshard=false, which keeps gathered "
                        "layers until their backward, does not apply", key="plan.reshard", allowed=["true"])


def layer_params_lower_bound(model) -> float:
    """Parameters of the lightest layer (the planner's memory lower bound counts every layer at this size)."""
    return float(model.layer_params)
