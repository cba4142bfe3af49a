"""Search spaces of the layer-chain family, each re-priced by the one cost model (``models.edge``):

* **PipeEdge's exact DP** (usc-isi/PipeEdge ``src-native/schedule.cpp``, ANCHORS.md Part B §3.2) over (layers
  placed, devices of each type used, type of the next device), minimizing the pipeline bottleneck
  ``max(h, compute, comm)`` with ``comm = bytes_out / min(bw_u, bw_v)`` and the memory check, one array step per
  count of devices used (``pipeedge_tables``); the plan is decoded by backtracking the optimum's first-found
  transitions.  Types are the cluster's device groups; hosts are handed out in order (``schedule_types_to_hosts``).
  Shared wireless channels are not in PipeEdge's model: the decoded plan is re-priced with them and the difference
  is reported.
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
from parplan.models.edge_stages import StageTables, stage_tables

MAX_DP_STATES = 2_000_000  # layers × Π(count + 1) × types
DP_CHUNK = 1 << 22  # floats per array step of the DP (the min over a stage's first layer runs in blocks of it)
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


@dataclass
class DPTables:
    """PipeEdge's DP as tables: ``h[j, S, v]``, the least bottleneck of layers [0, j) placed on the device set S
    (devices used per type, mixed radix ``pp``) with the next stage on type v, and the best end state."""
    h: np.ndarray
    st: StageTables
    pp: np.ndarray
    digit: np.ndarray  # [S, u]: devices of type u in S
    res: float
    res_idx: "tuple | None"  # (first layer of the last stage, S, its type)

    def parent(self, j: int, S: int, v: int) -> tuple:
        """(i, u) of the stage [i, j) on type u that reached state (j, S, v) first: the transitions in the order of
        schedule.cpp's loops (layer i ascending, type u descending), the first whose cost is the state's value (the
        one a strict-improvement scan keeps)."""
        st, n = self.st, len(self.st.counts)
        us = np.arange(n)[::-1]
        prev = S - self.pp[us]
        ok = (self.digit[S, us] >= 1) & (self.digit[np.maximum(prev, 0), v] != st.counts[v])
        cost = np.maximum(self.h[:j, np.maximum(prev, 0), us],
                          np.maximum(st.compute_s[us, :j, j].T, st.comm_s[us, v, j - 1][None, :]))  # [i, u desc]
        hit = np.flatnonzero((ok[None, :] & st.fits[us, :j, j].T & (cost == self.h[j, S, v])).ravel())
        if not hit.size:
            return -1, -1
        return int(hit[0] // n), int(us[hit[0] % n])


def pipeedge_tables(spec, cluster, times=None, within=None) -> DPTables:
    """PipeEdge's schedule_device_types recurrence ``h[j, S + pp[u], v] = min over (i, u) of max(h[i, S, u],
    compute_u(i, j), comm_uv(j))`` (memory fitting, type v not used up in S), by device count: the states of k devices
    depend only on those of k − 1, so each count is one array step over every layer pair — with the min over the
    stage's first layer i taken before the max with the comm, which does not depend on i (min and max of the same
    floats: the values of the layer-by-layer scan).  ``within``: ``edge_stages.stage_tables``'s (a part of a larger
    cluster, whose source may lie outside the part)."""
    L, groups = len(spec.layers), cluster.groups
    n = len(groups)
    counts = np.array([g[2] for g in groups])
    pp = np.concatenate([[1], np.cumprod(counts + 1)])
    mask = int(pp[-1])
    if (L + 1) * mask * n > MAX_DP_STATES:
        raise SpecError(f"PipeEdge DP over {L} layers and {cluster.name} has {(L + 1) * mask * n:,} states "
                        f"(more than {MAX_DP_STATES:,})", key="--hw", hint="fewer device groups or devices")
    st = stage_tables(spec, cluster, times, within)
    digit = np.arange(mask)[:, None] // pp[None, :n] % (counts + 1)  # [S, u]
    full = digit == counts
    level = digit.sum(axis=1)
    h = np.full((L + 1, mask + 1, n), np.inf)  # one more device set, never reached: "no device of that type to drop"
    h[0, 0] = st.first_hop_s  # the first stage receives the input unless the source device runs it
    step = np.where(st.fits[:, :L, :L], st.compute_s[:, :L, :L], np.inf)  # [u, i, j]: a stage the chain continues after
    comm = st.comm_s[:, :, :L - 1]  # [u, v, j − 1] for j = 1..L − 1
    types = np.arange(n)
    # the device sets by device count (ascending within a count); per set S2 and type u of the last stage: the set
    # before that stage (S2 − pp[u], or the unreached one where S2 holds no device of type u) and whether the next type
    # still has a device there
    order = np.argsort(level, kind="stable")
    cut = np.searchsorted(level[order], np.arange(int(level.max()) + 2))
    has = digit[order] >= 1
    prev = np.where(has, order[:, None] - pp[None, :n], mask)
    nxt = has[:, :, None] & ~np.vstack([full, full[:1]])[prev]  # [s, u, v]
    for k in range(1, min(len(cut) - 1, L)):  # k stages end before layer L only if k < L
        a, b = int(cut[k]), int(cut[k + 1])
        hs = h[k - 1:L, prev[a:b], types].transpose(1, 2, 0)  # [s, u, i ≥ k − 1]: the states a stage leaves from
        bi = max(1, DP_CHUNK // max(1, (b - a) * n * L))  # the min over i of max(h, compute), i in blocks
        best = np.maximum(hs[:, :, :bi, None], step[None, :, k - 1:k - 1 + bi, :]).min(axis=2)  # [s, u, j]
        for i0 in range(bi, L - k + 1, bi):
            blk = np.maximum(hs[:, :, i0:i0 + bi, None], step[None, :, k - 1 + i0:k - 1 + i0 + bi, :])
            best = np.minimum(best, blk.min(axis=2))
        cost = np.where(nxt[a:b, :, :, None], np.maximum(best[:, :, None, 1:], comm[None]), np.inf)  # [s, u, v, j]
        h[1:L, order[a:b]] = cost.min(axis=1).transpose(2, 0, 1)
    h = h[:, :mask]
    # the chain ends with the stage [i, L) on type u: the result returns to the source
    hh = h[:L]
    live = np.isfinite(hh) & ~full[None] & st.fits[:, :L, L].T[:, None, :]  # [i, S, u]
    back = np.zeros((L, n))  # [i, u]
    back[0] = st.back_first
    if st.back_hop is not None:
        for u in np.flatnonzero(live[1:].any(axis=(0, 1))).tolist():
            back[1:, u] = st.back_hop(u)
    ends = np.where(live, np.maximum(np.maximum(hh, st.compute_s[:, :L, L].T[:, None, :]), back[:, None, :]), np.inf)
    k = int(np.argmin(ends))  # the first state (i, S, u) of the least cost
    res = float(ends.flat[k])
    idx = (k // (mask * n), k // n % mask, k % n) if np.isfinite(res) else None
    return DPTables(h, st, pp, digit, res, idx)


def pipeedge_dp(spec, cluster, times=None, within=None) -> tuple[list, float, int]:
    """(stages [(slot, lo, hi)], DP bottleneck, states) — PipeEdge's schedule_device_types on the cluster's groups
    (``times``: a ``models.edge._Times`` of the search, shared by its estimates; ``within``: (the full cluster, its
    slot per slot of ``cluster``) when ``cluster`` is a part of it — the stages are still slots of ``cluster``)."""
    tab = pipeedge_tables(spec, cluster, times, within)
    L, n, mask = len(spec.layers), len(cluster.groups), int(tab.pp[-1])
    if tab.res_idx is None:
        raise SpecError(f"no pipeline of {spec.name} fits {cluster.name}'s memory", key="--hw",
                        hint="devices with more memory, or more devices")
    groups, first = cluster.groups, tab.st.first
    i, S, u = tab.res_idx
    typed = [(u, i, L)]
    layer = i
    while layer > 0:
        li, lu = tab.parent(layer, S, u)
        S -= int(tab.pp[lu])
        typed.append((lu, li, layer))
        layer, u = li, lu
    typed.reverse()
    used = {k: 0 for k in range(n)}
    stages = []
    for t, lo, hi in typed:
        slot = first[t] + used[t]
        used[t] += 1
        stages.append((slot, lo, hi))
    src = _source_in(spec, cluster, within)
    if src is not None and cluster.group_of(src) == groups[typed[0][0]][0] and stages[0][0] != src:
        for k, (slot, lo, hi) in enumerate(stages):  # hand the source's own slot to the first stage
            if slot == src:
                stages[k] = (stages[0][0], lo, hi)
                break
        stages[0] = (src, stages[0][1], stages[0][2])
    return stages, tab.res, int((L + 1) * mask * n)


def _source_in(spec, cluster, within) -> "int | None":
    """The source's slot in ``cluster`` (None without a source, or where it lies outside this part of ``within``)."""
    if within is None:
        return M.source_slot(spec, cluster)
    full, slots = within
    src = M.source_slot(spec, full)
    return slots.index(src) if src is not None and src in slots else None


def _chain_candidates(spec, cluster, objective: str) -> tuple[list, int, list]:
    notes, cands, n_cfg = [], [], 0
    L = len(spec.layers)
    times = M._Times(spec, cluster, spec.inference.microbatch, spec.inference.dtype)  # shared by every candidate
    try:
        stages, bott, states = pipeedge_dp(spec, cluster, times)
        e = M.chain_estimate(spec, cluster, stages, technique="pipeline", times=times)
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
            stages, _, states = pipeedge_dp(spec, sub, times, (cluster, slots))  # the same devices: times by id
            cands.append(M.chain_estimate(spec, cluster, [(slots[s], lo, hi) for s, lo, hi in stages],
                                          technique="pipeline", times=times))
            n_cfg += states
        except SpecError as err:
            notes.append(f"pipeline DP on the edge boards alone: {err}")
    src = M.source_slot(spec, cluster)
    edge_slots = [g[1] for g in edge_groups] if src is None else [src] if cluster.devices[src].kind == "edge" else []
    if src is not None and not edge_slots:  # Neurosurgeon offloads from a board to a server
        notes.append(f"Neurosurgeon splits: none, the source ({cluster.ids[src]}) is a server, not an edge board")
    for edge in edge_slots:
        for srv in cluster.servers():
            sweep = M.neurosurgeon_sweep(spec, cluster, edge, srv, times)
            n_cfg += L + 1
            key = "energy_j" if objective == "energy" else "total_s"
            for k in np.argsort(sweep[key], kind="stable")[:SPLITS_SHOWN]:  # the best split points, not one
                cands.append(M.chain_estimate(spec, cluster, M.split_stages(spec, cluster, edge, int(k), srv),
                                              technique="split", times=times))
    for name, first, _ in cluster.groups:  # every device type alone
        cands.append(M.chain_estimate(spec, cluster, [(src if src is not None and cluster.group_of(src) == name
                                                       else first, 0, L)], technique="single", times=times))
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
