"""Discrete-event reference of a replicated service: clients → ordering rings → one replica's learners → per-thread
command queues with barrier rendezvous for dependent commands, played on the shared engine (``executor/engine.py``).

Why the engine fits: every resource is a sequential stream (the client's arrival clock, each ring leader's CPU, each
ring's learner, the central scheduler, each worker thread) or a shared link (each replica's NIC out — the ring
leaders it hosts share it, processor sharing — and the executing replica's NIC in), and the schedule is static once
the commands are drawn: a command's ring, batch and thread follow from its class and key hash, and every thread
executes its commands in the deterministic merge order (the sequence order; atomic multicast delivers the same order
to every replica).  A dependent command is, on each thread, an *arrive* op (it has reached the command), then on the
first thread the execution (t_d + n·signal) after every arrive, and on the others a *wait* op until it is done —
the barrier rendezvous, with the imbalance that the closed form's renewal–reward term predicts coming out of the
random thread loads.

What the engine does not carry: the fixed one-way propagations (client → leader, accept, ack, decision, reply: α
each, and the client's command and reply transmission) hold no resource, so they are added to each command's
latency afterwards, exactly as the closed form adds them; throughput does not depend on them.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.executor import engine as E

MAX_COMMANDS = 400_000
MIN_SEGMENTS = 1500  # dependent commands simulated at least (the barrier statistics)


@dataclass(frozen=True)
class ReplicationSim:
    commands: int
    throughput_per_s: float  # middle 80 % of completions
    latency_s: float  # mean over commands after the first 20 %
    makespan_s: float
    events: int


def _commands(spec, n_cmds: int, rng: random.Random):
    cum, acc = [], 0.0
    for c in spec.classes:
        acc += c.fraction
        cum.append(acc)
    out = []
    for _ in range(n_cmds):
        u = rng.random() * acc
        k = next(i for i, v in enumerate(cum) if u <= v)
        out.append(spec.classes[k])
    return out


def simulate_plan(spec, machine, plan: dict, *, load: "float | None" = None, n_cmds: "int | None" = None,
                  seed: int = 0) -> ReplicationSim:
    """Play ``n_cmds`` commands (default: enough for ``MIN_SEGMENTS`` barriers, ≥ 20,000) at ``load`` cmd/s
    (Poisson clients; None: every command offered at once, the saturation throughput)."""
    d = spec.dependent_fraction
    if n_cmds is None:
        n_cmds = int(min(MAX_COMMANDS, max(20_000, MIN_SEGMENTS / d if d > 0 else 0)))
    if not 1 <= n_cmds <= MAX_COMMANDS:
        raise SpecError(f"{n_cmds:,} commands is outside 1..{MAX_COMMANDS:,}", key="commands")
    rng = random.Random(seed)
    scheme = plan["scheme"]
    n = 1 if scheme == "smr" else int(plan["threads"])
    g = int(plan["rings"]) if scheme == "psmr" else 1
    b = int(plan["batch"])
    o, r = spec.ordering, machine.nodes
    net = machine.network
    bw = net.bytes_per_s if net is not None else float("inf")
    alpha = net.latency_s if net is not None else 0.0
    acks = -(-r // 2) if r > 1 else 0
    batch_cpu = (r - 1) * o.send_s + acks * o.ack_s
    cmds = _commands(spec, n_cmds, rng)
    p = E.Program()
    client = p.add_stream("clients", 0)
    leader = [p.add_stream(f"leader{q}", 1 + q % r) for q in range(g)]
    send = [p.add_stream(f"send{q}", 1 + q % r) for q in range(g)]
    recv = [p.add_stream(f"recv{q}", 0) for q in range(g)]
    learn = [p.add_stream(f"learn{q}", 0) for q in range(g)]
    sched = p.add_stream("scheduler", 0) if scheme == "sched-psmr" else -1
    thr = [p.add_stream(f"thread{j}", 0) for j in range(n)]
    nic_out = [p.add_link(f"nic-out{k}", k) for k in range(r)]
    nic_in = p.add_link("nic-in", 0)
    # arrivals, thread and ring of every command
    arrive_op, thread_of, ring_of = [], [], []
    rr = 0
    for c in cmds:
        gap = 0.0 if load is None else rng.expovariate(load)
        arrive_op.append(p.add_op(E.FWD, client, gap))
        if c.dependent:
            thread_of.append(-1)
            ring_of.append(n % g)  # the "all" group's ring
        elif scheme == "psmr":
            j = rng.randrange(n)  # key hash → the thread's group
            thread_of.append(j)
            ring_of.append(j % g)
        else:
            thread_of.append(rr % n)
            rr += 1
            ring_of.append(0)
    # batches per ring → leader CPU → NIC out (the leader's replica) → NIC in (this replica) → learner
    members = [[] for _ in range(g)]
    for i, q in enumerate(ring_of):
        members[q].append(i)
    delivered = [0] * n_cmds
    for q in range(g):
        ids = members[q]
        for s in range(0, len(ids), b):
            batch = ids[s:s + b]
            k = len(batch)
            nbytes = sum(cmds[i].bytes for i in batch) + o.header_bytes
            op = p.add_op(E.FWD, leader[q], k * (o.recv_s + o.per_command_s) + batch_cpu)
            p.dep(arrive_op[batch[-1]], op)
            last = op
            if r > 1 and np.isfinite(bw):
                x = p.add_op(E.P2P_FWD, send[q], (r - 1) * nbytes / bw, links=(nic_out[q % r],))
                p.dep(last, x)
                y = p.add_op(E.P2P_FWD, recv[q], nbytes / bw, links=(nic_in,))
                p.dep(x, y)
                last = y
            dl = p.add_op(E.FWD, learn[q], k * o.deliver_s)
            p.dep(last, dl)
            for i in batch:
                delivered[i] = dl
    # execution
    done = [0] * n_cmds
    signal = spec.signal_s * n if scheme == "psmr" else 0.0
    for i, c in enumerate(cmds):
        gate = delivered[i]
        if scheme == "sched-psmr":
            sop = p.add_op(E.FWD, sched, spec.sched_s)
            p.dep(gate, sop)
            gate = sop
        if not c.dependent or n == 1:
            j = max(thread_of[i], 0)
            op = p.add_op(E.FWD, thr[j], c.cost_s + (signal if c.dependent else 0.0))
            p.dep(gate, op)
            done[i] = op
            continue
        arrived = []
        for j in range(1, n):
            a = p.add_op(E.FWD, thr[j], 0.0)
            p.dep(gate, a)
            arrived.append(a)
        ex = p.add_op(E.FWD, thr[0], c.cost_s + signal)
        p.dep(gate, ex)
        for a in arrived:
            p.dep(a, ex)
        for j in range(1, n):
            w = p.add_op(E.FWD, thr[j], 0.0)
            p.dep(ex, w)
        done[i] = ex
    res = E.run(p)
    t_arr = np.array([res.end[a] for a in arrive_op])
    t_done = np.array([res.end[x] for x in done])
    m_avg = spec.command_bytes
    const = (alpha + m_avg / bw) + 3 * alpha + (alpha + spec.reply_bytes / bw)  # unresourced propagation
    lat = t_done - t_arr
    first = int(0.2 * n_cmds)
    srt = np.sort(t_done)
    lo, hi = int(0.1 * n_cmds), int(0.9 * n_cmds) - 1
    x = (hi - lo) / (srt[hi] - srt[lo]) if srt[hi] > srt[lo] else float("inf")
    return ReplicationSim(n_cmds, float(x), float(lat[first:].mean() + const), float(srt[-1]), res.events)


def agreement(model, hw, *, plans: "list[str] | None" = None, latency_load: float = 0.5, n_cmds=None,
              seed: int = 0) -> list[dict]:
    """Closed form vs simulation: saturation throughput of every scheme at a few thread counts, and latency at
    ``latency_load`` × the plan's throughput for the dependent-free case."""
    from parplan.hardware.cpu import load_cpu_machine
    from parplan.models.replication import estimate_plan, evaluate, parse_plan
    from parplan.workloads.replication import load_replication

    spec, m = load_replication(model), load_cpu_machine(hw)
    if plans is None:
        plans = []
        for s in spec.schemes:
            for t in ([1] if s == "smr" else sorted({min(spec.threads), max(spec.threads)})):
                plans.append(f"scheme={s},threads={t},rings={max(spec.rings) if s == 'psmr' else 1},"
                             f"batch={max(spec.batch)}")
    rows = []
    for text in plans:
        plan = parse_plan(text, spec, m)
        e = estimate_plan(spec, m, plan)
        sim = simulate_plan(spec, m, plan, n_cmds=n_cmds, seed=seed)
        rows.append({"plan": e.plan_string(), "metric": "throughput_per_s", "simulated": sim.throughput_per_s,
                     "predicted": e.throughput_per_s, "error": e.throughput_per_s / sim.throughput_per_s - 1.0,
                     "limit": e.limit})
        if latency_load and spec.dependent_fraction == 0.0:
            lam = latency_load * e.throughput_per_s
            out = evaluate(spec, m, plan["scheme"], plan["threads"], plan["rings"], plan["batch"], lam)
            sim = simulate_plan(spec, m, plan, load=lam, n_cmds=n_cmds, seed=seed)
            pred = float(out["latency_s"])
            rows.append({"plan": e.plan_string(), "metric": f"latency_s@{latency_load:.0%}", "simulated":
                         sim.latency_s, "predicted": pred, "error": pred / sim.latency_s - 1.0, "limit": e.limit})
    return rows
