"""The program of a simulation (``Program``: ops on streams, transfers on links, dependencies — what the engine,
``executor/engine.py``, plays out), and building the program of one simulated pipeline step: every op of every
simulated device, in the schedule's order, with its streams, links and dependencies (see ``simulate`` for what is
simulated and why one replica suffices).

Virtual stages without MoE layers are played exactly as for a dense model; a virtual stage with MoE layers plays
each forward / backward as compute pieces and expert-parallel all-to-all transfers (``a2a``); RTP plans
(``rotate``) play every layer part as its shard ring instead of ZeRO-3's gathers (``rotation``).
"""
from __future__ import annotations

import gc
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parplan.executor.costs import PipelineCosts

# op kinds (small ints in the hot loop; names for traces and tables)
FWD, BWD, WGRAD, P2P_FWD, P2P_BWD, DP_GRAD, DP_PARAM, OPTIMIZER, EP_A2A = range(9)
KIND_NAMES = ("forward", "backward", "wgrad", "p2p_fwd", "p2p_bwd", "dp_grad", "dp_param", "optimizer", "ep_a2a")
COMPUTE_KINDS = (FWD, BWD, WGRAD, OPTIMIZER)
P2P_KINDS = (P2P_FWD, P2P_BWD)
DP_KINDS = (DP_GRAD, DP_PARAM)
EP_KINDS = (EP_A2A,)  # expert-parallel all-to-all (dispatch / combine and their gradients) of MoE layers

# columns of an op record
OP_FIELDS = ("kind", "stream", "dur", "lat", "links", "mb", "chunk", "part", "mem_alloc", "mem_free", "tp", "rc")


class Program:
    """All ops, dependencies, streams and links of one simulation.

    Ops are appended as records (``OP_FIELDS``: kind, stream, duration or link work, latency, link ids or None,
    micro-batch, chunk, part, bytes allocated at start, bytes freed at end, and the TP-communication and recompute
    seconds inside a compute op, for accounting); ``column(name)`` gives one field for all ops.  What a run reads
    of every op is also kept as ops are added, in flat lists: ``op_stream``, ``op_dur`` and ``op_code`` (−1 for a
    compute op, the link of a transfer on one link without latency, −2 for any other transfer) — a run then never
    walks the records (scattered over memory, read in time order) nor transposes them.
    """

    def __init__(self) -> None:
        self.ops: list = []
        self.op_stream: list = []
        self.op_dur: list = []
        self.op_code: list = []
        self.dep_from = array("q")  # dependencies: dep_from[i] before dep_to[i] (machine integers, read in one go)
        self.dep_to = array("q")
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
        self.op_stream.append(stream)
        self.op_dur.append(dur)
        self.op_code.append(-1 if links is None else links[0] if len(links) == 1 and not lat else -2)
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
class _Built:
    prog: Program
    comp: list  # compute stream per device
    names: list  # device names


def _node(rank: int, dpn: int) -> int:
    return rank // dpn if dpn > 0 else 0


def build_program(costs: PipelineCosts, schedule: str, replicas: int, factors: list[float],
                  p2p: str = "blocking", progress=None) -> _Built:
    """The program of one step (see the module docstring); ``progress``: ``f(ops built)`` every 4,096 passes."""
    from parplan.executor.a2a import MoEPasses
    from parplan.executor.schedules import device_order

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

    def ep_port(d: int) -> int:
        """The EP group (ep·etp consecutive ranks) of the device's first rank: NVLink inside one scale-up domain."""
        r, s = divmod(d, p)
        n = max(1, int(costs.ep_ranks))
        g0 = first_rank(r, s) // n * n
        return nvl[d] if _node(g0, dpn) == _node(g0 + n - 1, dpn) else nic[d]

    a2a_on = costs.has_moe and sum(costs.a2a_fwd_s or ()) + sum(costs.a2a_bwd_s or ()) > 0
    moe = (MoEPasses(prog, costs, comp, names, factors, R, ep_port, zb, costs.moe_full_recompute,
                     etp_port_of=lambda d: nvl[d]) if a2a_on else None)
    moe_k = [bool(moe is not None and int(costs.moe_layers[k]) > 0) for k in range(K)]
    rtp = None
    if costs.rtp_shards > 1:  # RTP: every layer part plays its shard ring (``executor/rotation.py``)
        from parplan.executor.rotation import RotationPasses

        rtp = RotationPasses(prog, costs, comp, factors, R, dp_links)

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

    def wgrad_work(k: int) -> float:
        """ZB-H1's weight gradient: its share of the backward without recompute (and exposed all-to-all)."""
        if moe_k[k]:
            return costs.wgrad_fraction * (bwd[k] - rc[k] - int(costs.moe_layers[k]) * costs.a2a_bwd_exposed_s)
        return costs.wgrad_fraction * (bwd[k] - rc[k])

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
        # ZeRO-3: the layers whose parameters this stage has gathered, in gather order (each: its compute op on
        # every replica).  Two gather buffers (the memory model's ``zero3_gather_buffer_bytes``: 2 full layers): the
        # n-th gather waits until the layer of gather n − 2 has been computed — across chunks and micro-batches too
        gathered: list = []

        def two_buffers(ag, per_replica_parts):
            base = len(gathered)
            for i in range(len(ag)):
                if 2 <= base + i < base + 2:  # inside this op the parts' own rule (part i − 2) applies
                    for o in gathered[base + i - 2]:
                        prog.dep(o, ag[i])
            for i in range(len(ag)):
                gathered.append([parts[i] for parts in per_replica_parts])

        for idx, (ps, j, c) in enumerate(order):
            if progress is not None and not idx & 4095:
                progress(len(prog.ops))
            k = c * p + s
            nk = max(1, int(layers[k]))
            if ps == "F":
                n_parts = nk if (zero == 3 and param_on) or (param_on and zero in (1, 2) and first_f[c] == idx) else 1
                ag = []
                if param_on and (zero == 3 or first_f[c] == idx):
                    for i in range(n_parts):
                        ag.append(op(DP_PARAM, dpa[s], dpa_s[k] / n_parts, links=dp_links(s), mb=j, chunk=c,
                                     part=i if n_parts > 1 else -1))
                if moe_k[k]:
                    firsts, lasts = moe.build(moe.forward_items(k, n_parts), FWD, k, j, c, n_parts, tpf[k],
                                              mem_first=act[k])
                    for r in range(R):
                        d = r * p + s
                        for i in range(len(ag)):
                            prog.dep(ag[i], firsts[r][i])
                        if ag and zero == 3:
                            for i in range(2, n_parts):
                                prog.dep(lasts[r][i - 2], ag[i])
                        f_first[r][k][j] = firsts[r][0]
                        f_last[r][k][j] = lasts[r][-1]
                        if r == R - 1 and ag and zero == 3:
                            two_buffers(ag, [lasts[q] for q in range(R)])
                        if k < K - 1:
                            so = op(P2P_FWD, snd[d], p2p_work, links=(p2p_port(d, (k + 1) % p),), mb=j, chunk=c)
                            prog.dep(lasts[r][-1], so)
                            f_send[r][k][j] = so
                    continue
                f_parts = [] if rtp is None else rtp.forward(s, k, j, c, nk, act[k])
                for r in range(R):
                    d = r * p + s
                    fs = factors[d]
                    parts = [] if rtp is None else f_parts[r]
                    if rtp is None:
                        f_parts.append(parts)
                    for i in range(n_parts if rtp is None else 0):
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
                if ag and zero == 3:
                    two_buffers(ag, f_parts)
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
                w_work = wgrad_work(k) if zb else 0.0
                all_parts = []
                all_firsts = []
                if moe_k[k]:
                    firsts, lasts = moe.build(moe.backward_items(k, n_parts), BWD, k, j, c, n_parts, tpb[k], ws=ws,
                                              act_free=0.0 if zb else act[k])
                    for r in range(R):
                        d = r * p + s
                        for i in range(len(ag)):
                            prog.dep(ag[i], firsts[r][i])
                        if ag:
                            for i in range(2, n_parts):
                                prog.dep(lasts[r][i - 2], ag[i])
                        b_first[r][k][j] = firsts[r][0]
                        b_last[r][k][j] = lasts[r][-1]
                        if k == K - 1:
                            prog.dep(f_last[r][k][j], firsts[r][0])
                        if k > 0:
                            so = op(P2P_BWD, snd[d], p2p_work, links=(p2p_port(d, (k - 1) % p),), mb=j, chunk=c)
                            prog.dep(lasts[r][-1], so)
                            b_send[r][k][j] = so
                        all_parts.append(lasts[r])
                        all_firsts.append(firsts[r])
                else:
                    b_parts = None if rtp is None else rtp.backward(s, k, j, c, nk, act[k], ws)
                    for r in range(R):
                        d = r * p + s
                        fs = factors[d]
                        parts = [] if rtp is None else b_parts[r]
                        for i in range(n_parts if rtp is None else 0):
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
                    all_firsts = all_parts
                if ag:
                    two_buffers(ag, all_parts)
                # gradient buckets: behind every backward for ZeRO-2/3, behind the last one otherwise
                if grad_on and not zb and (zero in (2, 3) or is_last):
                    rs = grad_collectives(s, k, j, c, all_parts, nk)
                    if zero in (2, 3):  # two bucket buffers: layer i waits until bucket i−2 has been sent
                        for parts in all_firsts:
                            for i in range(2, len(parts)):
                                prog.dep(rs[i - 2], parts[i])
            else:  # "W": ZB-H1 weight gradient; activations are freed here
                w_work = wgrad_work(k)
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
    if moe is not None:
        moe.anchor_hidden()
    return _Built(prog=prog, comp=comp, names=names)
