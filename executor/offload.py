"""Discrete-event reference of an offload plan on the shared engine (``executor/engine.py``): host and device
streams, the PCIe link in each direction, the network for remote actors, and every stage actor's mailbox thread.

Per request and segment (``models.offload.segments``): the stage actors' messages (t_msg each, on their actor
streams); for a CPU segment the kernel on the host stream; for a device segment, per chunk, the enqueue (the first
stage actor's stream) → H2D transfer (its stream, the device's H2D link: latency, then n/k·b_in/BW) → the segment's
kernels on the device stream (t_launch + n/k·c/X each) → D2H transfer; remote actors add a network transfer in
and out around the segment.  Requests are added one after another, so each stream serves them in order and the
actors pipeline them (request i+1's H2D overlaps request i's kernels) — which the closed form prices as
T_1 + (R − 1)·max resource busy time; the engine plays the real overlap.  Durations come from the model's terms
(``models.offload``), never re-derived here.
"""
from __future__ import annotations

from dataclasses import dataclass

from parplan.errors import SpecError
from parplan.executor import engine as E
from parplan.models.offload import segments

MAX_OPS = 2_000_000


@dataclass(frozen=True)
class OffloadSim:
    makespan_s: float  # all requests
    first_s: float  # the first request's completion
    requests: int
    events: int


def simulate_plan(spec, node, plan: dict, *, requests: "int | None" = None) -> OffloadSim:
    R = int(requests or spec.requests)
    k = int(plan["chunks"])
    L = len(spec.kernels)
    if R * L * (4 * k + 3) > MAX_OPS:
        raise SpecError(f"{R} requests × {L} stages × {k} chunks is above the simulation budget ({MAX_OPS:,} ops)",
                        key="--plan chunks", hint="fewer chunks or requests")
    actor = plan["api"] == "actor"
    n = float(plan["n"])
    p = E.Program()
    host = p.add_stream("host", 0)
    actors = [p.add_stream(f"actor{i}", 0) for i in range(L)]
    # each stage actor has its own command queues (OpenCL: one queue per actor) — streams; the device's PCIe links
    # and its compute are shared by them (links, processor sharing: concurrent kernels share the device)
    h2d = [p.add_stream(f"h2d-queue{i}", 0) for i in range(L)]
    dev = [p.add_stream(f"dev-queue{i}", 0) for i in range(L)]
    d2h = [p.add_stream(f"d2h-queue{i}", 0) for i in range(L)]
    net_in = [p.add_stream(f"net-in-queue{i}", 0) for i in range(L)]  # full duplex: a stream and link per direction
    net_out = [p.add_stream(f"net-out-queue{i}", 0) for i in range(L)]
    h2d_l, d2h_l, dev_l = {}, {}, {}
    for j, a in enumerate(node.accelerators, 1):
        h2d_l[a.id] = p.add_link(f"pcie-h2d:{a.id}", j)
        d2h_l[a.id] = p.add_link(f"pcie-d2h:{a.id}", j)
        dev_l[a.id] = p.add_link(f"compute:{a.id}", j)
    net_in_l, net_out_l = p.add_link("network-in", 0), p.add_link("network-out", 0)
    segs = segments(tuple(plan["place"]), plan["resident"])
    ends = []
    for _ in range(R):
        last = -1

        def after(op, prev):
            if prev >= 0:
                p.dep(prev, op)
            return op

        for where, idx in segs:
            ks = [spec.kernels[i] for i in idx]
            for i in idx:
                last = after(p.add_op(E.FWD, actors[i], node.message_s if actor else 0.0), last)
            if where == "cpu":
                last = after(p.add_op(E.FWD, host, n * sum(x.ops_per_element for x in ks) / node.host.ops_per_s), last)
                continue
            a = node.accelerator(where)
            b_in, b_out = ks[0].bytes_in, ks[-1].bytes_out
            q = idx[0]
            if spec.remote:
                last = after(p.add_op(E.P2P_FWD, net_in[q], n * b_in / node.net_bytes_per_s, links=(net_in_l,),
                                      lat=node.net_latency_s), last)
            m = n / k
            comp = m * sum(x.ops_per_element for x in ks) / a.ops_per_s
            start = last
            for _c in range(k):
                op = after(p.add_op(E.FWD, actors[q], len(ks) * a.enqueue_s), start)
                if not a.shared_memory:
                    op = after(p.add_op(E.P2P_FWD, h2d[q], m * b_in / a.h2d_bytes_per_s, links=(h2d_l[where],),
                                        lat=a.h2d_latency_s), op)
                op = after(p.add_op(E.FWD, dev[q], comp, links=(dev_l[where],), lat=len(ks) * a.launch_s), op)
                if not a.shared_memory:
                    op = after(p.add_op(E.P2P_BWD, d2h[q], m * b_out / a.d2h_bytes_per_s, links=(d2h_l[where],),
                                        lat=a.d2h_latency_s), op)
                last = op  # chunks finish in order on each stream: the last chunk's op ends the segment
            if spec.remote:
                last = after(p.add_op(E.P2P_BWD, net_out[q], n * b_out / node.net_bytes_per_s, links=(net_out_l,),
                                      lat=node.net_latency_s), last)
        ends.append(last)
    res = E.run(p)
    return OffloadSim(max(res.end), res.end[ends[0]], R, res.events)


def agreement(model, hw, *, plans: "list[str] | None" = None) -> list[dict]:
    """Closed form vs simulation: every accelerator (resident and copy-back, 1 and max chunks) at the workload's
    largest and middle sizes, over its requests."""
    from parplan.hardware.offload import load_offload_node
    from parplan.models.offload import estimate_plan, parse_plan
    from parplan.workloads.offload import load_offload

    spec, node = load_offload(model), load_offload_node(hw)
    if spec.is_heritage:
        raise SpecError("heritage workloads have no executor schedule to validate", key="heritage")
    if plans is None:
        plans = []
        mid = spec.sizes[len(spec.sizes) // 2]
        for a in node.accelerators:
            for n in sorted({mid, max(spec.sizes)}):
                for k in sorted({1, max(spec.chunks)}):
                    for res in (("true", "false") if len(spec.kernels) > 1 else ("true",)):
                        plans.append(f"place={a.id},resident={res},chunks={k},n={n:g}")
    rows = []
    for text in plans:
        plan = parse_plan(text, spec, node)
        e = estimate_plan(spec, node, plan)
        sim = simulate_plan(spec, node, plan)
        rows.append({"plan": e.plan_string(), "requests": spec.requests, "simulated_s": sim.makespan_s,
                     "predicted_s": e.requests_s, "error": e.requests_s / sim.makespan_s - 1.0,
                     "bottleneck": e.bottleneck})
    return rows
