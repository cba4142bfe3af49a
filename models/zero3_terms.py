"""ZeRO-3 / FSDP in a pipeline (vectorized over plans; used by ``step_terms.assemble``): the per-micro-batch
exposure of the parameter gathers and gradient reduce-scatters, and the drain.

* Steady state: every micro-batch's forward gathers (behind the forward when the framework prefetches) and its
  backward gathers + reduce-scatters (behind the backward) lengthen the slot of the stage that carries them.
  Interleaved (v > 1): the worst stage's exposure lengthens every slot, m times — except where a chunk holds one
  layer and the parameters are re-sharded: each op is then one gather, the two gather buffers let a backward's
  gather start only as the previous backward ends (sharing the link with its reduce-scatter), behind the forward
  between them, so the exposure is the pair rule's (``_pair``; the embedding's and the output head's parameters and
  compute ride on their chunk) and each stage runs at its own period, as at v = 1 below.  The share of a stage's
  ops in Megatron's warm-up and cool-down (``primitives.pipeline.interleaved_warmup_share``) runs forwards behind
  forwards and backwards behind backwards (``_alone``).  One chunk per device (v = 1): in
  1F1B's steady state each stage runs at its own period, slot + exposure, and the step at the slowest one's — the
  stage of the longest compute slot need not be the one of the largest exposure (the first stage gathers the
  embedding behind almost no compute, the last computes the LM head), so the exposure counted is
  max_s(slot_s + exposure_s) − max_s slot_s per micro-batch (derived).
* Fill (v = 1): a first stage that sets that period runs its warm-up forwards, min(p − 1, m) of them, while the
  first micro-batch's round trip fills the others — their exposed gathers sit in the bubble it would wait in
  anyway.  The step is the larger of that stage's work less the hidden part and the next slowest stage's
  (continuous where the slowest stage changes: faster hardware never lengthens it; derived).
* Drain: after the last forward the backward gathers and reduce-scatters sit on the critical path once more on
  every other stage, each with its own collectives and its own backward to hide them (Σ over the stages but the
  worst, /v), less what the two gather buffers fetch while the stage waits for its gradient: the first two layers'
  gathers of each chunk of n_c layers, so (n_c − min(n_c, 2))/n_c of the exposure stays (the two-buffer rule of
  the memory model's ``zero3_gather_buffer_bytes`` and the executor's program, as in ``zero2_terms``).
* RTP (``rotate``; ``models/rtp_terms.py``): the stages' rotations replace the collectives; their exposure per
  micro-batch is already net of the sub-steps that hide it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models.primitives.pipeline import interleaved_warmup_share


@dataclass
class Zero3Stage:
    """One pipeline stage (first, last or the largest middle one) per micro-batch (seconds)."""

    ag: object  # forward parameter gathers
    ag_b: object  # backward gathers (re-sharded after the forward)
    rs: object  # gradient reduce-scatters
    wf: object  # the forward window that hides the gathers
    wb: object  # the backward window
    slot: object = 0.0  # forward + backward (co-scheduled pairs hide one micro-batch's collectives behind both)
    rot: object = None  # RTP: the stage's ``StageRotation`` (its exposed forward / backward seconds)
    layers: object = 1.0  # transformer layers on the stage (all its chunks)
    pipe_slot: object = 0.0  # the stage's slot in the pipeline makespan (compute, sends and port shares)
    # one layer per chunk (``chunk_pairs``): the layers' share of the stage's parameters, one layer's forward and
    # backward (+ recompute), and the compute of the stage's embedding or output head (its extra chunk part)
    lay_share: object = 1.0
    layer_fb: tuple = None
    extra_fb: tuple = (0.0, 0.0)


def _kept_after_prefetch(layers, v):
    """Share of a chunk's backward exposure the two gather buffers cannot fetch during the drain's wait."""
    n_c = np.maximum(np.asarray(layers, dtype=np.float64) / v, 1e-9)
    return (n_c - np.minimum(n_c, 2.0)) / n_c


def _pair(gf, gb, rs, cf, cb, p2p):
    """Exposure of one chunk's forward/backward pair per micro-batch in the steady state, one part per op (the
    executor's program: two gather buffers, gathers in program order on one stream, a send after each op).  The
    backward's gather waits for the buffer of the previous backward (gather n − 2), starts as it ends and shares the
    link with its reduce-scatter (fair share: done after min(2·g_b, g_b + rs)) while the sends and the next forward
    run; the next forward's gather starts with the backward.  Backward to backward: max(c_f + c_b + 2·p2p,
    share + c_b, g_f + c_f + p2p), less the pair's own work (derived; each term shrinks on faster hardware)."""
    own = cf + cb + 2.0 * p2p
    return np.maximum(np.maximum(own, np.minimum(2.0 * gb, gb + rs) + cb), gf + cf + p2p) - own


def _alone(gf, gb, rs, cf, cb, p2p):
    """The warm-up's forwards and the cool-down's backwards, each behind ops of its own kind: a forward's gather
    behind the forward before it, a backward's (sharing the link with the previous reduce-scatter) behind the
    backward before it."""
    x0 = lambda c_, w: np.maximum(0.0, c_ - w)  # noqa: E731
    return x0(gf, cf + p2p) + x0(np.minimum(2.0 * gb, gb + rs), cb + p2p)


def chunk_pairs(st: Zero3Stage, v, p2p, alone=0.0):
    """Per micro-batch exposure of a stage holding one layer per chunk: v − 1 plain layer chunks and the chunk with
    the stage's embedding or output head (its parameters and compute on top of the layer's); ``alone``: the share
    of its ops in the warm-up and cool-down, where forwards and backwards do not alternate."""
    n = np.maximum(np.asarray(st.layers, dtype=np.float64), 1.0)
    gf, gb, rs = (x * st.lay_share / n for x in (st.ag, st.ag_b, st.rs))
    xf, xb, xr = (x * (1.0 - st.lay_share) for x in (st.ag, st.ag_b, st.rs))
    cf, cb = st.layer_fb
    ef, eb = st.extra_fb

    def ex(*a):
        return (1.0 - alone) * _pair(*a) + alone * _alone(*a)

    return (v - 1.0) * ex(gf, gb, rs, cf, cb, p2p) + ex(gf + xf, gb + xb, rs + xr, cf + ef, cb + eb, p2p)


def zero3_terms(first: Zero3Stage, last: Zero3Stage, mid: Zero3Stage, *, of_, pp, m, v, n_mid_total, n_mid_max,
                rep, t_max, bubble, pair_on=None, rotate=None, p2p=0.0, reshard=None):
    """(exposed DP seconds of the step, the steady exposure it charges per micro-batch) of ZeRO-3 plans;
    ``t_max`` and ``bubble``: the compute pipeline's longest slot and its fill + drain (``step_terms``);
    ``pair_on``: where co-scheduled forward/backward pairs hide a micro-batch's collectives (MoE); ``rotate``: RTP
    plans."""
    x0 = lambda c_, w: np.maximum(0.0, c_ - w)  # noqa: E731
    stages = (first, last, mid)
    xf = [x0(st.ag, of_ * st.wf) for st in stages]
    xb = [x0(st.ag_b + st.rs, of_ * st.wb) for st in stages]
    if rotate is not None:
        xf = [np.where(rotate, st.rot.exposed_fwd_s, x) for st, x in zip(stages, xf)]
        xb = [np.where(rotate, st.rot.exposed_bwd_s, x) for st, x in zip(stages, xb)]
    on = [1.0, np.where(pp > 1, 1.0, 0.0), np.where(pp > 2, 1.0, 0.0)]  # a middle stage of n_mid_max layers
    xd = [on_ * x * _kept_after_prefetch(st.layers, v) for on_, x, st in zip(on, xb, stages)]
    drain = xd[0] + xd[1] + xd[2] * n_mid_total / np.maximum(n_mid_max, 1.0) - np.maximum(np.maximum(xd[0], xd[1]),
                                                                                          xd[2])
    ex = [on_ * (f + b) for on_, f, b in zip(on, xf, xb)]
    if pair_on is not None:  # co-scheduled pairs: one micro-batch's gathers and reduce-scatters hide behind the pair
        ex = [np.where(pair_on, on_ * x0(st.ag + st.ag_b + st.rs, of_ * st.slot), e)
              for on_, st, e in zip(on, stages, ex)]
    steady3 = np.maximum(ex[0], ex[1])
    one_layer = None
    if first.layer_fb is not None and reshard is not None:  # one layer per chunk, re-sharded: the pair rule
        one_layer = (v > 1) & np.asarray(reshard, dtype=bool) & (first.layers == v) & (last.layers == v) & (
            (pp <= 2) | (mid.layers == v)) & (of_ > 0) & (True if rotate is None else ~np.asarray(rotate, dtype=bool))
        warm_s = [interleaved_warmup_share(pp, v, m, s_) for s_ in (0.0, pp - 1.0, 1.0)]  # first, last, a middle
        exc = [on_ * chunk_pairs(st, v, p2p, w_) for on_, st, w_ in zip(on, stages, warm_s)]
        ex = [np.where(one_layer, a, b) for a, b in zip(exc, ex)]
    period = [on_ * (st.pipe_slot + e) for on_, st, e in zip(on, stages, ex)]
    rest = np.maximum(period[1], period[2])
    drain = np.maximum(drain, 0.0) / v
    # v = 1: the fill and drain the stage of the longest period waits through, less its warm-up gathers
    idle = bubble + drain
    first_leads = m * period[0] + idle - np.minimum(idle, np.minimum(pp - 1.0, m) * xf[0])
    one_chunk = np.maximum(first_leads, m * rest + idle) - m * t_max - bubble
    if one_layer is not None:  # each stage at its own period (as for v = 1), its exposure by the pair rule
        steady3 = np.where(one_layer, np.maximum(np.maximum(period[0], rest) - t_max, 0.0), steady3)
    per_mb = np.where(v > 1, steady3, np.maximum(one_chunk - drain, 0.0) / m)
    return np.where(v > 1, m * steady3 + drain, np.maximum(one_chunk, 0.0)) + rep, per_mb
