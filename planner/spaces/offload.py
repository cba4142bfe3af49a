"""Search space of the offload family's kernel chains: where each stage runs (cpu | an accelerator), device residency
between stages, chunks (transfer/compute overlap) and API (actor | native), at every size of the workload's sweep —
the best plan per size (or the top plans at one pinned size), plans that do not fit the device memory last with the
reason, and each accelerator's break-even size n* against the all-CPU chain (SEEDS.md S13(b)).

Placements are enumerated in full up to ``MAX_PLACEMENTS`` ((accelerators + 1)^stages); beyond that only uniform
placements (every stage on one place) are searched, and the result says so.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError
from parplan.models.offload import TIME_PARTS, break_even, chain_terms, fit_reasons, requests_time

MAX_PLACEMENTS = 1024


@dataclass
class OffloadPlans:
    workload: str
    node: str
    rows: list  # dicts: best plan per size (or top plans at a pinned n)
    break_even: list  # per accelerator: {accelerator, n_star, api}
    n_configs: int
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "node": self.node, "configurations": self.n_configs,
                "break_even": self.break_even, "plans": self.rows, "notes": self.notes}


def placements(spec, node) -> tuple[list, list]:
    ids = ["cpu"] + [a.id for a in node.accelerators]
    L = len(spec.kernels)
    if len(ids) ** L <= MAX_PLACEMENTS:
        return [tuple(p) for p in itertools.product(ids, repeat=L)], []
    return [(i,) * L for i in ids], [f"{len(ids)}^{L} placements is above {MAX_PLACEMENTS}: only uniform "
                                     "placements (every stage on one place) were searched"]


def search(spec, node, *, fix: "dict | None" = None, top: int = 10) -> OffloadPlans:
    if spec.is_heritage:
        raise SpecError("a heritage workload has no kernel-chain search", key="heritage",
                        hint="parplan estimate prints its texture-vs-octree report")
    fix = dict(fix or {})
    places, notes = placements(spec, node)
    if "place" in fix:
        places = [fix["place"]]
    residents = [fix["resident"]] if "resident" in fix else [True, False]
    chunks = [int(fix["chunks"])] if "chunks" in fix else list(spec.chunks)
    apis = [fix["api"]] if "api" in fix else list(spec.apis)
    sizes = [float(fix["n"])] if "n" in fix else list(spec.sizes)
    n = np.asarray(sizes, dtype=float)
    cands = []
    for pl, res, k, api in itertools.product(places, residents, chunks, apis):
        plan = {"place": pl, "resident": res, "chunks": k, "api": api}
        one = chain_terms(spec, node, plan, n)
        t_r, neck = requests_time(one, spec.requests)
        cands.append((plan, one, np.broadcast_to(t_r, n.shape), np.broadcast_to(neck, n.shape)))
    cpu_ref = {}  # the all-CPU chain's time for the workload's requests, per API
    for a in apis:
        one = chain_terms(spec, node, {"place": ("cpu",) * len(spec.kernels), "resident": True, "chunks": 1,
                                       "api": a}, n)
        cpu_ref[a] = requests_time(one, spec.requests)[0]
    rows = []
    for j, size in enumerate(sizes):
        scored = []
        for plan, one, t_r, neck in cands:
            reasons = fit_reasons(spec, node, {**plan, "n": size}, size)
            scored.append((bool(reasons), float(t_r[j]), plan, one, str(neck[j]), reasons))
        scored.sort(key=lambda s: (s[0], s[1]))
        keep = scored[:top or len(scored)] if len(sizes) == 1 else scored[:1]
        for rank, (bad, t, plan, one, neck, reasons) in enumerate(keep, 1):
            cpu = float(np.broadcast_to(cpu_ref[plan["api"]], n.shape)[j])
            rows.append({"rank": rank, "n": size, "place": "+".join(plan["place"]), "resident": plan["resident"],
                         "chunks": plan["chunks"], "api": plan["api"], "fits": not bad,
                         "total_s": float(np.broadcast_to(one["total_s"], n.shape)[j]), "requests": spec.requests,
                         "requests_s": t, "bottleneck": neck, "cpu_s": cpu,
                         "speedup": cpu / t,
                         **{k: float(np.broadcast_to(one[k], n.shape)[j]) for k in TIME_PARTS},
                         "reasons": reasons})
    be = []
    for a in node.accelerators:
        for api in apis:
            plan = {"place": (a.id,) * len(spec.kernels), "resident": True, "chunks": 1, "api": api}
            be.append({"accelerator": a.id, "kind": a.kind, "api": api, "n_star": break_even(spec, node, plan)})
    return OffloadPlans(spec.name, node.name, rows, be, len(cands) * len(sizes), notes)
