"""Pricing heterogeneous training plans (``models/hetero_plan.py``): pipelines whose stages sit on different device
groups, with non-uniform layer counts per stage, per-replica data shares, and chunked gradient aggregation between
replicas of different shapes.

The per-layer costs (forward, backward, recompute, activation bytes, p2p bytes) of a stage on a device group are
taken from the homogeneous model (``evaluate`` run on that group's hardware context), so both paths share one set of
formulas; this module only composes them (ETH, "Data-Balanced Heterogeneous Pipeline Parallelism", seed S02 — the
composition below is our reading of the mechanism the seed describes):

* stage slot τ = n·(f + b + r)(group) + embedding (first) + output layer (last) + 2·p2p (its slowest boundary);
* pipeline k with m_k micro-batches: T_k = m_k·max τ + (Σ τ − max τ) (1F1B, the homogeneous formula with v = 1);
* chunked gradient aggregation: parameters are cut into chunks at the union of every pipeline's stage boundaries;
  each chunk is all-reduced (ring) among the K stages that own it, over the slowest link they span; a stage's chunks
  run one after another, behind the backward that is still running on the stages before it;
* step = max_k T_k + exposed chunked sync + optimizer step.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from parplan.errors import SpecError
from parplan.hardware.types import Cluster, Link, NodeGroup
from parplan.models.efficiency import efficiency_for
from parplan.models.hardware_context import DP_BUCKET_ELEMENTS, framework_of
from parplan.models.primitives.collectives import curve_for
from parplan.models.plan import Plan
from parplan.models.training import (FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES, OPTIMIZER_STATE_BYTES,
                                     PlanArrays, evaluate, hardware_context,
                                     ring_allgather_s, ring_allreduce_s)
from parplan.models.optimizer_terms import optimizer_step_s
from parplan.models.hetero_plan import HeteroPlan, PipelineSpec, StageSpec, validate_hetero  # noqa: F401
from parplan.workloads.transformer import Workload


@dataclass(frozen=True)
class GroupCosts:
    """Per-layer costs of one micro-batch on one device of a group (from the homogeneous model)."""

    layer_s: float  # forward + backward + recompute of one layer
    layer_fwd_s: float
    layer_bwd_s: float  # incl. recompute
    emb_s: float
    out_s: float
    emb_fwd_s: float
    out_fwd_s: float
    act_bytes_per_layer: float
    p2p_bytes: float
    layer_params: float  # per device (÷ tp)
    emb_params: float
    out_params: float
    capacity_bytes: float
    memory_bandwidth_bytes_per_s: float
    logits_bytes: float
    transient_bytes: float


@dataclass
class HeteroResult:
    plan: HeteroPlan
    step_time_s: float
    tokens_per_s: float
    pipeline_times_s: list[float]
    stage_slots_s: list[list[float]]
    sync_exposed_s: float
    optimizer_s: float
    memory_peak_bytes: float  # worst stage, per device
    memory_by_stage: list[list[float]]
    capacity_by_stage: list[list[float]]
    fits: bool
    reasons: list[str]
    model_flops_per_step: float
    mfu: float  # model FLOPs / (step · Σ peak of the devices used)
    extras: dict = field(default_factory=dict)

    def to_dict(self, cluster: Cluster) -> dict:
        return {"plan": self.plan.to_dict(cluster), "step_time_s": self.step_time_s, "tokens_per_s": self.tokens_per_s,
                "pipeline_times_s": self.pipeline_times_s, "sync_exposed_s": self.sync_exposed_s,
                "optimizer_s": self.optimizer_s, "memory_peak_bytes": self.memory_peak_bytes, "fits": self.fits,
                "reasons": self.reasons, "mfu": self.mfu, "model_flops_per_step": self.model_flops_per_step,
                **self.extras}


def _atoms(workload: Workload, group: NodeGroup, tp: int, mbs: int, recompute: str, sp: bool) -> GroupCosts:
    job = workload.training
    job1 = replace(job, global_batch=mbs)
    hw = hardware_context(group, job.precision, efficiency_for(group.device), framework=framework_of(workload))
    P = PlanArrays.from_plans([Plan(dp=1, tp=tp, pp=2, mbs=mbs, recompute=recompute, sp=sp and tp > 1)])
    r = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in evaluate(workload.model, job1, hw, P).items()}
    m = workload.model
    T = mbs * job.seq_len
    return GroupCosts(
        layer_s=r["op_layer_fwd_s"] + r["op_layer_bwd_s"] + r["op_layer_recompute_s"],
        layer_fwd_s=r["op_layer_fwd_s"], layer_bwd_s=r["op_layer_bwd_s"] + r["op_layer_recompute_s"],
        emb_s=r["op_emb_fwd_s"] + r["op_emb_bwd_s"], out_s=r["op_out_fwd_s"] + r["op_out_bwd_s"],
        emb_fwd_s=r["op_emb_fwd_s"], out_fwd_s=r["op_out_fwd_s"],
        act_bytes_per_layer=r["op_activation_bytes_per_layer"], p2p_bytes=r["op_p2p_bytes"],
        layer_params=m.layer_params / tp, emb_params=m.embedding_params / tp,
        out_params=(m.vocab * m.hidden + m.norm_params_per_norm) / tp,
        capacity_bytes=group.device.memory_bytes, memory_bandwidth_bytes_per_s=hw.memory_bandwidth_bytes_per_s
        * hw.eff.memory, logits_bytes=4.0 * T * m.hidden / tp + 4.0 * T * m.vocab / tp,
        transient_bytes=max(2.0 * 2 * T * m.ffn_hidden / tp, 2.0 * T * m.vocab / tp))


_ATOMS: dict = {}


def group_costs(workload: Workload, cluster: Cluster, g: int, tp: int, mbs: int, recompute: str,
                sp: bool) -> GroupCosts:
    """Per-layer costs of group ``g`` (memoized on everything they depend on)."""
    grp = cluster.groups[g]
    key = (workload.model, workload.training, grp.device.id, grp.devices_per_node, grp.nics_per_node,
           grp.intra_node.bandwidth_bytes_per_s, grp.inter_node.bandwidth_bytes_per_s, tp, mbs, recompute, sp)
    got = _ATOMS.get(key)
    if got is None:
        if len(_ATOMS) > 50_000:
            _ATOMS.clear()
        got = _ATOMS[key] = _atoms(workload, grp, tp, mbs, recompute, sp)
    return got


def link_between(cluster: Cluster, g1: int, g2: int) -> tuple[float, float]:
    """(bandwidth after efficiency, latency) of a stage boundary or a gradient ring between two groups."""
    eff = efficiency_for(cluster.groups[g1].device)
    if g1 == g2:
        grp = cluster.groups[g1]
        return grp.inter_node_bandwidth_per_device_bytes_per_s * eff.link(grp.inter_node.kind), grp.inter_node.latency_s
    link: Link | None = cluster.inter_group
    if link is None:
        raise SpecError("a plan that spans device groups needs an 'inter_group' link in the cluster file",
                        key="inter_group", file=cluster.source_file)
    slow = min(cluster.groups[g1].inter_node_bandwidth_per_device_bytes_per_s * eff.link(cluster.groups[g1].inter_node.kind),
               cluster.groups[g2].inter_node_bandwidth_per_device_bytes_per_s * eff.link(cluster.groups[g2].inter_node.kind))
    return min(link.bandwidth_bytes_per_s * eff.link(link.kind), slow), max(link.latency_s, cluster.groups[g1].inter_node.latency_s)


def stage_inflight(n_stages: int, index: int, micro_batches: int) -> int:
    """Micro-batches whose activations a 1F1B stage holds: min(S − i, m)."""
    return max(1, min(n_stages - index, micro_batches))


def stage_memory_bytes(c: GroupCosts, stage: StageSpec, index: int, n_stages: int, micro_batches: int,
                       owners: int, zero: int, mixed: bool, optimizer: str, recompute: str) -> float:
    """Per-device memory of one stage: model states (Megatron bytes/parameter, ZeRO-1 over the chunk owners),
    activations of the in-flight micro-batches, logits on the last stage, transient, reserve and fragmentation."""
    params = stage.layers * c.layer_params + (c.emb_params if index == 0 else 0.0) \
        + (c.out_params if index == n_stages - 1 else 0.0)
    opt = OPTIMIZER_STATE_BYTES[(optimizer, mixed)] / (owners if zero >= 1 else 1)
    states = params * ((2.0 if mixed else 4.0) + 4.0 + opt)
    act = stage.layers * c.act_bytes_per_layer * stage_inflight(n_stages, index, micro_batches)
    act += c.logits_bytes if index == n_stages - 1 else 0.0
    dyn = states + act + c.transient_bytes
    return dyn * (1.0 + FRAGMENTATION_FRACTION) + FRAMEWORK_RESERVED_BYTES


def _chunks(plan: HeteroPlan, L: int) -> list[tuple[int, int]]:
    cuts = sorted({0, L} | {s.first_layer for p in plan.pipelines for s in p.stages})
    return list(zip(cuts[:-1], cuts[1:]))


def _placement(cluster: Cluster, plan: HeteroPlan) -> dict:
    """Devices of each stage: ranks are handed out group by group in plan order (pipeline after pipeline, stage
    after stage — TP innermost, then PP, then DP as in the homogeneous model); returns (k, i) → (group, node)."""
    off = [0] * len(cluster.groups)
    where = {}
    for k, p in enumerate(plan.pipelines):
        for i, s in enumerate(p.stages):
            g = s.group
            where[(k, i)] = (g, off[g] // cluster.groups[g].devices_per_node)
            off[g] += plan.tp
    return where


def _intra(cluster: Cluster, g: int) -> tuple[float, float]:
    grp = cluster.groups[g]
    return grp.intra_node.bandwidth_bytes_per_s * efficiency_for(grp.device).link(grp.intra_node.kind), \
        grp.intra_node.latency_s


def _pair_link(cluster: Cluster, a: tuple, b: tuple) -> tuple[float, float]:
    """Link between two placed stages (group, node): NVLink inside a node, the group's NICs across its nodes,
    the inter-group link across groups."""
    if a == b:
        return _intra(cluster, a[0])
    return link_between(cluster, a[0], b[0])


def _ring_link(cluster: Cluster, places: list) -> tuple[float, float]:
    """Link a ring over the placed owners sees: one node → NVLink; one group over several nodes → the r owners of a
    node drive r NICs (min with NVLink, as in the homogeneous model); several groups → the inter-group link."""
    groups = {g for g, _ in places}
    nodes = {pl for pl in places}
    if len(nodes) == 1:
        return _intra(cluster, places[0][0])
    if len(groups) == 1:
        g = places[0][0]
        r = max(sum(1 for x in places if x == n) for n in nodes)
        bw, lat = link_between(cluster, g, g)
        return min(_intra(cluster, g)[0], r * bw), lat
    return min((link_between(cluster, a, b) for a in groups for b in groups if a != b), key=lambda x: x[0])


def evaluate_hetero(workload: Workload, cluster: Cluster, plan: HeteroPlan, validate: bool = True) -> HeteroResult:
    """Price one heterogeneous plan (step time, per-pipeline times, chunked sync, memory per stage)."""
    from parplan.models.families import hetero_model

    hetero_model(workload)  # only families with a heterogeneous model (this one prices dense layers)
    if validate:
        validate_hetero(workload, cluster, plan)
    job, mdl = workload.training, workload.model
    mixed = job.precision != "fp32"
    L = mdl.layers
    K = len(plan.pipelines)
    g_red = 4.0  # fp32 main gradients (Megatron convention, as in the homogeneous model for zero ≤ 1)
    w_b = 2.0 if mixed else 4.0
    where = _placement(cluster, plan)
    # identical replicas (same stages, same share) cost the same: price each distinct pipeline once, with the
    # slowest boundary links any of its replicas sees (pipelines are keyed by an integer id: hashing is costly)
    pid: dict = {}
    ids = []
    for p in plan.pipelines:
        ids.append(pid.setdefault(p, len(pid)))
    uniq = list(pid)
    replicas_of: list[list[int]] = [[] for _ in uniq]
    for k, d in enumerate(ids):
        replicas_of[d].append(k)
    slots_d, bwd_last, fwd_first, mems_d, caps_d, times_d = [], [], [], [], [], []
    reasons: list[str] = []
    for d, p in enumerate(uniq):
        S = len(p.stages)
        sl, bl, fl, mm, cp_ = [], [], [], [], []
        for i, s in enumerate(p.stages):
            c = group_costs(workload, cluster, s.group, plan.tp, plan.mbs, plan.recompute, plan.sp)
            f = s.layers * c.layer_fwd_s + (c.emb_fwd_s if i == 0 else 0.0) + (c.out_fwd_s if i == S - 1 else 0.0)
            t = s.layers * c.layer_s + (c.emb_s if i == 0 else 0.0) + (c.out_s if i == S - 1 else 0.0)
            p2p = 0.0
            for j in (i - 1, i + 1):
                if 0 <= j < S:
                    for pair in {(where[(k, i)], where[(k, j)]) for k in replicas_of[d]}:
                        bw, lat = _pair_link(cluster, *pair)
                        p2p = max(p2p, c.p2p_bytes / bw + lat)
            sl.append(t + 2.0 * p2p)
            bl.append(s.layers * c.layer_bwd_s)
            fl.append(f)
            mm.append(stage_memory_bytes(c, s, i, S, p.micro_batches, K, plan.zero, mixed, job.optimizer,
                                         plan.recompute))
            cp_.append(c.capacity_bytes)
            if mm[-1] > c.capacity_bytes:
                reasons.append(f"pipeline {replicas_of[d][0]} stage {i} ({cluster.groups[s.group].device.id}, "
                               f"{s.layers} layers): {mm[-1] / 2**30:.1f} GiB > {c.capacity_bytes / 2**30:.1f} GiB")
        tmax = max(sl)
        times_d.append(p.micro_batches * tmax + (sum(sl) - tmax))
        slots_d.append(sl)
        bwd_last.append(bl)
        fwd_first.append(fl)
        mems_d.append(mm)
        caps_d.append(cp_)
    times = [times_d[d] for d in ids]
    # chunked gradient aggregation: parameters cut at every pipeline's stage boundaries; each chunk reduced among
    # its owners (zero 0: all-reduce of fp32 grads; zero 1: reduce-scatter + all-gather of the 16-bit weights)
    grad_t = [[0.0] * len(p.stages) for p in uniq]
    param_t = [[0.0] * len(p.stages) for p in uniq]
    for lo, hi in _chunks(plan, L):
        owners = []  # (distinct pipeline, stage); places: one per replica
        places = []
        for d, p in enumerate(uniq):
            for i, s in enumerate(p.stages):
                if s.first_layer <= lo < s.last_layer:
                    owners.append((d, i))
                    places.extend(where[(k, i)] for k in replicas_of[d])
        if len(places) < 2:
            continue
        params = (hi - lo) * mdl.layer_params / plan.tp
        if lo == 0:
            params += mdl.embedding_params / plan.tp
        if hi == L:
            params += (mdl.vocab * mdl.hidden + mdl.norm_params_per_norm) / plan.tp
        bw, lat = _ring_link(cluster, places)
        # message-size dependence of the bus bandwidth (measured curves, models/primitives/collectives.py): the
        # gradients travel in buckets of at most DP_BUCKET_ELEMENTS, as in the homogeneous model
        one_node = len({pl for pl in places}) == 1
        kind = cluster.groups[places[0][0]].intra_node.kind if one_node else "infiniband"
        cv = curve_for(kind, "allreduce" if plan.zero == 0 else "gather")
        bucket = DP_BUCKET_ELEMENTS[framework_of(workload).id]
        bw = bw * float(cv.busbw(min(params, bucket) * g_red, 1.0)) / cv.fraction
        n = np.array(len(places))
        if plan.zero == 0:
            tg, tpar = float(ring_allreduce_s(params * g_red, n, bw, lat)), 0.0
        else:
            tg = float(ring_allgather_s(params * g_red, n, bw, lat))
            tpar = float(ring_allgather_s(params * w_b, n, bw, lat))
        for d, i in owners:
            grad_t[d][i] += tg
            param_t[d][i] += tpar
    exposed_g = exposed_p = 0.0
    tmax_all = max(times)
    for d, p in enumerate(uniq):
        for i in range(len(p.stages)):
            window = sum(bwd_last[d][: i + 1])  # backward still running on this and earlier stages
            finish_gap = tmax_all - times_d[d]  # a faster pipeline's owners start earlier
            exposed_g = max(exposed_g, grad_t[d][i] - window - finish_gap)
            exposed_p = max(exposed_p, param_t[d][i] - fwd_first[d][i])  # behind the next step's first forward
    exposed = max(0.0, exposed_g) + max(0.0, exposed_p)
    slots = [slots_d[d] for d in ids]
    mems = [mems_d[d] for d in ids]
    caps = [caps_d[d] for d in ids]
    distinct = [(p, replicas_of[d][0]) for d, p in enumerate(uniq)]
    opt = 0.0
    for p, _k in distinct:
        for i, s in enumerate(p.stages):
            c = group_costs(workload, cluster, s.group, plan.tp, plan.mbs, plan.recompute, plan.sp)
            params = s.layers * c.layer_params / (K if plan.zero else 1)
            opt = max(opt, optimizer_step_s(params, job.optimizer, c.memory_bandwidth_bytes_per_s))
    step = max(times) + exposed + opt
    tokens = job.global_batch * job.seq_len
    q, kd, h, f, V = mdl.q_dim, mdl.kv_dim, mdl.hidden, mdl.ffn_hidden, mdl.vocab
    per_token = L * (2.0 * (h * (q + 2 * kd) + q * h + mdl.ffn_matrices * h * f) + 4.0 * job.seq_len * q) + 2.0 * h * V
    model_flops = 3.0 * tokens * per_token
    gpeak = [hardware_context(g, job.precision).peak_flops_per_s if (job.precision == "fp32" or g.device.supports(
        job.precision)) else 0.0 for g in cluster.groups]
    peak = sum(plan.tp * gpeak[s.group] for p in plan.pipelines for s in p.stages)
    mem_peak = max(max(m) for m in mems)
    return HeteroResult(plan=plan, step_time_s=step, tokens_per_s=tokens / step, pipeline_times_s=times,
                        stage_slots_s=slots, sync_exposed_s=exposed, optimizer_s=opt, memory_peak_bytes=mem_peak,
                        memory_by_stage=mems, capacity_by_stage=caps, fits=not reasons, reasons=reasons,
                        model_flops_per_step=model_flops, mfu=model_flops / (step * peak))
