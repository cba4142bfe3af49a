"""What a family hands the shared step assembly (``models/step_terms.py``): the kinds of layers its model has —
their per-layer terms (``models/layer_terms.py``), parameters by synchronization class and FLOPs — how many of each
every pipeline stage holds, and the family's own additions (output heads, memory terms, interval band).  With one
kind of layer this is the dense model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models.layer_terms import LayerTerms


@dataclass
class LayerKind:
    """One kind of layer: its terms, its parameters per device by sync class, and its FLOPs."""

    terms: LayerTerms
    params_tp: float  # parameters of one layer reduced over dp·cp (whole layer; the formulas divide by tp)
    expert_params_dev: object = 0.0  # expert parameters of one layer on one device (reduced over the EDP group)
    flops_per_token_fwd: float = 0.0  # model FLOPs of one layer per token, forward (Megatron convention)
    attn_flops_per_token_fwd: float = 0.0  # the attention-core part of it (what selective recompute redoes)
    bound_flops: object = 0.0  # forward+backward FLOPs of one layer, one micro-batch, one device (lower bound)


@dataclass
class LayerMix:
    """The layer kinds of a model and how many of each every pipeline stage holds (arrays over plans)."""

    kinds: list  # [LayerKind, ...]; kinds[0] is the default kind
    # counter(n_first, n_last) -> count(kind index, n_layers_array, where ∈ first|last|mid|mid_total) -> array: how
    # many layers of each kind a stage of n layers holds, given the end stages' layer counts (``stage_layers``)
    counter: object = None
    edp: object = 1.0  # ranks of the expert-data-parallel group (expert gradients are reduced over it)
    edp_per_node: object = 1.0  # of them in one scale-up domain
    ep_ranks: object = 1.0  # ranks of one expert-parallel all-to-all group (ep × etp, consecutive ranks)
    layer_counts: tuple = ()  # layers of each kind in the whole model (default: every layer is kinds[0])
    interval_family: str | None = None  # a family with its own 80 % band (catalogs/calibration/intervals.yaml)
    pair_on: object = False  # where the framework co-schedules forward/backward pairs (combined 1F1B overlap)
    output_heads: float = 1.0  # output projections + losses on the last stage (1 + DeepSeek-V3's MTP modules)
    memory_extra: object = None  # f(shape, experts_first, experts_last, counts_first, counts_last, w_b) -> dict


def stage_layers(L, pp, P):
    """Layers on the first, the largest middle and the last stage, and all middle stages together.  Default rule:
    floor((L+e+l)/p) each, the remainder to the first stages, minus the embedding (e) / loss (l) where they count
    as layers; explicit first/last counts split the rest evenly over the middle stages (Megatron-Core)."""
    ea, la = P.embed_as_layer.astype(np.float64), P.loss_as_layer.astype(np.float64)
    Lv = L + ea + la
    base = np.floor(Lv / pp)
    extra = Lv - base * pp
    n_first = np.where(pp > 1, base + (extra > 0) - ea, L)
    n_last = np.where(pp > 1, base - la, n_first)
    fl, ll = P.first_layers.astype(np.float64), P.last_layers.astype(np.float64)
    rest = np.maximum(pp - 1, 1)
    # one end given: the other stages split the rest evenly (Megatron-Core --decoder-first/last-pipeline-num-layers)
    n_last = np.where((fl > 0) & (ll == 0) & (pp > 1), (L - fl) / rest, n_last)
    n_first = np.where((ll > 0) & (fl == 0) & (pp > 1), (L - ll) / rest, n_first)
    n_first = np.where(fl > 0, fl, n_first)
    n_last = np.where((ll > 0) & (pp > 1), ll, n_last)
    n_mid_total = np.where(pp > 2, np.maximum(L - n_first - n_last, 0.0), 0.0)
    n_mid_max = np.where(pp > 2, np.ceil(n_mid_total / np.maximum(pp - 2, 1)), 0.0)
    return n_first, n_last, n_mid_max, n_mid_total
