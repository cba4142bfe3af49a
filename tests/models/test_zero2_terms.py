"""ZeRO-2's port chain (models/zero2_terms.py) by hand: with one chunk per device each stage's reduce-scatters start
at its first backward — the first micro-batch's round trip for the first stage — and run back to back on its own
port; the other stages' reduce-scatters do not queue before them."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.models.zero2_terms import Zero2Stage, zero2_terms


def _st(rs, wf, wb, layers=2.0, ag=0.0):
    # link-bound: rs per micro-batch above the backward; two buckets of a 2-layer stage hide all stretch (q = 1)
    return Zero2Stage(slot=wf + wb, rs=rs, rs_window=rs, wb=wb, wf=wf, ag=ag, layers=layers)


def _chain(first, last, mid, *, pp, m, v=1.0, n_mid_total=4.0, n_mid_max=2.0):
    f64 = np.float64
    sum_slots = first.slot + last.slot + (pp - 2) * mid.slot
    t_max = max(first.slot, last.slot, mid.slot)
    _, _, chain = zero2_terms(first, last, mid, og=1.0, v=f64(v), m=f64(m), pp=f64(pp), warm=f64(min(pp, m)),
                              sum_slots=f64(sum_slots), t_pipe=f64(m * t_max + sum_slots - t_max),
                              n_mid_total=n_mid_total, n_mid_max=n_mid_max)
    return float(chain)


def test_first_stage_chain_starts_at_the_round_trip():
    # 4 stages of 2 layers, forward 1, backward 2, reduce-scatters 5 per micro-batch (link-bound), m = 8
    st = _st(5.0, 1.0, 2.0)
    chain = _chain(st, st, st, pp=4.0, m=8.0)
    # first stage: round trip = the other stages' slots (3 · 3) + its own forward (1) + one layer's backward (1),
    # then 8 reduce-scatters of 5: 11 + 40 = 51 — not its warm-up forward + Σ of the other stages' reduce-scatters
    assert chain == pytest.approx(9.0 + 1.0 + 1.0 + 8 * 5.0)


def test_a_large_gather_delays_the_chain_and_faster_links_shorten_it():
    st = _st(5.0, 1.0, 2.0)
    big = _st(5.0, 1.0, 2.0, ag=20.0)  # the next step's parameter all-gather goes first
    assert _chain(big, st, st, pp=4.0, m=8.0) == pytest.approx(20.0 + 8 * 5.0)
    prev = None
    for scale in (1.0, 0.5, 0.25):
        c = _chain(_st(5.0 * scale, 1.0, 2.0), _st(4.0 * scale, 1.0, 2.0), _st(5.0 * scale, 1.0, 2.0), pp=4.0, m=8.0)
        assert prev is None or c <= prev + 1e-12
        prev = c


def test_interleaved_buckets_wait_behind_the_cool_down_backwards():
    # v = 2 chunks of one layer: both buckets of a chunk are in flight at its end and hide behind the next op —
    # unless it is a cool-down backward: the first stage runs (p − 1)·2 + (v − 1)·p = 10 of its m·v = 16 backwards
    # there, so 10/16 of the excess rs − b = 5 − 2 stretches its slot
    f64 = np.float64
    st = _st(5.0, 1.0, 2.0, layers=2.0)
    quiet = _st(1.0, 1.0, 2.0, layers=2.0)  # hides everywhere
    _, stretch, _ = zero2_terms(st, quiet, quiet, og=1.0, v=f64(2.0), m=f64(8.0), pp=f64(4.0), warm=f64(4.0),
                                sum_slots=f64(12.0), t_pipe=f64(8 * 3.0 + 9.0 / 2), n_mid_total=4.0, n_mid_max=2.0)
    assert float(stretch) == pytest.approx(10 / 16 * (5.0 - 2.0))
