"""Chrome-trace JSON of a simulated step (opens in Perfetto / chrome://tracing).

Process 1 "devices": one thread (track) per simulated device with its compute-stream ops (forward, backward,
W, blocking p2p sends, exposed all-to-all, optimizer) as complete ("X") events, and one counter track per device
with its activation memory.  Process 2 "links": one track per link that carried traffic; when transfers overlap
on a link (they share it) the extra ones go to numbered lanes of that link, since a track must nest its
intervals.  The expert-parallel all-to-all of MoE layers (``a2a-d12.l3``: dispatch of micro-batch 12 in MoE layer
3 of the stage; ``.h`` its hidden part) is on its port's track with its MoE layer, transfer and part in ``args``.
Times in µs.
"""
from __future__ import annotations

import json
from pathlib import Path

from parplan.executor.a2a import A2A_PASS_NAMES, a2a_decode
from parplan.executor.results import Schedule

PID_DEVICES, PID_LINKS = 1, 2
GiB = float(2**30)


def chrome_trace(sched: Schedule) -> dict:
    return {"traceEvents": list(_trace_events(sched)), "displayTimeUnit": "ms", "otherData": _other(sched)}


def _other(sched: Schedule) -> dict:
    return {"schedule": sched.schedule, "mode": sched.mode, "step_time_s": sched.step_time_s,
            "workload": sched.workload, "cluster": sched.cluster,
            "plan": sched.plan.to_string() if sched.plan is not None else ""}


def _trace_events(sched: Schedule):
    """The trace events in file order (a generator: ``write_chrome_trace`` streams them)."""
    pending: list = []  # metadata events of link lanes, emitted before the event that opened the lane
    ev = pending
    yield from [
        {"ph": "M", "name": "process_name", "pid": PID_DEVICES, "tid": 0, "args": {"name": "devices"}},
        {"ph": "M", "name": "process_sort_index", "pid": PID_DEVICES, "tid": 0, "args": {"sort_index": 0}},
        {"ph": "M", "name": "process_name", "pid": PID_LINKS, "tid": 0, "args": {"name": "links"}},
        {"ph": "M", "name": "process_sort_index", "pid": PID_LINKS, "tid": 0, "args": {"sort_index": 1}},
    ]
    dev_tid = {}
    for i, d in enumerate(sched.devices):
        dev_tid[d.name] = i + 1
        yield {"ph": "M", "name": "thread_name", "pid": PID_DEVICES, "tid": i + 1, "args": {"name": d.name}}
        yield {"ph": "M", "name": "thread_sort_index", "pid": PID_DEVICES, "tid": i + 1, "args": {"sort_index": i}}
    link_names = [lk.name for lk in sched.links if lk.transfers]
    lanes: dict = {name: [] for name in link_names}  # per link: end time of each lane
    lane_tid: dict = {}
    next_tid = [1]

    def link_tid(name: str, start: float, end: float) -> int:
        ends = lanes[name]
        for i, e in enumerate(ends):
            if e <= start:
                ends[i] = end
                return lane_tid[(name, i)]
        ends.append(end)
        i = len(ends) - 1
        tid = next_tid[0]
        next_tid[0] += 1
        lane_tid[(name, i)] = tid
        label = name if i == 0 else f"{name} #{i + 1}"
        ev.append({"ph": "M", "name": "thread_name", "pid": PID_LINKS, "tid": tid, "args": {"name": label}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": PID_LINKS, "tid": tid,
                   "args": {"sort_index": link_names.index(name) * 64 + i}})
        return tid

    for name in link_names:  # lane 0 of every used link exists even if its first transfer comes late
        link_tid(name, -1.0, -1.0)
    yield from pending
    pending.clear()
    for e in sched.events:
        args = {"kind": e.kind}
        if e.mb >= 0:
            args["micro_batch"] = e.mb
        if e.chunk >= 0 and sched.vpp > 1:
            args["chunk"] = e.chunk
        if e.kind == "ep_a2a":
            layer, which, hidden = a2a_decode(e.part)
            args.update({"moe_layer": layer, "transfer": A2A_PASS_NAMES[which], "exposed": not hidden})
        elif e.part >= 0:
            args["part"] = e.part
        if e.track in dev_tid:
            pid, tid = PID_DEVICES, dev_tid[e.track]
        else:
            pid, tid = PID_LINKS, link_tid(e.track, e.start_s, e.end_s)
            if pending:
                yield from pending
                pending.clear()
        yield {"ph": "X", "name": e.name, "cat": e.kind, "pid": pid, "tid": tid, "ts": e.start_s * 1e6,
               "dur": max(e.end_s - e.start_s, 0.0) * 1e6, "args": args}
    for d, (t, level) in zip(sched.devices, sched.memory_timeline):
        name = f"activations {d.name}"
        yield {"ph": "C", "name": name, "pid": PID_DEVICES, "tid": dev_tid[d.name], "ts": 0.0, "args": {"GiB": 0.0}}
        for ti, li in zip(t.tolist(), level.tolist()):
            yield {"ph": "C", "name": name, "pid": PID_DEVICES, "tid": dev_tid[d.name], "ts": ti * 1e6,
                   "args": {"GiB": li / GiB}}


def write_chrome_trace(sched: Schedule, path: "str | Path") -> None:
    """The trace as ``json.dumps(chrome_trace(sched))`` writes it (compact separators), streamed event by event:
    the file holds the same bytes without the whole list of events in memory at once."""
    enc = json.JSONEncoder(separators=(",", ":")).encode
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"traceEvents":[')
        first = True
        for e in _trace_events(sched):
            if not first:
                f.write(",")
            f.write(enc(e))
            first = False
        f.write('],"displayTimeUnit":"ms","otherData":' + enc(_other(sched)) + "}")
