"""Search space of the replicated-service family: scheme (smr | sched-psmr | psmr) × worker threads × ordering
rings × batch size, priced in one vectorized call of ``models.replication.evaluate`` and ranked by throughput (or
by latency at the offered load), feasible plans first; each row names the resource that bounds it.

Classic SMR has one thread and one ring; scheduler-based parallel SMR one ring (a single total order feeds its
scheduler); only P-SMR spreads the ordering over rings (atomic multicast).  Duplicates are dropped.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.replication import CAPACITY_PARTS, LATENCY_PARTS, LIMITS, PLAN_KEYS, SCHEMES, evaluate, \
    feasibility

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


def _combos(spec, fix: dict) -> list[tuple]:
    schemes = [fix["scheme"]] if "scheme" in fix else list(spec.schemes)
    threads = [int(fix["threads"])] if "threads" in fix else list(spec.threads)
    rings = [int(fix["rings"])] if "rings" in fix else list(spec.rings)
    batch = [int(fix["batch"])] if "batch" in fix else list(spec.batch)
    seen, out = set(), []
    for s, n, g, b in itertools.product(schemes, threads, rings, batch):
        key = (s, 1 if s == "smr" else n, g if s == "psmr" else 1, b)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def search(spec, machine, *, fix: "dict | None" = None, top: int = 10, objective: "str | None" = None
           ) -> ReplicationPlans:
    fix = dict(fix or {})
    objective = objective or "throughput"
    if objective not in OBJECTIVES:
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=OBJECTIVES)
    if "scheme" in fix and fix["scheme"] not in SCHEMES:
        raise SpecError(f"unknown scheme {fix['scheme']!r}", key="--fix scheme", allowed=SCHEMES)
    combos = _combos(spec, fix)
    if len(combos) > MAX_CONFIGS:
        raise SpecError(f"{len(combos):,} configurations is above {MAX_CONFIGS:,}", key="search")
    s = np.array([c[0] for c in combos])
    a = np.array([c[1:] for c in combos], dtype=float).T
    out = evaluate(spec, machine, s, a[0], a[1], a[2], spec.offered_load)
    reasons = [feasibility(spec, machine, out, i) for i in range(len(combos))]
    ok = np.array([not r for r in reasons])
    x, lat = out["throughput_per_s"], out["latency_s"]
    lat_key = np.where(np.isfinite(lat), lat, np.inf)
    x_key = -np.round(x, 6)  # equal throughputs (one bound) tie on the next key
    key, second = (x_key, lat_key) if objective == "throughput" else (lat_key, x_key)
    # feasible first, then the objective, then the other metric; ties: fewer threads, rings, smaller batch
    order = np.lexsort((a[2], a[1], a[0], second, key, ~ok))
    n = len(order) if top == 0 else min(top, len(order))
    rows = []
    for rank, i in enumerate(order[:n], 1):
        rows.append({"rank": rank, **{k: (combos[i][j] if k == "scheme" else int(combos[i][j]))
                                      for j, k in enumerate(PLAN_KEYS)},
                     "fits": bool(ok[i]), "throughput_per_s": float(x[i]),
                     "limit": LIMITS[CAPACITY_PARTS[int(out["limit_index"][i])]],
                     "load_per_s": float(out["load_per_s"][i]), "latency_s": float(lat[i]),
                     **{f"cap_{k}": float(out[k][i]) for k in CAPACITY_PARTS},
                     **{f"lat_{k}": float(out["latency_parts"][k][i]) for k in LATENCY_PARTS},
                     "reasons": reasons[i]})
    return ReplicationPlans(spec.name, machine.name, objective, rows, len(combos), int(ok.sum()))
