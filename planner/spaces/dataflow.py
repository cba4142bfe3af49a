"""Search spaces of the dataflow family, priced in vectorized numpy calls of the models and ranked by latency,
energy or energy-delay product (``objective``).

* **Loop nests** (``search_nest``): cores (lanes) used 1..cores, vectorized or scalar, unroll 1, 2, 4, … ≤
  ``max_unroll``, hand-off mode among the device's — every configuration, one ``evaluate_nest`` call.
* **Mappings** (``search_mappings``, Timeloop-style mapspace): per dimension an ordered factorization of its size
  over the temporal slots of every storage level and the spatial slots of every level with a fan-out, a loop
  order per level.  The search (seeded, reproducible) sends each prime factor of each dimension to a slot: a
  random sample whose slot preferences are drawn per mapping (Dirichlet), then rounds of mutating the best
  (move one prime factor, swap two loops), up to ``max_mappings`` priced mappings — Timeloop's mapper is likewise
  a random-pruned search with a budget.  Mappings that overflow a level or a fan-out are dropped.  The search
  (``dataflow_mapspace``) prices with ``models/dataflow_price.SearchPricer`` — the fit first, then the access
  counts of those that fit as exact integers: ``evaluate_mappings``' numbers bit for bit
  (tests/dataflow/test_dataflow_search_ref.py); ``evaluate_mappings`` itself prices the chosen mappings' rows.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from parplan.errors import NothingFits, SpecError
from parplan.models.dataflow import evaluate_nest, mapping_doc, mapping_estimate, require_cores
from parplan.models.dataflow_energy import evaluate_mappings, fanouts, storage_view
from parplan.models.dataflow_price import SearchPricer
from parplan.models.dataflow_terms import ENERGY_PARTS, SYNC_MODES, TIME_PARTS
from parplan.planner.spaces.dataflow_mapspace import (  # noqa: F401 (_initial, _orders: for the tests)
    ELITE, ROUNDS, _initial, _orders, _primes, _Space, explore, ranked_distinct)

OBJECTIVES = ("latency", "energy", "edp")
MAX_MAPPINGS = 2_000_000
DEFAULT_MAPPINGS = 60_000


@dataclass
class DataflowPlans:
    workload: str
    device: str
    view: str
    objective: str
    rows: list
    n_configs: int
    notes: list

    def to_dict(self) -> dict:
        return {"workload": self.workload, "device": self.device, "view": self.view, "objective": self.objective,
                "configurations": self.n_configs, "plans": self.rows, "notes": list(self.notes)}


def _key(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=list(OBJECTIVES))
    return {"latency": "total_s", "energy": "energy_j", "edp": "edp_js"}[objective]


def unrolls(max_unroll: int) -> list[int]:
    out, u = [], 1
    while u <= max_unroll:
        out.append(u)
        u *= 2
    return out


def search_nest(spec, dsp, *, fix: "dict | None" = None, top: int = 10, objective: str = "latency") -> DataflowPlans:
    """Every nest configuration priced and ranked; ``fix`` pins plan keys (cores, vector, unroll, sync)."""
    require_cores(dsp)
    key = _key(objective)
    fix = dict(fix or {})
    nest = spec.nest()
    dsp.width(spec.dtype)
    axes = {"cores": list(range(1, dsp.cores + 1)), "vector": [True, False], "unroll": unrolls(dsp.max_unroll),
            "sync": [SYNC_MODES.index(m) for m in dsp.sync_modes()] or [0]}
    if "cores" in fix:
        if not 1 <= int(fix["cores"]) <= dsp.cores:
            raise SpecError(f"cores = {fix['cores']}: {dsp.name} has {dsp.cores}", key="--fix cores")
        axes["cores"] = [int(fix["cores"])]
    if "vector" in fix:
        axes["vector"] = [fix["vector"] == "on"]
    if "unroll" in fix:
        if not 1 <= int(fix["unroll"]) <= dsp.max_unroll:
            raise SpecError(f"unroll = {fix['unroll']}: {dsp.name} unrolls up to {dsp.max_unroll}", key="--fix unroll",
                            hint=f"1..{dsp.max_unroll}")
        axes["unroll"] = [int(fix["unroll"])]
    if "sync" in fix:
        if fix["sync"] not in dsp.sync_modes():
            raise SpecError(f"{dsp.name} has no {fix['sync']} hand-off", key="--fix sync", allowed=dsp.sync_modes())
        axes["sync"] = [SYNC_MODES.index(fix["sync"])]
    combos = np.array(list(itertools.product(*axes.values())), dtype=float)
    if combos.size == 0:
        raise SpecError("no configuration is left after --fix", key="--fix")
    # bound the (configurations × iterations) arrays: price in chunks
    chunk = max(1, int(4e6 // max(nest.iterations, 1)))
    outs = [evaluate_nest(nest, dsp, spec.dtype, combos[i:i + chunk, 0], combos[i:i + chunk, 1] > 0,
                          combos[i:i + chunk, 2], combos[i:i + chunk, 3].astype(int))
            for i in range(0, len(combos), chunk)]
    cols = list(TIME_PARTS) + list(ENERGY_PARTS) + ["total_s", "energy_j", "edp_js", "cycles", "utilization"]
    o = {k: np.concatenate([np.broadcast_to(x[k], (len(x["total_s"]),)) for x in outs]) for k in cols}
    order = np.argsort(o[key], kind="stable")
    n = len(order) if top == 0 else min(top, len(order))
    rows = []
    for rank, i in enumerate(order[:n], 1):
        c, v, u, m = combos[i]
        rows.append({"rank": rank, "cores": int(c), "vector": "on" if v else "off", "unroll": int(u),
                     "sync": SYNC_MODES[int(m)], **{k: float(o[k][i]) for k in cols}})
    notes = [] if outs[0]["energy_known"] else [f"{dsp.name} publishes no energy figures: energy is 0"]
    return DataflowPlans(spec.name, dsp.id, "nest", objective, rows, len(combos), notes)


# --- the mapspace (planner/spaces/dataflow_mapspace.py) ------------------------------------------------------------


def search_mappings(spec, dsp, *, top: int = 10, objective: str = "latency", max_mappings: int = DEFAULT_MAPPINGS,
                    seed: int = 0, trace: "list | None" = None) -> DataflowPlans:
    """The best mappings of the workload's problem found in the (enumerated or sampled) mapspace; ``trace`` collects
    every priced chunk's (factors, loop places, objective, tie-break) arrays."""
    key = _key(objective)
    problem = spec.problem
    if problem is None:
        raise SpecError(f"{spec.name} is an inductive kernel: there is no tensor problem to map", key="kernel")
    if not 1 <= max_mappings <= MAX_MAPPINGS:
        raise SpecError(f"max mappings {max_mappings:,} is outside 1..{MAX_MAPPINGS:,}", key="--max-mappings")
    levels, mac_inst, mac_e = storage_view(dsp, problem.dtype)
    L = len(levels)
    fan = fanouts(levels, mac_inst)
    spatial_levels = [l for l in range(L) if fan[l] > 1]
    slots = L + len(spatial_levels)
    rng = np.random.default_rng(seed)
    dims, primes = [], []
    for d, n in enumerate(problem.sizes):
        for p in _primes(n):
            dims.append(d)
            primes.append(p)
    space = _Space(np.array(dims, int), np.array(primes, float), L, tuple(spatial_levels), slots)
    pricer = SearchPricer(problem, levels, mac_inst, mac_e, space.spatial_levels)
    X, pos, val, tie, seen = explore(space, pricer, key, dsp.clock_hz, rng, max_mappings, trace)
    if not np.isfinite(val).any():
        raise NothingFits(f"none of {seen:,} mappings tried fits {dsp.name} (every one overflows a level or a "
                        "fan-out)", key="problem", hint="a larger device or smaller dimensions fit")
    ok = np.isfinite(val)
    T, S, perm = ranked_distinct(space, X[:, ok], pos[:, :, ok], val[ok], tie[ok], top)
    o = evaluate_mappings(problem, levels, mac_inst, mac_e, T, S, perm)  # one call for all
    rows = []
    for k in range(len(T)):
        doc = mapping_doc(levels, T, S, perm, k)
        e = mapping_estimate(spec, dsp, None, None, None, plan_doc={"mapping": doc}, priced=o, i=k)
        rows.append({"rank": len(rows) + 1, "macs_used": e.plan["macs_used"], "cycles": e.cycles,
                     "total_s": e.total_s, "energy_j": e.energy_j, "edp_js": e.edp, "pj_per_mac": e.pj_per_mac,
                     "utilization": e.utilization, **e.parts, **e.energy_parts, "mapping": doc})
    notes = [f"{seen:,} mappings priced: a Dirichlet-spread random sample, then {ROUNDS} rounds of mutating the "
             f"best {ELITE} (seed {seed})"]
    return DataflowPlans(spec.name, dsp.id, "mapping", objective, rows, seen, notes)
