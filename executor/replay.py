"""Contention-free replay: the engine's timeline computed without an event heap, when no two transfers can ever share
a link — every link carries the transfers of one stream (``one_stream_per_link``), which runs one op at a time.

The engine's rules (``executor/engine.py``) make an op start at the later of its stream predecessor's end and its
dependencies' ends; a compute op ends ``dur`` later, a transfer ``lat + dur`` later when it is alone on its links
(processor sharing only slows transfers that overlap).  So, in a topological order of the graph of dependencies and
stream order, ``start[j] = max(end[stream predecessor], max end[deps])`` — one pass, no heap.  Where a link carries
several streams' transfers the replay declines (``None``) and ``engine.run`` plays the program on the event heap.

The result is the engine's, field for field (``tests/executor/test_replay.py`` checks random programs): the same
start, end and join times, the same event count (one finish per op and one join per transfer with a latency — no
re-timing, so no stale event), and as unblocker the dependency that finished last — on equal finish times the one
whose finish was scheduled last, as the heap orders them (a tie there too is broken by play order, which can differ
from the engine's; either dependency is then on the critical path).
"""
from __future__ import annotations

from parplan.executor.engine import Program, RunResult, successors


def one_stream_per_link(prog: Program) -> bool:
    """True when every link carries the transfers of a single stream: they then run one after another (a stream
    runs one op at a time), so no two can ever share it — the static case where the replay is sure to apply."""
    owner: dict = {}
    for lk, s in zip(prog.column("links"), prog.column("stream")):
        if lk is not None:
            for k in lk:
                if owner.setdefault(k, s) != s:
                    return False
    return True


def replay(prog: Program) -> RunResult | None:
    """The program's run, or None where a link carries the transfers of several streams (they may share it) or a
    dependency cycle leaves ops unplayed (the engine then reports the deadlock)."""
    n = len(prog)
    if not n:
        return RunResult(start=[], end=[], join=[], unblocker=[], events=0)
    if not one_stream_per_link(prog):
        return None
    ostream = prog.column("stream")
    dur = prog.column("dur")
    lat = prog.column("lat")
    olinks = prog.column("links")
    succ, indeg = successors(prog)  # indeg: dependencies, and below the stream predecessor too
    nxt_in_stream = [-1] * n
    last = [-1] * len(prog.stream_name)
    for o, s in enumerate(ostream):
        p = last[s]
        if p >= 0:
            nxt_in_stream[p] = o
            indeg[o] += 1
        last[s] = o
    ready_at = [0.0] * n  # latest end among the predecessors played so far
    dep_end = [-1.0] * n  # latest end among the dependencies (not the stream predecessor): the unblocker's
    dep_push = [-1.0] * n  # … and when that dependency's finish was scheduled (its tie-break, as on the heap)
    unblk = [-1] * n
    start = [0.0] * n
    end = [-1.0] * n
    join = [0.0] * n
    stack = [o for o in range(n - 1, -1, -1) if indeg[o] == 0]
    played = 0
    events = 0
    pop, append = stack.pop, stack.append
    while stack:
        o = pop()
        played += 1
        t = ready_at[o]
        start[o] = t
        if olinks[o] is None:
            e = t + dur[o]
            pt = t
        else:
            la = lat[o]
            if la > 0.0:
                events += 1  # the join event
            pt = join[o] = t + la
            e = pt + dur[o]
        end[o] = e
        for j in succ[o]:
            if e > dep_end[j] or (e == dep_end[j] and pt >= dep_push[j]):
                dep_end[j] = e
                dep_push[j] = pt
                unblk[j] = o
            if e > ready_at[j]:
                ready_at[j] = e
            d = indeg[j] - 1
            indeg[j] = d
            if not d:
                append(j)
        j = nxt_in_stream[o]
        if j >= 0:
            if e > ready_at[j]:
                ready_at[j] = e
            d = indeg[j] - 1
            indeg[j] = d
            if not d:
                append(j)
    if played != n:
        return None  # a cycle: the engine names the stuck ops
    return RunResult(start=start, end=end, join=join, unblocker=unblk, events=n + events)
