"""Discrete-event core of the reference executor: ops on sequential streams, transfers on shared links.

A *program* (``Program``, ``executor/program.py``): ops, each with a kind, a stream, a duration (compute) or an
amount of link work (transfers: seconds alone on their links), dependencies and memory effects.  ``run`` plays it:

* **Streams** execute their ops in the order they were added (the schedule's order), one at a time; an op starts
  when its stream is idle and all its dependencies have finished.
* **Links** are shared resources.  A transfer first waits its latency, then joins its links; the k transfers
  present on a link share it equally (processor sharing), and a transfer spanning several links progresses at
  its smallest share.  Re-timing is incremental: the single-link transfers on a link progress at the same rate
  1/k, so each link keeps a *virtual clock* (the work served to each of them so far) and a heap of them by
  virtual finish tag (clock at join + work); only the earliest has a finish event, and a join or leave settles
  the clock, changes k and re-pushes that one event — O(log k), not O(k).  Multi-link transfers are re-timed
  explicitly, and only when their smallest share changed.  A transfer alone on an idle link keeps no bookkeeping
  until another joins.  A superseded finish event is replaced in place on a small heap, skipped when it comes up
  on a large one.
* **Events** live on one heap of tuples ``(time, priority, sequence, op)``: priority 0 = the op finishes (at equal
  times finishes go first, so links and streams are freed before anything joins), 1 = a transfer has waited its
  latency and joins its links.  The sequence number is a global counter, so equal-time events resolve in a fixed
  order (first scheduled, first processed) and two runs of one program produce identical timelines; the count of
  events is the count of events pushed.

Where no two transfers share a link, or until two first do, the contention-free pass of ``executor/replay.py``
computes the same run without the heap; the heap's event loop is ``executor/heap.py``.  Both read flat arrays
indexed by op (``replay.graph``), not records.
"""
from __future__ import annotations

import gc

# the program's data model (re-exported: ``from parplan.executor.engine import Program, FWD, ...``)
from parplan.executor.program import (BWD, COMPUTE_KINDS, DP_GRAD, DP_KINDS, DP_PARAM, EP_A2A, EP_KINDS, FWD,
                                      KIND_NAMES, OP_FIELDS, OPTIMIZER, P2P_BWD, P2P_FWD, P2P_KINDS, WGRAD, Program)
from parplan.executor.heap import PROGRESS_EVERY, DeadlockError, RunResult, heap_run

__all__ = ["BWD", "COMPUTE_KINDS", "DP_GRAD", "DP_KINDS", "DP_PARAM", "EP_A2A", "EP_KINDS", "FWD", "KIND_NAMES",
           "OP_FIELDS", "OPTIMIZER", "P2P_BWD", "P2P_FWD", "P2P_KINDS", "WGRAD", "DeadlockError", "PROGRESS_EVERY",
           "Program", "RunResult", "run"]


def run(prog: Program, progress=None) -> RunResult:
    """Play the program out; see the module docstring for the semantics.  Where no two transfers share a link
    (every link carries one stream's transfers), or until they first do, the contention-free replay computes the
    same run without a heap (``executor/replay.py``).  ``progress``: ``f(events processed)`` every
    ``PROGRESS_EVERY`` events."""
    from parplan.executor.replay import fast_run, graph

    gc_was = gc.isenabled()
    gc.disable()  # everything here is acyclic; cyclic-GC passes over millions of new objects would dominate
    try:
        g = graph(prog)
        res = fast_run(prog, g)
        if isinstance(res, RunResult):
            if progress is not None:
                progress(res.events)
            return res
        return heap_run(prog, progress, g, res)
    finally:
        if gc_was:
            gc.enable()
