"""Hand-checkable pipeline schedules on unit costs (forward 1, backward 2, no communication)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parplan.errors import SpecError
from parplan.executor.costs import PipelineCosts
from parplan.executor.schedules import device_order
from parplan.executor.simulate import simulate_costs

P, M = 4, 8


def sim(schedule="1f1b", p=P, m=M, v=1, fwd=1.0, bwd=2.0, **kw):
    return simulate_costs(PipelineCosts.uniform(p, m, fwd, bwd, vpp=v), schedule, **kw)


def test_1f1b_makespan_and_bubble():
    s = sim("1f1b")
    assert s.step_time_s == pytest.approx((M + P - 1) * 3.0)  # 33
    for d in s.devices:
        assert d.compute_s == pytest.approx(M * 3.0)
        assert d.bubble_s == pytest.approx((P - 1) * 3.0)  # p − 1 forward+backward slots
        assert d.dp_comm_exposed_s == 0.0 and d.pp_p2p_s == 0.0


def test_1f1b_timeline_of_first_and_last_stage():
    s = sim("1f1b")
    first = [(e.name, e.start_s) for e in s.device_events(0) if e.kind in ("forward", "backward")]
    assert first[:5] == [("F0", 0.0), ("F1", 1.0), ("F2", 2.0), ("F3", 3.0), ("B0", 10.0)]
    last = [(e.name, e.start_s) for e in s.device_events(P - 1) if e.kind in ("forward", "backward")]
    assert last[:4] == [("F0", 3.0), ("B0", 4.0), ("F1", 6.0), ("B1", 7.0)]


def test_gpipe_same_makespan_but_holds_all_micro_batches():
    g, f = sim("gpipe"), sim("1f1b")
    assert g.step_time_s == pytest.approx(f.step_time_s)
    assert g.peak_activation_bytes == [M] * P  # one unit of activations per micro-batch
    assert f.peak_activation_bytes == [P - s for s in range(P)]  # 1F1B: p − s in flight on stage s


@pytest.mark.parametrize("v", [2, 4])
def test_interleaving_shrinks_the_bubble_by_v(v):
    s = sim("interleaved", v=v)
    base = (P - 1) * 3.0
    assert s.bubble_s == pytest.approx(base / v)
    assert s.step_time_s == pytest.approx(M * 3.0 + base / v)
    # stage 0 holds p + (p−1)/v stage-activations (the model's interleave penalty 1 + (p−1)/(p·v))
    assert s.peak_activation_bytes[0] == pytest.approx(P * (1 + (P - 1) / (P * v)))


def test_zb_h1_bubble_and_memory():
    s = sim("zb-h1")  # B and W each half of the backward: F = B = W = 1
    assert s.step_time_s == pytest.approx(M * 3.0 + (P - 1) * 1.0)  # bubble (p−1)(F + B − W)
    assert s.bubble_s == pytest.approx(3.0)
    assert s.peak_activation_bytes == [P] * P  # never above 1F1B's peak (stage 0's)


def test_straggler_on_last_stage_slows_every_slot():
    base = sim("1f1b")
    slow = sim("1f1b", slowdown={(None, P - 1): 2.0})
    # the last stage's slot doubles (3 → 6); it is the bottleneck for all m micro-batches
    assert slow.step_time_s - base.step_time_s == pytest.approx(M * 3.0)
    assert slow.step_time_s == pytest.approx((M - 1) * 6.0 + (3 + 3 + 3 + 6))


def test_straggler_in_the_middle():
    s = sim("1f1b", slowdown={(None, 2): 2.0})
    # stage 2 (F 2, B 4): starts after 2 forwards upstream, waits 1 for stage 3's first F+B beyond its own second
    # forward, then runs 8·6 back to back; its last backward drains through stages 1 and 0 (2 + 2)
    assert s.step_time_s == pytest.approx(2 + 1 + M * 6 + 4)
    assert s.devices[2].slowdown == 2.0
    assert s.critical_device == 2


def test_p2p_on_the_critical_path():
    c = PipelineCosts.uniform(P, M, 1.0, 2.0, p2p_s=0.25)
    s = simulate_costs(c, "1f1b")
    # every stage pays 2 blocking sends per micro-batch (first/last: one), fill and drain add p−1 of each kind
    assert s.step_time_s > (M + P - 1) * 3.0
    assert s.devices[1].pp_p2p_s == pytest.approx(2 * M * 0.25)
    assert s.devices[0].pp_p2p_s == pytest.approx(M * 0.25)


def test_bad_schedule_combinations():
    with pytest.raises(SpecError, match="vpp=2"):
        sim("1f1b", v=2)
    with pytest.raises(SpecError, match="unknown schedule"):
        sim("pipedream")
    with pytest.raises(SpecError, match="divisible"):
        sim("interleaved", m=6, v=2)


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 6), k=st.integers(1, 4), v=st.integers(1, 3),
       kind=st.sampled_from(["1f1b", "gpipe", "interleaved", "zb-h1"]))
def test_every_schedule_runs_each_pass_once(p, k, v, kind):
    if kind != "interleaved" or p == 1:
        v = 1
    m = p * k
    for s in range(p):
        order = device_order(kind, p, v, m, s)
        fb = [x for x in order if x[0] in "FB"]
        assert sorted(fb) == sorted([(ps, j, c) for ps in "FB" for j in range(m) for c in range(v)])
    res = sim(kind, p=p, m=m, v=v)
    for d in res.devices:
        assert d.compute_s == pytest.approx(m * 3.0)
        assert d.peak_activation_bytes <= m + 1e-9
    assert res.step_time_s >= m * 3.0 - 1e-9
    assert res.step_time_s <= (m + p - 1) * 3.0 + 1e-9  # never worse than GPipe/1F1B


def test_async_p2p_takes_sends_off_the_compute_stream():
    c = PipelineCosts.uniform(P, M, 1.0, 2.0, p2p_s=0.25)
    blocking, overlapped = simulate_costs(c, "1f1b"), simulate_costs(c, "1f1b", p2p="async")
    assert overlapped.step_time_s < blocking.step_time_s
    assert all(d.pp_p2p_s == 0.0 for d in overlapped.devices)
    # the transfers still delay their consumers (in 1F1B every backward waits for a round trip downstream)
    assert overlapped.step_time_s > (M + P - 1) * 3.0
