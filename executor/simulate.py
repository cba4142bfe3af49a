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

Mixture-of-experts layers
-------------------------
A virtual stage with MoE layers plays every forward and backward as compute pieces and expert-parallel
all-to-all transfers (dispatch, combine; their gradients backward) on the EP port — NVLink when the EP group
(ep·etp consecutive ranks) sits in one scale-up domain, else the NIC: the exposed part blocks the next compute
piece, the hidden part (what the framework overlaps) runs beside the compute, so the port carries the whole
all-to-all volume and shares it with p2p and data-parallel traffic (``a2a``).  The all-to-all couples the ranks
of an EP group: full mode plays it as one joint transfer over the members' ports; replica mode is exact by the
same max-plus argument as the DP collectives.

Module layout: ``program`` builds the ops (``a2a`` the MoE passes), ``engine`` plays them out, ``analysis`` turns
the timeline into a ``Schedule`` (``results``); costs come from the workload family's executor module (through
``families``), where the derived costs (not exposed by the model) are listed.
"""
from __future__ import annotations

import math

from parplan.errors import SpecError
from parplan.executor.analysis import analyze, build_events  # noqa: F401  (re-exported)
from parplan.executor.budget import DEFAULT_MAX_EVENTS, check_max_events, estimate_events, over_event_budget
from parplan.executor.costs import PipelineCosts
from parplan.executor.engine import run
from parplan.executor.program import _Built, _node, build_program  # noqa: F401  (re-exported)
from parplan.executor.results import DeviceStats, Event, LinkStats, Schedule  # noqa: F401  (re-exported)
from parplan.executor.schedules import check_schedule, default_schedule

MAX_SLOWDOWN = 1e6  # a straggler factor beyond this overflows the schedule's times (1e308 gave inf, then a crash)

FULL_MODE_MAX_DEVICES = 64
MODES = ("auto", "replica", "full")
__all__ = ["DeviceStats", "Event", "LinkStats", "Schedule", "_Built", "_device_factors", "_node", "analyze",
           "build_events", "build_program", "parse_slowdowns", "plan_events", "simulate_costs", "simulate_plan"]


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
        if not math.isfinite(factor) or not 0 < factor <= MAX_SLOWDOWN:
            raise SpecError(f"bad factor {fac.strip()!r}: must be a positive number up to {MAX_SLOWDOWN:g}",
                            key="--slowdown", hint="a device that much slower has failed: leave it out of the cluster")
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


def simulate_costs(costs: PipelineCosts, schedule: str | None = None, *, mode: str = "replica",
                   slowdown: dict | None = None, p2p: str = "blocking", n_devices: int | None = None,
                   max_events: int | None = None, progress=None) -> Schedule:
    """Simulate hand-made or model-derived ``costs``.  ``slowdown``: {(replica or None, stage): factor}.

    Work budget (``executor.budget``): the events (ops + transfers) are estimated before the program is built;
    above ``max_events`` (default ``DEFAULT_MAX_EVENTS``) ``mode="auto"`` falls back from the full cluster to one
    replica (with a note), and otherwise an ``EventBudgetError`` is raised.  ``progress``: ``f(done, total,
    None)`` while the program is built and played."""
    limit = DEFAULT_MAX_EVENTS if max_events is None else check_max_events(max_events)
    if getattr(costs, "own_program", False):  # a schedule with its own ops (HelixPipe: ``executor/helix.py``)
        return costs.simulate(schedule, mode=mode, slowdown=slowdown, limit=limit, progress=progress)
    schedule = schedule or default_schedule(costs.vpp)
    check_schedule(schedule, costs.pp, costs.vpp, costs.micro_batches, costs.zero)
    if mode not in MODES:
        raise SpecError(f"unknown mode {mode!r}", key="--mode", allowed=list(MODES))
    if p2p not in ("blocking", "async"):
        raise SpecError(f"unknown p2p mode {p2p!r}", key="p2p", allowed=["blocking", "async"])
    slow = dict(slowdown or {})
    n_dev = n_devices if n_devices is not None else costs.dp_replicas * costs.pp * costs.ranks_per_stage
    notes: list = list(costs.notes)
    if mode == "auto":
        spread = {r for (r, _s) in slow if r is not None}
        mode = "full" if (len(spread) > 1 and n_dev <= FULL_MODE_MAX_DEVICES) else "replica"
        if mode == "full" and estimate_events(costs, schedule, costs.dp_replicas).events > limit:
            mode = "replica"
            notes.append(f"one replica simulated, not all {costs.dp_replicas}: the full cluster would pass the event "
                         f"budget of {limit:,} (--max-events)")
    if mode == "full" and n_dev > FULL_MODE_MAX_DEVICES:
        raise SpecError(f"full-cluster simulation is limited to {FULL_MODE_MAX_DEVICES} devices ({n_dev} here)",
                        key="--mode", hint="use --mode replica (exact for homogeneous plans)")
    replicas = costs.dp_replicas if mode == "full" else 1
    est = estimate_events(costs, schedule, replicas)
    if est.events > limit:
        raise over_event_budget(est, limit, f"the {schedule} step ({costs.micro_batches:,} micro-batches, pp="
                                            f"{costs.pp}, vpp={costs.vpp}, {replicas} replica"
                                            f"{'s' if replicas > 1 else ''})",
                                hint="use --mode replica" if mode == "full" else None)
    factors = _device_factors(slow, replicas, costs.pp, notes)
    total = 2 * est.ops
    built = build_program(costs, schedule, replicas, factors, p2p=p2p,
                          progress=None if progress is None else (lambda done: progress(min(done, total), total, None)))
    res = run(built.prog, progress=None if progress is None else
              (lambda done: progress(min(est.ops + done, total), total, None)))
    sched = analyze(built, res, costs, schedule, mode, replicas, factors, notes)
    sched.events_estimate = est
    return sched


def simulate_plan(workload, cluster, plan, *, schedule: str | None = None, slowdown=None, mode: str = "auto",
                  p2p: str = "blocking", eff=None, max_events: int | None = None, progress=None) -> Schedule:
    """Validate ``plan``, take its per-op costs from the analytical model, simulate one step (within
    ``max_events``, see ``simulate_costs``)."""
    from parplan.executor.families import model_costs
    from parplan.models.estimate import validate_plan

    validate_plan(workload, cluster, plan)
    costs, res = model_costs(workload, cluster, plan, eff)
    slow = parse_slowdowns(slowdown, cluster.n_devices, plan.pp, plan.tp * plan.cp) \
        if not isinstance(slowdown, dict) else slowdown
    sched = simulate_costs(costs, schedule, mode=mode, slowdown=slow, p2p=p2p, n_devices=cluster.n_devices,
                           max_events=max_events, progress=progress)
    sched.plan = plan
    sched.workload = workload.name
    sched.cluster = cluster.name
    sched.analytical = res
    return sched


def plan_events(workload, cluster, plan, *, schedule: str | None = None, replicas: int = 1, eff=None):
    """``EventEstimate`` of simulating ``plan`` (validated) with ``replicas`` replicas — without building it."""
    from parplan.executor.families import model_costs
    from parplan.models.estimate import validate_plan

    validate_plan(workload, cluster, plan)
    costs, _ = model_costs(workload, cluster, plan, eff)
    if getattr(costs, "own_program", False):  # a schedule with its own ops (HelixPipe): its own count
        return costs.events()
    schedule = schedule or default_schedule(costs.vpp)
    check_schedule(schedule, costs.pp, costs.vpp, costs.micro_batches, costs.zero)
    return estimate_events(costs, schedule, replicas)
