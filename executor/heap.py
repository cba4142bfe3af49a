"""The reference executor's event loop on a heap (``heap_run``) and its result (``RunResult``): the semantics are
those of ``executor/engine.py`` (streams, processor-shared links with per-link virtual clocks, events ordered by
(time, priority, sequence)); ``engine.run`` calls it where the heap-free pass of ``executor/replay.py`` does not
apply, or from the state that pass reached at the first contact on a link.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from itertools import count, repeat

from parplan.executor.program import KIND_NAMES, Program


class DeadlockError(RuntimeError):
    """The program cannot finish: some ops wait on each other (a bug in a schedule generator)."""


@dataclass
class RunResult:
    start: list
    end: list
    join: list  # transfers: when the latency had elapsed and the transfer joined its links
    unblocker: list  # the op whose end made this op ready (−1 when none)
    events: int  # events pushed on the heap: finishes, joins, and the finishes re-timing superseded


PROGRESS_EVERY = 1 << 16  # events taken off the heap between two progress reports
SMALL_HEAP = 12  # up to this many events on the heap, a superseded one is replaced in place (``repush``)


def heap_run(prog: Program, progress=None, g: tuple | None = None, resume: dict | None = None) -> RunResult:
    """The event loop (``g``: ``replay.graph(prog)``; ``resume``: the state to go on from, ``replay._resume``)."""
    if g is None:
        from parplan.executor.replay import graph

        g = graph(prog)
    n = len(prog)
    ops = prog.ops
    nl = len(prog.link_name)
    succ1, (mflat, mat), wait, snext, first, dur, code, _ = g

    # links: ``lstate`` −1 idle, −2 busy (the bookkeeping below applies), or the one transfer on it, which joined it
    # idle and is alone (``settle`` fills the bookkeeping in as another joins); the transfers present, the virtual
    # clock (work served to each so far) and when it was settled, the heap of single-link transfers by virtual
    # finish tag, the one of them with a finish event, and the multi-link transfers present
    lstate = [-1] * nl
    lcnt = [0] * nl
    lvt = [0.0] * nl
    lvt_t = [0.0] * nl
    lq: list = [[] for _ in range(nl)]
    lhead = [-1] * nl
    lmul: list = [[] for _ in range(nl)]

    if resume is None:
        start = [0.0] * n
        end = [-1.0] * n
        join = [0.0] * n
        unblk = [-1] * n
    else:
        start, end, join, unblk, wait = (resume[k] for k in ("start", "end", "join", "unblocker", "wait"))
    xrem, xt, xrate = {}, {}, {}  # multi-link transfers: remaining work when last settled, at xt, at rate xrate
    # transfers: the finish event that counts (None: none; others are stale — on a small heap an event superseded
    # is replaced in place, ``repush``, on a large one it stays and is skipped when it comes up)
    expect: list = [None] * n

    # heap events: (time, priority, sequence, op) with op ≥ 0 for a compute op's finish and ~op (< 0) for a
    # transfer's events: its finish (priority 0) or its join after the latency (priority 1)
    heap: list = []
    push = heapq.heappush
    pop = heapq.heappop
    pushpop = heapq.heappushpop
    heapify = heapq.heapify
    nxt = count(0 if resume is None else resume["events"]).__next__

    def repush(prev, item):
        """Push ``item``, which supersedes the event ``prev`` (None: none) still on the heap."""
        if prev is not None and len(heap) <= SMALL_HEAP:
            heap[heap.index(prev)] = item
            heapify(heap)
        else:
            push(heap, item)

    def head(lk, t, v, c):
        """Put link ``lk``'s earliest-finishing single-link transfer on the main heap (its rate is 1/c now)."""
        q = lq[lk]
        old = lhead[lk]
        if q:  # (always, as called)
            f, h = q[0]
            if old >= 0 and old != h:
                prev = expect[old]
                expect[old] = None
            else:
                prev = expect[h]
            lhead[lk] = h
            r = f - v
            item = expect[h] = (t + r * c if r > 0.0 else t, 0, nxt(), ~h)
            repush(prev, item)

    def retime_multi(ls, t):
        """Multi-link transfers on links ``ls`` whose rate (their smallest share) changed: settle, push anew."""
        for lk in ls:
            for x in lmul[lk]:
                rate = 1.0 / max([lcnt[k] for k in ops[x][4]])
                if rate != xrate[x]:
                    r = xrem[x] - (t - xt[x]) * xrate[x]
                    r = r if r > 0.0 else 0.0
                    xrem[x] = r
                    xt[x] = t
                    xrate[x] = rate
                    prev = expect[x]
                    item = expect[x] = (t + r / rate, 0, nxt(), ~x)
                    repush(prev, item)

    def settle(lk):
        """Link ``lk`` is about to be shared: its bookkeeping as if kept all along (one transfer h that joined it idle:
        the clock started at 0 then, h queued by its work; ``head`` then supersedes h's finish event)."""
        h = lstate[lk]
        if h >= 0:
            lcnt[lk] = 1
            lvt[lk] = 0.0
            lvt_t[lk] = join[h]
            lq[lk].append((dur[h], h))
            lhead[lk] = h
        lstate[lk] = -2

    def enter(o, t, lk):
        """Transfer ``o`` (``lk``: ``code[o]``) joins its links at ``t`` (``head`` inlined for one link)."""
        join[o] = t
        d = dur[o]
        if lk < 0:
            ls = ops[o][4]
            if len(ls) > 1:
                enter_multi(o, t, d, ls)
                return
            lk = ls[0]
        h = lstate[lk]
        if h == -1:  # alone on an idle link: full rate, finish after its work
            if code[o] >= 0:  # (one with a latency keeps the bookkeeping)
                lstate[lk] = o
            else:
                lstate[lk] = -2
                lcnt[lk] = 1
                lvt[lk] = 0.0
                lvt_t[lk] = t
                lq[lk].append((d, o))
                lhead[lk] = o
            item = expect[o] = (t + d, 0, nxt(), ~o)
            push(heap, item)
            return
        if h >= 0:
            settle(lk)
        c = lcnt[lk]
        v = lvt[lk] + (t - lvt_t[lk]) / c
        lvt[lk] = v
        lvt_t[lk] = t
        c += 1
        lcnt[lk] = c
        q = lq[lk]
        push(q, (v + d, o))
        f, h = q[0]
        old = lhead[lk]
        if old >= 0 and old != h:
            prev = expect[old]
            expect[old] = None
        else:
            prev = expect[h]
        lhead[lk] = h
        r = f - v
        item = expect[h] = (t + r * c if r > 0.0 else t, 0, nxt(), ~h)
        if prev is not None and len(heap) <= SMALL_HEAP:  # (``repush``, inlined)
            heap[heap.index(prev)] = item
            heapify(heap)
        else:
            push(heap, item)
        if lmul[lk]:
            retime_multi((lk,), t)

    def enter_multi(o, t, d, ls):
        for lk in ls:
            settle(lk)
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
        xrem[o] = d
        xt[o] = t
        xrate[o] = rate
        item = expect[o] = (t + d / rate, 0, nxt(), ~o)
        push(heap, item)

    def leave(o, t, lk):
        """Transfer ``o`` (``lk``: ``code[o]``) has finished: it leaves its links (one left alone on its link: in
        the loop; ``head`` inlined for one link)."""
        if lk < 0:
            ls = ops[o][4]
            if len(ls) > 1:
                leave_multi(o, t, ls)
                return
            lk = ls[0]
        c = lcnt[lk]
        q = lq[lk]
        if c == 1:  # the last one leaves: the link is idle
            lstate[lk] = -1
            lcnt[lk] = 0
            q.clear()
            lhead[lk] = -1
            return
        v = lvt[lk] + (t - lvt_t[lk]) / c
        lvt[lk] = v
        lvt_t[lk] = t
        c -= 1
        lcnt[lk] = c
        pop(q)  # o: the earliest virtual finish
        if q:  # the next head (it was not the head: no event of its own to supersede)
            f, h = q[0]
            lhead[lk] = h
            r = f - v
            expect[h] = item = (t + r * c if r > 0.0 else t, 0, nxt(), ~h)
            push(heap, item)
        else:
            lhead[lk] = -1
        if lmul[lk]:
            retime_multi((lk,), t)

    def leave_multi(o, t, ls):
        for lk in ls:
            c = lcnt[lk]
            v = lvt[lk] + (t - lvt_t[lk]) / c
            lvt[lk] = v
            lvt_t[lk] = t
            lcnt[lk] = c - 1
            if c == 1:
                lstate[lk] = -1
            lmul[lk].remove(o)
            if lq[lk]:
                head(lk, t, v, c - 1)
        retime_multi(ls, t)

    def launch(j, t):
        """Start op j at t: compute finishes after its duration; a transfer waits out its latency, joins its links."""
        start[j] = t
        lk = code[j]
        if lk == -1:
            push(heap, (t + dur[j], 0, nxt(), j))
        elif lk == -2 and ops[j][3] > 0.0:
            push(heap, (t + ops[j][3], 1, nxt(), ~j))
        else:
            enter(j, t, lk)

    def release(o, t):
        """Op o (with several dependent ops) has finished at t: start those of them it made ready."""
        i = -2 - succ1[o]
        for j in mflat[mat[i]:mat[i + 1]]:
            unblk[j] = o
            d = wait[j] - 1
            wait[j] = d
            if not d:
                launch(j, t)

    if resume is None:  # ops without dependencies at the head of their stream start at t = 0, in stream order
        for o in first:
            if o >= 0 and not wait[o]:
                launch(o, 0.0)
    else:  # the pending events, in the order they were pushed
        for o, act, t in resume["pending"]:
            if act == 2:  # a transfer alone on its links since t
                enter(o, t, code[o])
            elif act:  # a transfer's join after its latency
                push(heap, (t, 1, nxt(), ~o))
            else:  # a compute op's finish
                push(heap, (t, 0, nxt(), o))

    # Each pass of the inner loop handles one event ``ev`` (already off the heap).  When it ends by starting an
    # op, that op's event is pushed and the next event popped in one ``heappushpop`` (no heap work at all when it
    # is the earliest); otherwise the outer loop pops.  The heap's order is total (sequence numbers are unique), so
    # events come out in the same order as with a pop and a push.  ``ticks`` counts down to the next progress
    # report, due as event number done - done % PROGRESS_EVERY + PROGRESS_EVERY is taken up.
    done = 0 if resume is None else resume["events"]  # events handled (before t0: the pass's)
    ticks = repeat(None, PROGRESS_EVERY - 1 - done % PROGRESS_EVERY) if progress is not None else repeat(None)
    while heap:
        ev = pop(heap)
        for _ in ticks:
            t, pr, sq, o = ev
            if o < 0:  # a transfer's event
                o = ~o
                if ev is expect[o]:  # its finish
                    lk = code[o]
                    if lk >= 0 and lstate[lk] == o:  # it was left alone on its link: the link is idle
                        lstate[lk] = -1
                    else:
                        leave(o, t, lk)
                elif pr:  # its latency has elapsed: it joins its links
                    enter(o, t, code[o])
                    break
                else:
                    break  # superseded by a re-timing
            end[o] = t
            j = succ1[o]  # the op depending on o, if o made it ready (all of them: ``release``)
            if j >= 0:
                unblk[j] = o
                d = wait[j] - 1
                wait[j] = d
                if d:
                    j = -1
            elif j != -1:
                release(o, t)
                j = -1
            k = snext[o]  # the next op on o's stream, if ready: it starts last
            if k >= 0:
                d = wait[k] - 1
                wait[k] = d
                if not d:
                    if j >= 0:  # j starts first (``launch``, inlined)
                        start[j] = t
                        lk = code[j]
                        if lk == -1:
                            push(heap, (t + dur[j], 0, nxt(), j))
                        elif lk == -2 and ops[j][3] > 0.0:
                            push(heap, (t + ops[j][3], 1, nxt(), ~j))
                        else:
                            enter(j, t, lk)
                    j = k
            if j < 0:
                break
            # start j, the last op o made ready (``launch``, inlined): its event is pushed as the next is popped
            start[j] = t
            lk = code[j]
            if lk == -1:
                ev = pushpop(heap, (t + dur[j], 0, nxt(), j))
            elif lk >= 0 and lstate[lk] == -1:  # a transfer alone on an idle link (as in ``enter``)
                lstate[lk] = j
                join[j] = t
                expect[j] = item = (t + dur[j], 0, nxt(), ~j)
                ev = pushpop(heap, item)
            elif lk == -2 and ops[j][3] > 0.0:  # a transfer with a latency: it joins when it has elapsed
                ev = pushpop(heap, (t + ops[j][3], 1, nxt(), ~j))
            else:
                enter(j, t, lk)
                break
        else:  # ``ev``, not handled yet, is event number done - done % PROGRESS_EVERY + PROGRESS_EVERY
            done += PROGRESS_EVERY - done % PROGRESS_EVERY
            progress(done)
            ticks = repeat(None, PROGRESS_EVERY)
            push(heap, ev)

    if n and min(end) < 0.0:
        stuck = [o for o in range(n) if end[o] < 0.0]
        o = stuck[0]
        rec = prog.ops[o]
        deps = sum(1 for a, b in zip(prog.dep_from, prog.dep_to) if b == o and end[a] < 0.0)
        raise DeadlockError(f"{len(stuck)} of {n} ops never ran; first: {KIND_NAMES[rec[0]]} mb={rec[5]} "
                            f"chunk={rec[6]} on stream {prog.stream_name[rec[1]]} ({deps} unmet dependencies)")
    return RunResult(start=start, end=end, join=join, unblocker=unblk, events=nxt())
