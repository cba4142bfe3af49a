"""Discrete-event core of the reference executor: ops on sequential streams, transfers on shared links.

A *program* is a static description built once per simulation (``Program``): every operation (``op``) has a kind,
a stream it runs on (a device's compute stream, a communication stream), a duration (compute) or an amount of
link work (transfers: seconds the transfer would take alone on its links), dependencies on other ops, and
optional memory effects.  ``run`` plays it out:

* **Streams** execute their ops in the order they were added (the schedule's order), one at a time; an op starts
  when its stream is idle and all its dependencies have finished.
* **Links** are shared resources.  A transfer first waits its latency, then joins its links; the k transfers
  present on a link share it equally (processor sharing), and a transfer spanning several links progresses at
  its smallest share.  Re-timing is incremental: all single-link transfers on a link progress at the same rate
  1/k, so each link keeps a *virtual clock* (the work served to each of its transfers so far) and a heap of its
  transfers by virtual finish tag (clock at join + work); only the earliest of them has a finish event on the
  main heap, and a join or leave settles the clock, changes k and re-pushes that one event — O(log k), not
  O(k).  Multi-link transfers are re-timed explicitly (remaining work settled at the old rate, a new finish
  pushed) and only when their smallest share changed; a superseded finish event goes stale.
* **Events** live on one heap of tuples ``(time, priority, sequence, op)``: priority 0 = the op finishes (at equal
  times finishes go first, so links and streams are freed before anything joins), 1 = a transfer has waited its
  latency and joins its links.  The sequence number is a global counter, so equal-time events resolve in a fixed
  order (first scheduled, first processed) and two runs of one program produce identical timelines.

The hot loop works on flat Python lists indexed by op id (struct of arrays) and heap tuples; starting a compute op
is inlined, and a transfer alone on its link takes a fast path — no per-event objects beyond the heap tuple.
"""
from __future__ import annotations

import gc
import heapq
import itertools
from dataclasses import dataclass

# op kinds (small ints in the hot loop; names for traces and tables)
FWD, BWD, WGRAD, P2P_FWD, P2P_BWD, DP_GRAD, DP_PARAM, OPTIMIZER, EP_A2A = range(9)
KIND_NAMES = ("forward", "backward", "wgrad", "p2p_fwd", "p2p_bwd", "dp_grad", "dp_param", "optimizer", "ep_a2a")
COMPUTE_KINDS = (FWD, BWD, WGRAD, OPTIMIZER)
P2P_KINDS = (P2P_FWD, P2P_BWD)
DP_KINDS = (DP_GRAD, DP_PARAM)
EP_KINDS = (EP_A2A,)  # expert-parallel all-to-all (dispatch / combine and their gradients) of MoE layers

# columns of an op record
OP_FIELDS = ("kind", "stream", "dur", "lat", "links", "mb", "chunk", "part", "mem_alloc", "mem_free", "tp", "rc")


class DeadlockError(RuntimeError):
    """The program cannot finish: some ops wait on each other (a bug in a schedule generator)."""


class Program:
    """All ops, dependencies, streams and links of one simulation.

    Ops are appended as records (``OP_FIELDS``: kind, stream, duration or link work, latency, link ids or None,
    micro-batch, chunk, part, bytes allocated at start, bytes freed at end, and the TP-communication and recompute
    seconds inside a compute op, for accounting); ``column(name)`` gives one field for all ops.
    """

    def __init__(self) -> None:
        self.ops: list = []
        self.dep_from: list = []
        self.dep_to: list = []
        self.stream_name: list = []
        self.stream_device: list = []
        self.stream_last: list = []  # per stream: the last op added to it (−1 when none)
        self.link_name: list = []
        self.link_device: list = []
        self._cols: dict | None = None

    def add_stream(self, name: str, device: int) -> int:
        self.stream_name.append(name)
        self.stream_device.append(device)
        self.stream_last.append(-1)
        return len(self.stream_name) - 1

    def add_link(self, name: str, device: int) -> int:
        self.link_name.append(name)
        self.link_device.append(device)
        return len(self.link_name) - 1

    def add_op(self, kind: int, stream: int, dur: float, links: tuple | None = None, lat: float = 0.0, mb: int = -1,
               chunk: int = -1, part: int = -1, mem_alloc: float = 0.0, mem_free: float = 0.0, tp: float = 0.0,
               rc: float = 0.0) -> int:
        ops = self.ops
        ops.append((kind, stream, dur, lat, links, mb, chunk, part, mem_alloc, mem_free, tp, rc))
        self._cols = None
        o = len(ops) - 1
        self.stream_last[stream] = o
        return o

    def dep(self, before: int, after: int) -> None:
        """``after`` cannot start before ``before`` has finished."""
        self.dep_from.append(before)
        self.dep_to.append(after)

    def column(self, name: str) -> tuple:
        if self._cols is None:
            gc_was = gc.isenabled()
            gc.disable()
            try:
                self._cols = dict(zip(OP_FIELDS, zip(*self.ops))) if self.ops else {f: () for f in OP_FIELDS}
            finally:
                if gc_was:
                    gc.enable()
        return self._cols[name]

    def __len__(self) -> int:
        return len(self.ops)


@dataclass
class RunResult:
    start: list
    end: list
    join: list  # transfers: when the latency had elapsed and the transfer joined its links
    unblocker: list  # the op whose end made this op ready (−1 when none)
    events: int  # heap events processed (finishes + joins, stale ones included) = events pushed


PROGRESS_EVERY = 1 << 16  # heap events between two progress reports


def run(prog: Program, progress=None) -> RunResult:
    """Play the program out; see the module docstring for the semantics (where every link carries one
    stream's transfers, the contention-free replay computes the same run without a heap).  ``progress``: ``f(events processed)`` every
    ``PROGRESS_EVERY`` events."""
    from parplan.executor.replay import replay

    gc_was = gc.isenabled()
    gc.disable()  # everything here is acyclic; cyclic-GC passes over millions of new objects would dominate
    try:
        res = replay(prog)  # no two transfers can share a link: the timeline in one pass (executor/replay.py)
        if res is not None:
            if progress is not None:
                progress(res.events)
            return res
        return _run(prog, progress)
    finally:
        if gc_was:
            gc.enable()


def successors(prog: Program) -> tuple[list, list]:
    """Per op, the ops that depend on it (a list, or an empty tuple) and how many ops it depends on."""
    n = len(prog)
    succ: list = [None] * n
    ndeps = [0] * n
    for a, b in zip(prog.dep_from, prog.dep_to):
        sa = succ[a]
        if sa is None:
            succ[a] = [b]
        else:
            sa.append(b)
        ndeps[b] += 1
    empty: tuple = ()
    return [x if x is not None else empty for x in succ], ndeps


def _run(prog: Program, progress=None) -> RunResult:
    n = len(prog)
    ostream = prog.column("stream")
    dur = prog.column("dur")
    lat = prog.column("lat")
    olinks = prog.column("links")
    ns = len(prog.stream_name)
    nl = len(prog.link_name)
    succ, ndeps = successors(prog)
    sops: list = [[] for _ in range(ns)]
    opos = [0] * n
    for o, s in enumerate(ostream):
        lst = sops[s]
        opos[o] = len(lst)
        lst.append(o)
    for lst in sops:
        lst.append(-1)  # sentinel: no next op
    spos = [0] * ns
    sbusy = [False] * ns
    # a transfer on one link (``single``) is tracked by its link's virtual clock; one on several links by its rate
    single = [lk is not None and len(lk) == 1 for lk in olinks]
    lone = [lk[0] if s else -1 for lk, s in zip(olinks, single)]

    # links: transfers present, the virtual clock (work served to each of them so far) and when it was settled,
    # the heap of single-link transfers by virtual finish tag, the one of them whose finish is on the main heap,
    # and the multi-link transfers present
    lcnt = [0] * nl
    lvt = [0.0] * nl
    lvt_t = [0.0] * nl
    lq: list = [[] for _ in range(nl)]
    lhead = [-1] * nl
    lmul: list = [[] for _ in range(nl)]

    start = [0.0] * n
    end = [-1.0] * n
    join = [0.0] * n
    unblk = [-1] * n
    xrem = [0.0] * n  # multi-link transfers: remaining work when last settled, at xt, at rate xrate
    xt = [0.0] * n
    xrate = [0.0] * n
    expect = [-1] * n  # transfers: the sequence number of the finish event that counts (others are stale)

    heap: list = []
    push = heapq.heappush
    pop = heapq.heappop
    qpush = heapq.heappush
    qpop = heapq.heappop
    nxt = itertools.count().__next__

    def head(lk, t, v, c):
        """Put link ``lk``'s earliest-finishing single-link transfer on the main heap (its rate is 1/c now)."""
        q = lq[lk]
        old = lhead[lk]
        if q:
            f, h = q[0]
            if old != h and old >= 0:
                expect[old] = -1
            lhead[lk] = h
            sq = nxt()
            expect[h] = sq
            r = f - v
            push(heap, (t + r * c if r > 0.0 else t, 0, sq, h))
        elif old >= 0:
            expect[old] = -1
            lhead[lk] = -1

    def retime_multi(ls, t):
        """Multi-link transfers on links ``ls`` whose rate (their smallest share) changed: settle, push anew."""
        for lk in ls:
            for x in lmul[lk]:
                rate = 1.0 / max([lcnt[k] for k in olinks[x]])
                if rate != xrate[x]:
                    r = xrem[x] - (t - xt[x]) * xrate[x]
                    r = r if r > 0.0 else 0.0
                    xrem[x] = r
                    xt[x] = t
                    xrate[x] = rate
                    sq = nxt()
                    expect[x] = sq
                    push(heap, (t + r / rate, 0, sq, x))

    def enter(o, t):
        """Transfer ``o`` joins its links at ``t``."""
        join[o] = t
        if single[o]:
            lk = lone[o]
            c = lcnt[lk]
            if not c:  # alone on an idle link: full rate, finish after its work
                lcnt[lk] = 1
                lvt[lk] = 0.0
                lvt_t[lk] = t
                lq[lk].append((dur[o], o))
                lhead[lk] = o
                sq = nxt()
                expect[o] = sq
                push(heap, (t + dur[o], 0, sq, o))
                return
            v = lvt[lk] + (t - lvt_t[lk]) / c
            lvt[lk] = v
            lvt_t[lk] = t
            c += 1
            lcnt[lk] = c
            qpush(lq[lk], (v + dur[o], o))
            head(lk, t, v, c)
            if lmul[lk]:
                retime_multi((lk,), t)
            return
        ls = olinks[o]
        for lk in ls:
            c = lcnt[lk]
            v = lvt[lk] + (t - lvt_t[lk]) / c if c else 0.0
            lvt[lk] = v
            lvt_t[lk] = t
            lcnt[lk] = c + 1
            if lq[lk]:
                head(lk, t, v, c + 1)
        retime_multi(ls, t)
        for lk in ls:
            lmul[lk].append(o)
        rate = 1.0 / max([lcnt[k] for k in ls])
        xrem[o] = dur[o]
        xt[o] = t
        xrate[o] = rate
        sq = nxt()
        expect[o] = sq
        push(heap, (t + dur[o] / rate, 0, sq, o))

    def leave(o, t):
        """Transfer ``o`` has finished: it leaves its links."""
        if single[o]:
            lk = lone[o]
            c = lcnt[lk]
            q = lq[lk]
            if c == 1:  # the last one leaves: the link is idle
                lcnt[lk] = 0
                q.clear()
                lhead[lk] = -1
                return
            v = lvt[lk] + (t - lvt_t[lk]) / c
            lvt[lk] = v
            lvt_t[lk] = t
            c -= 1
            lcnt[lk] = c
            qpop(q)  # o: the earliest virtual finish
            lhead[lk] = -1
            head(lk, t, v, c)
            if lmul[lk]:
                retime_multi((lk,), t)
            return
        ls = olinks[o]
        for lk in ls:
            c = lcnt[lk]
            v = lvt[lk] + (t - lvt_t[lk]) / c
            lvt[lk] = v
            lvt_t[lk] = t
            lcnt[lk] = c - 1
            lmul[lk].remove(o)
            if lq[lk]:
                head(lk, t, v, c - 1)
        retime_multi(ls, t)

    def launch(j, t):
        """Start op j at t: compute finishes after its duration; a transfer waits out its latency (an event) and
        joins its links."""
        start[j] = t
        if olinks[j] is None:
            push(heap, (t + dur[j], 0, nxt(), j))
        elif lat[j] > 0.0:
            push(heap, (t + lat[j], 1, nxt(), j))
        else:
            enter(j, t)

    # ops without dependencies at the head of their stream start at t = 0
    for s in range(ns):
        o = sops[s][0]
        if o >= 0 and ndeps[o] == 0:
            spos[s] = 1
            sbusy[s] = True
            launch(o, 0.0)

    tick = PROGRESS_EVERY if progress is not None else -1  # a countdown: one decrement per event, no call
    popped = 0
    while heap:
        t, pr, sq, o = pop(heap)
        tick -= 1
        if not tick:
            popped += PROGRESS_EVERY
            progress(popped)
            tick = PROGRESS_EVERY
        if pr:  # a transfer's latency has elapsed: it joins its links
            enter(o, t)
            continue
        if olinks[o] is not None:
            if sq != expect[o]:
                continue  # superseded by a re-timing
            leave(o, t)
        end[o] = t
        s = ostream[o]
        for j in succ[o]:
            d = ndeps[j] - 1
            ndeps[j] = d
            if d == 0:
                unblk[j] = o
                sj = ostream[j]
                if sj != s and not sbusy[sj] and spos[sj] == opos[j]:
                    spos[sj] += 1
                    sbusy[sj] = True
                    start[j] = t
                    if olinks[j] is None:
                        push(heap, (t + dur[j], 0, nxt(), j))
                    else:
                        launch(j, t)
        pos = spos[s]
        j = sops[s][pos]
        if j >= 0 and ndeps[j] == 0:
            spos[s] = pos + 1
            start[j] = t
            if olinks[j] is None:
                push(heap, (t + dur[j], 0, nxt(), j))
            else:
                launch(j, t)
        else:
            sbusy[s] = False

    if n and min(end) < 0.0:
        stuck = [o for o in range(n) if end[o] < 0.0]
        o = stuck[0]
        rec = prog.ops[o]
        raise DeadlockError(f"{len(stuck)} of {n} ops never ran; first: {KIND_NAMES[rec[0]]} mb={rec[5]} "
                            f"chunk={rec[6]} on stream {prog.stream_name[rec[1]]} ({ndeps[o]} unmet dependencies)")
    return RunResult(start=start, end=end, join=join, unblocker=unblk, events=nxt())
