"""The makespan of a non-interleaved 1F1B pipeline (PipeDream-flush / Megatron's 1F1B) whose stages differ,
vectorized over plans.  Stages come in groups of equal stages, in pipeline order (e.g. Megatron's default split:
the first stage, the middle stages holding one layer more, the other middle stages, the last stage).

m·max + (Σ − max), the balanced formula (Narayanan et al. 2021 §2.2) with the longest slot as the period, is exact
when the slowest stage is last, and too long by up to ~20 % when faster stages follow it: they run a micro-batch's
forward and backward while the slow stage works on its warm-up forwards, so only part of their slots reaches the
critical path.  Derived here and checked against the exact max-plus recurrence of the 1F1B order (600 random
heterogeneous pipelines, 2–16 stages, 1–40 micro-batches: −0.4 … +1.2 %, where the balanced formula is 0 … +21.6 %;
``tests/models/test_pipeline_makespan.py``): for each group s as the period setter (its last stage, slot T_s,
forward f_s, backward T_s − f_s, μ_s = min(f_s, T_s − f_s)),

    T(s) = m·T_s + Σ_{stages before} slot + tail(s),
    tail(s) = max(Σ_{after} c_i, Σ_{after} x_i − (m − 1)·μ_s),   c_i = min(x_i, max(0, 2·x_i − T_s, x_i − μ_s)),

x_i the later stages' slots (c_i: what of a later stage's round trip the period setter cannot fill with its own
warm-up forwards and cool-down backwards), and the makespan is max_s T(s).  Every T(s) is at most the balanced
formula's, and with equal stages both are (m + p − 1)·T."""
from __future__ import annotations

import numpy as np


def interleaved_warmup_share(pp, v, m, stage):
    """Share of stage ``stage``'s m·v forwards that Megatron's interleaved 1F1B runs as warm-up before the first
    backward — (p − s − 1)·2 + (v − 1)·p of them (``forward_backward_pipelining_with_interleaving``; the executor's
    ``schedules.order_interleaved``) — and, mirrored, of its backwards in the cool-down.  At m = p that schedule
    (and the executor) runs every forward first; the count is not raised to m·v there: with it, the ZeRO-2 stretch
    of one such random plan went +1.2 → +5.4 % against the executor, so the same-kind rules are not yet right for
    an all-warm-up schedule."""
    total = m * v
    warm = np.minimum((pp - 1.0 - stage) * 2.0 + (v - 1.0) * pp, total)
    return warm / total


def one_f_one_b_makespan(groups, m):
    """``groups``: (slot, forward part of the slot, stage count) per group of equal stages in pipeline order (arrays
    broadcasting over plans; a count of 0 drops the group); ``m``: micro-batches.  Seconds."""
    g = [tuple(np.asarray(x, dtype=np.float64) for x in grp) for grp in groups]
    best, before = 0.0, 0.0  # before: the slots of the groups ahead of s
    for s, (T, f, n) in enumerate(g):
        mu = np.minimum(f, T - f)
        sum_c = sum_x = 0.0
        for x, _, nx in g[s + 1:]:
            c = np.minimum(x, np.maximum(0.0, np.maximum(2.0 * x - T, x - mu)))
            sum_c, sum_x = sum_c + nx * c, sum_x + nx * x
        tail = np.maximum(sum_c, sum_x - (m - 1.0) * mu) if g[s + 1:] else 0.0
        head = before + np.maximum(n - 1.0, 0.0) * T
        best = np.maximum(best, np.where(n > 0, m * T + head + tail, 0.0))
        before = before + n * T
    return best
