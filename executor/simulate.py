"""The reference executor: expand a plan into per-device event timelines and play them out.

What is simulated
-----------------
For every micro-batch and every pipeline stage (model chunk, with interleaving): the forward, the backward
(recompute inside it) and, for ZB-H1, the deferred weight-gradient pass, on the device's compute stream in the
order of the chosen schedule (``schedules``); the p2p transfer of activations / gradients to the next / previous
stage on the link between them (blocking the sender, like Megatron-LM's ``send_forward_recv_backward``, or
asynchronous with ``p2p="async"``); the data-parallel collectives on the device's network port: ZeRO-0/1 gradient
all-reduce / reduce-scatter in per-layer buckets behind the last micro-batch's backward, ZeRO-2 reduce-scatter
behind every backward (two bucket buffers: a layer's backward waits until the bucket two layers back has been
sent), ZeRO-1/2 parameter all-gather at the start of the step (the previous step's tail) behind the first
forward, ZeRO-3 parameter all-gathers before every forward and backward layer (prefetching at most two layers
ahead) and reduce-scatters after every backward layer; the optimizer step once all of a device's gradients are
reduced.  Tensor/sequence/context-parallel collectives are inside every layer (they synchronize the tp·cp
ranks of a stage each layer) and are part of the per-layer costs; the executor reports their share per device
(``tp_comm_s``) but does not place them as separate transfers on the NVLink port — the model exposes them only
as time inside a layer, and splitting every layer into compute and collective events would multiply the event
count by ~10 for no change in the step time (they are synchronous and never overlap anything else).

Links
-----
Each simulated device has two outgoing ports: its NVLink port and its NIC.  A p2p transfer uses the sender's
NIC when the two stages sit on different nodes (ranks are placed tp, cp, pp, dp from fastest to slowest, as in
the analytical model), the NVLink port otherwise; a DP collective uses the NIC of every member when the DP group
spans nodes.  Concurrent transfers on a port share it equally (``engine``), so a p2p send that meets a gradient
bucket on the NIC takes longer — the overlap assumptions of the closed form are played out, not assumed.

Scale: one replica by symmetry
------------------------------
A homogeneous plan is symmetric in two ways.  (1) The tp·cp ranks of a stage run the same ops with the same costs
and meet in a collective every layer, so they advance in lockstep: one representative device per stage stands for
all of them (a straggler among them slows the whole stage — it does, since every layer waits for it).  (2) The dp
replicas run the same schedule with the same costs; their only coupling is the DP collectives, which start when
the slowest member is ready and then run at the rate of the α–β ring (already in the model's collective cost).
With identical replicas every member is ready at the same time, so simulating one replica — each collective as
a transfer on the representative's own port, the other members' identical traffic being on their own ports — is
exact.  With stragglers inside one replica it stays exact: durations there are ≥ the others', the dependency
graph is the same, so (max-plus monotonicity) every event of the slow replica is no earlier than its twin in
another replica, and a collective's start (the max over members) is the slow replica's.  Stragglers in several
replicas break the argument: ``mode="auto"`` then simulates every replica (``full`` mode, clusters ≤ 64
devices), with each collective a single joint transfer on the ports of all its members; beyond 64 devices the
per-stage maximum factor is used (an upper bound, noted in the result).

Derived costs (not exposed by the model) are listed in ``costs``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from parplan.errors import SpecError
from parplan.executor.costs import PipelineCosts
from parplan.executor.engine import (BWD, DP_GRAD, DP_KINDS, DP_PARAM, FWD, KIND_NAMES, OPTIMIZER, P2P_BWD, P2P_FWD,
                                     WGRAD, Program, RunResult, run)
from parplan.executor.schedules import check_schedule, default_schedule, device_order

FULL_MODE_MAX_DEVICES = 64
MODES = ("auto", "replica", "full")


# --- result ---------------------------------------------------------------------------------------------------
class Event(NamedTuple):
    """One interval on a track: an op on a device's compute stream, or a transfer on a link."""

    track: str  # device name (compute stream) or link name
    name: str  # e.g. "F3", "B3.c1", "W3", "F3.p2" (per-layer part), "p2p B7", "ag3.p0", "grad15.p3" (DP buckets)
    kind: str  # one of engine.KIND_NAMES
    device: int  # simulated device index (replica·pp + stage)
    mb: int
    chunk: int
    part: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class DeviceStats:
    """Where one simulated device's step went (seconds; they sum to the step time)."""

    name: str
    replica: int
    stage: int
    compute_s: float  # forward/backward/wgrad busy, without the parts below
    recompute_s: float
    tp_comm_s: float  # TP/SP/CP collectives inside the layers (synchronous, part of the layer costs)
    pp_p2p_s: float  # blocked in p2p sends
    bubble_s: float  # waiting for other pipeline stages (fill, drain, imbalance, stragglers), incl. the tail
    dp_comm_exposed_s: float  # waiting for DP/ZeRO collectives
    optimizer_s: float
    peak_activation_bytes: float
    slowdown: float

    @property
    def busy_s(self) -> float:
        return self.compute_s + self.recompute_s + self.tp_comm_s + self.pp_p2p_s + self.optimizer_s

    @property
    def idle_s(self) -> float:
        return self.bubble_s + self.dp_comm_exposed_s


@dataclass(frozen=True)
class LinkStats:
    name: str
    transfers: int
    busy_s: float  # time with at least one transfer on the link
    work_s: float  # sum of the transfers' times alone on the link
    max_concurrent: int


@dataclass
class Schedule:
    """A simulated step: the event timeline and its totals."""

    schedule: str
    mode: str
    pp: int
    vpp: int
    micro_batches: int
    replicas: int  # replicas simulated (1 in replica mode)
    step_time_s: float
    devices: list  # DeviceStats, one per simulated device
    links: list  # LinkStats
    memory_timeline: list  # per device: (times_s, activation_bytes) numpy arrays (step function, value after t)
    critical_device: int
    exposed_comm_s: dict  # on the critical device: tp, pp_p2p, dp
    totals: dict
    notes: list = field(default_factory=list)
    plan: object = None
    workload: str = ""
    cluster: str = ""
    analytical: dict = field(default_factory=dict)  # the model's scalars when simulated from a plan
    _event_source: object = field(default=None, repr=False, compare=False)
    _events: object = field(default=None, repr=False, compare=False)

    @property
    def events(self) -> list:
        """Every op and transfer as an ``Event``, sorted by (start, track, end, name); built on first use."""
        if self._events is None:
            self._events = _build_events(*self._event_source) if self._event_source is not None else []
        return self._events

    @property
    def peak_activation_bytes(self) -> list:
        """Peak activation bytes per pipeline stage (replica 0)."""
        return [d.peak_activation_bytes for d in self.devices[: self.pp]]

    @property
    def bubble_s(self) -> float:
        return self.devices[self.critical_device].bubble_s

    def device_events(self, device: int) -> list:
        name = self.devices[device].name
        return [e for e in self.events if e.track == name]

    def to_dict(self, with_events: bool = False) -> dict:
        out = {
            "workload": self.workload, "cluster": self.cluster,
            "plan": self.plan.as_dict() if self.plan is not None else None,
            "schedule": self.schedule, "mode": self.mode, "pp": self.pp, "vpp": self.vpp,
            "micro_batches": self.micro_batches, "replicas_simulated": self.replicas,
            "step_time_s": self.step_time_s, "critical_device": self.devices[self.critical_device].name,
            "exposed_comm_s": dict(self.exposed_comm_s), "totals": dict(self.totals),
            "devices": [dict(d.__dict__, busy_s=d.busy_s, idle_s=d.idle_s) for d in self.devices],
            "links": [dict(lk.__dict__) for lk in self.links if lk.transfers],
            "notes": list(self.notes),
        }
        if self.analytical:
            out["analytical"] = dict(self.analytical)
        if with_events:
            out["events"] = [e._asdict() for e in self.events]
        return out


# --- slowdowns ------------------------------------------------------------------------------------------------
def parse_slowdowns(items, n_devices: int, pp: int, ranks_per_stage: int) -> dict:
    """``["12=1.5", "stage:3=2"]`` → {(dp_index or None, stage): factor}; a global rank maps to its (replica, stage)
    with ranks ordered tp, cp, pp, dp."""
    out: dict = {}
    for raw in items or ():
        text = str(raw).strip()
        if "=" not in text:
            raise SpecError(f"expected DEVICE=FACTOR, got {text!r}", key="--slowdown", hint="e.g. 12=1.5 or stage:3=2")
        dev, _, fac = text.partition("=")
        dev = dev.strip()
        try:
            factor = float(fac)
        except ValueError:
            raise SpecError(f"bad factor {fac.strip()!r}", key="--slowdown", hint="a number ≥ 1, e.g. 1.5") from None
        if not math.isfinite(factor) or factor <= 0:
            raise SpecError(f"bad factor {fac.strip()!r}: must be a positive number", key="--slowdown")
        if dev.startswith("stage:"):
            try:
                st = int(dev[6:])
            except ValueError:
                raise SpecError(f"bad stage {dev[6:]!r}", key="--slowdown", hint="stage:N with N a stage index") from None
            if not 0 <= st < pp:
                raise SpecError(f"stage {st} out of range", key="--slowdown", allowed=[f"0..{pp - 1}"])
            key = (None, st)
        else:
            try:
                rank = int(dev)
            except ValueError:
                raise SpecError(f"bad device {dev!r}", key="--slowdown",
                                hint="a global rank (e.g. 12) or stage:N") from None
            if not 0 <= rank < n_devices:
                raise SpecError(f"rank {rank} out of range", key="--slowdown", allowed=[f"0..{n_devices - 1}"])
            q = rank // ranks_per_stage
            key = (q // pp, q % pp)
        out[key] = max(out[key], factor) if key in out else factor
    return out


def _device_factors(slow: dict, replicas: int, pp: int, notes: list) -> list[float]:
    """Per simulated device factor; several entries for one device: the largest wins."""
    given: dict = {}
    spread = {r for (r, _s) in slow if r is not None}
    for (r, s), x in slow.items():
        targets = range(replicas) if r is None else ([0] if replicas == 1 else [r])
        for rr in targets:
            d = rr * pp + s
            given[d] = max(given[d], x) if d in given else x
    if replicas == 1 and len(spread) > 1:
        notes.append("stragglers in several DP replicas folded into one replica (per-stage maximum): an upper bound; "
                     "use a cluster of ≤ 64 devices for the exact full-cluster simulation")
    return [given.get(d, 1.0) for d in range(replicas * pp)]


# --- building the program -------------------------------------------------------------------------------------
@dataclass
class _Built:
    prog: Program
    comp: list  # compute stream per device
    names: list  # device names


def _node(rank: int, dpn: int) -> int:
    return rank // dpn if dpn > 0 else 0


def build_program(costs: PipelineCosts, schedule: str, replicas: int, factors: list[float],
                  p2p: str = "blocking") -> _Built:
    p, v, m = costs.pp, costs.vpp, costs.micro_batches
    K = p * v
    zero = costs.zero
    zb = schedule == "zb-h1"
    R = replicas
    D = R * p
    rps, dpn = max(1, costs.ranks_per_stage), costs.devices_per_node
    fwd, bwd, layers = costs.fwd_s, costs.bwd_s, costs.layers
    rc, tpf, tpb = costs._z("recompute_s"), costs._z("tp_fwd_s"), costs._z("tp_bwd_s")
    act = costs._z("act_bytes")
    dpg_s, dpa_s = costs._z("dp_grad_s"), costs._z("dp_param_s")
    ws = costs.bwd_working_bytes
    # a p2p transfer's latency is charged as link work (one event per transfer instead of two); under sharing it
    # is then stretched like the data, an error bounded by the latency itself (≈ 10 µs)
    p2p_work = costs.p2p_work_s + costs.p2p_latency_s
    dp_on = costs.dp_ranks > 1 and (any(x > 0 for x in dpg_s) or any(x > 0 for x in dpa_s))
    grad_on = dp_on and any(x > 0 for x in dpg_s)
    param_on = dp_on and zero >= 1 and any(x > 0 for x in dpa_s)

    prog = Program()
    op = prog.add_op

    names = []
    comp, snd, nic, nvl = [], [], [], []
    for d in range(D):
        r, s = divmod(d, p)
        name = f"stage {s}" if R == 1 else f"replica {r} stage {s}"
        names.append(name)
        comp.append(prog.add_stream(name, d))
        snd.append(prog.add_stream(f"{name} p2p", d) if p2p == "async" else comp[-1])
        nic.append(prog.add_link(f"nic {name}", d))
        nvl.append(prog.add_link(f"nvlink {name}", d))
    dpa = [prog.add_stream(f"stage {s} dp-param", s) if param_on else -1 for s in range(p)]
    dpg = [prog.add_stream(f"stage {s} dp-grad", s) if grad_on else -1 for s in range(p)]

    def first_rank(r: int, s: int) -> int:
        return (r * p + s) * rps

    port_cache: dict = {}

    def p2p_port(d: int, s_to: int) -> int:
        key = (d, s_to)
        if key not in port_cache:
            r, s = divmod(d, p)
            a, b = first_rank(r, s), first_rank(r, s_to)
            port_cache[key] = nic[d] if (_node(a, dpn) != _node(b, dpn) or rps > dpn > 0) else nvl[d]
        return port_cache[key]

    dp_inter = []
    for s in range(p):
        a = first_rank(0, s)
        b = first_rank(costs.dp_replicas - 1, s) + rps - 1
        dp_inter.append(dpn > 0 and _node(a, dpn) != _node(b, dpn))

    def dp_links(s: int) -> tuple:
        port = nic if dp_inter[s] else nvl
        return tuple(port[r * p + s] for r in range(R))

    # op ids per (replica, virtual stage, micro-batch)
    def grid(fill=-1):
        return [[[fill] * m for _ in range(K)] for _ in range(R)]

    f_first, f_last, b_first, b_last, f_send, b_send = grid(), grid(), grid(), grid(), grid(), grid()
    last_grad = [-1] * p

    def grad_collectives(s, k, j, c, all_parts, nk):
        """Gradient buckets of one backward (per layer), each after its part on every replica."""
        rs = []
        for i in range(nk):
            g = op(DP_GRAD, dpg[s], dpg_s[k] / nk, links=dp_links(s), mb=j, chunk=c, part=i if nk > 1 else -1)
            for parts in all_parts:
                prog.dep(parts[min(i, len(parts) - 1)], g)
            rs.append(g)
            last_grad[s] = g
        return rs

    for s in range(p):
        order = device_order(schedule, p, v, m, s)
        first_f: dict = {}
        last_b: dict = {}
        last_w: dict = {}
        for idx, (ps, j, c) in enumerate(order):
            if ps == "F":
                first_f.setdefault(c, idx)
            elif ps == "B":
                last_b[c] = idx
            else:
                last_w[c] = idx
        for idx, (ps, j, c) in enumerate(order):
            k = c * p + s
            nk = max(1, int(layers[k]))
            if ps == "F":
                n_parts = nk if (zero == 3 and param_on) or (param_on and zero in (1, 2) and first_f[c] == idx) else 1
                ag = []
                if param_on and (zero == 3 or first_f[c] == idx):
                    for i in range(n_parts):
                        ag.append(op(DP_PARAM, dpa[s], dpa_s[k] / n_parts, links=dp_links(s), mb=j, chunk=c,
                                     part=i if n_parts > 1 else -1))
                for r in range(R):
                    d = r * p + s
                    fs = factors[d]
                    parts = []
                    for i in range(n_parts):
                        o = op(FWD, comp[d], fwd[k] * fs / n_parts, tp=tpf[k] * fs / n_parts, mb=j, chunk=c,
                               part=i if n_parts > 1 else -1, mem_alloc=act[k] if i == 0 else 0.0)
                        parts.append(o)
                        if ag:
                            prog.dep(ag[i], o)
                    if ag and zero == 3:
                        for i in range(2, n_parts):
                            prog.dep(parts[i - 2], ag[i])
                    f_first[r][k][j] = parts[0]
                    f_last[r][k][j] = parts[-1]
                    if k < K - 1:
                        so = op(P2P_FWD, snd[d], p2p_work, links=(p2p_port(d, (k + 1) % p),), mb=j, chunk=c)
                        prog.dep(parts[-1], so)
                        f_send[r][k][j] = so
            elif ps == "B":
                is_last = last_b[c] == idx
                if not zb and dp_on and (zero in (2, 3) or (grad_on and is_last)):
                    n_parts = nk
                else:
                    n_parts = 1
                ag = []
                if param_on and zero == 3:
                    for i in range(n_parts):
                        ag.append(op(DP_PARAM, dpa[s], dpa_s[k] / n_parts, links=dp_links(s), mb=j, chunk=c,
                                     part=i if n_parts > 1 else -1))
                w_work = costs.wgrad_fraction * (bwd[k] - rc[k]) if zb else 0.0
                all_parts = []
                for r in range(R):
                    d = r * p + s
                    fs = factors[d]
                    parts = []
                    for i in range(n_parts):
                        last = i == n_parts - 1
                        o = op(BWD, comp[d], (bwd[k] - w_work) * fs / n_parts, tp=tpb[k] * fs / n_parts,
                               rc=rc[k] * fs / n_parts, mb=j, chunk=c, part=i if n_parts > 1 else -1,
                               mem_alloc=ws, mem_free=ws + (act[k] if (last and not zb) else 0.0))
                        parts.append(o)
                        if ag:
                            prog.dep(ag[i], o)
                    if ag:
                        for i in range(2, n_parts):
                            prog.dep(parts[i - 2], ag[i])
                    b_first[r][k][j] = parts[0]
                    b_last[r][k][j] = parts[-1]
                    if k == K - 1:
                        prog.dep(f_last[r][k][j], parts[0])
                    if k > 0:
                        so = op(P2P_BWD, snd[d], p2p_work, links=(p2p_port(d, (k - 1) % p),), mb=j, chunk=c)
                        prog.dep(parts[-1], so)
                        b_send[r][k][j] = so
                    all_parts.append(parts)
                # gradient buckets: behind every backward for ZeRO-2/3, behind the last one otherwise
                if grad_on and not zb and (zero in (2, 3) or is_last):
                    rs = grad_collectives(s, k, j, c, all_parts, nk)
                    if zero in (2, 3):  # two bucket buffers: layer i waits until bucket i−2 has been sent
                        for parts in all_parts:
                            for i in range(2, len(parts)):
                                prog.dep(rs[i - 2], parts[i])
            else:  # "W": ZB-H1 weight gradient; activations are freed here
                w_work = costs.wgrad_fraction * (bwd[k] - rc[k])
                all_parts = []
                for r in range(R):
                    d = r * p + s
                    w = op(WGRAD, comp[d], w_work * factors[d], mb=j, chunk=c, mem_free=act[k])
                    prog.dep(b_last[r][k][j], w)
                    all_parts.append([w])
                if grad_on and last_w[c] == idx:
                    grad_collectives(s, k, j, c, all_parts, nk)
        for r in range(R):
            d = r * p + s
            o = op(OPTIMIZER, comp[d], costs.optimizer_s * factors[d])
            if last_grad[s] >= 0:
                prog.dep(last_grad[s], o)
    # cross-device pipeline dependencies
    for r in range(R):
        for k in range(K):
            for j in range(m):
                if k > 0:
                    prog.dep(f_send[r][k - 1][j], f_first[r][k][j])
                if k < K - 1:
                    prog.dep(b_send[r][k + 1][j], b_first[r][k][j])
    return _Built(prog=prog, comp=comp, names=names)


# --- analysis -------------------------------------------------------------------------------------------------
def _op_name(kind: int, mb: int, chunk: int, part: int, v: int) -> str:
    base = {FWD: "F", BWD: "B", WGRAD: "W", OPTIMIZER: "optimizer", P2P_FWD: "p2p F", P2P_BWD: "p2p B",
            DP_GRAD: "grad", DP_PARAM: "ag"}[kind]
    if kind == OPTIMIZER:
        return base
    name = f"{base}{mb}" if mb >= 0 else base
    if v > 1 and chunk >= 0:
        name += f".c{chunk}"
    if part >= 0:
        name += f".p{part}"
    return name


def _interval_union(starts: np.ndarray, ends: np.ndarray) -> float:
    if len(starts) == 0:
        return 0.0
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    block_end = np.append(run_end[idx[1:] - 1], run_end[-1])
    return float(np.sum(block_end - s[idx]))


def _max_concurrency(starts: np.ndarray, ends: np.ndarray) -> int:
    if len(starts) == 0:
        return 0
    t = np.concatenate([starts, ends])
    d = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    o = np.lexsort((d, t))  # at equal times, leaves (−1) before joins
    return int(np.max(np.cumsum(d[o])))


def _build_events(prog: Program, res: RunResult, comp: list, names: list, v: int) -> list:
    kinds, streams, mbs, chunks, parts, links = (prog.column(c) for c in ("kind", "stream", "mb", "chunk", "part",
                                                                          "links"))
    comp_set = set(comp)
    sdev, sname, lname = prog.stream_device, prog.stream_name, prog.link_name
    start, end, join = res.start, res.end, res.join
    evs = []
    add = evs.append
    for o in range(len(kinds)):
        kd, st, ls = kinds[o], streams[o], links[o]
        nm = _op_name(kd, mbs[o], chunks[o], parts[o], v)
        dv = sdev[st]
        if ls is None:
            add(Event(sname[st], nm, KIND_NAMES[kd], dv, mbs[o], chunks[o], parts[o], start[o], end[o]))
            continue
        if st in comp_set:  # a blocking send occupies its device too
            add(Event(names[dv], nm, KIND_NAMES[kd], dv, mbs[o], chunks[o], parts[o], start[o], end[o]))
        for lk in ls:
            add(Event(lname[lk], nm, KIND_NAMES[kd], dv, mbs[o], chunks[o], parts[o], join[o], end[o]))
    evs.sort(key=lambda e: (e.start_s, e.track, e.end_s, e.name))
    return evs


def analyze(built: _Built, res: RunResult, costs: PipelineCosts, schedule: str, mode: str, replicas: int,
            factors: list[float], notes: list) -> Schedule:
    prog = built.prog
    p, v = costs.pp, costs.vpp
    n = len(prog)
    kind = np.fromiter(prog.column("kind"), dtype=np.int64, count=n)
    stream = np.fromiter(prog.column("stream"), dtype=np.int64, count=n)
    start = np.fromiter(res.start, dtype=np.float64, count=n)
    end = np.fromiter(res.end, dtype=np.float64, count=n)
    join = np.fromiter(res.join, dtype=np.float64, count=n)
    unblk = np.fromiter(res.unblocker, dtype=np.int64, count=n)
    tp_part = np.fromiter(prog.column("tp"), dtype=np.float64, count=n)
    rc_part = np.fromiter(prog.column("rc"), dtype=np.float64, count=n)
    mem_alloc = np.fromiter(prog.column("mem_alloc"), dtype=np.float64, count=n)
    mem_free = np.fromiter(prog.column("mem_free"), dtype=np.float64, count=n)
    work = np.fromiter(prog.column("dur"), dtype=np.float64, count=n)
    step = float(end.max()) if n else 0.0
    D = len(built.comp)
    dev_of_stream = np.asarray(prog.stream_device, dtype=np.int64)
    comp_dev = np.full(len(prog.stream_name), -1, dtype=np.int64)
    comp_dev[np.asarray(built.comp, dtype=np.int64)] = np.arange(D)
    is_dp = np.isin(kind, DP_KINDS)
    unblk_dp = np.where(unblk >= 0, is_dp[np.maximum(unblk, 0)], False)
    compute = np.isin(kind, (FWD, BWD, WGRAD))
    p2p_k = np.isin(kind, (P2P_FWD, P2P_BWD))
    durs = end - start

    # compute streams: ops in execution order, gaps attributed to what the op waited for last
    cdev = comp_dev[stream]
    on_comp = np.flatnonzero(cdev >= 0)
    order = on_comp[np.lexsort((on_comp, start[on_comp], cdev[on_comp]))]
    od = cdev[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = od[1:] != od[:-1]
    prev_end = np.concatenate([[0.0], end[order][:-1]])
    prev_end[first] = 0.0
    gap = np.maximum(start[order] - prev_end, 0.0)
    gap_dp = np.bincount(od, weights=np.where(unblk_dp[order], gap, 0.0), minlength=D)
    gap_all = np.bincount(od, weights=gap, minlength=D)
    last_end = np.zeros(D)
    np.maximum.at(last_end, od, end[order])

    def per_dev(mask):
        sel = on_comp[mask[on_comp]]
        return np.bincount(cdev[sel], weights=durs[sel], minlength=D)

    def per_dev_w(mask, w):
        sel = on_comp[mask[on_comp]]
        return np.bincount(cdev[sel], weights=w[sel], minlength=D)

    busy_compute = per_dev(compute)
    tp_s = per_dev_w(compute, tp_part)
    rc_s = per_dev_w(compute, rc_part)
    p2p_s = per_dev(p2p_k)
    opt_s = per_dev(kind == OPTIMIZER)

    # activation memory: allocated when a forward starts, freed when its backward (ZB: W) ends
    mdev = dev_of_stream[stream]
    ma = np.flatnonzero(mem_alloc > 0)
    mf = np.flatnonzero(mem_free > 0)
    t_m = np.concatenate([start[ma], end[mf]])
    d_m = np.concatenate([mem_alloc[ma], -mem_free[mf]])
    dv_m = np.concatenate([mdev[ma], mdev[mf]])
    mo = np.lexsort((d_m, t_m, dv_m))  # per device, by time, frees before allocations at equal times
    t_m, d_m, dv_m = t_m[mo], d_m[mo], dv_m[mo]
    csum = np.cumsum(d_m)
    timelines = []
    peaks = np.zeros(D)
    bounds = np.searchsorted(dv_m, np.arange(D + 1))
    for d in range(D):
        lo, hi = bounds[d], bounds[d + 1]
        base = csum[lo - 1] if lo > 0 else 0.0
        level = csum[lo:hi] - base
        timelines.append((t_m[lo:hi], level))
        peaks[d] = max(float(level.max()), 0.0) if hi > lo else 0.0

    devices = []
    for d in range(D):
        r, s = divmod(d, p)
        tail = step - last_end[d]
        devices.append(DeviceStats(
            name=built.names[d], replica=r, stage=s, compute_s=float(busy_compute[d] - tp_s[d] - rc_s[d]),
            recompute_s=float(rc_s[d]), tp_comm_s=float(tp_s[d]), pp_p2p_s=float(p2p_s[d]),
            bubble_s=float(gap_all[d] - gap_dp[d] + tail), dp_comm_exposed_s=float(gap_dp[d]),
            optimizer_s=float(opt_s[d]), peak_activation_bytes=float(peaks[d]), slowdown=factors[d]))
    # the critical device: the pipeline's bottleneck, i.e. the busiest device (lowest index on ties)
    busy = np.array([d.busy_s for d in devices])
    crit = int(np.flatnonzero(busy >= busy.max() * (1 - 1e-12))[0]) if D else 0

    # links
    olinks = prog.column("links")
    lo_ops, lo_links = [], []
    for o, ls in enumerate(olinks):
        if ls is not None:
            for lk in ls:
                lo_ops.append(o)
                lo_links.append(lk)
    lo_ops_a = np.asarray(lo_ops, dtype=np.int64)
    lo_links_a = np.asarray(lo_links, dtype=np.int64)
    links = []
    lorder = np.argsort(lo_links_a, kind="stable")
    lb = np.searchsorted(lo_links_a[lorder], np.arange(len(prog.link_name) + 1))
    for lk, name in enumerate(prog.link_name):
        ids = lo_ops_a[lorder[lb[lk]:lb[lk + 1]]]
        js, es = join[ids], end[ids]
        links.append(LinkStats(name=name, transfers=len(ids), busy_s=_interval_union(js, es),
                               work_s=float(np.sum(work[ids])), max_concurrent=_max_concurrency(js, es)))

    cd = devices[crit]
    exposed = {"tp": cd.tp_comm_s, "pp_p2p": cd.pp_p2p_s, "dp": cd.dp_comm_exposed_s}
    totals = {
        "step_time_s": step, "ops": n, "engine_events": res.events,
        "critical_device": cd.name, "bubble_s": cd.bubble_s, "compute_s": cd.compute_s,
        "recompute_s": cd.recompute_s, "tp_comm_s": cd.tp_comm_s, "pp_p2p_s": cd.pp_p2p_s,
        "dp_comm_exposed_s": cd.dp_comm_exposed_s, "optimizer_s": cd.optimizer_s,
        "peak_activation_bytes": float(peaks.max()) if D else 0.0,
        "busy_fraction": float(busy.mean() / step) if step > 0 else 0.0,
    }
    return Schedule(schedule=schedule, mode=mode, pp=p, vpp=v, micro_batches=costs.micro_batches, replicas=replicas,
                    step_time_s=step, devices=devices, links=links, memory_timeline=timelines,
                    critical_device=crit, exposed_comm_s=exposed, totals=totals, notes=notes,
                    _event_source=(prog, res, built.comp, built.names, v))


# --- entry points ---------------------------------------------------------------------------------------------
def simulate_costs(costs: PipelineCosts, schedule: str | None = None, *, mode: str = "replica",
                   slowdown: dict | None = None, p2p: str = "blocking", n_devices: int | None = None) -> Schedule:
    """Simulate hand-made or model-derived ``costs``.  ``slowdown``: {(replica or None, stage): factor}."""
    schedule = schedule or default_schedule(costs.vpp)
    check_schedule(schedule, costs.pp, costs.vpp, costs.micro_batches, costs.zero)
    if mode not in MODES:
        raise SpecError(f"unknown mode {mode!r}", key="--mode", allowed=list(MODES))
    if p2p not in ("blocking", "async"):
        raise SpecError(f"unknown p2p mode {p2p!r}", key="p2p", allowed=["blocking", "async"])
    slow = dict(slowdown or {})
    n_dev = n_devices if n_devices is not None else costs.dp_replicas * costs.pp * costs.ranks_per_stage
    if mode == "auto":
        spread = {r for (r, _s) in slow if r is not None}
        mode = "full" if (len(spread) > 1 and n_dev <= FULL_MODE_MAX_DEVICES) else "replica"
    if mode == "full" and n_dev > FULL_MODE_MAX_DEVICES:
        raise SpecError(f"full-cluster simulation is limited to {FULL_MODE_MAX_DEVICES} devices ({n_dev} here)",
                        key="--mode", hint="use --mode replica (exact for homogeneous plans)")
    replicas = costs.dp_replicas if mode == "full" else 1
    notes: list = list(costs.notes)
    factors = _device_factors(slow, replicas, costs.pp, notes)
    built = build_program(costs, schedule, replicas, factors, p2p=p2p)
    res = run(built.prog)
    return analyze(built, res, costs, schedule, mode, replicas, factors, notes)


def simulate_plan(workload, cluster, plan, *, schedule: str | None = None, slowdown=None, mode: str = "auto",
                  p2p: str = "blocking", eff=None) -> Schedule:
    """Validate ``plan``, take its per-op costs from the analytical model, simulate one step."""
    from parplan.executor.costs import model_costs
    from parplan.models.estimate import validate_plan

    validate_plan(workload, cluster, plan)
    costs, res = model_costs(workload, cluster, plan, eff)
    slow = parse_slowdowns(slowdown, cluster.n_devices, plan.pp, plan.tp * plan.cp) \
        if not isinstance(slowdown, dict) else slowdown
    sched = simulate_costs(costs, schedule, mode=mode, slowdown=slow, p2p=p2p, n_devices=cluster.n_devices)
    sched.plan = plan
    sched.workload = workload.name
    sched.cluster = cluster.name
    sched.analytical = res
    return sched
