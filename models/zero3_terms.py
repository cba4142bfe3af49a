"""ZeRO-3 / FSDP in a pipeline (vectorized over plans; used by ``step_terms.assemble``): the per-micro-batch
exposure of the parameter gathers and gradient reduce-scatters, and the drain.

* Steady state: every micro-batch's forward gathers (behind the forward when the framework prefetches) and its
  backward gathers + reduce-scatters (behind the backward) lengthen the slot of the stage that carries them.
  Interleaved (v > 1): the worst stage's exposure lengthens every slot, m times.  One chunk per device (v = 1): in
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


def _kept_after_prefetch(layers, v):
    """Share of a chunk's backward exposure the two gather buffers cannot fetch during the drain's wait."""
    n_c = np.maximum(np.asarray(layers, dtype=np.float64) / v, 1e-9)
    return (n_c - np.minimum(n_c, 2.0)) / n_c


def zero3_terms(first: Zero3Stage, last: Zero3Stage, mid: Zero3Stage, *, of_, pp, m, v, n_mid_total, n_mid_max,
                rep, t_max, bubble, pair_on=None, rotate=None):
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
    period = [on_ * (st.pipe_slot + e) for on_, st, e in zip(on, stages, ex)]
    rest = np.maximum(period[1], period[2])
    drain = np.maximum(drain, 0.0) / v
    # v = 1: the fill and drain the stage of the longest period waits through, less its warm-up gathers
    idle = bubble + drain
    first_leads = m * period[0] + idle - np.minimum(idle, np.minimum(pp - 1.0, m) * xf[0])
    one_chunk = np.maximum(first_leads, m * rest + idle) - m * t_max - bubble
    per_mb = np.where(v > 1, steady3, np.maximum(one_chunk - drain, 0.0) / m)
    return np.where(v > 1, m * steady3 + drain, np.maximum(one_chunk, 0.0)) + rep, per_mb
