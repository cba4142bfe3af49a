"""Search space of DiT inference plans: SP kind (ulysses | ring | usp | torus) × Ulysses degree u (divisors of the
heads per TP rank) × ring degree r (divisors of the cluster's devices) × tp × data-parallel replicas × comm (two- |
one-sided) × torus chunks, every valid plan priced at once by ``models.dit.layer_terms`` (the formula ``estimate``
prints) and ranked by step latency or by samples/s per GPU; plans that do not fit the device memory come last.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError
from parplan.models import dit_terms as T
from parplan.models.dit import PARTS, hidden_fraction, layer_terms, memory_bytes, plan_arrays, problems

OBJECTIVES = ("latency", "throughput")
MAX_PLANS = 200_000


@dataclass
class DiTPlans:
    workload: str
    cluster: str
    objective: str
    rows: list
    n_plans: int
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "cluster": self.cluster, "objective": self.objective,
                "plans_searched": self.n_plans, "plans": self.rows, "notes": self.notes}


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_plans(spec, c, fix: "dict | None" = None) -> list:
    fix = dict(fix or {})
    N, H = c.n_devices, spec.arch.heads
    out = []
    sps = [fix["sp"]] if "sp" in fix else list(spec.sp)
    tps = [int(fix["tp"])] if "tp" in fix else [t for t in spec.tp if t <= c.dpn]
    comms = [fix["comm"]] if "comm" in fix else list(spec.comm)
    dps = [int(fix["dp"])] if "dp" in fix else ([d for d in _divisors(N) if d <= spec.batch] if spec.search_dp
                                                else [1])
    for sp in sps:
        for tp in tps:
            us = [int(fix["u"])] if "u" in fix else ([1] if sp == "ring" else _divisors(max(H // tp, 1)))
            for u in us:
                rs = [int(fix["r"])] if "r" in fix else ([1] if sp == "ulysses" else _divisors(N))
                for r in rs:
                    for dp in dps:
                        if dp * tp * u * r > N:
                            continue
                        ks = [int(fix["chunks"])] if "chunks" in fix else (list(spec.chunks) if sp == "torus"
                                                                          else [1])
                        for k in ks:
                            for comm in comms:
                                p = {"sp": sp, "u": u, "r": r, "tp": tp, "dp": dp, "comm": comm, "chunks": k}
                                if not problems(spec, c, p):
                                    out.append(p)
                                if len(out) > MAX_PLANS:
                                    raise SpecError(f"more than {MAX_PLANS:,} plans", key="--fix",
                                                    hint="fix sp, tp or dp")
    return out


def search(spec, cluster, *, fix: "dict | None" = None, top: int = 10, objective: "str | None" = None) -> DiTPlans:
    objective = objective or "latency"
    if objective not in OBJECTIVES:
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=list(OBJECTIVES))
    c = T.dit_context(spec, cluster)
    plans = enumerate_plans(spec, c, fix)
    if not plans:
        raise SpecError(f"no valid plan for {spec.name} on {cluster.name} with these settings",
                        key="--fix" if fix else "search", hint="the workload's search: lists and the plan rules of "
                        "docs/dit.md")
    P = plan_arrays(plans)
    t = layer_terms(spec, c, P)
    step = t["total_s"]
    mem = memory_bytes(spec, c, P)
    bad = mem > c.memory_bytes
    devices = P["dp"] * P["tp"] * P["u"] * P["r"]
    done = np.minimum(spec.batch, P["dp"] * t["batch"])
    lat = spec.steps * step
    tput = done / lat / devices
    key = lat if objective == "latency" else -tput
    order = np.lexsort((devices, key, bad))  # misfits last, then the objective, then fewer devices
    hf = hidden_fraction(t)
    rows = []
    for rank, i in enumerate(order[:top or len(order)], 1):
        p = plans[int(i)]
        rows.append({"rank": rank, **p, "devices": int(devices[i]), "step_s": float(step[i]),
                     "latency_s": float(lat[i]), "samples_per_s_per_gpu": float(tput[i]),
                     "hidden_fraction": float(hf[i]), "memory_bytes": float(mem[i]), "fits": not bool(bad[i]),
                     **{k: float(t["parts"][k][i]) for k in PARTS}})
    return DiTPlans(spec.name, cluster.name, objective, rows, len(plans))
