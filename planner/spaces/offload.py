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
from parplan.models.offload_batch import price_placements

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


def _bottleneck(spec, node, plan: dict, n: float) -> str:
    """The resource that bounds a returned plan's request stream (requests_time on the plan alone: the same busy
    seconds, in the same order, as its row in the search)."""
    return str(requests_time(chain_terms(spec, node, plan, n), spec.requests)[1])


def price_space(spec, node, fix: "dict | None" = None) -> dict:
    """Every placement × residency × chunks × API × size priced, every placement of one residency at once
    (``models.offload_batch.price_placements``: the figures of ``chain_terms`` + ``requests_time`` per placement,
    bit for bit): ``t_r`` (R requests), ``bad`` (misfits) and ``parts`` (TIME_PARTS and ``total_s``), each [N, S] in
    the order of itertools.product(places, residents, chunks, apis) × sizes, with the axes that produced them."""
    fix = dict(fix or {})
    places, notes = placements(spec, node)
    if "place" in fix:
        places = [fix["place"]]
    residents = [fix["resident"]] if "resident" in fix else [True, False]
    chunks = [int(fix["chunks"])] if "chunks" in fix else list(spec.chunks)
    apis = [fix["api"]] if "api" in fix else list(spec.apis)
    sizes = [float(fix["n"])] if "n" in fix else list(spec.sizes)
    n = np.asarray(sizes, dtype=float)
    C, A, S = len(chunks), len(apis), len(sizes)
    k_grid = np.asarray(chunks, dtype=float)[:, None, None]  # chunks × API × sizes
    api_grid = np.asarray(apis)[None, :, None]
    shape = (C, A, S)
    priced = [price_placements(spec, node, places, res, k_grid, api_grid, n) for res in residents]
    N = len(places) * len(residents) * C * A

    def flat(get):  # [placements, residents, C, A, S] → [N, S] (the product's order)
        return np.stack([np.broadcast_to(get(p), (len(places), *shape)) for p in priced], axis=1).reshape(N, S)

    return {"places": places, "residents": residents, "chunks": chunks, "apis": apis, "sizes": sizes, "n": n,
            "notes": notes, "t_r": flat(lambda p: p["t_r"]), "bad": flat(lambda p: p["bad"]),
            "parts": {key: flat(lambda p, key=key: p["parts"][key]) for key in (*TIME_PARTS, "total_s")}}


def search(spec, node, *, fix: "dict | None" = None, top: int = 10) -> OffloadPlans:
    """Every placement × residency × chunks × API × size priced (``price_space``: the formula ``estimate`` uses);
    reasons and rows are built only for the plans returned."""
    if spec.is_heritage:
        raise SpecError("a heritage workload has no kernel-chain search", key="heritage",
                        hint="parplan estimate prints its texture-vs-octree report")
    sp = price_space(spec, node, fix)
    places, residents, chunks, apis, sizes, n = (sp[k] for k in ("places", "residents", "chunks", "apis", "sizes", "n"))
    t_r, bad, parts, notes = sp["t_r"], sp["bad"], sp["parts"], sp["notes"]
    C, A, S = len(chunks), len(apis), len(sizes)
    N = len(t_r)

    def plan_of(i: int) -> dict:
        p, rest = divmod(i, len(residents) * C * A)
        r, rest = divmod(rest, C * A)
        c, a_ = divmod(rest, A)
        return {"place": places[p], "resident": residents[r], "chunks": chunks[c], "api": apis[a_]}

    cpu_ref = {}  # the all-CPU chain's time for the workload's requests, per API
    for a in apis:
        one = chain_terms(spec, node, {"place": ("cpu",) * len(spec.kernels), "resident": True, "chunks": 1,
                                       "api": a}, n)
        cpu_ref[a] = requests_time(one, spec.requests)[0]
    rows = []
    for j, size in enumerate(sizes):
        order = np.lexsort((t_r[:, j], bad[:, j]))  # misfits last, then time; ties keep the enumeration order
        keep = order[:top or N] if S == 1 else order[:1]
        for rank, i in enumerate(keep, 1):
            plan = plan_of(int(i))
            t = float(t_r[i, j])
            cpu = float(np.broadcast_to(cpu_ref[plan["api"]], n.shape)[j])
            rows.append({"rank": rank, "n": size, "place": "+".join(plan["place"]), "resident": plan["resident"],
                         "chunks": plan["chunks"], "api": plan["api"], "fits": not bool(bad[i, j]),
                         "total_s": float(parts["total_s"][i, j]), "requests": spec.requests,
                         "requests_s": t, "bottleneck": _bottleneck(spec, node, plan, size), "cpu_s": cpu,
                         "speedup": cpu / t,
                         **{k: float(parts[k][i, j]) for k in TIME_PARTS},
                         "reasons": fit_reasons(spec, node, {**plan, "n": size}, size)})
    be = []
    for a in node.accelerators:
        for api in apis:
            plan = {"place": (a.id,) * len(spec.kernels), "resident": True, "chunks": 1, "api": api}
            be.append({"accelerator": a.id, "kind": a.kind, "api": api, "n_star": break_even(spec, node, plan)})
    return OffloadPlans(spec.name, node.name, rows, be, N * S, notes)
