"""Search space of the replicated-service family: scheme (smr | sched-psmr | psmr) × worker threads × ordering
rings × batch size, priced in one vectorized call of ``models.replication.evaluate`` and ranked by throughput (or
by latency at the offered load), feasible plans first; each row names the resource that bounds it.

Classic SMR has one thread and one ring; scheduler-based parallel SMR one ring (a single total order feeds its
scheduler); only P-SMR spreads the ordering over rings (atomic multicast).  Duplicates are dropped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.replication import CAPACITY_PARTS, LATENCY_PARTS, LIMITS, PLAN_KEYS, SCHEMES, evaluate, \
    feasibility
from parplan.workloads.replication import MAX_BATCH, MAX_RINGS

OBJECTIVES = ("throughput", "latency")
MAX_CONFIGS = 200_000


@dataclass
class ReplicationPlans:
    workload: str
    machine: str
    objective: str
    rows: list  # dicts, best first
    n_configs: int
    n_feasible: int

    def to_dict(self) -> dict:
        return {"workload": self.workload, "machine": self.machine, "objective": self.objective,
                "configurations": self.n_configs, "feasible": self.n_feasible, "plans": self.rows}


def _check_fix(fix: dict, machine) -> None:
    """Pinned knobs in the ranges a plan accepts (threads ≤ the replica's hardware threads, rings ≤ MAX_RINGS,
    batch ≤ MAX_BATCH), as ``parse_plan`` checks a ``--plan``."""
    hi = {"threads": machine.socket.cores * machine.socket.smt, "rings": MAX_RINGS, "batch": MAX_BATCH}
    for k, cap in hi.items():
        if k in fix:
            v = fix[k]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= cap:
                raise SpecError(f"bad value {v!r}: {k} is a whole number in 1..{cap:,}", key=f"--fix {k}")


def _combos(spec, machine, fix: dict) -> tuple:
    """(scheme names, threads, rings, batch) arrays of the distinct plans, in the order of
    itertools.product(schemes, threads, rings, batch) with SMR's threads and rings and sched-psmr's rings folded to
    1 (first occurrence kept: each scheme's block is the product of its own knobs); pinned values out of range are
    refused."""
    _check_fix(fix, machine)
    hw = machine.socket.cores * machine.socket.smt
    over = [t for t in spec.threads if t > hw]
    if over and "threads" not in fix:  # a plan no replica can run (estimate refuses it): the file's value is wrong
        raise SpecError(f"threads {over[0]} is above the {hw} hardware threads of a {machine.name} replica",
                        key="search.threads", hint=f"values in 1..{hw}")
    schemes = [fix["scheme"]] if "scheme" in fix else list(spec.schemes)
    threads = [int(fix["threads"])] if "threads" in fix else list(spec.threads)
    rings = [int(fix["rings"])] if "rings" in fix else list(spec.rings)
    batch = [int(fix["batch"])] if "batch" in fix else list(spec.batch)
    threads, rings, batch = (list(dict.fromkeys(v)) for v in (threads, rings, batch))  # first occurrences
    blocks = {"smr": ([1], [1]), "sched-psmr": (threads, [1]), "psmr": (threads, rings)}  # the folded knobs
    names = np.array(schemes)
    parts = []
    for name in dict.fromkeys(schemes):  # by name: a scheme listed twice is one
        nn, gg = blocks[name]
        parts.append([np.full(len(nn) * len(gg) * len(batch), schemes.index(name)),
                      *(x.ravel() for x in np.meshgrid(nn, gg, batch, indexing="ij"))])
    si, n, g, b = (np.concatenate(c) for c in zip(*parts))
    return names[si], n, g, b


def _ranked(keys: tuple, ok: np.ndarray, key: np.ndarray, top: int) -> np.ndarray:
    """The first ``top`` plans (all when 0) of ``np.lexsort(keys)`` (primary key last: infeasible, then ``key``):
    only the plans that can be among them — feasible first, up to the top-th smallest ``key`` of their group, ties
    included — are sorted."""
    if top == 0 or top >= len(key) or np.isnan(key).any():
        return np.lexsort(keys)[:top or None]
    cand = []
    for group in (np.flatnonzero(ok), np.flatnonzero(~ok)):
        need = top - sum(len(c) for c in cand)
        if need <= 0 or not len(group):
            continue
        kg = key[group]
        cand.append(group if need >= len(group) else group[kg <= np.partition(kg, need - 1)[need - 1]])
    cand = np.sort(np.concatenate(cand))
    return cand[np.lexsort(tuple(k[cand] for k in keys))][:top]


def search(spec, machine, *, fix: "dict | None" = None, top: int = 10, objective: "str | None" = None
           ) -> ReplicationPlans:
    """Every distinct plan priced in one ``evaluate`` call; feasibility as arrays; reasons and rows only for the
    plans returned."""
    fix = dict(fix or {})
    objective = objective or "throughput"
    if objective not in OBJECTIVES:
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=OBJECTIVES)
    if "scheme" in fix and fix["scheme"] not in SCHEMES:
        raise SpecError(f"unknown scheme {fix['scheme']!r}", key="--fix scheme", allowed=SCHEMES)
    s, *knobs = _combos(spec, machine, fix)
    if len(s) > MAX_CONFIGS:
        raise SpecError(f"{len(s):,} configurations is above {MAX_CONFIGS:,}", key="search")
    a = np.array(knobs, dtype=float)
    out = evaluate(spec, machine, s, a[0], a[1], a[2], spec.offered_load)
    x, lat = out["throughput_per_s"], out["latency_s"]
    # feasibility's two tests (hardware threads, offered load below capacity) on every plan at once
    ok = ~(np.asarray(out["threads_used"]) > machine.socket.cores * machine.socket.smt)
    if spec.offered_load is not None:
        ok &= ~(np.asarray(out["load_per_s"]) >= x)
    lat_key = np.where(np.isfinite(lat), lat, np.inf)
    x_key = -np.round(x, 6)  # equal throughputs (one bound) tie on the next key
    key, second = (x_key, lat_key) if objective == "throughput" else (lat_key, x_key)
    # feasible first, then the objective, then the other metric; ties: fewer threads, rings, smaller batch
    order = _ranked((a[2], a[1], a[0], second, key, ~ok), ok, key, top)
    n = len(order)
    rows = []
    for rank, i in enumerate(order[:n], 1):
        reasons = feasibility(spec, machine, out, i)
        rows.append({"rank": rank, "scheme": str(s[i]), **{k: int(a[j][i]) for j, k in enumerate(PLAN_KEYS[1:])},
                     "fits": bool(ok[i]), "throughput_per_s": float(x[i]),
                     "limit": LIMITS[CAPACITY_PARTS[int(out["limit_index"][i])]],
                     "load_per_s": float(out["load_per_s"][i]), "latency_s": float(lat[i]),
                     **{f"cap_{k}": float(out[k][i]) for k in CAPACITY_PARTS},
                     **{f"lat_{k}": float(out["latency_parts"][k][i]) for k in LATENCY_PARTS},
                     "reasons": reasons})
    return ReplicationPlans(spec.name, machine.name, objective, rows, len(s), int(ok.sum()))
