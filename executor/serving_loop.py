"""The event loop of the serving simulation: arrivals, engine iterations of every replica, KV transfers.

Batches are decided at run time (``serving_sched.Replica.schedule``), so there is no static program; the loop
follows the heap conventions of ``engine.py``: one heap of tuples ``(time, priority, sequence, kind, item)``, a
global sequence counter so that equal-time events resolve in a fixed order (two runs of one seed give identical
timelines).  Priorities at equal times: 0 an iteration ends (tokens are sampled, blocks freed), 1 a KV transfer
lands, 2 a request arrives, 3 an idle replica wakes up — so requests arriving together are batched together.

Routing (``least_loaded``): a request goes to the replica of its pool with the fewest requests (running, waiting
and, for a decode pool, in transfer), the lowest index on ties (inside a replica of attention-DP ranks, to its
least-loaded rank: ``serving_ranks``) — the least-outstanding-requests policy of
load-balancing proxies (e.g. Envoy's ``LEAST_REQUEST``, https://www.envoyproxy.io/docs/envoy/latest/intro/
arch_overview/upstream/load_balancing/load_balancers).

Disaggregated prefill/decode: a prefill replica's finished prefill samples the first token, keeps its KV blocks
while the cache is sent (``kv_transfer_s`` of the prefill pool's cost, per request; concurrent transfers do not
share a link; the first token counts as delivered when the KV has landed — TTFT includes the transfer), then the
request joins the least-loaded decode replica, where it decodes once its blocks fit
(``DistServe``'s flow: prefill instance → KV transfer → decode instance; https://arxiv.org/abs/2401.09670 §3).
"""
from __future__ import annotations

import gc
import heapq
import itertools
from dataclasses import dataclass, field

from parplan.executor.serving_sched import HELD, Replica, Reqs

END, XFER, ARRIVE, WAKE = 0, 1, 2, 3


class ServingBudgetError(Exception):
    """Raised inside the loop when the event budget is spent (turned into a SpecError by the caller)."""

    def __init__(self, events: int, done: int) -> None:
        super().__init__(events, done)
        self.events, self.done = events, done


@dataclass
class Log:
    """What the loop recorded, in the order iterations end: per iteration (end time, output tokens, duration,
    continuing decodes, blocks in use), completions, inter-token gaps that are not one iteration (time, gap)."""

    it_end: list = field(default_factory=list)
    it_tokens: list = field(default_factory=list)
    it_dur: list = field(default_factory=list)
    it_dec: list = field(default_factory=list)
    it_blocks: list = field(default_factory=list)
    done_t: list = field(default_factory=list)
    extra_t: list = field(default_factory=list)
    events: int = 0
    makespan: float = 0.0


def play(reqs: Reqs, arrivals, concurrency: int | None, entry: list, decode: list, max_events: int) -> Log:
    """Play every request of ``reqs`` through the replicas: ``entry`` (mixed, prefill or attention replicas, where
    requests arrive), ``decode`` (the decode pool's replicas; empty when aggregated).  ``arrivals``: open-loop
    arrival times, or None for a closed loop of ``concurrency`` clients."""
    gc_was = gc.isenabled()
    gc.disable()  # acyclic state; cyclic-GC passes over the growing logs would dominate
    try:
        return _play(reqs, arrivals, concurrency, entry, decode, max_events)
    finally:
        if gc_was:
            gc.enable()


def _least(reps: list, extra: list | None = None) -> Replica:
    best, bl = reps[0], None
    for r in reps:
        ld = r.load + (extra[r.idx] if extra else 0)
        if bl is None or ld < bl:
            best, bl = r, ld
    return best


def _play(reqs: Reqs, arrivals, concurrency, entry, decode, max_events) -> Log:
    R = reqs
    n = len(R.isl)
    reps = entry + decode
    for i, r in enumerate(reps):
        r.idx = i
    inflight = [0] * len(reps)  # transfers on their way to each decode replica
    heap: list = []
    push, pop = heapq.heappush, heapq.heappop
    nxt = itertools.count().__next__
    woken = [False] * len(reps)
    pending: list = [None] * len(reps)  # the running iteration of each replica: (duration, decodes, blocks)
    log = Log()
    it_end, it_tokens, it_dur, it_dec, it_blocks = log.it_end, log.it_tokens, log.it_dur, log.it_dec, log.it_blocks
    done_t = log.done_t
    xfer_to: dict = {}  # rid -> (prefill replica, decode replica)
    single = len(entry) == 1

    issued = 0
    if arrivals is not None:
        push(heap, (float(arrivals[0]), ARRIVE, nxt(), 0))
        issued = 1
    else:
        for rid in range(min(concurrency, n)):
            push(heap, (0.0, ARRIVE, nxt(), rid))
        issued = min(concurrency, n)

    def start(rep: Replica, t: float) -> None:
        d = rep.schedule()
        if d < 0.0:
            rep.busy = False
            return
        if not (d > 0.0 and d < float("inf")):
            raise ValueError(f"iteration_s returned {d!r} (must be finite and > 0)")
        rep.busy = True
        rep.iterations += 1
        rep.dec_total += rep.dec_now
        rep.busy_s += d
        blocks = rep.used + rep.held
        rep.block_s += blocks * d
        pending[rep.idx] = (d, rep.dec_now - len(rep.new_dec), blocks)
        push(heap, (t + d, END, nxt(), rep.idx))

    events = 0
    done: list = []
    handoff: list = []
    t = 0.0
    while heap:
        t, kind, _, x = pop(heap)
        events += 1
        if events > max_events:
            raise ServingBudgetError(max_events, len(done_t))
        if kind == END:
            rep = reps[x]
            tokens = rep.finish_iteration(t, done, handoff)
            it_end.append(t)
            it_tokens.append(tokens)
            d, dn, bl = pending[x]
            it_dur.append(d)
            it_dec.append(dn)
            it_blocks.append(bl)
            if done:
                for rid in done:
                    done_t.append(t)
                    if arrivals is None and issued < n:
                        push(heap, (t, ARRIVE, nxt(), issued))
                        issued += 1
                done.clear()
            if handoff:
                src = rep
                for rid in handoff:
                    dst = _least(decode, inflight)
                    inflight[dst.idx] += 1
                    xfer_to[rid] = (src, dst)
                    push(heap, (t + float(src.cost.kv_transfer_s(R.isl[rid])), XFER, nxt(), rid))
                handoff.clear()
            start(rep, t)
        elif kind == ARRIVE:
            R.arrival[x] = t
            rep = entry[0] if single else _least(entry)
            rep.enqueue(x)
            R.replica[x] = rep.idx
            if not rep.busy and not woken[rep.idx]:
                woken[rep.idx] = True
                push(heap, (t, WAKE, nxt(), rep.idx))
            if arrivals is not None and issued < n:
                push(heap, (float(arrivals[issued]), ARRIVE, nxt(), issued))
                issued += 1
        elif kind == XFER:
            src, dst = xfer_to.pop(x)
            src.release(x)
            if not src.busy and src.has_waiting() and not woken[src.idx]:
                woken[src.idx] = True
                push(heap, (t, WAKE, nxt(), src.idx))
            inflight[dst.idx] -= 1
            R.first[x] = R.last[x] = t  # the first token reaches the client with the KV at the decode instance
            R.c[x] = R.isl[x]
            R.state[x] = HELD  # waiting at the decode replica with its prompt's KV
            dst.enqueue(x)
            if not dst.busy and not woken[dst.idx]:
                woken[dst.idx] = True
                push(heap, (t, WAKE, nxt(), dst.idx))
        else:  # WAKE
            woken[x] = False
            rep = reps[x]
            if not rep.busy:
                start(rep, t)
    log.events = events
    log.makespan = t
    log.extra_t = R.itl_extra
    stuck = [rid for rid in range(n) if R.end[rid] < 0.0]
    if stuck:
        raise RuntimeError(f"{len(stuck)} of {n} requests never finished (first: {stuck[0]}, state "
                           f"{R.state[stuck[0]]}) — a scheduler bug")
    return log
