"""FLOPs of one optimizer step, for MFU and HFU: model FLOPs in the Megatron convention (non-causal attention, no
recompute; Narayanan et al. 2021 §5.1) and hardware FLOPs (model FLOPs plus what recompute redoes: every layer's
forward under full recompute, the attention core under selective)."""
from __future__ import annotations

import numpy as np

from parplan.models import longctx_terms


def step_flops(kinds, layer_counts, job, B, s, heads, h, V, rc):
    """(model FLOPs, hardware FLOPs) of a step of ``B`` samples of ``s`` tokens over layers of ``kinds`` (counts
    ``layer_counts``) and ``heads`` output heads of h×V; ``rc`` the recompute mode codes.  A sequence workload's masks
    scale the attention by the share of a causal sample's pairs they admit (``longctx_terms.model_attention_share``)
    — 1 without one, so the unmasked figures are the convention's."""
    a_sh = longctx_terms.model_attention_share(job)
    full_attn = sum(n_i * kd.attn_flops_per_token_fwd for n_i, kd in zip(layer_counts, kinds))
    layers_flops = sum(n_i * kd.flops_per_token_fwd for n_i, kd in zip(layer_counts, kinds)) - (1.0 - a_sh) * full_attn
    attn_layers_flops = a_sh * full_attn
    model_flops = 3.0 * B * s * (layers_flops + heads * 2.0 * h * V)
    rc_flops_per_token = np.where(rc == 2, layers_flops, np.where((rc == 1) | (rc == 3), attn_layers_flops, 0.0))
    return model_flops, model_flops + B * s * rc_flops_per_token
