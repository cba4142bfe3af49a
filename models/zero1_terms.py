"""ZeRO-0/1 (gradients reduced once per step) in a pipeline, chunk by chunk (vectorized over plans; used by
``step_terms.assemble``).

* The gradient reduction (all-reduce, ZeRO-1 reduce-scatter): Megatron-Core enables the gradient sync of a model
  chunk for its last micro-batch only (``forward_backward_pipelining_with_interleaving``: ``enable_grad_sync``
  before the last backward of each chunk), so chunk c's buckets go out after its own last backward, which the
  interleaved cool-down runs c·min(p, m) backwards before the stage's last one (chunks v−1 … 0, a group of
  min(p, m) micro-batches each).  The buckets queue on one DP stream in that order; with ``coll_c`` the chunk's
  share, the exposed part is max over c of Σ_{c' ≤ c} coll_c' − (1 + c·min(p, m))·b/v, linear in c between its
  ends (the embedding's share sits on chunk 0 of the first stage, the output projection's on chunk v−1 of the
  last): its maximum is at c = 0 or c = v − 1.  At v = 1 this is coll − b (one micro-batch's backward).
* The next step's parameter all-gather (ZeRO-1/2): chunk c must arrive before its first forward, which the
  interleaved warm-up reaches after c·min(p, m) forwards of earlier chunks — the mirror image.

Both are monotone in every cost: a faster backward or forward only widens the windows.
"""
from __future__ import annotations

import numpy as np


def reduce_exposure(coll, lay, bwd, slack, v, warm, og, extra_last_chunk: bool):
    """Exposed seconds of a once-per-step gradient reduction of ``coll`` seconds (``lay`` of it the transformer
    layers', the rest on the embedding / output chunk), sent chunk by chunk behind the cool-down backwards (``bwd``
    one micro-batch's backward of the stage, ``slack`` what the stage finishes before the step's last backward)."""
    per = coll * lay / v  # one chunk's layers
    rest = coll * (1.0 - lay)  # the embedding (chunk 0, sent last) or output projection (chunk v−1, sent first)
    b = og * bwd / v
    last = v - 1.0
    need0 = per + (0.0 if extra_last_chunk else rest) - b - og * slack
    need_l = coll - (1.0 + last * warm) * b - og * slack
    return np.maximum(np.maximum(need0, need_l), 0.0)


def gather_exposure(ag, fwd, v, warm, op_):
    """Exposed seconds of the next step's parameter all-gather of ``ag`` seconds behind the warm-up forwards
    (``fwd`` one micro-batch's forward of the stage).  need(c) = (c+1)·ag/v − (1 + c·min(p, m))·fwd/v is linear in
    the chunk c: its maximum over 0…v−1 is at an end."""
    last = v - 1.0
    need0 = ag / v - op_ * fwd / v
    need_l = (last + 1) * ag / v - op_ * (1.0 + last * warm) * fwd / v
    return np.maximum(np.maximum(need0, need_l), 0.0)
