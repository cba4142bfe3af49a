"""RTP — rotated weight shards (Luo, Zhong, Fox, "Rethinking Tensor Parallelism with Memory Deduplication",
arXiv 2311.01635; ../shared/SEEDS.md S12), the ``rotate`` knob of a ZeRO-3 plan (vectorized over plans; used by
``step_terms.assemble`` and ``training_memory.memory``).

Every rank of a shard group of S ranks keeps only its 1/S of every weight (ZeRO-3's model states).  Instead of
all-gathering a whole layer before it runs (FSDP), the layer's S shards travel around the shard ring: in S sub-steps
each rank multiplies its own micro-batch by the shard it holds (every GEMM as S kernels with 1/S of its output
columns: the narrower shape's efficiency from the kernel model, S launches) while the next shard arrives from its
ring neighbour (point-to-point, |W_l|/S bytes).  The backward rotates the weights again (for the data gradients)
and passes each shard's gradient accumulator around the same ring (every rank adds its contribution: a reduce-
scatter made of S − 1 hops).  Two shard buffers per rank (current + incoming): sub-step k's transfer waits for the
buffer of sub-step k − 2, so with c the GEMM time of one sub-step and t one transfer, a layer pass takes
``S·c + (S − 1)·max(0, t − c)`` — hidden iff c ≥ t, the arithmetic-intensity condition b·s ≥ F·bytes·β/2
(S12 (b)).

Per-layer equivalence: one transfer per sub-step carries the layer's whole shard set; every linear layer of a
transformer layer multiplies the same T rows, so each one's compute / transfer ratio is the layer's, and the sum
over its linears of (S − 1)·max(0, t_g − c_g) is the layer's (S − 1)·max(0, t − c).  The embedding / output
weights (and biases, norms) travel with the layers' rotation, spread evenly over the stage's layers (as the
executor spreads ZeRO-3's gathers); their own GEMMs are not counted in the windows.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass
class LayerRotation:
    """One layer, one micro-batch, one device of a rotate plan (arrays over plans; s = seconds)."""

    on: np.ndarray  # bool: the plan rotates
    S: np.ndarray  # ranks of the shard ring
    sub_fwd_s: np.ndarray  # one forward sub-step's GEMMs on the shard (the window that hides one transfer)
    sub_bwd_s: np.ndarray  # one backward sub-step's data- and weight-gradient GEMMs on the shard
    d_gemm: tuple  # (fwd, dgrad, wgrad): S shard kernels minus the full-shape GEMMs (narrower, S launches)


@dataclass
class StageRotation:
    """One stage's rotation per micro-batch: transfer link work and exposed seconds (arrays over plans)."""

    xfer_fwd_s: np.ndarray  # one forward transfer of a layer part: its share of the stage's weight shard
    xfer_bwd_s: np.ndarray  # one backward transfer: weight shard + gradient accumulator shard
    work_fwd_s: np.ndarray  # link work of the forward rotation: n·(S − 1) transfers
    work_bwd_s: np.ndarray  # of the backward (+ the replayed forward under full recompute)
    exposed_fwd_s: np.ndarray  # n·(S − 1)·max(0, t − c), forward
    exposed_bwd_s: np.ndarray  # backward (+ the replayed forward's under full recompute)


def _projections(model):
    """The (K, N, split) of one layer's linears, as ``layer_terms.attention_block`` and ``dense_mlp`` price them."""
    h, q, k = float(model.hidden), float(model.q_dim), float(model.kv_dim)
    f, nmat = float(model.ffn_hidden), float(model.ffn_matrices)
    att = getattr(model, "attention_projections", None) or ((h, q + 2 * k, "col"), (q, h, "row"))
    return tuple((float(K_), float(N_), s_) for K_, N_, s_ in att) + ((h, (nmat - 1) * f, "col"), (f, h, "row"))


def layer_rotation(model, c, rotate, S) -> LayerRotation:
    """The shard GEMMs of one layer: every linear (T × K)·(K × N) on the TP rank runs as S kernels of N/S output
    columns (``StepContext.fwd_bwd``: shape efficiency of the calibration layer's kernel model, launch each)."""
    full = [0.0, 0.0, 0.0]
    shard = [0.0, 0.0, 0.0]
    for K_, N_, split in _projections(model):
        K_t, N_t = (K_, N_ / c.tp) if split == "col" else (K_ / c.tp, N_) if split == "row" else (K_, N_)
        g_full, g_shard = c.fwd_bwd(c.T, K_t, N_t), c.fwd_bwd(c.T, K_t, N_t / S)
        for i in range(3):
            full[i] = full[i] + g_full[i]
            shard[i] = shard[i] + S * g_shard[i]
    d = tuple(np.where(rotate, s_ - f_, 0.0) for s_, f_ in zip(shard, full))
    return LayerRotation(on=np.asarray(rotate, dtype=bool), S=S, sub_fwd_s=shard[0] / S,
                         sub_bwd_s=(shard[1] + shard[2]) / S, d_gemm=d)


def with_shard_gemms(terms, rot: LayerRotation):
    """The layer's terms with its GEMMs on the shard shape (rotate plans; the others' terms exactly as given)."""
    df, dd, dw = rot.d_gemm
    return replace(terms, gemm_fwd=np.where(rot.on, terms.gemm_fwd + df, terms.gemm_fwd),
                   dgrad=np.where(rot.on, terms.dgrad + dd, terms.dgrad),
                   wgrad=np.where(rot.on, terms.wgrad + dw, terms.wgrad))


def ring_transfer_s(hw, nbytes, extent):
    """One point-to-point hop of the shard ring: bytes / bandwidth + latency (``group_busbw`` "p2p"); ``extent``:
    the devices the ring spans (NVLink inside a scale-up domain, the NIC across)."""
    bw, lat, _ = hw.group_busbw(nbytes, extent, 1.0, 2.0, "p2p")
    return nbytes / bw + lat


def stage_rotation(hw, rot: LayerRotation, params_stage, n_layers, w_b, g_red, extent, rc) -> StageRotation:
    """A stage of ``n_layers`` layers holding ``params_stage`` parameters (per TP rank): every layer part carries
    its share of the stage's shards (params_stage / n per layer part), S − 1 transfers per pass."""
    S = rot.S
    n = np.maximum(n_layers, 1.0)
    part = params_stage / n  # parameters of one layer part (the layer's + its share of embedding / output)
    t_f = ring_transfer_s(hw, part * w_b / S, extent)
    t_g = ring_transfer_s(hw, part * g_red / S, extent)
    t_b = t_f + t_g  # weight shard and gradient accumulator on the same hop
    hops = n * (S - 1.0)
    replay = np.where(rc == 2, 1.0, 0.0)  # full recompute replays the forward: its shards rotate once more
    x_f = hops * np.maximum(0.0, t_f - rot.sub_fwd_s)
    x_b = hops * np.maximum(0.0, t_b - rot.sub_bwd_s) + replay * x_f
    return StageRotation(xfer_fwd_s=t_f, xfer_bwd_s=t_b, work_fwd_s=hops * t_f,
                         work_bwd_s=hops * t_b + replay * hops * t_f, exposed_fwd_s=x_f, exposed_bwd_s=x_b)


def shard_buffer_bytes(params_layer, w_b, tp, S):
    """Two shard buffers per rank (the one computed on + the one arriving): 2·|W_l|/S, against FSDP's two gathered
    layers 2·|W_l| (S12 (b))."""
    return 2.0 * params_layer * w_b / (tp * S)


def rotate_layers(model, c, kind) -> LayerRotation | None:
    """The rotation of the plans that rotate (None where none does: every other plan is priced exactly as
    before); ``kind``'s terms get their GEMMs on the shard shape.  S: the ZeRO shard group (``shard``, else dp·cp)."""
    P = c.P
    on = np.asarray(P.rotate, dtype=bool)
    if not np.any(on):
        return None
    S = np.where(P.shard > 0, P.shard.astype(np.float64), c.dp * c.cp)
    rot = layer_rotation(model, c, on, S)
    kind.terms = with_shard_gemms(kind.terms, rot)
    return rot


def stage_collectives(hw, rot: LayerRotation, stages, w_b, g_red, extent, rc):
    """Per stage (params, layers, gathers, backward gathers, reduce-scatters): its ``StageRotation`` and, where the
    plan rotates, the rotation's link work in place of the collectives (forward, backward, none) — what the port
    and interference terms see of it."""
    rots, out = [], []
    for params, n, ag, ag_b, rs in stages:
        r = stage_rotation(hw, rot, params, n, w_b, g_red, extent, rc)
        rots.append(r)
        out.append((np.where(rot.on, r.work_fwd_s, ag), np.where(rot.on, r.work_bwd_s, ag_b),
                    np.where(rot.on, 0.0, rs)))
    return (rots, *out)


def executor_ops(rot: LayerRotation, rots) -> dict:
    """What the reference executor plays of a rotate plan: the ring size, one sub-step's GEMMs forward / backward,
    and one transfer of a layer part of the first, last and a middle stage (seconds)."""
    out = {"op_rtp_shards": rot.S, "op_rtp_sub_fwd_s": rot.sub_fwd_s, "op_rtp_sub_bwd_s": rot.sub_bwd_s}
    for name, r in zip(("first", "last", "mid"), rots):
        out[f"op_rtp_xfer_fwd_{name}_s"] = r.xfer_fwd_s
        out[f"op_rtp_xfer_bwd_{name}_s"] = r.xfer_bwd_s
    return out
