"""Contention-free replay (executor/replay.py) against the event engine: on random programs — compute, transfers
with and without latency on single and several links, dependencies across streams — the replay either declines
(a link carries several streams' transfers) or gives the engine's run field for field."""
from __future__ import annotations

import random

import pytest

from parplan.executor import heap
from parplan.executor.engine import FWD, P2P_FWD, Program, run
from parplan.executor.replay import replay


def _random_program(rng: random.Random, sequential_links: bool) -> Program:
    p = Program()
    streams = [p.add_stream(f"s{i}", i) for i in range(rng.randint(1, 5))]
    links = [p.add_link(f"l{i}", i) for i in range(rng.randint(1, 4))]
    # sequential_links: every link is used by one stream only, so its transfers follow one another
    owner = {lk: rng.choice(streams) for lk in links}
    ops = []
    for _ in range(rng.randint(1, 60)):
        s = rng.choice(streams)
        if rng.random() < 0.4:
            mine = [lk for lk in links if owner[lk] == s] if sequential_links else links
            if mine:
                ls = tuple(rng.sample(mine, rng.randint(1, min(2, len(mine)))))
                o = p.add_op(P2P_FWD, s, rng.choice([0.0, rng.uniform(0.1, 3.0)]), ls,
                             lat=rng.choice([0.0, 0.0, rng.uniform(0.01, 0.5)]))
            else:
                o = p.add_op(FWD, s, rng.uniform(0.0, 2.0))
        else:
            o = p.add_op(FWD, s, rng.choice([0.0, rng.uniform(0.1, 2.0), 1.0]))
        for prev in rng.sample(ops, min(len(ops), rng.randint(0, 2))):
            p.dep(prev, o)
        ops.append(o)
    return p


@pytest.mark.parametrize("seed", range(200))
def test_replay_is_the_engine_or_declines(seed):
    rng = random.Random(seed)
    prog = _random_program(rng, sequential_links=seed % 2 == 0)
    full = heap.heap_run(prog)
    fast = replay(prog)
    if fast is None:
        return
    assert fast.start == full.start and fast.end == full.end and fast.join == full.join
    assert fast.events == full.events
    # the unblocker is the last-finishing dependency: the same finish time as the engine's choice
    for j, (a, b) in enumerate(zip(fast.unblocker, full.unblocker)):
        assert (a < 0) == (b < 0), j
        if a >= 0:
            assert full.end[a] == full.end[b]


def test_sequential_links_replay_and_shared_ones_decline():
    p = Program()
    s0, s1 = p.add_stream("a", 0), p.add_stream("b", 1)
    lk = p.add_link("l", 0)
    x = p.add_op(P2P_FWD, s0, 1.0, (lk,))
    y = p.add_op(P2P_FWD, s0, 1.0, (lk,))  # same stream: after x, never together
    assert replay(p) is not None and replay(p).end == [1.0, 2.0]
    p.add_op(P2P_FWD, s1, 1.0, (lk,))  # another stream at t = 0: shares the link with x
    assert replay(p) is None
    r = run(p)  # the engine plays it (processor sharing)
    assert r.end[x] == pytest.approx(2.0) and r.end[y] == pytest.approx(3.0)


def test_run_uses_the_replay_only_when_it_is_exact():
    rng = random.Random(7)
    for _ in range(50):
        prog = _random_program(rng, sequential_links=False)
        a, b = run(prog), heap.heap_run(prog)
        assert a.start == b.start and a.end == b.end and a.join == b.join and a.events == b.events


def test_one_stream_per_link_programs_always_replay():
    for seed in range(100):
        prog = _random_program(random.Random(seed), sequential_links=True)
        from parplan.executor.replay import one_stream_per_link

        assert one_stream_per_link(prog)
        assert replay(prog) is not None  # serialized by their stream: never shared
