"""The data-parallel collectives of one pipeline stage (vectorized over plans; used by ``step_terms.assemble``):
the gradient reduce-scatter and all-reduce, the parameter all-gather and, with hybrid sharding, the all-reduce of
the shards across replica groups — each priced on the links its group spans, at the framework's message size
(a DDP / distributed-optimizer bucket, or one layer under ZeRO-3 / FSDP).  Seconds per stage, per collective kind."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models.primitives.collectives import allreduce_s, gather_s


@dataclass(frozen=True)
class DpGroup:
    """What every stage's collectives share: the hardware view, the plan's degrees and the element sizes."""

    hw: object  # HardwareContext
    zero: np.ndarray
    tp: np.ndarray
    cp: np.ndarray
    pp: np.ndarray
    g_red: object  # bytes per reduced gradient element (fp32 reduce or the compute dtype)
    w_b: float  # bytes per gathered parameter element (1 for fp8 parameter gathers)


def dp_sync(g: DpGroup, params, layer_elems, group, Sg, Rg, pn):
    """(reduce-scatter, all-gather, all-reduce, replica all-reduce) seconds for ``params`` elements of one stage over
    a group of ``group`` ranks sharded ``Sg`` ways in ``Rg`` replica groups, ``pn`` of them per node."""
    hw, zero, g_red, w_b = g.hw, g.zero, g.g_red, g.w_b
    span = g.tp * g.cp * g.pp
    # message size of one collective: a framework bucket (DDP / distributed optimizer), or one layer (FSDP)
    elems = np.where(zero >= 3, layer_elems, np.minimum(params, hw.dp_bucket_elements))
    ext = span * Sg
    bw_s, lat_s, mr_s = hw.group_busbw(elems * g_red, ext, np.minimum(pn, Sg), Sg, "gather")
    bw_sa, lat_sa, mr_sa = hw.group_busbw(elems * w_b, ext, np.minimum(pn, Sg), Sg, "gather")
    n_msgs = np.maximum(params / np.maximum(elems, 1.0), 1.0)
    rs = gather_s(params * g_red, Sg, bw_s, lat_s, mr_s) + (n_msgs - 1) * np.where(Sg > 1, lat_s, 0.0)
    ag = gather_s(params * w_b, Sg, bw_sa, lat_sa, mr_sa) + (n_msgs - 1) * np.where(Sg > 1, lat_sa, 0.0)
    bw_r, lat_r, mr_r = hw.group_busbw(elems * g_red / Sg, span * group, np.maximum(pn / Sg, 1.0), Rg, "allreduce")
    rep = allreduce_s(params * g_red / Sg, Rg, bw_r, lat_r, mr_r)  # hybrid sharding: all-reduce of the shards
    bw_a, lat_a, mr_a = hw.group_busbw(elems * g_red, span * group, pn, group, "allreduce")
    ar = allreduce_s(params * g_red, group, bw_a, lat_a, mr_a) + (n_msgs - 1) * lat_a
    return rs, ag, ar, rep


def with_experts(g: DpGroup, stages, expert_params, kinds, edp, edp_per_node):
    """``stages`` ((reduce-scatter, all-gather, all-reduce) of the first, last and a middle stage) with each stage's
    expert gradients added, synchronized over the expert-data-parallel group (MoE parallel folding, Liu et al.
    2025) at one layer's expert message size; each stage's tuple gains the experts' reduce-scatter (their buckets
    are the layers' buckets)."""
    edp = np.asarray(edp, dtype=np.float64)
    x_layer = kinds[0].expert_params_dev
    for k_ in kinds[1:]:
        x_layer = np.maximum(x_layer, k_.expert_params_dev)
    out = []
    for (rs, ag, ar), params in zip(stages, expert_params):
        xs = dp_sync(g, params, x_layer, edp, edp, np.ones_like(edp), edp_per_node)
        out.append((rs + xs[0], ag + xs[1], ar + xs[2], xs[0]))
    return out
