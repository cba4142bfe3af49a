"""ZeRO-3 / FSDP in a pipeline (vectorized over plans; used by ``step_terms.assemble``): the per-micro-batch
exposure of the parameter gathers and gradient reduce-scatters, and the drain.

* Steady state: every micro-batch's forward gathers (behind the forward when the framework prefetches) and its
  backward gathers + reduce-scatters (behind the backward) lengthen every slot: the worst of the first and the last
  stage, m times.
* Drain: after the last forward the backward gathers and reduce-scatters sit on the critical path once more on
  every other stage, each with its own collectives and its own backward to hide them (Σ over the stages but the
  worst, /v) — the drain term grows no faster than the bubble shrinks when the compute gets faster.
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


def zero3_terms(first: Zero3Stage, last: Zero3Stage, mid: Zero3Stage, *, of_, pp, m, v, n_mid_total, n_mid_max,
                rep, pair_on=None, rotate=None):
    """(exposed DP seconds of the step, the steady per-micro-batch exposure) of ZeRO-3 plans; ``pair_on``: where
    co-scheduled forward/backward pairs hide a micro-batch's collectives (MoE); ``rotate``: RTP plans."""
    x0 = lambda c_, w: np.maximum(0.0, c_ - w)  # noqa: E731
    xf = [x0(st.ag, of_ * st.wf) for st in (first, last)]
    xb = [x0(st.ag_b + st.rs, of_ * st.wb) for st in (first, last, mid)]
    if rotate is not None:
        xf = [np.where(rotate, st.rot.exposed_fwd_s, x) for st, x in zip((first, last), xf)]
        xb = [np.where(rotate, st.rot.exposed_bwd_s, x) for st, x in zip((first, last, mid), xb)]
    xb_f = xb[0]
    xb_l = np.where(pp > 1, xb[1], 0.0)
    xb_m = np.where(pp > 2, xb[2], 0.0)  # a middle stage of n_mid_max layers
    x_b = np.maximum(np.maximum(xb_f, xb_l), xb_m)
    drain = xb_f + xb_l + xb_m * n_mid_total / np.maximum(n_mid_max, 1.0) - x_b
    steady3 = np.maximum(xf[0] + xb[0], xf[1] + xb[1])
    if pair_on is not None:  # co-scheduled pairs: one micro-batch's gathers and reduce-scatters hide behind the pair
        joint = np.maximum(x0(first.ag + first.ag_b + first.rs, of_ * first.slot),
                           x0(last.ag + last.ag_b + last.rs, of_ * last.slot))
        steady3 = np.where(pair_on, joint, steady3)
    return m * steady3 + np.maximum(drain, 0.0) / v + rep, steady3
