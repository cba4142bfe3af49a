"""Layer-chain plans played out on the shared engine (``executor/engine.py``): devices are streams, networks are links
(a shared wireless channel is one link for every transfer on it; otherwise one link per direction of a device pair),
every transfer waits its one-way latency (RTT/2) and then shares its link (processor sharing).  Sends are
asynchronous — each transfer is its own stream, the sender's NIC queues — as in PipeEdge's send threads.

* a chain (split or pipeline): M microbatches through the stages, the input from the source and the result back;
* PiPar / split learning / FL: one round of every device's batches — device forward, upload, the server's
  forward+backward (one stream, batches in arrival order), download, device backward — with at most N batches in
  flight per device (the device stream's order f₀…f_{N−1}, b₀, f_N, b₁, … enforces it), then the model exchange;
* a module DAG (CEC-PA): R requests through the placed modules;
* the coordinator's failures (CEC-PA's election): its own loop over a seeded Poisson failure trace — nothing there is
  an op on a stream, only downtime intervals — measuring availability with and without the election.

``agreement(model, hw)`` compares the closed form with these plays on a set of plans (``validate``).
"""
from __future__ import annotations

import random

from parplan.executor.engine import BWD, FWD, P2P_BWD, P2P_FWD, Program, run
from parplan.models import edge as M
from parplan.models import edge_terms as T

MAX_OPS = 400_000


class _Net:
    """Links of one program, created on first use.  A device's sends over one link queue FIFO on one send stream
    (a socket's send order); each then waits its one-way latency on a stream of its own (propagation: messages are
    in flight concurrently), and the receiver depends on that."""

    def __init__(self, prog: Program, cluster):
        self.prog, self.cluster, self.links, self.streams = prog, cluster, {}, {}

    def send(self, a: int, b: int, nbytes: float, after: list, kind: int = P2P_FWD, mb: int = -1) -> int:
        net = self.cluster.link(a, b)
        key = M._resource(self.cluster, a, b, net)
        if key not in self.links:
            self.links[key] = self.prog.add_link(":".join(key), a)
        if (a, key) not in self.streams:
            self.streams[a, key] = self.prog.add_stream(f"send {self.cluster.ids[a]} on {':'.join(key)}", a)
        o = self.prog.add_op(kind, self.streams[a, key], nbytes / net.up_bytes_per_s, links=(self.links[key],), mb=mb)
        for x in after:
            self.prog.dep(x, o)
        if net.rtt_s > 0 and nbytes > 0:
            st = self.prog.add_stream(f"wire #{len(self.prog.ops)}", a)
            w = self.prog.add_op(kind, st, net.rtt_s / 2.0, mb=mb)  # RTT/2 in flight, the link already free
            self.prog.dep(o, w)
            return w
        return o


def _check(n_ops: int) -> None:
    if n_ops > MAX_OPS:
        from parplan.errors import SpecError

        raise SpecError(f"the simulation would have {n_ops:,} ops (more than {MAX_OPS:,})", key="requests",
                        hint="fewer requests or batches: the steady state is reached after a few")


def play_chain(spec, cluster, stages: list, microbatches: "int | None" = None) -> float:
    job = spec.inference
    Mb = microbatches or job.requests
    _check(Mb * 3 * (len(stages) + 1))
    mb, nb = job.microbatch, spec.dtype_bytes
    times = M._Times(spec, cluster, mb, job.dtype)
    a = spec.arrays()
    src = M.source_slot(spec, cluster)
    prog = Program()
    net = _Net(prog, cluster)
    comp = [prog.add_stream(f"compute {cluster.ids[s]}", s) for s, _, _ in stages]
    for m in range(Mb):
        prev = []
        if src is not None and stages[0][0] != src:
            prev = [net.send(src, stages[0][0], spec.input_elements * nb * mb, [], mb=m)]
        for i, (slot, lo, hi) in enumerate(stages):
            o = prog.add_op(FWD, comp[i], float(times(slot)[lo:hi].sum()), mb=m)
            for x in prev:
                prog.dep(x, o)
            nxt = stages[i + 1][0] if i + 1 < len(stages) else (src if src is not None and src != slot else None)
            prev = [net.send(slot, nxt, float(a["out_elements"][hi - 1]) * nb * mb, [o], mb=m)] if nxt is not None \
                else [o]
    r = run(prog)
    return max(r.end)


def play_pipar(spec, cluster, mode: str, split: int, inflight: int) -> float:
    """One plan's whole training time: ``rounds`` × one played round."""
    job = spec.training
    edges, servers = cluster.edges(), cluster.servers()
    K, B, nb = len(edges), job.batch, spec.dtype_bytes
    _check(K * job.batches * 5)
    times = M._Times(spec, cluster, B, job.dtype)
    a = spec.arrays()
    prog = Program()
    net = _Net(prog, cluster)
    hub = servers[0] if servers else None
    ends = []
    if mode == "fl":
        model_bytes = float(a["params"].sum()) * nb
        for k in edges:
            st = prog.add_stream(f"compute {cluster.ids[k]}", k)
            last = None
            for j in range(job.batches):
                last = prog.add_op(FWD, st, (1.0 + T.BACKWARD_FACTOR) * float(times(k).sum()), mb=j)
            up = net.send(k, hub, model_bytes, [last]) if hub is not None else last
            ends.append(up)
        if hub is not None:  # FedAvg: the server sends the averaged model back after every upload
            for k in edges:
                net.send(hub, k, model_bytes, ends[:K], kind=P2P_BWD)
    else:
        act = float(a["out_elements"][split - 1]) * nb * B
        srv = prog.add_stream(f"compute {cluster.ids[hub]}", hub)
        order = []  # each device stream's order: f0..f_{N-1}, b0, f_N, b1, … (at most N batches in flight)
        for j in range(job.batches):
            order.append(("f", j))
            if j >= inflight - 1:
                order.append(("b", j - inflight + 1))
        order += [("b", j) for j in range(max(0, job.batches - inflight + 1), job.batches)]
        f_c, f_s = {k: float(times(k)[:split].sum()) for k in edges}, (1.0 + T.BACKWARD_FACTOR) * float(
            times(hub)[split:].sum())
        ops = {}
        for k in edges:  # device ops first (stream order); their dependencies are added below
            st = prog.add_stream(f"compute {cluster.ids[k]}", k)
            for kind, j in order:
                dur = f_c[k] if kind == "f" else T.BACKWARD_FACTOR * f_c[k]
                ops[kind, k, j] = prog.add_op(FWD if kind == "f" else BWD, st, dur, mb=j)
        for j in range(job.batches):  # the server takes batches in arrival order: batch-major, device-minor
            for k in edges:
                up = net.send(k, hub, act, [ops["f", k, j]], mb=j)
                sv = prog.add_op(BWD, srv, f_s, mb=j)
                prog.dep(up, sv)
                down = net.send(hub, k, act, [sv], kind=P2P_BWD, mb=j)
                prog.dep(down, ops["b", k, j])
        dev_bytes = float(a["params"][:split].sum()) * nb  # device-side models averaged after the round
        ups = [net.send(k, hub, dev_bytes, [ops["b", k, job.batches - 1]]) for k in edges]
        for k in edges:
            net.send(hub, k, dev_bytes, ups, kind=P2P_BWD)
    r = run(prog)
    return max(r.end) * job.rounds


def play_dag(spec, cluster, place: dict, requests: "int | None" = None) -> float:
    job = spec.inference
    R = requests or job.requests
    _check(R * 3 * len(spec.modules))
    mb, nb = job.microbatch, spec.dtype_bytes
    src = M.source_slot(spec, cluster)
    src = src if src is not None else (cluster.edges() or [0])[0]
    prog = Program()
    net = _Net(prog, cluster)
    streams = {}
    mods = {m.name: m for m in spec.modules}
    sinks = [m.name for m in spec.modules if not any(m.name in o.after for o in spec.modules)]
    for r in range(R):
        done = {}
        for m in spec.modules:
            slot = place[m.name]
            if slot not in streams:
                streams[slot] = prog.add_stream(f"compute {cluster.ids[slot]}", slot)
            deps = []
            if not m.after and slot != src:
                deps.append(net.send(src, slot, spec.input_elements * nb * mb, [], mb=r))
            for p in m.after:
                deps.append(done[p] if place[p] == slot else
                            net.send(place[p], slot, mods[p].out_elements * nb * mb, [done[p]], mb=r))
            o = prog.add_op(FWD, streams[slot], M.module_time(spec, m, cluster.devices[slot], mb, job.dtype), mb=r)
            for d in deps:
                prog.dep(d, o)
            done[m.name] = o
        for s in sinks:
            if place[s] != src:
                net.send(place[s], src, mods[s].out_elements * nb * mb, [done[s]], mb=r)
    res = run(prog)
    return max(res.end)


def play_election(coord, *, seed: int = 0, failures: int = 2000) -> dict:
    """Availability measured on a Poisson trace of ``failures`` coordinator failures: each costs the election
    timeout + state sync (CEC-PA) or the repair time (a standalone node); a failure during a downtime extends it."""
    rng = random.Random(seed)
    horizon = failures * coord.mtbf_s
    out = {}
    for name, down in (("election", coord.election_s + coord.sync_s), ("standalone", coord.repair_s)):
        t, lost = 0.0, 0.0
        while True:
            t += rng.expovariate(1.0 / coord.mtbf_s)  # the node fails at rate λ while up (renewal: no failures
            if t >= horizon:                           # while it is down, as 1 − λT assumes)
                break
            end = min(t + down, horizon)
            lost += end - t
            t = end
        out[name] = 1.0 - lost / horizon
    return out


def simulate_estimate(spec, cluster, e) -> dict:
    """Play the plan of estimate ``e`` and compare its headline time with the closed form."""
    plan = M.parse_plan(e.plan, spec, cluster)
    if spec.is_dag:
        place = {m.name: cluster.ids.index(d) for m, d in
                 zip(spec.modules, [x.split(":", 1)[1] for x in plan["place"].split("/")])}
        sim = play_dag(spec, cluster, place)
    elif spec.training is not None:
        sim = play_pipar(spec, cluster, plan.get("mode", "pipar"), int(plan.get("split", 0) or 0),
                         int(plan.get("inflight", 1)))
    else:
        sim = play_chain(spec, cluster, M.parse_stages(plan["stages"], spec, cluster))
    out = {"plan": e.plan, "technique": e.technique, "predicted_s": e.total_s, "simulated_s": sim,
           "error": sim / e.total_s - 1.0}
    if spec.coordinator is not None:
        meas = play_election(spec.coordinator)
        out |= {"availability_predicted": e.metrics["availability"], "availability_simulated": meas["election"],
                "availability_standalone_predicted": e.metrics["availability_standalone"],
                "availability_standalone_simulated": meas["standalone"]}
    return out


def agreement(model, hw, *, top: int = 6) -> list[dict]:
    """Closed form vs the engine on the ``top`` best plans of every objective the workload has (deduplicated)."""
    from parplan.hardware.edge import load_edge_cluster
    from parplan.planner.spaces.layerchain import search
    from parplan.workloads.layerchain import load_layerchain

    spec, cluster = load_layerchain(model), load_edge_cluster(hw)
    objectives = ["throughput"] if spec.training is not None else ["latency", "throughput"]
    seen, rows = set(), []
    for obj in objectives:
        for e in search(spec, cluster, objective=obj, top=top).rows:
            if e.plan in seen:
                continue
            seen.add(e.plan)
            rows.append(simulate_estimate(spec, cluster, e))
    return rows
