"""ZeRO-2 (gradients sharded, reduce-scattered every micro-batch) in a pipeline: how the per-micro-batch
reduce-scatters lengthen the step (vectorized over plans; used by ``step_terms.assemble``).

Two bounds, each monotone in every cost (faster hardware never lengthens either):

* the compute side — two gradient-bucket buffers: a layer's backward waits for the bucket two layers back, so at
  the end of each chunk's backward two layers' buckets are still in flight and hide behind the op that follows;
  per chunk of n_c layers the backward is stretched by the (n_c − min(n_c, 2))/n_c share of its excess
  (rs − b) — and, interleaved, by the rest of it where the next op is a cool-down backward (Megatron's schedule,
  ``primitives.pipeline.interleaved_warmup_share``), not a forward — and the pipeline of stretched slots
  is priced by the makespan rule m·max + (Σ − max)/v;
* the port side — a stage's port carries the next step's parameter all-gather, then its m reduce-scatters back
  to back, none before its first layer's backward: the step is never shorter than that chain.  With one chunk per
  device the first backward comes when the first micro-batch's round trip reaches the stage (the forwards to the
  last stage and the later stages' backwards; each stage has its own port, so the others' reduce-scatters do not
  queue before it); interleaved, after the warm-up forwards, with the fill and drain (Σ − max)/v of the stages'
  reduce-scatters.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models.primitives.pipeline import interleaved_warmup_share


@dataclass
class Zero2Stage:
    """One pipeline stage (first, last or the largest middle one), seconds per micro-batch."""

    slot: object  # forward + backward + p2p
    rs: object  # the stage's reduce-scatters alone on the port
    rs_window: object  # what must hide behind the backward: the layers' reduce-scatters (slowed by a shared port)
    wb: object  # the backward window
    wf: object  # the forward window
    ag: object  # the next step's parameter all-gather
    layers: object  # transformer layers on the stage


def zero2_terms(first: Zero2Stage, last: Zero2Stage, mid: Zero2Stage, *, og: float, v, m, pp, warm, sum_slots,
                t_pipe, n_mid_total, n_mid_max):
    """(pipeline growth of the stretched slots, the stretch per micro-batch of the critical slot, the port chain
    without the replica all-reduce) — seconds."""
    x0 = lambda c_, w: np.maximum(0.0, c_ - w)  # noqa: E731
    single, deep = pp == 1, pp > 2

    def stretched(st: Zero2Stage, s_):
        q = np.minimum(1.0, 2.0 * v / np.maximum(st.layers, 1.0))  # the two buckets' share of a chunk
        # the two buckets hide behind the next op, unless it is a backward of the interleaved cool-down
        cool = np.where(v > 1, interleaved_warmup_share(pp, v, m, s_), 0.0)
        return st.slot + og * (1.0 - q + q * cool) * x0(st.rs_window, st.wb) + (1.0 - og) * st.rs_window

    sl_f = stretched(first, 0.0)
    sl_l = np.where(single, sl_f, stretched(last, pp - 1.0))
    sl_m = np.where(deep, stretched(mid, 1.0), 0.0)
    t_max = np.maximum(np.maximum(first.slot, np.where(single, first.slot, last.slot)), np.where(deep, mid.slot, 0.0))
    t2_max = np.maximum(np.maximum(sl_f, sl_l), sl_m)
    sum2 = sum_slots + (sl_f - first.slot) + np.where(single, 0.0, (sl_l - last.slot)
                                                      + np.maximum(pp - 2, 0) * (sl_m - np.where(deep, mid.slot, 0.0)))
    growth = m * t2_max + (sum2 - t2_max) / v - t_pipe

    def chain(st: Zero2Stage):
        first_b = np.maximum(st.ag, (1.0 + (v - 1.0) * warm) * st.wf / v + st.wb / np.maximum(st.layers, 1.0))
        return first_b + m * st.rs

    rs_l = np.where(single, 0.0, last.rs)
    rs_mids = np.where(deep, mid.rs * n_mid_total / np.maximum(n_mid_max, 1.0), 0.0)
    fill = (first.rs + rs_l + rs_mids - np.maximum(np.maximum(first.rs, rs_l), np.where(deep, mid.rs, 0.0))) / v
    port = np.maximum(np.maximum(chain(first), chain(last)), np.where(deep, chain(mid), 0.0))
    # one chunk per device: each stage's port starts its reduce-scatters at its first backward, which the first
    # micro-batch's round trip reaches — the forwards to the last stage, the later stages' backwards (derived)
    mids = np.where(deep, n_mid_total / np.maximum(n_mid_max, 1.0), 0.0)  # middle stages, in largest-stage units
    fwds = first.wf + mids * mid.wf + np.where(single, 0.0, last.wf)
    lay = lambda st: st.wb / np.maximum(st.layers, 1.0)  # noqa: E731
    start_f = np.where(single, first.wf, sum2 - sl_f + first.wf) + lay(first)
    start_l = fwds + lay(last)
    start_m = fwds + last.wb + lay(mid)
    port1 = np.maximum(np.maximum(np.maximum(first.ag, start_f) + m * first.rs,
                                  np.where(single, 0.0, np.maximum(last.ag, start_l) + m * last.rs)),
                       np.where(deep, np.maximum(mid.ag, start_m) + m * mid.rs, 0.0))
    return growth, t2_max - t_max, og * np.where(v > 1, port + fill, port1)
