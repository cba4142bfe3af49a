"""ZeRO-1/2 in a pipeline: the next step's parameter all-gather, chunk by chunk (vectorized over plans; used by
``step_terms.assemble``).  Chunk c must arrive before its first forward, which the interleaved warm-up reaches after
c·min(p, m) forwards of earlier chunks.  Monotone in every cost: a faster forward only widens the window.
"""
from __future__ import annotations

import numpy as np


def gather_exposure(ag, fwd, v, warm, op_):
    """Exposed seconds of the next step's parameter all-gather of ``ag`` seconds behind the warm-up forwards
    (``fwd`` one micro-batch's forward of the stage).  need(c) = (c+1)·ag/v − (1 + c·min(p, m))·fwd/v is linear in
    the chunk c: its maximum over 0…v−1 is at an end."""
    last = v - 1.0
    need0 = ag / v - op_ * fwd / v
    need_l = (last + 1) * ag / v - op_ * (1.0 + last * warm) * fwd / v
    return np.maximum(np.maximum(need0, need_l), 0.0)
