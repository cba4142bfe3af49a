"""Cost model of the replicated-service family: throughput, the resource that bounds it, and latency at an offered
load, for classic SMR, scheduler-based parallel SMR and P-SMR on the replicas of a CPU machine (``nodes`` = r).

Throughput (commands/s) is 1 / max of the seconds each resource spends per command (``CAPACITY_PARTS``):

* ``exec_s``       execution: P-SMR (1−d)·t_i/n + d·(t_d + t_sync(n)) + d·t_i·I(n, d) — SEEDS.md S01(b) with
                   t_sync(k) = k·signal and the barrier-segment imbalance I (``replication_terms``); SMR (1−d)·t_i
                   + d·t_d on one thread; sched-psmr (1−d)·t_i/n + d·t_d + d·t_i·I_rr (CBASE-style, no signalling)
* ``scheduler_s``  sched-psmr only: t_sched per command (the central parallelizer: X ≤ 1/t_sched, S01(b))
* ``leader_cpu_s`` [c_recv + c_exec + ((r−1)·c_send + ⌈r/2⌉·c_ack)/b] · s_max — ANCHORS.md Part B §4.2's c_L with
                   the per-message costs divided by the batch b, on the busiest of g rings (share s_max = 1/g when
                   even: atomic multicast, S01(b))
* ``learner_cpu_s`` c_replica · s_max — the busiest ring's learner delivering to the threads
* ``nic_out_s``    (r−1)·(m + h/b)/B · (share of the rings a replica leads, largest) — the leader's NIC sends each
                   command to r−1 replicas (§4.2's (r−1)·m/B)
* ``nic_in_s``     (m + h/b)/B — every replica receives every command once

Latency at an offered load λ (``LATENCY_PARTS``, summing to ``latency_s``): client → leader, batch fill
(b−1)·g_used/(2λ), the ring leader's batch, the NIC transfers and the learner's delivery (each Kingman's GI/G/1 wait
with the batches' arrival SCV 1/b, plus service), three one-way propagations (accept, ack, decision), the central
scheduler (sched-psmr), the thread queue (GI^X/G/1: Kingman on a thread's batch of X ~ Bin(b, p) commands plus the
wait inside the batch), execution, reply.  Commands map to rings as the executor maps them (thread j's group → ring
j mod g, the "all" group → ring n mod g, ring q's leader on replica q mod r), so uneven rings bound the throughput
by the busiest one.  Everything broadcasts over numpy arrays of plans (``evaluate``; a ring's terms depend only on
its class, ``replication_terms.ring_classes``, so each is priced per class and dealt to the rings); ``estimate_plan``
prices one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, did_you_mean, short
from parplan.models.plan_pairs import plan_pairs
from parplan.models.replication_terms import imbalance_array, ring_classes

CAPACITY_PARTS = ("exec_s", "scheduler_s", "leader_cpu_s", "learner_cpu_s", "nic_out_s", "nic_in_s")
EXEC_PARTS = ("execute_independent_s", "execute_dependent_s", "sync_s", "imbalance_s")
LATENCY_PARTS = ("client_s", "batching_s", "leader_s", "transfer_s", "propagation_s", "deliver_s", "scheduler_s",
                 "queue_s", "execute_s", "reply_s")
LIMITS = {"exec_s": "execution threads", "scheduler_s": "central scheduler", "leader_cpu_s": "ring leader CPU",
          "learner_cpu_s": "learner delivery", "nic_out_s": "leader NIC (out)", "nic_in_s": "replica NIC (in)"}
SCHEMES = ("smr", "sched-psmr", "psmr")
PLAN_KEYS = ("scheme", "threads", "rings", "batch")


def _kingman(rho, s_mean, ca2, cs2):
    """Kingman's GI/G/1 mean wait (c_a² + c_s²)/2 · ρ/(1 − ρ) · E[S] (exact for M/G/1); ∞ at ρ ≥ 1."""
    rho = np.asarray(rho, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = (ca2 + cs2) / 2 * rho / (1.0 - rho) * s_mean
    return np.where(rho < 1.0, np.where(rho > 0, w, 0.0), np.inf)


def evaluate(spec, machine, scheme, n, g, b, load=None) -> dict:
    """Parts for broadcast arrays: ``scheme`` (names), threads ``n``, rings ``g``, batch ``b``; ``load`` commands/s
    (None: ``spec.load_fraction`` of each plan's throughput)."""
    scheme = np.asarray(scheme)
    n = np.asarray(n, dtype=float)
    g = np.asarray(g, dtype=float)
    b = np.asarray(b, dtype=float)
    smr, sched, psmr = scheme == "smr", scheme == "sched-psmr", scheme == "psmr"
    n = np.where(smr, 1.0, n)  # classic SMR executes on one thread
    g = np.where(psmr, g, 1.0)  # one total order outside P-SMR
    d, ti, td = spec.dependent_fraction, spec.t_independent_s, spec.t_dependent_s
    o, r = spec.ordering, float(machine.nodes)
    net = machine.network
    bw = net.bytes_per_s if net is not None else np.inf
    alpha = net.latency_s if net is not None else 0.0
    m, h, reply = spec.command_bytes, o.header_bytes, spec.reply_bytes
    out: dict = {}
    # execution, seconds of the thread pool per command (SEEDS.md S01(b))
    out["execute_independent_s"] = (1 - d) * ti / n  # (1−d)·t_i/n, n = 1 for SMR
    out["execute_dependent_s"] = d * td + 0 * n  # d·t_d: the barrier holds every thread
    out["sync_s"] = np.where(psmr, d * n * spec.signal_s, 0.0)  # d·t_sync(n), t_sync(k) = k·signal
    out["imbalance_s"] = d * ti * imbalance_array(n.astype(int), d, scheme)  # d·t_i·(E[max L] − E[m]/n)
    out["exec_s"] = sum(out[k] for k in EXEC_PARTS)
    out["scheduler_s"] = np.where(sched, spec.sched_s, 0.0)  # X ≤ 1/t_sched (S01(b), CBASE-style)
    acks = np.ceil(r / 2) if r > 1 else 0.0
    batch_cpu = (r - 1) * o.send_s + acks * o.ack_s  # per batch message: (r−1)·c_send + ⌈r/2⌉·c_ack (§4.2)
    rc = ring_classes(*np.broadcast_arrays(n.astype(int), g.astype(int)), d, int(r))  # the rings by class
    inv = rc["inv"].reshape(np.broadcast_shapes(n.shape, g.shape))  # each plan's (threads, rings) row
    s_max = rc["s_max"][inv]  # the busiest ring's share of the commands
    c_lead = o.recv_s + o.per_command_s + batch_cpu / b  # c_L per command of a ring (§4.2, per-message costs / b)
    out["leader_cpu_s"] = c_lead * s_max  # the busiest ring's leader (1/g of the commands when the rings are even)
    out["learner_cpu_s"] = o.deliver_s * s_max + 0 * b  # c_replica per command of the busiest ring's learner
    wire = (r - 1) * (m + h / b) / bw  # (r−1)·m/B (§4.2): the leader sends each command to r−1 replicas
    out["nic_out_s"] = wire * rc["nic_max"][inv]  # the replica whose ring leaders carry the largest share
    out["nic_in_s"] = (m + h / b) / bw + 0 * g  # every replica receives every command
    caps = np.broadcast_arrays(*[out[k] for k in CAPACITY_PARTS])
    cap = np.stack(caps, axis=-1)  # [..., resource]
    worst = caps[0]
    for c in caps[1:]:
        worst = np.maximum(worst, c)  # a max is exact in any order
    out["throughput_per_s"] = 1.0 / worst
    out["limit_index"] = cap.argmax(axis=-1)  # the first of equal bounds, in CAPACITY_PARTS order
    x = out["throughput_per_s"]
    lam = x * spec.load_fraction if load is None else np.asarray(load, dtype=float) + 0 * x
    out["load_per_s"] = lam
    out["utilization"] = lam / x
    # latency at λ — batch-level stations fed by batches of b: arrival SCV 1/b (Erlang-b gaps of Poisson clients),
    # Kingman's GI/G/1 wait (c_a² + c_s²)/2 · ρ/(1 − ρ) · S per station, averaged over the rings by their shares
    ca2 = 1.0 / b
    # ring q's terms depend only on its class (``ring_classes``): each station's wait is priced per class (and per
    # replica for a leader's NIC), dealt to the G rings of every plan and summed over them as one row of G
    shape = np.broadcast_shapes(lam.shape, b.shape, inv.shape)
    size = int(np.prod(shape))
    cw = np.broadcast_to(rc["class_weight"].take(inv, axis=0), shape + (4,))  # a random command's ring, per class
    lam_c = lam[..., None] * rc["class_share"].take(inv, axis=0)  # per-class command rates of one ring
    G, rp = rc["G"], rc["nic"].shape[-1]
    by_class = rc["cls"].take(np.broadcast_to(inv, shape).ravel(), axis=0)  # [plans, G]: ring q's class …
    by_class += (np.arange(size) * 4)[:, None]  # … as a flat index into [plans, 4]
    by_replica = by_class * rp  # … and into [plans, 4, rp] with its leader's replica, q mod r
    by_replica += np.arange(G) % int(r)

    def ring_sum(term, at):  # Σ_q over the G rings of a plan of its terms per class [..., 4] or class × replica
        return np.ascontiguousarray(term).ravel().take(at).reshape(shape + (G,)).sum(axis=-1)

    def kingman_q(rho, s):  # Kingman's wait at a ring's station, ρ per class or replica [..., k]
        return _kingman(rho, s[..., None], ca2[..., None] + 0 * rho, 0.0)

    lead_batch = b * (o.recv_s + o.per_command_s) + batch_cpu + 0 * lam
    out_batch = (r - 1) * (b * m + h) / bw + 0 * lam
    in_batch = (b * m + h) / bw
    learn_batch = b * o.deliver_s + 0 * lam
    rho_in = lam * out["nic_in_s"]
    out["client_s"] = alpha + m / bw + 0 * lam  # client → leader, one way
    used = rc["used"][inv]  # rings that carry commands
    out["batching_s"] = (b - 1) * used / (2 * lam)  # Σ_q s_q·(b−1)/(2 λ s_q): a command waits for (b−1)/2 others
    out["leader_s"] = ring_sum(cw * kingman_q(lam_c * c_lead[..., None], lead_batch), by_class) + lead_batch
    rho_nic = lam[..., None] * rc["nic"][inv] * wire[..., None]  # a ring leader's NIC, per replica
    out["transfer_s"] = (ring_sum(cw[..., None] * kingman_q(rho_nic, out_batch)[..., None, :], by_replica) + out_batch
                         + _kingman(rho_in, in_batch, ca2, 0.0) + in_batch)
    out["propagation_s"] = 3 * alpha + 0 * lam  # accept, phase-2b ack, decision to the learners
    out["deliver_s"] = ring_sum(cw * kingman_q(lam_c * o.deliver_s, learn_batch), by_class) + learn_batch
    # sched-psmr: the scheduler takes the learner's batches of b (service b·t_sched, deterministic)
    rho_s = lam * out["scheduler_s"]
    ts = spec.sched_s
    out["scheduler_s_latency"] = np.where(sched, _kingman(rho_s, b * ts, ca2, 0.0) + (b - 1) / 2 * ts + ts, 0.0)
    # a thread's queue: batches of X commands (GI^X/G/1: Kingman on the batch + the wait inside it); P-SMR threads get
    # X ~ Bin(b, p) of their ring's batches, SMR's one thread whole batches, sched-psmr threads single commands dealt
    # round-robin (gaps of n commands: SCV 1/n)
    rings_used = np.maximum(used - (d > 0), 1)
    p = np.where(smr, 1.0, np.minimum(1.0, (1 - d) * rings_used / n + d))  # share of a batch one thread executes
    sync_one = n * spec.signal_s * psmr
    t_dep = td + sync_one
    pt = (1 - d) / n + d  # share of all commands one thread sees (dependents reach every thread)
    es = ((1 - d) / n * ti + d * t_dep) / pt
    es2 = ((1 - d) / n * ti ** 2 + d * t_dep ** 2) / pt
    var = np.maximum(es2 - es ** 2, 0.0)
    bx = np.where(sched, 1.0, b)
    ex, vx = bx * p, bx * p * (1 - p)
    exx = vx + ex ** 2 - ex
    sb = ex * es
    cb2 = (ex * var + vx * es ** 2) / np.maximum(sb ** 2, 1e-300)
    ca2_thr = np.where(sched, 1.0 / n, 1.0 / b)
    rho_exec = lam * out["exec_s"]
    out["queue_s"] = _kingman(rho_exec, sb, ca2_thr, cb2) + es * exx / (2 * ex)
    out["execute_s"] = (1 - d) * ti + d * t_dep + 0 * lam
    out["reply_s"] = alpha + reply / bw + 0 * lam
    lat = {k: out[k] for k in LATENCY_PARTS if k != "scheduler_s"}
    lat["scheduler_s"] = out["scheduler_s_latency"]
    out["latency_parts"] = lat
    out["latency_s"] = sum(lat[k] for k in LATENCY_PARTS)
    out["threads_used"] = n + np.ceil(g / r) + g + sched  # workers + ring leaders on one replica + learners (+ sched)
    return out


@dataclass(frozen=True)
class ReplicationEstimate:
    workload: str
    machine: str
    plan: dict
    throughput_per_s: float
    limit: str  # the resource that bounds the throughput
    capacity_s: dict  # CAPACITY_PARTS → seconds per command
    exec_parts_s: dict  # EXEC_PARTS → seconds per command (sum = capacity_s["exec_s"])
    load_per_s: float
    latency_s: float
    latency_parts_s: dict  # LATENCY_PARTS → seconds (sum = latency_s)
    fits: bool
    reasons: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def plan_string(self) -> str:
        return ",".join(f"{k}={self.plan[k]}" for k in PLAN_KEYS)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "machine": self.machine, "plan": self.plan_string(), **self.plan,
                "fits": self.fits, "throughput_per_s": self.throughput_per_s, "limit": self.limit,
                "capacity_s_per_command": dict(self.capacity_s), "execution_s_per_command": dict(self.exec_parts_s),
                "load_per_s": self.load_per_s, "latency_s": self.latency_s, "latency_breakdown_s":
                    dict(self.latency_parts_s), "reasons": list(self.reasons), "notes": list(self.notes)}


def parse_plan(text: "str | None", spec, machine) -> dict:
    """``scheme=psmr,threads=8,rings=2,batch=8``; missing keys: psmr, the largest searched thread count that fits
    the cores, one ring, the smallest batch."""
    hw_threads = machine.socket.cores * machine.socket.smt
    plan = {"scheme": "psmr", "threads": max([t for t in spec.threads if t <= machine.socket.cores] or [1]),
            "rings": 1, "batch": min(spec.batch)}
    if text:
        for k, val in plan_pairs(text, PLAN_KEYS):
            if k == "scheme":
                if val not in SCHEMES:
                    raise SpecError(f"unknown scheme {short(val)}", key="--plan scheme", allowed=SCHEMES,
                                    hint=did_you_mean(val, SCHEMES))
                plan[k] = val
            else:
                try:
                    plan[k] = int(val)
                except ValueError:
                    raise SpecError(f"bad value {short(val)}: {k} is a whole number", key=f"--plan {k}") from None
    if plan["scheme"] == "smr":
        plan["threads"], plan["rings"] = 1, 1
    if plan["scheme"] == "sched-psmr":
        plan["rings"] = 1
    if not 1 <= plan["threads"] <= hw_threads:
        raise SpecError(f"threads = {plan['threads']}: a replica has {hw_threads} hardware threads",
                        key="--plan threads", hint=f"1..{hw_threads}")
    if not 1 <= plan["rings"] <= 64:
        raise SpecError(f"rings = {plan['rings']} is outside 1..64", key="--plan rings")
    if not 1 <= plan["batch"] <= 4096:
        raise SpecError(f"batch = {plan['batch']} is outside 1..4096", key="--plan batch")
    return plan


def feasibility(spec, machine, out: dict, i=()) -> list[str]:
    """Why a plan (index ``i`` into ``evaluate``'s arrays) does not fit: hardware threads, offered load."""
    reasons = []
    hw = machine.socket.cores * machine.socket.smt
    used = float(np.asarray(out["threads_used"])[i])
    if used > hw:
        reasons.append(f"needs {used:.0f} hardware threads per replica (workers, ring leaders, learners), "
                       f"{machine.socket.name} has {hw}")
    x, lam = float(np.asarray(out["throughput_per_s"])[i]), float(np.asarray(out["load_per_s"])[i])
    if spec.offered_load is not None and lam >= x:
        reasons.append(f"offered load {lam:,.0f} cmd/s is at or above the capacity {x:,.0f} cmd/s "
                       f"({LIMITS[CAPACITY_PARTS[int(np.asarray(out['limit_index'])[i])]]})")
    return reasons


def estimate_plan(spec, machine, plan: dict) -> ReplicationEstimate:
    out = evaluate(spec, machine, plan["scheme"], plan["threads"], plan["rings"], plan["batch"], spec.offered_load)
    reasons = feasibility(spec, machine, out)
    notes = []
    if machine.network is None:
        notes.append(f"{machine.name} has no network: one replica, no ordering traffic")
    if spec.offered_load is None:
        notes.append(f"no clients.offered_load: latency at {spec.load_fraction:.0%} of this plan's throughput")
    lat = {k: float(out["latency_parts"][k]) for k in LATENCY_PARTS}
    return ReplicationEstimate(
        spec.name, machine.name, dict(plan), float(out["throughput_per_s"]),
        LIMITS[CAPACITY_PARTS[int(out["limit_index"])]], {k: float(out[k]) for k in CAPACITY_PARTS},
        {k: float(out[k]) for k in EXEC_PARTS}, float(out["load_per_s"]), float(out["latency_s"]), lat,
        not reasons, reasons, notes)
