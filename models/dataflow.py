"""Cost model of the dataflow family: a kernel on a DSP or spatial array → named time parts (seconds), energy parts
(joules) and bytes, summing to the totals.  Two views (``models/dataflow_terms.py`` for inductive loop nests on
cores × vector lanes, REVEL's formulas; ``models/dataflow_energy.py`` for Timeloop-style mappings of convolutions
and GEMMs on a storage hierarchy, ``models/dataflow_price.py`` its cut for the mapspace search: fit, cycles, energy).

A plan string for loop nests: ``cores=8,vector=on,unroll=2,sync=barrier`` — cores (lanes) used, vectorized or
scalar code, unroll factor (≤ the device's ``max_unroll``), hand-off mode (one the device has).  Missing keys
default to every core, vectorized, unroll 1, the device's first sync mode.  Problems are priced per mapping
(``estimate_mapping``); the planner searches mappings.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, short
from parplan.models.plan_pairs import plan_pairs
from parplan.models.dataflow_energy import evaluate_mappings, storage_view
from parplan.models.dataflow_terms import ENERGY_PARTS, SYNC_MODES, TIME_PARTS, nest_energy, nest_terms

PLAN_KEYS = ("cores", "vector", "unroll", "sync")


@dataclass(frozen=True)
class DataflowEstimate:
    workload: str
    device: str
    view: str  # "nest" (cores × lanes) or "mapping" (storage hierarchy)
    plan: dict
    parts: dict  # seconds
    total_s: float
    energy_parts: dict  # joules
    energy_j: float
    cycles: float
    macs: float
    utilization: float
    bytes: dict = field(default_factory=dict)  # named byte counts
    notes: list = field(default_factory=list)

    @property
    def edp(self) -> float:
        return self.energy_j * self.total_s

    @property
    def pj_per_mac(self) -> float:
        return self.energy_j / self.macs * 1e12 if self.macs else 0.0

    def plan_string(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.plan.items() if k != "mapping")

    def to_dict(self) -> dict:
        return {"workload": self.workload, "device": self.device, "view": self.view, "plan": self.plan_string(),
                **{k: v for k, v in self.plan.items() if k != "mapping"}, "total_s": self.total_s,
                "cycles": self.cycles, "energy_j": self.energy_j, "edp_js": self.edp, "macs": self.macs,
                "pj_per_mac": self.pj_per_mac, "utilization": self.utilization,
                "breakdown_s": dict(self.parts), "energy_breakdown_j": dict(self.energy_parts),
                "bytes": dict(self.bytes), **({"mapping": self.plan["mapping"]} if "mapping" in self.plan else {}),
                "notes": list(self.notes)}


def require_cores(dsp) -> None:
    if not dsp.has_cores:
        raise SpecError(f"{dsp.name} has no vector-core description (cores, vector_width, latency_cycles): it maps "
                        "problem: workloads (convolutions, GEMM) on its storage hierarchy", key="--hw",
                        hint="use a DSP (c6678, tda4vm-c7x, …) or revel-8lane for inductive kernels")


def parse_plan(text: "str | None", spec, dsp) -> dict:
    """A validated nest plan from ``key=value,…`` (bad keys, values and combinations are SpecErrors)."""
    require_cores(dsp)
    modes = dsp.sync_modes()
    plan = {"cores": dsp.cores, "vector": "on", "unroll": 1, "sync": modes[0] if modes else "barrier"}
    for k, val in plan_pairs(text, PLAN_KEYS):
        if k == "vector":
            if val not in ("on", "off"):
                raise SpecError(f"bad value {short(val)}", key="--plan vector", allowed=["on", "off"])
            plan[k] = val
        elif k == "sync":
            if val not in modes:
                raise SpecError(f"{dsp.name} has no {short(val)} hand-off", key="--plan sync", allowed=modes)
            plan[k] = val
        else:
            try:
                plan[k] = int(val)
            except ValueError:
                raise SpecError(f"bad value {short(val)}: {k} is a whole number", key=f"--plan {k}") from None
    if not 1 <= plan["cores"] <= dsp.cores:
        raise SpecError(f"cores = {plan['cores']}: {dsp.name} has {dsp.cores}", key="--plan cores",
                        hint=f"1..{dsp.cores}")
    if not 1 <= plan["unroll"] <= dsp.max_unroll:
        raise SpecError(f"unroll = {plan['unroll']}: {dsp.name} unrolls up to {dsp.max_unroll}", key="--plan unroll",
                        hint=f"1..{dsp.max_unroll}")
    if plan["sync"] not in modes and plan["cores"] > 1:
        raise SpecError(f"{dsp.name} has no hand-off mode for {plan['cores']} cores", key="--plan sync")
    dsp.width(spec.dtype)  # dtype supported
    return plan


def evaluate_nest(nest, dsp, dtype, c, vec, U, mode) -> dict:
    """Time and energy parts for arrays of nest configurations (one formula for estimate and search)."""
    t = nest_terms(nest, dsp, c, vec, U, mode, dtype)
    e = nest_energy(nest, dsp, t, c, dtype)
    t.update(e)
    t["edp_js"] = t["energy_j"] * t["total_s"]
    return t


def _finite(total_s: float, dsp) -> float:
    """The latency itself, or an error where the device's figures leave it beyond a float (never a result)."""
    if not math.isfinite(total_s):
        raise SpecError(f"the latency on {dsp.name} is not a finite time: its clock, rates or bandwidths are outside "
                        "what the model can price", key="--hw", hint="check them against the device's datasheet")
    return total_s


def estimate_plan(spec, dsp, plan: dict) -> DataflowEstimate:
    nest = spec.nest()
    mode = SYNC_MODES.index(plan["sync"]) if plan["sync"] in SYNC_MODES else 0
    o = evaluate_nest(nest, dsp, spec.dtype, [plan["cores"]], [plan["vector"] == "on"], [plan["unroll"]], [mode])
    parts = {k: float(o[k][0]) for k in TIME_PARTS}
    eparts = {k: float(o[k][0]) for k in ENERGY_PARTS}
    level = int(o["memory_level"][0])
    names = [m.name for m in dsp.memory] + ["DRAM"]
    notes = [f"working set {nest.working_set_bytes:,.0f} B held in {names[level]}"]
    if not o["energy_known"]:
        notes.append(f"{dsp.name} publishes no per-op energy or power: energy is not estimated")
    elif not dsp.mac_energy_j and dsp.static_power_w is None:
        notes.append(f"no per-op energies for {dsp.name}: energy = its power figure × latency (static_j)")
    return DataflowEstimate(spec.name, dsp.id, "nest", dict(plan), parts, _finite(float(o["total_s"][0]), dsp), eparts,
                            float(o["energy_j"][0]), float(o["cycles"][0]), nest.macs, float(o["utilization"][0]),
                            {"moved_bytes": float(nest.bytes.sum()), "working_set_bytes": nest.working_set_bytes},
                            notes)


def mapping_estimate(spec, dsp, T, S, perm, *, plan_doc: "dict | None" = None, priced: "dict | None" = None,
                     i: int = 0) -> DataflowEstimate:
    """One mapping (arrays of shape (1, L, 7)) as an estimate with parts per level; ``priced``: the
    ``evaluate_mappings`` output of a batch holding it at row ``i`` instead (T, S, perm are then unused)."""
    problem = spec.problem
    levels, mac_inst, mac_e = storage_view(dsp, problem.dtype)
    if priced is None:
        o = evaluate_mappings(problem, levels, mac_inst, mac_e, T, S, perm)
    else:
        o = {k: v[i:i + 1] for k, v in priced.items() if k != "per_tensor"}
    if not bool(o["valid"][0]):
        raise SpecError("the mapping does not fit the architecture (spatial fan-out or a level's capacity)",
                        key="mapping", hint="parplan suggest searches mappings that fit")
    hz = dsp.clock_hz
    comp = float(o["compute_cycles"][0])
    lc = o["level_cycles"][0]
    worst = int(np.argmax(lc))
    parts = {"compute_s": comp / hz, "bandwidth_s": max(0.0, float(lc[worst]) - comp) / hz}
    eparts = {"mac_j": float(o["mac_j"][0])}
    by = {}
    for l, lv in enumerate(levels):
        eparts[f"{lv.name}_j"] = float(o["level_j"][0, l])
        by[f"{lv.name}_bytes"] = float((o["reads"][0, l] + o["writes"][0, l]) * o["util"][0, l] * lv.word_bits / 8)
    notes = []
    from parplan.workloads.dataflow_kernels import DTYPE_BYTES

    bits = 8 * DTYPE_BYTES.get(problem.dtype, 0)
    if bits and any(lv.word_bits != bits for lv in levels):  # the architecture's words set the precision (Timeloop)
        notes.append(f"the problem's {problem.dtype} is priced in the architecture's words "
                     f"({', '.join(sorted({f'{lv.word_bits}-bit' for lv in levels}))}): a word per value")
    if parts["bandwidth_s"] > 0:
        notes.append(f"bandwidth-bound at {levels[worst].name}")
    if dsp.derived_storage and not dsp.mac_energy_j:
        p = dsp.static_power_w or dsp.power_w
        if p:
            eparts["static_j"] = p * sum(parts.values())
            notes.append("no per-access energies: energy = power × time")
    plan = {"macs_used": int(o["utilized_macs"][0]), **(plan_doc or {})}
    total = _finite(sum(parts.values()), dsp)
    e = sum(eparts.values())
    return DataflowEstimate(spec.name, dsp.id, "mapping", plan, parts, total, eparts, e, float(o["cycles"][0]),
                            problem.macs, float(o["utilization"][0]), by, notes)


def mapping_doc(levels, T, S, perm, i: int = 0) -> list:
    """A mapping as Timeloop-like entries, outermost first (the ``mapping:`` workload format)."""
    from parplan.workloads.dataflow import DIMS

    out = []
    for l in range(len(levels) - 1, -1, -1):
        tmp = {DIMS[d]: int(T[i, l, d]) for d in range(len(DIMS)) if T[i, l, d] > 1}
        sp = {DIMS[d]: int(S[i, l, d]) for d in range(len(DIMS)) if S[i, l, d] > 1}
        order = "".join(DIMS[d] for d in perm[i, l] if T[i, l, d] > 1)
        out.append({"level": levels[l].name, "temporal": tmp, "spatial": sp, "order": order})
    return out
