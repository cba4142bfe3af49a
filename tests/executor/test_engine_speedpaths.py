"""The engine's fast paths against its plain event loop: the contention-free pass resumed by the heap at the first
contact on a shared link (``replay.fast_run``), the compact graph (``replay.graph``) and the progress reports.
Every field must be the heap's, bit for bit: start, end and join times, unblockers and the count of events."""
from __future__ import annotations

import random

import pytest

from parplan.executor import heap, replay
from parplan.executor.engine import FWD, P2P_FWD, Program, RunResult, run


def _mostly_owned(seed: int) -> Program:
    """Streams with links of their own, and now and then a transfer of another stream on one of them (a *minor*
    transfer) — with latencies, several links, zero work and equal durations (ties), dependencies across streams."""
    rng = random.Random(seed)
    p = Program()
    ns = rng.randint(2, 5)
    streams = [p.add_stream(f"s{i}", i) for i in range(ns)]
    own = [p.add_link(f"l{i}", i) for i in range(ns)]
    ops: list = []
    for _ in range(rng.randint(5, 120)):
        s = rng.choice(streams)
        x = rng.random()
        if x < 0.45:
            lk = own[s] if rng.random() > 0.08 else rng.choice(own)
            ls = (lk,) if rng.random() > 0.1 else (lk, rng.choice(own))
            ls = tuple(dict.fromkeys(ls))
            o = p.add_op(P2P_FWD, s, rng.choice([0.0, 0.5, 1.0, rng.uniform(0.1, 3.0)]), ls,
                         lat=rng.choice([0.0, 0.0, 0.0, 0.25, rng.uniform(0.01, 0.5)]))
        else:
            o = p.add_op(FWD, s, rng.choice([0.0, 0.5, 1.0, rng.uniform(0.1, 2.0)]))
        for prev in rng.sample(ops, min(len(ops), rng.randint(0, 2))):
            p.dep(prev, o)
        ops.append(o)
    return p


def _same(a: RunResult, b: RunResult) -> None:
    assert a.start == b.start and a.end == b.end and a.join == b.join
    assert a.unblocker == b.unblocker and a.events == b.events


def test_the_pass_resumed_by_the_heap_is_the_heap(monkeypatch):
    monkeypatch.setattr(replay, "MINOR_SHARE", 1)  # (small programs: the pass is tried whatever their share)
    paths = {"pass": 0, "resumed": 0, "heap": 0}
    for seed in range(400):
        prog = _mostly_owned(seed)
        ref = heap.heap_run(prog)
        fast = replay.fast_run(prog, replay.graph(prog))
        if isinstance(fast, dict):
            paths["resumed"] += 1
            _same(heap.heap_run(prog, None, replay.graph(prog), fast), ref)
        elif fast is None:
            paths["heap"] += 1
        else:
            paths["pass"] += 1
            assert fast.start == ref.start and fast.end == ref.end and fast.join == ref.join
            assert fast.events == ref.events
        res = run(prog)
        assert res.start == ref.start and res.end == ref.end and res.join == ref.join
        assert res.events == ref.events
        if not replay.one_stream_per_link(prog):  # links shared: the unblockers too (a tie: the heap's)
            assert res.unblocker == ref.unblocker
    assert min(paths.values()) >= 20, paths  # every path is exercised


def _pipeline(**kw) -> Program:
    from parplan.executor.costs import PipelineCosts
    from parplan.executor.program import build_program

    costs = PipelineCosts.uniform(4, 24, 1.0, 2.0, **kw)
    return build_program(costs, "1f1b", 1, [1.0, 1.013, 0.991, 1.007]).prog


def test_gradients_at_the_end_resume_the_heap_at_their_first_contact():
    # data-parallel gradients after the last backward, on the NIC the pipeline sends use: the pass until then
    prog = _pipeline(p2p_s=0.05, dp_ranks=4, dp_replicas=4, zero=0, dp_grad_s=(0.4,) * 4, devices_per_node=8,
                     ranks_per_stage=8)
    minor = replay._link_use(prog)[1][0]
    assert 0 < len(minor) <= min(replay.MINOR_LIMIT, len(prog) // replay.MINOR_SHARE)
    state = replay.fast_run(prog, replay.graph(prog))
    assert isinstance(state, dict) and state["pending"]
    _same(run(prog), heap.heap_run(prog))


def test_a_contact_at_time_zero_is_left_to_the_heap():
    p = Program()
    a, b = p.add_stream("a", 0), p.add_stream("b", 1)
    lk = p.add_link("l", 0)
    p.add_op(P2P_FWD, a, 1.0, (lk,))
    p.add_op(P2P_FWD, b, 2.0, (lk,))
    assert replay.fast_run(p, replay.graph(p)) is None
    r = run(p)
    assert r.end == pytest.approx([2.0, 3.0])
    _same(r, heap.heap_run(p))


def test_graph_keeps_dependency_order_and_counts():
    p = Program()
    s0, s1 = p.add_stream("a", 0), p.add_stream("b", 1)
    x = [p.add_op(FWD, s0 if i % 2 else s1, 1.0) for i in range(6)]
    for a, b in ((x[0], x[5]), (x[0], x[3]), (x[0], x[5]), (x[2], x[4]), (x[1], x[4])):
        p.dep(a, b)
    succ1, (flat, at), wait, snext, first, _, _, _ = replay.graph(p)
    assert succ1[x[2]] == x[4] and succ1[x[1]] == x[4] and succ1[x[3]] == -1
    i = -2 - succ1[x[0]]
    assert flat[at[i]:at[i + 1]] == [x[5], x[3], x[5]]  # in the order added, duplicates kept
    assert list(snext) == [2, 3, 4, 5, -1, -1] and first == [1, 0]
    assert wait == [0, 0, 1, 2, 3, 3]


def test_progress_reports_and_the_same_run(monkeypatch):
    prog = _mostly_owned(5)
    plain = heap.heap_run(prog)
    monkeypatch.setattr(heap, "PROGRESS_EVERY", 7)
    seen: list = []
    _same(heap.heap_run(prog, seen.append), plain)
    # every 7 events taken off the heap (a superseded finish replaced in place on a small heap is not)
    assert seen and seen == [7 * (i + 1) for i in range(len(seen))] and seen[-1] <= plain.events


def test_an_empty_program_and_a_cycle():
    assert run(Program()).events == 0
    p = Program()
    s = p.add_stream("a", 0)
    x, y = p.add_op(FWD, s, 1.0), p.add_op(FWD, s, 1.0)
    p.dep(y, x)
    with pytest.raises(heap.DeadlockError):
        run(p)
