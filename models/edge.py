"""Cost model of the layer-chain family: a plan of a layer chain (stages of contiguous layers on devices — a
Neurosurgeon split is two stages, a PipeEdge pipeline many), of collaborative training (PiPar split point P and N
batches in flight; split learning; federated learning) or of a module DAG (CEC-PA placement) on an edge cluster →
an :class:`EdgeEstimate` with named SI parts (``edge_terms``) that sum to its headline time.

Plan strings (``--plan``)::

    stages=mb-0:1-6/mb-1:7-12/rcc-0:13-48     # chain: device id : first-last layer (1-based, PipeEdge's output form)
    split=pi-0:12                              # chain: layers 1..12 on pi-0, the rest on the first server
    mode=pipar,split=3,inflight=4              # training (mode pipar | split | fl; fl takes no split)
    place=prior:edge-0/cls_1:edge-1/cls_2:edge-2/cls_3:cloud/fusion:edge-0     # module DAG
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, did_you_mean, short
from parplan.models.plan_pairs import plan_pairs
from parplan.models import edge_terms as T


@dataclass(frozen=True)
class EdgeEstimate:
    workload: str
    cluster: str
    technique: str  # split | pipeline | pipar | split-learning | fl | placement
    plan: str
    total_s: float  # the headline time: stream makespan (inference), training time, R requests (DAG)
    parts: dict  # named SI parts summing to total_s
    metrics: dict  # latency_s, bottleneck_s, throughput_per_s, energy_j, … (SI)
    stages: list  # per stage / module: device, layers, compute_s, transfer_s, memory_bytes, fits
    fits: bool = True
    reasons: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "cluster": self.cluster, "technique": self.technique, "plan": self.plan,
                "total_s": self.total_s, "fits": self.fits, **self.metrics, "breakdown": dict(self.parts),
                "stages": list(self.stages), "reasons": list(self.reasons), "notes": list(self.notes)}


def _slot(cluster, name: str, key: str) -> int:
    if name not in cluster.ids:
        raise SpecError(f"unknown device {short(name)}", key=key, allowed=list(cluster.ids),
                        hint=did_you_mean(name, list(cluster.ids)))
    return cluster.ids.index(name)


class _Times:
    """Per-layer times per device type, cached (one roofline or profile lookup per device id), and the workload's
    per-layer arrays (``spec.arrays()``, built once): one instance serves every plan of a search."""

    def __init__(self, spec, cluster, batch: int, dtype: str):
        self.spec, self.cluster, self.batch, self.dtype = spec, cluster, batch, dtype
        self._c: dict = {}
        self.provenance: dict = {}
        self.arrays = spec.arrays()

    def __call__(self, slot: int) -> np.ndarray:
        return self.device(self.cluster.devices[slot])

    def device(self, dev) -> np.ndarray:
        if dev.id not in self._c:
            t, src = T.layer_times(self.spec, dev, self.batch, self.dtype, self.arrays)
            self._c[dev.id], self.provenance[dev.id] = t, src
        return self._c[dev.id]


def _resource(cluster, a: int, b: int, net) -> tuple:
    return ("channel", net.channel) if net.channel else ("link", cluster.ids[a], cluster.ids[b])


def source_slot(spec, cluster) -> "int | None":
    src = spec.inference.source if spec.inference is not None else None
    return None if src is None else _slot(cluster, src, "inference.source")


def chain_estimate(spec, cluster, stages: list, *, technique: str = "pipeline", times: "_Times | None" = None
                   ) -> EdgeEstimate:
    """Stages ``[(slot, lo, hi)]`` (layers [lo, hi), contiguous, covering the chain, each slot once)."""
    job = spec.inference
    mb, nb = job.microbatch, spec.dtype_bytes
    times = times or _Times(spec, cluster, mb, job.dtype)
    a = times.arrays
    src = source_slot(spec, cluster)
    loads: dict = {}
    rows, reasons = [], []
    in_s = 0.0
    airtime = {}  # slot -> seconds its radio sends per microbatch
    first = stages[0][0]
    if src is not None and first != src:
        net = cluster.link(src, first)
        nbytes = spec.input_elements * nb * mb
        in_s = float(T.transfer_s(nbytes, net.up_bytes_per_s, net.rtt_s))
        key = _resource(cluster, src, first, net)
        loads[key] = loads.get(key, 0.0) + nbytes / net.up_bytes_per_s
        airtime[src] = airtime.get(src, 0.0) + nbytes / net.up_bytes_per_s
    compute_total = transfer_total = 0.0
    for i, (slot, lo, hi) in enumerate(stages):
        dev = cluster.devices[slot]
        comp = float(times(slot)[lo:hi].sum())  # Σ t_comp(device, layer) over the stage (schedule.cpp compute_time)
        nxt = stages[i + 1][0] if i + 1 < len(stages) else (src if src is not None and src != slot else None)
        out_bytes = float(a["out_elements"][hi - 1]) * nb * mb  # dtype · parameters_out(last layer) · microbatch
        comm = 0.0
        if nxt is not None:
            net = cluster.link(slot, nxt)
            comm = float(T.transfer_s(out_bytes, net.up_bytes_per_s, net.rtt_s))
            key = _resource(cluster, slot, nxt, net)
            loads[key] = loads.get(key, 0.0) + out_bytes / net.up_bytes_per_s
            airtime[slot] = airtime.get(slot, 0.0) + out_bytes / net.up_bytes_per_s
        loads[("device", cluster.ids[slot])] = loads.get(("device", cluster.ids[slot]), 0.0) + comp
        in_bytes = (spec.input_elements if lo == 0 else float(a["out_elements"][lo - 1])) * nb * mb
        # memory: the stage's layers + receive/send queues + processing buffers (schedule.cpp is_layers_fit)
        mem = float(T.stage_memory_bytes(float(a["mem_bytes"][lo:hi].sum()), in_bytes, out_bytes, lo == 0))
        fits = dev.memory_bytes > mem
        if not fits:
            reasons.append(f"{cluster.ids[slot]}: layers {lo + 1}-{hi} need {mem / 2**20:,.0f} MiB of "
                           f"{dev.memory_bytes / 2**20:,.0f} MiB")
        rows.append({"device": cluster.ids[slot], "type": dev.id, "layers": f"{lo + 1}-{hi}", "compute_s": comp,
                     "transfer_s": comm, "out_bytes": out_bytes if nxt is not None else 0.0, "memory_bytes": mem,
                     "memory_capacity_bytes": dev.memory_bytes, "fits": fits})
        compute_total += comp
        transfer_total += comm
    latency = in_s + compute_total + transfer_total
    bott_key = max(loads, key=loads.get)
    bottleneck = loads[bott_key]
    M = job.requests
    makespan = float(T.pipeline_makespan(latency, bottleneck, M))
    energy = 0.0  # per microbatch on the edge devices used: active while computing, radio while sending, idle else
    for slot, lo, hi in stages:
        dev = cluster.devices[slot]
        if dev.kind != "edge":
            continue
        comp, air = float(times(slot)[lo:hi].sum()), airtime.get(slot, 0.0)
        tx = dev.network.tx_power_w if dev.network is not None else 0.0
        energy += dev.active_w * comp + tx * air + dev.idle_w * max(0.0, latency - comp - air)
    if src is not None and all(s != src for s, _, _ in stages) and cluster.devices[src].kind == "edge":
        d = cluster.devices[src]
        air = airtime.get(src, 0.0)
        energy += (d.network.tx_power_w if d.network else 0.0) * air + d.idle_w * max(0.0, latency - air)
    parts = {"input_s": in_s, "compute_s": compute_total, "transfer_s": transfer_total,
             "steady_state_s": makespan - latency}  # first microbatch's path, then (M − 1) bottlenecks
    metrics = {"latency_s": latency, "bottleneck_s": bottleneck, "bottleneck": ":".join(bott_key),
               "throughput_per_s": mb / bottleneck, "makespan_s": makespan, "energy_j": energy,
               "microbatch": mb, "requests": M}
    used = {cluster.devices[s].id for s, _, _ in stages}  # a shared ``times`` holds other plans' devices too
    notes = [f"{k}: per-layer times from the {v}" for k, v in sorted(times.provenance.items()) if k in used]
    plan = "stages=" + "/".join(f"{cluster.ids[s]}:{lo + 1}-{hi}" for s, lo, hi in stages)
    return EdgeEstimate(spec.name, cluster.name, technique, plan, makespan, parts, metrics, rows, not reasons,
                        reasons, notes)


def parse_stages(text: str, spec, cluster) -> list:
    n = len(spec.layers)
    stages, seen, nxt = [], set(), 0
    for item in text.split("/"):
        if ":" not in item or "-" not in item.split(":", 1)[1]:
            raise SpecError(f"bad stage {short(item)}: write device:first-last", key="--plan stages",
                            hint="e.g. stages=mb-0:1-6/rcc-0:7-48")
        dev, rng = item.split(":", 1)
        slot = _slot(cluster, dev.strip(), "--plan stages")
        try:
            lo, hi = (int(x) for x in rng.split("-", 1))
        except ValueError:
            raise SpecError(f"bad layer range {short(rng)}", key="--plan stages") from None
        if slot in seen:
            raise SpecError(f"device {dev!r} holds two stages", key="--plan stages")
        if lo != nxt + 1 or hi < lo or hi > n:
            raise SpecError(f"stage {short(item)}: layers must continue at {nxt + 1} and end by {n}",
                            key="--plan stages")
        seen.add(slot)
        stages.append((slot, lo - 1, hi))
        nxt = hi
    if nxt != n:
        raise SpecError(f"the stages end at layer {nxt} of {n}", key="--plan stages")
    return stages


def split_stages(spec, cluster, edge: int, k: int, server: "int | None" = None) -> list:
    """Neurosurgeon's split: layers [0, k) on ``edge``, [k, N) on the server."""
    n = len(spec.layers)
    srv = server if server is not None else (cluster.servers() or [None])[0]
    if srv is None:
        raise SpecError(f"{cluster.name} has no server for a split", key="--plan split")
    if k <= 0:
        return [(srv, 0, n)]
    if k >= n:
        return [(edge, 0, n)]
    if edge == srv:  # both halves on one device: a transfer from the server to itself
        raise SpecError(f"split={cluster.ids[edge]}:{k} splits on the server it offloads to", key="--plan split",
                        allowed=[d for i, d in enumerate(cluster.ids) if i != srv], hint=f"k = 0 or {n} on it")
    return [(edge, 0, k), (srv, k, n)]


def neurosurgeon_sweep(spec, cluster, edge: int, server: int, times: "_Times | None" = None) -> dict:
    """T(k), E(k) for every k (edge_terms.neurosurgeon) with the edge device as the source."""
    job = spec.inference
    times = times or _Times(spec, cluster, job.microbatch, job.dtype)
    a = times.arrays
    nb, mb = spec.dtype_bytes, job.microbatch
    d = np.concatenate([[spec.input_elements], a["out_elements"]])[:-1] * nb * mb  # D_0 = input, D_k = out(k)
    d = np.concatenate([d, [0.0]])
    result = a["out_elements"][-1] * nb * mb
    up, down = cluster.link(edge, server), cluster.link(server, edge)
    dev = cluster.devices[edge]
    tx = dev.network.tx_power_w if dev.network is not None else 0.0
    return T.neurosurgeon(times(edge), times(server), d, result, up.up_bytes_per_s, down.up_bytes_per_s, up.rtt_s,
                          dev.active_w, dev.idle_w, tx)


def pipar_estimate(spec, cluster, mode: str, split: int, inflight: int) -> EdgeEstimate:
    """Collaborative training of the chain by the cluster's edge devices with its first server (SEEDS.md §S28):
    ``fl`` (every device trains the whole model), ``split`` (split learning: one batch at a time per device) or
    ``pipar`` (``inflight`` batches per device overlapped with the server and the links)."""
    job = spec.training
    edges, servers = cluster.edges(), cluster.servers()
    if not edges or (mode != "fl" and not servers):
        raise SpecError(f"{cluster.name} needs edge devices{'' if mode == 'fl' else ' and a server'} for {mode}",
                        key="--hw")
    n, B, nb, K = len(spec.layers), job.batch, spec.dtype_bytes, len(edges)
    times = _Times(spec, cluster, B, job.dtype)
    a = spec.arrays()
    slow = max(edges, key=lambda s: float(times(s).sum()))  # the slowest device paces a synchronous round
    dev = cluster.devices[slow]
    act = np.cumsum(a["out_elements"]) * nb * B  # activations kept for backward, layers ≤ P
    reasons: list = []
    if mode == "fl":
        f_full = float(times(slow).sum())
        net = cluster.link(slow, servers[0]) if servers else dev.network
        model_bytes = float(a["params"].sum()) * nb
        share = K if net.shared_medium else 1
        sync = float(T.transfer_s(model_bytes, net.up_bytes_per_s / share, net.rtt_s)
                     + T.transfer_s(model_bytes, net.down_bytes_per_s / share, net.rtt_s))  # FedAvg up + down
        cycle = (1.0 + T.BACKWARD_FACTOR) * f_full  # fwd + bwd of the whole model on the device
        mem = model_bytes * T.OPTIMIZER_COPIES + float(act[-1])
        parts = {"steady_state_s": job.rounds * job.batches * cycle, "fill_drain_s": 0.0,
                 "model_sync_s": job.rounds * sync}
        metrics = {"cycle_s": cycle, "device_fwd_s": f_full, "server_idle_fraction": 1.0, "split": n, "inflight": 1}
        plan = "mode=fl"
    else:
        if not 1 <= split < n:
            raise SpecError(f"split = {split}: the device keeps layers 1..P with 1 ≤ P < {n}", key="--plan split")
        if mode == "split" and inflight != 1:
            raise SpecError("split learning runs one batch at a time: inflight = 1", key="--plan inflight")
        srv = servers[0]
        f_c, f_s = float(times(slow)[:split].sum()), float(times(srv)[split:].sum())
        net = cluster.link(slow, srv)
        act_bytes = float(a["out_elements"][split - 1]) * nb * B  # activations up, their gradients down
        u = float(T.transfer_s(act_bytes, net.up_bytes_per_s, net.rtt_s))
        d = float(T.transfer_s(act_bytes, net.down_bytes_per_s, net.rtt_s))
        t = T.pipar_terms(f_c, f_s, u, d, K, inflight, shared_medium=net.shared_medium)
        cycle = float(t["cycle_s"])
        dev_bytes = float(a["params"][:split].sum()) * nb
        share = K if net.shared_medium else 1
        sync = float(T.transfer_s(dev_bytes, net.up_bytes_per_s / share, net.rtt_s)
                     + T.transfer_s(dev_bytes, net.down_bytes_per_s / share, net.rtt_s))  # device-side FedAvg
        mem = dev_bytes * T.OPTIMIZER_COPIES + inflight * float(act[split - 1])
        fill = max(0.0, float(t["t_seq_s"]) - cycle)  # the last batch's remaining stages after the last cycle
        parts = {"steady_state_s": job.rounds * job.batches * cycle, "fill_drain_s": job.rounds * fill,
                 "model_sync_s": job.rounds * sync}
        metrics = {k: float(v) for k, v in t.items()} | {"split": split, "inflight": inflight}
        plan = f"mode={mode},split={split},inflight={inflight}"
    fits = dev.memory_bytes > mem
    if not fits:
        reasons.append(f"{cluster.ids[slow]} needs {mem / 2**20:,.0f} MiB of {dev.memory_bytes / 2**20:,.0f} MiB "
                       f"({'a smaller split or fewer batches in flight' if mode != 'fl' else 'the whole model'})")
    total = sum(parts.values())
    metrics |= {"device_memory_bytes": mem, "devices": K, "training_s": total,
                "samples_per_s": K * B * job.batches * job.rounds / total}
    stages = [{"device": cluster.ids[slow], "type": dev.id, "memory_bytes": mem, "fits": fits}]
    return EdgeEstimate(spec.name, cluster.name, {"fl": "fl", "split": "split-learning"}.get(mode, "pipar"), plan,
                        total, parts, metrics, stages, fits, reasons,
                        [f"{k}: per-layer times from the {v}" for k, v in sorted(times.provenance.items())])


def module_time(spec, m, dev, batch: int, dtype: str) -> float:
    """A module's measured time on ``dev`` (modules[].time_s) when given, else the roofline of its FLOPs/weights."""
    if dev.id in m.time_s:
        return float(m.time_s[dev.id]) * batch
    nb = spec.dtype_bytes
    return max(m.flops * batch / (dev.peak(dtype) * dev.efficiency),
               (m.params * nb + batch * m.out_elements * nb) / dev.memory_bytes_per_s)


def dag_estimate(spec, cluster, place: dict) -> EdgeEstimate:
    """A module DAG placed on devices (SEEDS.md §S29(b)): a request's latency is the longest path of module times
    and transfers (inputs from the source to the roots, the sink's result back); R pipelined requests take
    ``latency + (R − 1)·bottleneck`` with devices and links as resources."""
    job = spec.inference
    mb, nb = job.microbatch, spec.dtype_bytes
    src = source_slot(spec, cluster)
    src = src if src is not None else (cluster.edges() or [0])[0]
    finish, path, loads, rows = {}, {}, {}, []
    sinks = [m.name for m in spec.modules if not any(m.name in o.after for o in spec.modules)]

    def send(a: int, b: int, nbytes: float) -> float:
        if a == b:
            return 0.0
        net = cluster.link(a, b)
        key = _resource(cluster, a, b, net)
        loads[key] = loads.get(key, 0.0) + nbytes / net.up_bytes_per_s
        return float(T.transfer_s(nbytes, net.up_bytes_per_s, net.rtt_s))

    for m in spec.modules:
        slot = place[m.name]
        t = module_time(spec, m, cluster.devices[slot], mb, job.dtype)
        loads[("device", cluster.ids[slot])] = loads.get(("device", cluster.ids[slot]), 0.0) + t
        best = (0.0, (0.0, 0.0))
        if not m.after:
            x = send(src, slot, spec.input_elements * nb * mb)
            best = (x, (0.0, x))
        for p in m.after:
            ps = spec.modules[[o.name for o in spec.modules].index(p)]
            x = send(place[p], slot, ps.out_elements * nb * mb)
            if finish[p] + x > best[0]:
                best = (finish[p] + x, (path[p][0], path[p][1] + x))
        finish[m.name] = best[0] + t
        path[m.name] = (best[1][0] + t, best[1][1])  # (compute, transfer) seconds on the longest path
        rows.append({"module": m.name, "device": cluster.ids[slot], "type": cluster.devices[slot].id,
                     "compute_s": t, "finish_s": finish[m.name]})
    last = max(sinks, key=lambda s: finish[s])
    sink = spec.modules[[o.name for o in spec.modules].index(last)]
    back = send(place[last], src, sink.out_elements * nb * mb)
    latency = finish[last] + back
    bott_key = max(loads, key=loads.get)
    bottleneck = loads[bott_key]
    total = float(T.pipeline_makespan(latency, bottleneck, job.requests))
    parts = {"compute_s": path[last][0], "transfer_s": path[last][1] + back, "steady_state_s": total - latency}
    metrics = {"latency_s": latency, "bottleneck_s": bottleneck, "bottleneck": ":".join(bott_key),
               "throughput_per_s": mb / bottleneck, "makespan_s": total, "requests": job.requests}
    if spec.coordinator is not None:
        c = spec.coordinator
        lam = 1.0 / c.mtbf_s
        metrics |= {"availability": float(T.availability(lam, c.election_s + c.sync_s)),
                    "availability_standalone": float(T.availability(lam, c.repair_s)),
                    "downtime_per_failure_s": c.election_s + c.sync_s, "coordinator": cluster.ids[place[last]]}
    plan = "place=" + "/".join(f"{m.name}:{cluster.ids[place[m.name]]}" for m in spec.modules)
    return EdgeEstimate(spec.name, cluster.name, "placement", plan, total, parts, metrics, rows)


PLAN_KEYS = ("stages", "split", "mode", "inflight", "place")


def parse_plan(text: str, spec, cluster) -> dict:
    """``key=value,…`` → a plan mapping (validated against the workload and the cluster)."""
    plan: dict = {}
    for k, v in plan_pairs(text, PLAN_KEYS):
        plan[k] = v
    return plan


def estimate_plan(spec, cluster, plan: dict) -> EdgeEstimate:
    if spec.is_dag:
        if set(plan) - {"place"} or "place" not in plan:
            raise SpecError("a module DAG takes place=module:device/…", key="--plan", allowed=["place"])
        place = {}
        for item in plan["place"].split("/"):
            if ":" not in item:
                raise SpecError(f"bad placement {short(item)}: write module:device", key="--plan place")
            m, d = (x.strip() for x in item.split(":", 1))
            place[m] = _slot(cluster, d, "--plan place")
        names = [m.name for m in spec.modules]
        if sorted(place) != sorted(names):
            raise SpecError("place every module once", key="--plan place", allowed=names)
        return dag_estimate(spec, cluster, place)
    if spec.training is not None:
        if set(plan) - {"mode", "split", "inflight"}:
            raise SpecError("a training plan takes mode, split, inflight", key="--plan",
                            allowed=["mode", "split", "inflight"])
        mode = plan.get("mode", spec.training.mode)
        if mode not in ("pipar", "split", "fl"):
            raise SpecError(f"bad mode {short(mode)}", key="--plan mode", allowed=["pipar", "split", "fl"])
        try:
            split = int(plan.get("split", max(1, len(spec.layers) // 4)))
            inflight = int(plan.get("inflight", 1 if mode != "pipar" else 2))
        except ValueError:
            raise SpecError("split and inflight are whole numbers", key="--plan") from None
        if not 1 <= inflight <= 1024:
            raise SpecError(f"inflight = {inflight}: 1..1024", key="--plan inflight")
        return pipar_estimate(spec, cluster, mode, split, inflight)
    if set(plan) - {"stages", "split"} or len(plan) > 1:
        raise SpecError("an inference chain takes one of stages=… or split=device:k", key="--plan",
                        allowed=["stages", "split"])
    if "split" in plan:
        dev, _, k = plan["split"].partition(":")
        try:
            kk = int(k)
        except ValueError:
            raise SpecError(f"bad split {short(plan['split'])}: write device:k", key="--plan split") from None
        if not 0 <= kk <= len(spec.layers):
            raise SpecError(f"k = {kk}: 0..{len(spec.layers)}", key="--plan split")
        return chain_estimate(spec, cluster, split_stages(spec, cluster, _slot(cluster, dev, "--plan split"), kk),
                              technique="split")
    if "stages" not in plan:
        slot = (cluster.servers() or [0])[0]
        return chain_estimate(spec, cluster, [(slot, 0, len(spec.layers))])
    return chain_estimate(spec, cluster, parse_stages(plan["stages"], spec, cluster))
