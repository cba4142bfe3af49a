"""The reference executor's HelixPipe step (S19, arXiv 2507.00394; the plan knob ``helix``, the closed form in
``models/helix_terms.py``): the helix placement, every micro-batch's pass through every layer, FILO order.

Ops of micro-batch j (layer l on stage l mod p, one device per stage, its tp ranks in lockstep):

* forward: the embedding on stage 0, then for every layer l its forward on stage l mod p (it needs x_l, sent by the
  stage of layer l − 1), then the output layer and loss with its backward on stage p − 1;
* backward, from the last layer down: every layer's backward (its recompute included) on its stage, needing the
  gradient of its output from the stage of layer l + 1, then the embedding's backward on stage 0;
* every transfer between two devices is a send on the sender's send stream (NCCL's one communication stream:
  first come, first sent), asynchronous (the sender computes on), over its port — NVLink inside a node, the NIC
  across nodes — shared equally with whatever else is on it (the engine's processor sharing);
* data parallelism: each layer's gradient bucket after its last backward (micro-batch 0's, in FILO order) on the
  DP port; ZeRO-1's parameter all-gather before the layer's first use; the optimizer once the device's buckets
  are reduced.

Order on each device: HelixPipe's first-in-last-out — every forward before any backward, the backwards in
reverse micro-batch order — dispatched work-conservingly: a free device starts its ready op of the smallest
(phase, slot, micro-batch), the slot of (j, l) being j + l forward and (m − 1 − j) + (L − 1 − l) backward (GPipe's
staggered order over the helix).  The order is found once by list scheduling with the ops' durations and
contention-free transfers, then played by the engine with shared ports (the order kept, the times the engine's).
Memory: a layer's forward allocates what it keeps until its backward ends; a backward holds the recomputed layer
while it runs; the loss holds the logits while it runs and the final hidden's gradient until the last layer's
backward of that micro-batch.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError


@dataclass
class HelixCosts:
    """Per-op costs of one HelixPipe replica (seconds and bytes per micro-batch, one device of a stage)."""

    pp: int
    micro_batches: int
    layers: int
    fwd: float  # one layer, one micro-batch, forward
    bwd: float  # … backward, its recompute included
    rc: float  # the recompute inside bwd (accounting)
    tp_f: float  # the tensor-parallel communication inside fwd / bwd (accounting)
    tp_b: float
    emb_f: float
    emb_b: float
    out_fb: float  # the output layer and loss, forward and backward
    x_bytes: float  # a layer input (one TP rank's share)
    link_bw: float
    link_lat: float
    kept: float  # activation bytes one layer keeps per micro-batch until its backward
    working: float  # the layer being recomputed (recompute=full), while its backward runs
    kept_last: float  # the gradient of the final hidden, from the loss until the last layer's backward
    logits: float  # the last stage's logits, while the loss runs
    zero: int = 0
    dp_ranks: int = 1
    dp_grad_s: float = 0.0  # one stage's gradient collective, alone (split over its layers)
    dp_param_s: float = 0.0  # one stage's ZeRO-1 parameter all-gather, alone
    optimizer_s: float = 0.0
    ranks_per_stage: int = 1
    dp_replicas: int = 1
    devices_per_node: int = 0
    notes: tuple = field(default=())
    vpp: int = 1  # what the shared timeline analysis (``analysis.analyze``) reads of any program's costs
    own_program: bool = True  # simulate_costs / plan_events hand such costs to their own simulate / events
    expert_imbalance: float = 1.0

    def simulate(self, schedule=None, *, mode="replica", slowdown=None, limit=None, progress=None):
        return simulate_helix(self, schedule, mode=mode, slowdown=slowdown, limit=limit)

    def events(self):
        """The ``EventEstimate`` of the step (an upper bound of ``build_tasks``' ops: every send counted remote)."""
        from parplan.executor.budget import EventEstimate

        m, L, p = self.micro_batches, self.layers, self.pp
        dp = 2 * L if (self.dp_grad_s > 0 or self.dp_param_s > 0) else 0
        return EventEstimate(ops=4 * m * (L + 1) + dp + p, transfers=2 * m * (L + 1) + dp)


def helix_costs(workload, cluster, plan, eff=None):
    """``HelixCosts`` of ``plan`` (validated) from the model's per-op costs, and the model's scalars."""
    from parplan.models.efficiency import efficiency_for
    from parplan.models.training import PlanArrays, evaluate_workload

    eff = eff or efficiency_for(cluster.group.device)
    res = evaluate_workload(workload, cluster, PlanArrays.from_plans([plan]), eff)
    r = {k: float(np.asarray(a).reshape(-1)[0]) for k, a in res.items()}
    g = lambda k: r[f"op_helix_{k}"]  # noqa: E731
    zero = plan.zero
    dp_grad = r["op_dp_allreduce_first_s"] if zero == 0 else r["op_dp_reduce_scatter_first_s"]
    costs = HelixCosts(
        pp=plan.pp, micro_batches=int(round(r["micro_batches"])), layers=int(workload.model.layers),
        fwd=g("fwd_s"), bwd=g("bwd_s"), rc=g("rc_s"), tp_f=g("tp_fwd_s"), tp_b=g("tp_bwd_s"),
        emb_f=r["op_emb_fwd_s"], emb_b=r["op_emb_bwd_s"], out_fb=r["op_out_fwd_s"] + r["op_out_bwd_s"],
        x_bytes=g("x_bytes"), link_bw=r["link_pp_bytes_per_s"], link_lat=r["link_pp_latency_s"],
        kept=g("kept_bytes"), working=g("working_bytes"), kept_last=g("kept_last_bytes"),
        logits=r["op_activation_bytes_last_stage_extra"],
        zero=zero, dp_ranks=plan.dp, dp_grad_s=dp_grad if plan.dp > 1 else 0.0,
        dp_param_s=r["op_dp_allgather_first_s"] if (plan.dp > 1 and zero == 1) else 0.0,
        optimizer_s=r["op_optimizer_s"], ranks_per_stage=plan.tp, dp_replicas=plan.dp,
        devices_per_node=int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node)),
        notes=("helix: HelixPipe's round-robin layer placement, FILO order, work-conserving dispatch",))
    return costs, r


@dataclass
class _Task:
    kind: int  # an op kind of the engine
    dev: int  # the device whose stream runs it
    res: int  # resource: 0 compute, 1 send stream, 3 data-parallel stream
    dur: float  # compute seconds, or link work (bytes / bandwidth + latency)
    preds: list
    key: tuple = ()
    link: int = -1  # the sending device's port for transfers (0 NVLink, 1 NIC), −1 compute
    mb: int = -1
    part: int = -1
    alloc: float = 0.0
    free: float = 0.0
    tp: float = 0.0
    rc: float = 0.0


def build_tasks(c: HelixCosts, factors: list) -> list:
    """Every op of one step as a task with its predecessors; predecessors come first."""
    from parplan.executor.engine import BWD, DP_GRAD, DP_PARAM, FWD, OPTIMIZER, P2P_BWD, P2P_FWD

    p, m, L = c.pp, c.micro_batches, c.layers
    n = L // p
    rps, dpn = max(1, c.ranks_per_stage), c.devices_per_node
    node = lambda d: (d * rps) // dpn if dpn > 0 else 0  # noqa: E731
    tasks: list = []

    def add(t: _Task) -> int:
        tasks.append(t)
        return len(tasks) - 1

    def send(src, dst, pred, kind, mb, part):
        """A layer input (forward) or its gradient (backward) from src to dst after ``pred``."""
        if src == dst:
            return pred
        port = 1 if (node(src) != node(dst) or rps > dpn > 0) else 0
        return add(_Task(kind, src, 1, c.x_bytes / c.link_bw + c.link_lat, [pred], link=port, mb=mb, part=part))

    def fwd_key(j, l_, sub=0):  # FILO, staggered: the slot j + l of GPipe's order over the helix
        return (0, j + l_, j, sub)

    def bwd_key(j, l_, sub=0):  # the backwards in reverse micro-batch order, from the last layer down
        r = m - 1 - j
        return (1, r + (L - 1 - l_), r, sub)

    gather = [None] * L
    if c.dp_param_s > 0:  # ZeRO-1: the stage's parameters gathered at the start of the step, layer by layer
        for l_ in range(L):
            gather[l_] = add(_Task(DP_PARAM, stage_of(l_, p), 3, c.dp_param_s / n, [], link=2, part=l_))
    fw = {}
    out_ = {}
    for j in range(m):
        prev = add(_Task(FWD, 0, 0, c.emb_f * factors[0], [], key=fwd_key(j, 0, -1), mb=j))
        prev_dev = 0
        for l_ in range(L):
            d = stage_of(l_, p)
            preds = [send(prev_dev, d, prev, P2P_FWD, j, l_)] + ([gather[l_]] if gather[l_] is not None else [])
            prev = fw[j, l_] = add(_Task(FWD, d, 0, c.fwd * factors[d], preds, key=fwd_key(j, l_), mb=j, part=l_,
                                         alloc=c.kept, tp=c.tp_f * factors[d]))
            prev_dev = d
        out_[j] = add(_Task(FWD, p - 1, 0, c.out_fb * factors[p - 1], [prev], key=fwd_key(j, L - 1, 1), mb=j,
                            part=L, alloc=c.kept_last + c.logits, free=c.logits))
    last_b = {}
    for j in reversed(range(m)):
        prev, prev_dev = out_[j], p - 1
        for l_ in reversed(range(L)):
            d = stage_of(l_, p)
            free = c.kept + c.working + (c.kept_last if l_ == L - 1 else 0.0)
            prev = last_b[l_] = add(_Task(BWD, d, 0, c.bwd * factors[d],
                                          [send(prev_dev, d, prev, P2P_BWD, j, l_), fw[j, l_]], key=bwd_key(j, l_),
                                          mb=j, part=l_, alloc=c.working, free=free, tp=c.tp_b * factors[d],
                                          rc=c.rc * factors[d]))
            prev_dev = d
        add(_Task(BWD, 0, 0, c.emb_b * factors[0], [send(prev_dev, 0, prev, P2P_BWD, j, -1)],
                  key=bwd_key(j, 0, 1), mb=j))
    # data parallelism: each layer's bucket behind its last backward (micro-batch 0's); then the optimizer
    done = {d: [] for d in range(p)}
    for l_ in range(L):
        d = stage_of(l_, p)
        if c.dp_grad_s > 0:
            done[d].append(add(_Task(DP_GRAD, d, 3, c.dp_grad_s / n, [last_b[l_]], link=2, part=l_)))
        else:
            done[d].append(last_b[l_])
    for d in range(p):
        add(_Task(OPTIMIZER, d, 0, c.optimizer_s * factors[d], done[d], key=(2,)))
    return tasks


def stage_of(layer: int, p: int) -> int:
    """The helix: layer l on stage l mod p."""
    return layer % p


def list_schedule(tasks: list) -> np.ndarray:
    """Start times of a work-conserving dispatch (contention-free transfers): a free compute stream takes its ready
    task of the smallest key (FILO), a free transfer stream its earliest-ready task."""
    n = len(tasks)
    succ = [[] for _ in range(n)]
    indeg = np.zeros(n, dtype=np.int64)
    for i, t in enumerate(tasks):
        for q in t.preds:
            succ[q].append(i)
        indeg[i] = len(t.preds)
    ready: dict = {}
    busy: dict = {}
    start = np.zeros(n)
    events: list = []
    now = 0.0

    def push(i, t_ready):
        t = tasks[i]
        r = (t.dev, t.res)
        heapq.heappush(ready.setdefault(r, []), (t.key if t.res == 0 else (t_ready,), i))

    def dispatch(r):
        if busy.get(r) or not ready.get(r):
            return
        _, i = heapq.heappop(ready[r])
        busy[r] = True
        start[i] = now
        heapq.heappush(events, (now + tasks[i].dur, i))

    for i in range(n):
        if indeg[i] == 0:
            push(i, 0.0)
    for r in list(ready):
        dispatch(r)
    while events:
        now, i = heapq.heappop(events)
        t = tasks[i]
        busy[(t.dev, t.res)] = False
        touched = {(t.dev, t.res)}
        for s in succ[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                push(s, now)
                touched.add((tasks[s].dev, tasks[s].res))
        for r in sorted(touched):
            dispatch(r)
    return start


def simulate_helix(c: HelixCosts, schedule=None, *, mode="replica", slowdown=None, limit=None):
    """Play one HelixPipe step (one replica: exact by the dense executor's symmetry argument) → ``Schedule``."""
    from parplan.executor.analysis import analyze
    from parplan.executor.budget import DEFAULT_MAX_EVENTS, over_event_budget
    from parplan.executor.engine import Program, run
    from parplan.executor.program import _Built

    if schedule not in (None, "helix"):
        raise SpecError(f"a helix=true plan plays HelixPipe's own schedule, not {schedule!r}", key="--schedule",
                        allowed=["helix"])
    if mode == "full":
        raise SpecError("a helix=true plan is simulated as one replica", key="--mode", allowed=["replica", "auto"])
    p, m, L = c.pp, c.micro_batches, c.layers
    est = c.events()
    limit = DEFAULT_MAX_EVENTS if limit is None else limit
    if est.events > limit:
        raise over_event_budget(est, limit, f"the helix step ({m:,} micro-batches, pp={p}, {L} layers)")
    slow = dict(slowdown or {})
    factors = [float(slow.get((None, s), slow.get((0, s), 1.0))) for s in range(p)]
    tasks = build_tasks(c, factors)
    start = list_schedule(tasks)
    order = np.lexsort((np.arange(len(tasks)), start))
    prog = Program()
    names = [f"stage {s}" for s in range(p)]
    comp = [prog.add_stream(nm, d) for d, nm in enumerate(names)]
    snd = [prog.add_stream(f"{nm} p2p", d) for d, nm in enumerate(names)]
    dps = [prog.add_stream(f"{nm} dp", d) for d, nm in enumerate(names)]
    nvl = [prog.add_link(f"nvlink {nm}", d) for d, nm in enumerate(names)]
    nic = [prog.add_link(f"nic {nm}", d) for d, nm in enumerate(names)]
    dp_port = nic if (c.devices_per_node > 0 and c.ranks_per_stage * p * c.dp_replicas > c.devices_per_node) else nvl
    streams = (comp, snd, None, dps)
    op_of = np.full(len(tasks), -1, dtype=np.int64)
    for i in order:
        t = tasks[i]
        links = None if t.link < 0 else ((nvl, nic, dp_port)[t.link][t.dev],)
        op_of[i] = prog.add_op(t.kind, streams[t.res][t.dev], t.dur, links=links, mb=t.mb, part=t.part,
                               mem_alloc=t.alloc, mem_free=t.free, tp=t.tp, rc=t.rc)
    for i, t in enumerate(tasks):
        for q in t.preds:
            prog.dep(int(op_of[q]), int(op_of[i]))
    res = run(prog)
    notes = list(c.notes)
    if c.dp_replicas > 1:
        notes.append(f"one of {c.dp_replicas} identical replicas simulated (exact by symmetry)")
    sched = analyze(_Built(prog=prog, comp=comp, names=names), res, c, "helix", "replica", 1, factors, notes)
    sched.events_estimate = est
    return sched
