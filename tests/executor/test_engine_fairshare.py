"""The engine's incremental fair-share re-timing (a virtual clock per link) against a plain processor-sharing
reference that re-times every transfer at each join and leave: same start and end of every op on random programs
with shared single-link and multi-link transfers, latencies, dependencies and compute."""
from __future__ import annotations

import heapq
import random

import pytest

from parplan.executor.engine import FWD, P2P_FWD, Program, run


def _reference(prog: Program) -> list[float]:
    """End times by brute force: at every event, every transfer's rate is 1 / (most transfers on any of its links)."""
    n = len(prog)
    kind, stream, dur, lat, links = (prog.column(c) for c in ("kind", "stream", "dur", "lat", "links"))
    deps = [0] * n
    succ: list = [[] for _ in range(n)]
    for a, b in zip(prog.dep_from, prog.dep_to):
        succ[a].append(b)
        deps[b] += 1
    order: list = [[] for _ in prog.stream_name]
    for o, s in enumerate(stream):
        order[s].append(o)
    pos = [0] * len(order)
    busy = [False] * len(order)
    end = [-1.0] * n
    active: dict = {}  # transfer -> remaining work
    timers: list = []  # (time, seq, op): compute finishes and latency ends
    seq = 0
    t = 0.0

    def try_start(s, now):
        nonlocal seq
        if busy[s] or pos[s] >= len(order[s]) or deps[order[s][pos[s]]]:
            return
        o = order[s][pos[s]]
        pos[s] += 1
        busy[s] = True
        seq += 1
        if links[o] is None:
            heapq.heappush(timers, (now + dur[o], seq, o, "end"))
        else:
            heapq.heappush(timers, (now + lat[o], seq, o, "join"))

    def finish(o, now):
        end[o] = now
        busy[stream[o]] = False
        for j in succ[o]:
            deps[j] -= 1
        for s in range(len(order)):
            try_start(s, now)

    for s in range(len(order)):
        try_start(s, 0.0)
    while timers or active:
        rates = {}
        for x in active:
            rates[x] = 1.0 / max(sum(1 for y in active if k in links[y]) for k in links[x])
        nxt_flow = min(((t + active[x] / rates[x], x) for x in active), default=(float("inf"), -1))
        if timers and timers[0][0] <= nxt_flow[0]:
            t1, _, o, what = heapq.heappop(timers)
        else:
            t1, o, what = nxt_flow[0], nxt_flow[1], "leave"
        for x in active:
            active[x] = max(0.0, active[x] - (t1 - t) * rates[x])
        t = t1
        if what == "join":
            active[o] = dur[o]
        elif what == "leave":
            del active[o]
            finish(o, t)
        else:
            finish(o, t)
    return end


def _random_program(rng: random.Random) -> Program:
    p = Program()
    links = [p.add_link(f"l{k}", k) for k in range(rng.randint(1, 3))]
    for s in range(rng.randint(2, 5)):
        st = p.add_stream(f"s{s}", s)
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.3:
                p.add_op(FWD, st, rng.choice([0.1, 0.25, 0.4]))
            else:
                ls = tuple(sorted(rng.sample(links, rng.randint(1, min(2, len(links))))))
                p.add_op(P2P_FWD, st, rng.choice([0.1, 0.2, 0.3, 0.7]), links=ls, lat=rng.choice([0.0, 0.0, 0.05]))
    for _ in range(rng.randint(0, 4)):
        a, b = sorted(rng.sample(range(len(p)), 2))
        p.dep(a, b)
    return p


@pytest.mark.parametrize("seed", range(4))
def test_incremental_fair_share_matches_reference(seed):
    rng = random.Random(seed)
    for _ in range(150):
        prog = _random_program(rng)
        got = run(prog).end
        want = _reference(prog)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_eight_transfers_on_one_link_push_one_event_per_change():
    # 8 equal transfers joining at 0 finish together at 8 s; the engine pushes one finish event per change
    # (join or leave), not one per transfer present
    p = Program()
    lk = p.add_link("l", 0)
    for s in range(8):
        p.add_op(P2P_FWD, p.add_stream(f"s{s}", s), 1.0, links=(lk,))
    res = run(p)
    assert res.end == pytest.approx([8.0] * 8)
    assert res.events <= 16
