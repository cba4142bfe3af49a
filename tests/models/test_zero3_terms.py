"""ZeRO-3 in a pipeline (models/zero3_terms.py) on hand-derivable stages: each 1F1B stage at its own period, a
link-bound first stage hiding its warm-up gathers in the fill, the drain less the two prefetched layers, and the
interleaved rule unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.models.zero3_terms import Zero3Stage, zero3_terms


def _stage(ag, wf, wb, slot, layers=4.0):
    # forward gathers ag, backward gathers ag and reduce-scatters ag (ZeRO-3 re-shards after the forward)
    return Zero3Stage(ag=ag, ag_b=ag, rs=ag, wf=wf, wb=wb, slot=wf + wb, layers=layers, pipe_slot=slot)


def _run(first, last, mid, *, pp=4.0, m=8.0, v=1.0, bubble=0.0):
    t_max = max(first.pipe_slot, last.pipe_slot, mid.pipe_slot)
    return zero3_terms(first, last, mid, of_=1.0, pp=np.float64(pp), m=np.float64(m), v=np.float64(v),
                       n_mid_total=8.0, n_mid_max=4.0, rep=0.0, t_max=t_max, bubble=bubble)


def test_each_stage_at_its_own_period():
    # first: slot 1, exposed 2 (fwd 1 − 0.5 + bwd 2 − 0.5 = 2); last: slot 2.5, nothing exposed; no fill, no drain
    first = _stage(1.0, 0.5, 0.5, 1.0, layers=2.0)
    last = _stage(0.1, 1.0, 1.5, 2.5, layers=2.0)
    mid = _stage(0.1, 0.5, 0.5, 1.0, layers=2.0)
    dp, per_mb = _run(first, last, mid)
    # slowest period max(1 + 2, 2.5 + 0) = 3 against the longest slot 2.5: 0.5 per micro-batch, not 2
    assert float(dp) == pytest.approx(8 * 0.5)
    assert float(per_mb) == pytest.approx(0.5)


def test_warm_up_gathers_hide_in_the_fill_up_to_the_bubble():
    first = _stage(1.0, 0.5, 0.5, 1.0, layers=2.0)  # period 3, forward exposure 0.5
    last = _stage(0.1, 0.5, 0.5, 1.0, layers=2.0)  # period 1
    mid = _stage(0.1, 0.5, 0.5, 1.0, layers=2.0)
    for bubble, hidden in ((1.0, 1.0), (3.0, 1.5)):  # warm-up exposure (pp − 1)·0.5 = 1.5
        dp, _ = _run(first, last, mid, bubble=bubble)
        # step = m·3 + bubble − hidden; dp = step − m·t_max − bubble
        assert float(dp) == pytest.approx(8 * 3 - hidden - 8 * 1.0)


def test_drain_keeps_what_two_buffers_cannot_prefetch():
    # every stage alike: drain = (Σ of the stages' backward exposures but the worst) · (n_c − 2)/n_c
    st = _stage(1.0, 2.0, 1.0, 3.0, layers=8.0)  # backward exposure 2 − 1 = 1, forward hidden
    dp, _ = _run(st, st, st, pp=4.0, m=8.0)
    n_mid_total, n_mid_max = 8.0, 4.0
    drain = (1 + 1 + 1 * n_mid_total / n_mid_max - 1) * (8 - 2) / 8
    assert float(dp) == pytest.approx(8 * 1.0 + drain)


def test_interleaved_counts_the_worst_exposure_on_every_slot():
    first = _stage(1.0, 0.5, 0.5, 1.0, layers=2.0)
    last = _stage(0.1, 1.0, 1.5, 2.5, layers=2.0)
    mid = _stage(0.1, 0.5, 0.5, 1.0, layers=2.0)
    dp, per_mb = _run(first, last, mid, v=2.0)
    assert float(per_mb) == pytest.approx(2.0)  # the first stage's exposure, as before
    assert float(dp) == pytest.approx(8 * 2.0)  # one layer per chunk: both prefetched, no drain


def test_faster_links_never_lengthen_the_step():
    for scale in (1.0, 0.8, 0.5, 0.25):
        first = _stage(1.0 * scale, 0.5, 0.5, 1.0, layers=6.0)
        last = _stage(0.4 * scale, 1.0, 1.5, 2.5, layers=6.0)
        mid = _stage(0.6 * scale, 0.5, 0.5, 1.0, layers=6.0)
        dp, _ = _run(first, last, mid, bubble=2.0)
        if scale < 1.0:
            assert float(dp) <= prev + 1e-12
        prev = float(dp)


def test_sends_beside_the_collectives_their_chunk_boundary_releases():
    from parplan.models.port_terms import coincident_shares

    on = np.array([True])
    # ZeRO-3, 4 layers, v = 2: per send, a forward gather of ag/4 = 0.5 and a backward gather + reduce-scatter of
    # (2 + 2)/4 = 1.0 beside sends of 0.8: each pair adds min(0.8, 0.5) + min(0.8, 1.0) = 1.3, twice (v = 2)
    (sh,) = coincident_shares([np.array([0.1])], 0.8, 2.0, np.array([3]), on, [(2.0, 2.0, 2.0, 4.0)])
    assert float(sh[0]) == pytest.approx(2 * (0.5 + 0.8))
    # ZeRO-2: only the backward send meets a reduce-scatter; the average-share estimate wins where larger
    (sh,) = coincident_shares([np.array([1.0])], 0.8, 2.0, np.array([2]), on, [(2.0, 0.0, 2.0, 4.0)])
    assert float(sh[0]) == pytest.approx(1.0)
    (sh,) = coincident_shares([np.array([0.1])], 0.8, 2.0, np.array([2]), on, [(2.0, 0.0, 2.0, 4.0)])
    assert float(sh[0]) == pytest.approx(2 * 0.5)
    # ZeRO 0/1 and sends on another link: nothing beyond the average share
    (sh,) = coincident_shares([np.array([0.1])], 0.8, 2.0, np.array([1]), on, [(2.0, 2.0, 2.0, 4.0)])
    assert float(sh[0]) == pytest.approx(0.1)
    (sh,) = coincident_shares([np.array([0.1])], 0.8, 2.0, np.array([3]), np.array([False]), [(2.0, 2.0, 2.0, 4.0)])
    assert float(sh[0]) == pytest.approx(0.1)


def test_pair_rule_by_hand_from_the_executor_trace():
    from parplan.models.zero3_terms import _pair

    # llama3-8b dp=1,tp=2,pp=16,cp=2,vpp=2,zero=3 on dgx-h100-64, last stage, the chunk with the output head (ms):
    # forward gather 6.881, backward gather = reduce-scatter = 7.0585 (14.117 when they share the link), forward
    # 5.555, backward 10.584, a send 1.069.  The executor's trace runs one backward every 24.701 ms: the backward's
    # gather starts as the previous backward ends and finishes, with the reduce-scatter, 14.117 later; + 10.584
    x = _pair(6.881, 7.0585, 7.0585, 5.555, 10.584, 1.069)
    assert x == pytest.approx(14.117 + 10.584 - (5.555 + 10.584 + 2 * 1.069))
    # a gather shorter than the forward between the backwards hides; a long forward gather shows behind the backward
    assert _pair(1.0, 1.0, 1.0, 5.0, 10.0, 0.5) == 0.0
    assert _pair(20.0, 1.0, 1.0, 5.0, 10.0, 0.5) == pytest.approx(20.0 + 5.0 + 0.5 - 16.0)


def _one_layer_stage(ag, cf, cb, extra=(0.0, 0.0), share=1.0, v=2.0):
    # v chunks of one layer: the stage's gathers and reduce-scatters ag (its layers' share ``share``)
    slot = v * (cf + cb) + extra[0] + extra[1]
    return Zero3Stage(ag=ag, ag_b=ag, rs=ag, wf=v * cf + extra[0], wb=v * cb + extra[1], slot=slot, layers=v,
                      pipe_slot=slot, lay_share=share, layer_fb=(cf, cb), extra_fb=extra)


def _run_pairs(first, last, mid, *, m=8.0, v=2.0, pp=4.0, reshard=True):
    t_max = max(first.pipe_slot, last.pipe_slot, mid.pipe_slot)
    return zero3_terms(first, last, mid, of_=1.0, pp=np.float64(pp), m=np.float64(m), v=np.float64(v),
                       n_mid_total=4.0, n_mid_max=2.0, rep=0.0, t_max=t_max, bubble=0.0,
                       reshard=np.array(reshard))


def test_one_layer_chunks_take_each_stage_at_its_own_period():
    # first stage: the embedding's parameters (half of its gather) on chunk 0, barely any compute; last stage:
    # the output head's compute; per chunk pair own work cf + cb (no sends here)
    first = _one_layer_stage(4.0, 1.0, 2.0, extra=(0.1, 0.1), share=0.5)
    last = _one_layer_stage(1.0, 1.0, 2.0, extra=(2.0, 4.0))
    mid = _one_layer_stage(1.0, 1.0, 2.0)
    dp, per_mb = _run_pairs(first, last, mid)
    # m·v = 16 ops per chunk kind; the first stage runs (p − 1)·2 + (v − 1)·p = 10 warm-up forwards (share 0.625)
    # first: layer chunk g = 4·0.5/2 = 1 → pair max(3, 2 + 2, 1 + 1) − 3 = 1, alone (1 − 1)⁺ + (2 − 2)⁺ = 0;
    # embedding chunk g = 1 + 2 = 3, c = 1.1/2.1: pair max(3.2, 6 + 2.1, 3 + 1.1) − 3.2 = 4.9, alone
    # (3 − 1.1) + (6 − 2.1) = 5.8 → 0.375·(1 + 4.9) + 0.625·(0 + 5.8) = 5.8375, period 6.2 + 5.8375
    # last: layer chunk g = 0.5 → 0; head chunk c = 3/6: max(9, 1 + 6, 0.5 + 3) − 9 = 0 → period 12 (the longest slot)
    assert float(per_mb) == pytest.approx(6.2 + 5.8375 - 12.0)
    assert float(dp) == pytest.approx(8 * 0.0375)  # one layer per chunk: nothing left for the drain
    # without re-sharding the old rule applies (the worst stage's exposure on every slot)
    _, per_mb_old = _run_pairs(first, last, mid, reshard=False)
    assert float(per_mb_old) > float(per_mb)


def test_one_layer_chunks_faster_links_never_lengthen_the_step():
    prev = None
    for scale in (1.0, 0.8, 0.5, 0.25, 0.1):
        first = _one_layer_stage(4.0 * scale, 1.0, 2.0, extra=(0.1, 0.1), share=0.5)
        last = _one_layer_stage(1.0 * scale, 1.0, 2.0, extra=(2.0, 4.0))
        mid = _one_layer_stage(3.0 * scale, 1.0, 2.0)
        t_max = max(first.pipe_slot, last.pipe_slot, mid.pipe_slot)
        dp, _ = _run_pairs(first, last, mid)
        step = 8 * t_max + float(dp)
        if prev is not None:
            assert step <= prev + 1e-12
        prev = step
