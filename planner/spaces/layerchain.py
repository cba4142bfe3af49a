"""Search spaces of the layer-chain family, each re-priced by the one cost model (``models.edge``):

* **PipeEdge's exact DP** (usc-isi/PipeEdge ``src-native/schedule.cpp``, ANCHORS.md Part B §3.2) over (layers
  placed, devices of each type used, type of the next device), minimizing the pipeline bottleneck
  ``max(h, compute, comm)`` with ``comm = bytes_out / min(bw_u, bw_v)`` and the memory check; the inner loop over
  the stage's last layer is vectorized.  Types are the cluster's device groups; hosts are handed out in order
  (``schedule_types_to_hosts``).  Shared wireless channels are not in PipeEdge's model: the decoded plan is
  re-priced with them and the difference is reported.
* **Neurosurgeon**: every split k = 0..N of every edge device with every server (``edge_terms.neurosurgeon``).
* **PiPar's parameter selection**: every split P × batches in flight N (powers of two and their 1.5×) that fits
  device memory, beside federated and split learning.
* **CEC-PA placement**: every module → device map (bounded by ``MAX_PLACEMENTS``).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, did_you_mean, short
from parplan.models import edge as M
from parplan.models import edge_terms as T

MAX_DP_STATES = 2_000_000  # layers × Π(count + 1) × types
MAX_PLACEMENTS = 200_000
INFLIGHT = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
OBJECTIVES = ("latency", "throughput", "energy", "availability")


@dataclass
class EdgePlans:
    workload: str
    cluster: str
    objective: str
    rows: list  # EdgeEstimate, best first
    n_configs: int
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "cluster": self.cluster, "objective": self.objective,
                "configurations": self.n_configs, "notes": list(self.notes),
                "plans": [dict(rank=i + 1, **e.to_dict()) for i, e in enumerate(self.rows)]}


def pipeedge_dp(spec, cluster) -> tuple[list, float, int]:
    """(stages [(slot, lo, hi)], DP bottleneck, states) — PipeEdge's schedule_device_types on the cluster's groups."""
    job = spec.inference
    mb, nb, L = job.microbatch, spec.dtype_bytes, len(spec.layers)
    times = M._Times(spec, cluster, mb, job.dtype)
    a = spec.arrays()
    groups = cluster.groups
    n = len(groups)
    counts = [g[2] for g in groups]
    first = [g[1] for g in groups]
    pp = [1]
    for c in counts:
        pp.append(pp[-1] * (c + 1))
    mask = pp[-1]
    if (L + 1) * mask * n > MAX_DP_STATES:
        raise SpecError(f"PipeEdge DP over {L} layers and {cluster.name} has {(L + 1) * mask * n:,} states "
                        f"(more than {MAX_DP_STATES:,})", key="--hw", hint="fewer device groups or devices")
    src = M.source_slot(spec, cluster)
    cum = {u: np.concatenate([[0.0], np.cumsum(times(first[u]))]) for u in range(n)}
    out_b = a["out_elements"] * nb * mb
    in_b = np.concatenate([[spec.input_elements], a["out_elements"][:-1]]) * nb * mb
    mem_cum = np.concatenate([[0.0], np.cumsum(a["mem_bytes"])])

    def comm(u, v, nbytes):
        if u == v and counts[u] == 1:
            return np.full_like(nbytes, np.inf)
        b = first[v] + (1 if u == v else 0)
        return nbytes / cluster.link(first[u], b).up_bytes_per_s  # a link is busy for the airtime (no RTT)

    h = np.full((L + 1, mask, n), np.inf)
    parent = np.full((L + 1, mask, n, 2), -1, dtype=np.int64)
    src_group = cluster.group_of(src) if src is not None else None

    def hop(a: int, b: int, nbytes) -> float:
        return nbytes / cluster.link(a, b).up_bytes_per_s

    for u in range(n):  # the first stage receives the input unless the source device runs it
        h[0, 0, u] = 0.0 if src is None or src_group == groups[u][0] else hop(src, first[u], in_b[0])
    # the DP's tables as arrays: full[S, u] (type u's devices all used in S), comm[u][v, j] (the stage ending at
    # layer j on type u sends to type v), memory per device type
    S_all = np.arange(mask)
    full = np.stack([S_all // pp[u] % (counts[u] + 1) == counts[u] for u in range(n)], axis=1)
    comm_t = [np.stack([comm(u, v, out_b) for v in range(n)]) for u in range(n)]  # [v, layer index jj − 1]
    cap = [cluster.devices[first[u]].memory_bytes for u in range(n)]
    res, res_idx = np.inf, None
    j = np.arange(1, L + 1)
    for i in range(L):
        jj = j[i:]  # stage = layers [i, jj)
        mem = mem_cum[jj] - mem_cum[i] + (in_b[i] * T.DATA_BUFFERS_IN if i > 0 else 0.0) \
            + out_b[jj - 1] * T.DATA_BUFFERS_OUT + in_b[i] + out_b[jj - 1]
        live = np.isfinite(h[i]) & ~full  # states (S, u) that place a stage from layer i
        ends = np.full((mask, n), np.inf)  # the chain ends here: cost per state, in the order (S, u)
        # every state at layer i at once; per type u of the stage's device, in descending u: for one target
        # (j, S + pp[u], v) the sources run in ascending S = descending u, the order of the scalar recurrence,
        # so strict improvement keeps the same first-found optimum and parent
        for u in range(n - 1, -1, -1):
            Ss = np.flatnonzero(live[:, u])
            if not Ss.size:
                continue
            h0 = h[i, Ss, u]
            comp = cum[u][jj] - cum[u][i]
            fit = cap[u] > mem  # schedule.cpp is_layers_fit
            if fit[-1]:
                back = 0.0  # the result returns to the source (unless the source ran the only stage)
                if src is not None and not (i == 0 and src_group == groups[u][0]):
                    other = first[u] + 1 if first[u] == src else first[u]  # a device of type u other than src
                    back = hop(other, src, out_b[-1])
                ends[Ss, u] = np.maximum(np.maximum(h0, comp[-1]), back)
            if len(jj) < 2:
                continue
            S2 = Ss + pp[u]
            cost = np.maximum(h0[:, None, None], np.maximum(comp[None, None, :], comm_t[u][None, :, jj - 1]))[..., :-1]
            cost = np.where(fit[None, None, :-1] & ~full[Ss][:, :, None], cost, np.inf)  # [S, v, j]
            tgt = h[jj[:-1][None, None, :], S2[:, None, None], np.arange(n)[None, :, None]]
            better = cost < tgt
            if better.any():
                si, vi, ji = np.nonzero(better)
                h[jj[ji], S2[si], vi] = cost[si, vi, ji]
                parent[jj[ji], S2[si], vi] = (i, u)
        flat = ends.reshape(-1)
        k = int(np.argmin(flat))  # the first state (S, u) of the least cost
        if flat[k] < res:
            res, res_idx = float(flat[k]), (i, k // n, k % n)
    if res_idx is None:
        raise SpecError(f"no pipeline of {spec.name} fits {cluster.name}'s memory", key="--hw",
                        hint="devices with more memory, or more devices")
    i, S, u = res_idx
    typed = [(u, i, L)]
    layer = i
    while layer > 0:
        li, lu = parent[layer, S, u]
        S -= pp[lu]
        typed.append((int(lu), int(li), layer))
        layer, u = int(li), int(lu)
    typed.reverse()
    used = {k: 0 for k in range(n)}
    stages = []
    for t, lo, hi in typed:
        slot = first[t] + used[t]
        used[t] += 1
        stages.append((slot, lo, hi))
    if src is not None and src_group == groups[typed[0][0]][0] and stages[0][0] != src:
        for k, (slot, lo, hi) in enumerate(stages):  # hand the source's own slot to the first stage
            if slot == src:
                stages[k] = (stages[0][0], lo, hi)
                break
        stages[0] = (src, stages[0][1], stages[0][2])
    return stages, float(res), int((L + 1) * mask * n)


def _chain_candidates(spec, cluster, objective: str) -> tuple[list, int, list]:
    notes, cands, n_cfg = [], [], 0
    L = len(spec.layers)
    try:
        stages, bott, states = pipeedge_dp(spec, cluster)
        e = M.chain_estimate(spec, cluster, stages, technique="pipeline")
        n_cfg += states
        if abs(e.metrics["bottleneck_s"] - bott) > 1e-9 * max(bott, 1e-30):
            notes.append(f"PipeEdge DP bottleneck {bott:.4g} s; with shared channels re-priced "
                         f"{e.metrics['bottleneck_s']:.4g} s")
        cands.append(e)
    except SpecError as err:
        notes.append(f"pipeline DP: {err}")
    edge_groups = [g for g in cluster.groups if cluster.devices[g[1]].kind == "edge"]
    if cluster.servers() and edge_groups:  # the same DP on the edge boards alone: the plan without a server
        sub, slots = _subcluster(cluster, edge_groups)
        try:
            stages, _, states = pipeedge_dp(spec, sub)
            cands.append(M.chain_estimate(spec, cluster, [(slots[s], lo, hi) for s, lo, hi in stages],
                                          technique="pipeline"))
            n_cfg += states
        except SpecError as err:
            notes.append(f"pipeline DP on the edge boards alone: {err}")
    src = M.source_slot(spec, cluster)
    edge_slots = [src] if src is not None else [g[1] for g in edge_groups]
    for edge in edge_slots:
        for srv in cluster.servers():
            sweep = M.neurosurgeon_sweep(spec, cluster, edge, srv)
            n_cfg += L + 1
            key = "energy_j" if objective == "energy" else "total_s"
            for k in np.argsort(sweep[key], kind="stable")[:SPLITS_SHOWN]:  # the best split points, not one
                cands.append(M.chain_estimate(spec, cluster, M.split_stages(spec, cluster, edge, int(k), srv),
                                              technique="split"))
    for name, first, _ in cluster.groups:  # every device type alone
        cands.append(M.chain_estimate(spec, cluster, [(src if src is not None and cluster.group_of(src) == name
                                                       else first, 0, L)], technique="single"))
        n_cfg += 1
    return cands, n_cfg, notes


SPLITS_SHOWN = 5  # Neurosurgeon split points kept per (edge board, server) pair, best first


def _subcluster(cluster, keep: list) -> tuple:
    """The cluster restricted to the groups ``keep`` and, per slot of it, the slot of the full cluster."""
    from dataclasses import replace

    slots, groups = [], []
    for name, first, count in keep:
        groups.append((name, len(slots), count))
        slots.extend(range(first, first + count))
    sub = replace(cluster, name=f"{cluster.name}[edge]", devices=tuple(cluster.devices[s] for s in slots),
                  ids=tuple(cluster.ids[s] for s in slots), groups=tuple(groups))
    return sub, slots


def _key(objective: str):
    return {"latency": lambda e: e.metrics["latency_s"], "throughput": lambda e: e.metrics["bottleneck_s"],
            "energy": lambda e: e.metrics.get("energy_j", np.inf),
            "availability": lambda e: (-e.metrics.get("availability", 0.0), e.total_s)}[objective]


def _pipar_candidates(spec, cluster) -> tuple[list, int]:
    cands = [M.pipar_estimate(spec, cluster, "fl", 0, 1)]
    for P in range(1, len(spec.layers)):
        cands.append(M.pipar_estimate(spec, cluster, "split", P, 1))
        for N in INFLIGHT[1:]:
            cands.append(M.pipar_estimate(spec, cluster, "pipar", P, N))
    return cands, len(cands)


def _dag_candidates(spec, cluster) -> tuple[list, int]:
    names = [m.name for m in spec.modules]
    total = len(cluster) ** len(names)
    if total > MAX_PLACEMENTS:
        raise SpecError(f"{total:,} placements of {len(names)} modules on {len(cluster)} devices is above "
                        f"{MAX_PLACEMENTS:,}", key="--hw", hint="fewer devices or modules, or --plan place=…")
    cands = [M.dag_estimate(spec, cluster, dict(zip(names, p)))
             for p in itertools.product(range(len(cluster)), repeat=len(names))]
    return cands, total


def search(spec, cluster, *, objective: "str | None" = None, top: int = 10) -> EdgePlans:
    """Every candidate of the workload's techniques priced, best first by ``objective``."""
    if objective is not None and objective not in OBJECTIVES:  # before any candidate is priced or ranked
        raise SpecError(f"bad value {short(objective)}", key="--objective", allowed=list(OBJECTIVES),
                        hint=did_you_mean(objective, OBJECTIVES))
    if spec.training is not None:
        objective = objective or "throughput"
        if objective not in ("latency", "throughput"):
            raise SpecError(f"bad value {objective!r}: training plans are ranked by time", key="--objective",
                            allowed=["latency", "throughput"])
        cands, n = _pipar_candidates(spec, cluster)
        fit = [e for e in cands if e.fits]
        rows = sorted(fit or cands, key=lambda e: e.total_s)
        notes = [] if fit else ["no plan fits device memory: the least infeasible are shown"]
    elif spec.is_dag:
        objective = objective or "latency"
        cands, n = _dag_candidates(spec, cluster)
        key = (lambda e: e.total_s) if objective == "latency" else _key(objective) if objective != "energy" else None
        if key is None:
            raise SpecError("energy is ranked for layer chains (Neurosurgeon E(k))", key="--objective",
                            allowed=["latency", "throughput", "availability"])
        rows, notes = sorted(cands, key=key), []
    else:
        objective = objective or "throughput"
        if objective == "availability":
            raise SpecError("availability needs a module DAG with a coordinator block", key="--objective",
                            allowed=["latency", "throughput", "energy"])
        cands, n, notes = _chain_candidates(spec, cluster, objective)
        fit = [e for e in cands if e.fits]
        rows = sorted(fit or cands, key=_key(objective))
        seen, uniq = set(), []
        for e in rows:
            if e.plan not in seen:
                seen.add(e.plan)
                uniq.append(e)
        rows = uniq
    return EdgePlans(spec.name, cluster.name, objective, rows if top == 0 else rows[:top], n, notes)
