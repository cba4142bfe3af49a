"""Contention-free replay: the engine's timeline computed without an event heap, for as long as no two transfers
share a link.

The engine's rules (``executor/engine.py``) make an op start at the later of its stream predecessor's end and its
dependencies' ends; a compute op ends ``dur`` later, a transfer ``lat + dur`` later when it is alone on its links
(processor sharing only slows transfers that overlap).  So, in a topological order of the graph of dependencies and
stream order, ``start[j] = max(end[stream predecessor], max end[deps])`` — one pass, no heap (``_play``).

* Where every link carries the transfers of one stream (``one_stream_per_link``), no two transfers can ever share
  a link and the pass is the run.
* Where a few transfers of other streams use a link (``fast_run``: data-parallel collectives at the end of a step
  on the links of the pipeline sends; at most ``MINOR_LIMIT`` of them, 1 in ``MINOR_SHARE`` ops), the pass is
  checked afterwards: the first time T two transfers of different streams are on one link at once (closed
  intervals: one that joins as another leaves counts, their order then being the heap's) is found
  (``_first_contact``), everything before T is the run, and the engine plays the rest from the state at T
  (``_resume``): the ops in flight, their events pushed in the order the heap had them, every other op waiting on
  those not finished.  No contact: the pass is the run.
* Elsewhere (links shared throughout) the engine plays the whole program.

The result is the engine's, field for field (``tests/executor/test_replay.py``, ``test_engine_speedpaths.py`` check
random programs): the same start, end and join times, the same event count (one finish per op and one join per
transfer with a latency — no re-timing before T), and as unblocker the dependency that finished last — on equal
finish times the one whose finish was scheduled last, as the heap orders them.  A tie there too is broken by play
order, which can differ from the engine's (either dependency is then on the critical path): where links are shared
(the pass checked and resumed) such a tie sends the program to the heap instead, so that the unblockers are the
heap's too.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left

import numpy as np

from parplan.executor.heap import RunResult
from parplan.executor.program import Program

# transfers of other streams on links owned by one, above which the engine plays it all: at most MINOR_LIMIT, and
# 1 in MINOR_SHARE ops (the pass then pays off: a contact late in the step)
MINOR_LIMIT, MINOR_SHARE = 1024, 64


def _arr(x: np.ndarray) -> array:
    out = array("q")
    out.frombytes(np.ascontiguousarray(x, dtype=np.int64).data.cast("B"))
    return out


def _i64(seq) -> np.ndarray:
    if isinstance(seq, array):
        return np.frombuffer(seq, dtype=np.int64).copy() if len(seq) else np.zeros(0, dtype=np.int64)
    return np.array(seq, dtype=np.int64) if len(seq) else np.zeros(0, dtype=np.int64)


def graph(prog: Program) -> tuple:
    """What a run reads of the program, built with numpy (no Python loop over ops or dependencies) into flat
    arrays indexed by op (``array``: machine values, no object per entry to chase — the loops visit ops in time
    order, scattered in memory) — no record is read, nothing transposed:

    * ``succ1[o]``: o's only dependent op, −1 when none, or ``−2 − i`` where o has several — ``multi = (flat,
      at)`` lists them as ``flat[at[i]:at[i + 1]]`` (in the order the dependencies were added, which fixes the order
      of equal-time starts);
    * ``wait[o]`` (a list): how many ops must finish before o can start — its dependencies and its predecessor on
      its stream;
    * ``snext[o]``: the next op on o's stream (−1 at the end); ``first[s]``: stream s's first op (−1 when none);
    * ``dur[o]``, ``code[o]``: ``Program.op_dur`` (as an ``array`` of doubles), ``Program.op_code``;
    * ``streams = (order, at, st)``: stream s's ops, in order, are ``order[at[s]:at[s + 1]]``; ``st``: each op's
      stream (numpy arrays)."""
    n, ns = len(prog.ops), len(prog.stream_name)
    st = _i64(prog.op_stream)
    order = np.argsort(st, kind="stable")
    at = np.concatenate(([0], np.cumsum(np.bincount(st, minlength=ns))))
    nonempty = at[1:] > at[:-1]
    nxt = np.full(n, -1, dtype=np.int64)
    nxt[order[:-1]] = order[1:]
    nxt[order[at[1:][nonempty] - 1]] = -1  # each stream's last op
    first = np.full(ns, -1, dtype=np.int64)
    first[nonempty] = order[at[:-1][nonempty]]
    df, dt = _i64(prog.dep_from), _i64(prog.dep_to)
    wait = np.bincount(dt, minlength=n) + 1
    wait[first[nonempty]] -= 1
    fan = np.bincount(df, minlength=n)  # dependent ops per op
    succ1 = np.full(n, -1, dtype=np.int64)
    succ1[df] = dt  # right where an op has one dependent op; several: below
    many = np.flatnonzero(fan > 1)
    sel = np.flatnonzero((fan > 1)[df])  # their dependencies, in the order added …
    sel = sel[np.argsort(df[sel], kind="stable")]  # … grouped by op
    succ1[many] = -2 - np.arange(len(many))
    multi = (dt[sel].tolist(), np.concatenate(([0], np.cumsum(fan[many]))).tolist())
    dur = array("d", prog.op_dur)  # (doubles in a row: the builder's float objects lie scattered over memory)
    return _arr(succ1), multi, wait.tolist(), _arr(nxt), first.tolist(), dur, prog.op_code, (order, at, st)


def one_stream_per_link(prog: Program) -> bool:
    """True when every link carries the transfers of a single stream: they then run one after another (a stream
    runs one op at a time), so no two can ever share it — the static case where the replay is sure to apply."""
    return not len(_link_use(prog)[1][0])


def _link_use(prog: Program, st: np.ndarray | None = None) -> tuple[np.ndarray, tuple, tuple]:
    """Per link the first stream with a transfer on it (its *owner*, −1 when none); the (transfers, links) where the
    transfer is of another stream, and those where it is the owner's, each by link and in op order (numpy
    arrays).  ``st``: the ops' streams, where at hand."""
    code = _i64(prog.op_code)
    st = _i64(prog.op_stream) if st is None else st
    o_ = np.flatnonzero(code >= 0)
    k_ = code[o_]
    other = np.flatnonzero(code == -2).tolist()  # several links or a latency: the links from the records
    if other:
        pairs = [(o, k) for o in other for k in prog.ops[o][4]]
        o_ = np.concatenate((o_, np.array([o for o, _ in pairs], dtype=np.int64)))
        k_ = np.concatenate((k_, np.array([k for _, k in pairs], dtype=np.int64)))
        by = np.argsort(o_, kind="stable")
        o_, k_ = o_[by], k_[by]
    by = np.argsort(k_, kind="stable")  # by link, then op
    o_, k_ = o_[by], k_[by]
    owner = np.full(len(prog.link_name), -1, dtype=np.int64)
    head = np.flatnonzero(np.concatenate(([True], k_[1:] != k_[:-1]))) if len(k_) else np.zeros(0, np.int64)
    owner[k_[head]] = st[o_[head]]
    mine = st[o_] == owner[k_]
    return owner, (o_[~mine], k_[~mine]), (o_[mine], k_[mine])


def replay(prog: Program) -> RunResult | None:
    """The program's run, or None where a link carries the transfers of several streams (they may share it) or a
    dependency cycle leaves ops unplayed (the engine then reports the deadlock)."""
    if not len(prog):
        return RunResult(start=[], end=[], join=[], unblocker=[], events=0)
    if not one_stream_per_link(prog):
        return None
    return _play(prog, graph(prog))


def _play(prog: Program, g: tuple, strict: bool = False) -> RunResult | None:
    """The pass (see the module docstring), ignoring contention; None on a dependency cycle, and where ``strict``
    as soon as the unblocker of an op is a tie that play order breaks (which of the two finishes the heap handled
    last is then its own to tell)."""
    n = len(prog)
    ops = prog.ops
    succ1, (mflat, mat), wait, snext, first, dur, code, _ = g
    indeg = wait[:]  # (``g`` stays intact for the engine)
    ready_at = [0.0] * n  # latest end among the predecessors played so far
    unblk = [-1] * n  # the dependency finished last so far (its end, then its push time, as on the heap)
    start = [0.0] * n
    end = [-1.0] * n
    join = [0.0] * n
    stack = sorted((o for o in first if o >= 0 and not indeg[o]), reverse=True)  # played lowest id first
    events = n
    pop, append = stack.pop, stack.append
    while stack:
        o = pop()
        t = ready_at[o]
        start[o] = t
        c = code[o]
        if c == -1:
            pt = t
        elif c >= 0:
            pt = join[o] = t
        else:
            la = ops[o][3]
            if la > 0.0:
                events += 1  # the join event
            pt = join[o] = t + la
        e = end[o] = pt + dur[o]
        j = succ1[o]
        if j != -1:
            for j in ((j,) if j >= 0 else mflat[mat[-2 - j]:mat[-1 - j]]):
                u = unblk[j]
                if u < 0 or e > end[u]:
                    unblk[j] = o
                elif e == end[u]:
                    pu = start[u] if code[u] == -1 else join[u]
                    if pt >= pu:
                        if pt == pu and strict:
                            return None
                        unblk[j] = o
                if e > ready_at[j]:
                    ready_at[j] = e
                d = indeg[j] - 1
                indeg[j] = d
                if not d:
                    append(j)
        j = snext[o]
        if j >= 0:
            if e > ready_at[j]:
                ready_at[j] = e
            d = indeg[j] - 1
            indeg[j] = d
            if not d:
                append(j)
    if any(indeg):
        return None  # a cycle: the engine names the stuck ops
    return RunResult(start=start, end=end, join=join, unblocker=unblk, events=events)


def fast_run(prog: Program, g: tuple):
    """The run without the heap where it applies (a ``RunResult``), the state at the first contact for the engine
    to play on from (a dict, ``_resume``), or None (the engine plays it all)."""
    if not len(prog):
        return RunResult(start=[], end=[], join=[], unblocker=[], events=0)
    owner, (mo, mk), owned = _link_use(prog, g[7][2])
    if len(mo) > min(MINOR_LIMIT, len(prog) // MINOR_SHARE):
        return None
    res = _play(prog, g, strict=bool(len(mo)))
    if res is None or not len(mo):
        return res
    t = _first_contact(prog, res, sorted(zip(mo.tolist(), mk.tolist())), owned)
    return res if t is None else _resume(prog, g, res, t)


def _first_contact(prog: Program, res: RunResult, minor: list, owned: tuple) -> float | None:
    """The earliest time two transfers of different streams are on one link together in the pass (None: never).
    ``owned``: the owners' transfers, by link and in op order — on one link, one stream's: in time order."""
    stream = prog.op_stream
    join, end = res.join, res.end
    o_own, k_own = owned
    first = None
    by_link: dict = {}
    for x, k in minor:  # against the owner's transfers: the first of them to end at x's join or later
        by_link.setdefault(k, []).append(x)
        a, b = join[x], end[x]
        lo, hi = np.searchsorted(k_own, k), np.searchsorted(k_own, k, "right")
        i = bisect_left(o_own, a, lo, hi, key=end.__getitem__)
        if i < hi and join[o_own[i]] <= b:
            t = max(a, join[o_own[i]])
            first = t if first is None or t < first else first
    for xs in by_link.values():  # the other streams' transfers among themselves, by join time
        latest: dict = {}  # per stream, the latest end so far
        for x in sorted(xs, key=join.__getitem__):
            a, s = join[x], stream[x]
            if any(e >= a for s2, e in latest.items() if s2 != s):
                first = a if first is None or a < first else first
            latest[s] = max(latest.get(s, end[x]), end[x])
    return first


def _resume(prog: Program, g: tuple, res: RunResult, t0: float) -> dict | None:
    """The engine's state at ``t0``, before it handles any event at ``t0`` (None where the order of two pending
    events cannot be told: the engine then plays it all).

    Ops ending before ``t0`` are done (the pass's times are the run's); an op started before and ending at or after
    it is in flight — its pending event (a compute op's or a transfer's finish, or a transfer's join after its
    latency) is pushed in the order the heap got them, by when they were pushed (a transfer in flight alone on its
    links is entered again at its join time: the same bookkeeping, the same event).  Every other op waits for its
    dependencies and stream predecessor not done; its unblocker so far is the pass's (any dependency finishing
    later overwrites it)."""
    if t0 <= 0.0:
        return None  # (ops without predecessors would have to be started, in stream order)
    succ1, (mflat, mat), _, snext, _, _, code, (order, at, _) = g
    ops = prog.ops
    start, end, join = res.start, res.end, res.join
    wait = [0] * len(prog)
    pending = []  # (push time, event time, priority, op, action: 0 push a finish, 1 push a join, 2 enter)
    unpushed = 0  # events the pass counted that the heap pushes at t0 or later
    key = end.__getitem__
    open_ops = np.concatenate([order[bisect_left(order, t0, at[s], at[s + 1], key=key):at[s + 1]]
                               for s in range(len(at) - 1)] + [order[:0]])  # per stream, ends grow
    for o in open_ops.tolist():  # ops not done at t0
        j = succ1[o]
        for j in ((j,) if j >= 0 else () if j == -1 else mflat[mat[-2 - j]:mat[-1 - j]]):
            wait[j] += 1
        j = snext[o]
        if j >= 0:
            wait[j] += 1
        c = code[o]
        lat = c == -2 and ops[o][3] > 0.0
        s = start[o]
        if s >= t0:  # not started: its finish, and its join after a latency
            unpushed += 1 + lat
            join[o] = 0.0
        elif c == -1:
            pending.append((s, end[o], 0, o, 0))
        elif lat and join[o] >= t0:  # its latency not over: its join pending, its finish not pushed
            pending.append((s, join[o], 1, o, 1))
            unpushed += 1
            join[o] = 0.0
        else:
            pending.append((join[o], end[o], 0, o, 2))
        end[o] = -1.0
    pending.sort()
    for p, q in zip(pending, pending[1:]):
        if p[:3] == q[:3]:
            return None  # two pending events at one time with one priority, pushed at one time: which first?
    return {"start": start, "end": end, "join": join, "unblocker": res.unblocker, "wait": wait,
            "pending": [(p[3], p[4], p[0] if p[4] == 2 else p[1]) for p in pending],
            "events": res.events - unpushed - len(pending)}
