"""Search space of the task-graph family: runtime × threads per socket × sockets × grain × MPI ranks per node, priced
in one vectorized call of ``models.tasks.evaluate`` and ranked by predicted run time.

Threads per socket: powers of two below the core count, the core count, and cores × SMT; sockets 1..per node;
ranks per node: the divisors of threads × sockets among 1, sockets, 2·sockets, … (hybrid MPI × OpenMP, S20) —
only for workloads with an ``mpi`` block (otherwise 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.tasks import evaluate
from parplan.models.tasks_terms import TIME_PARTS, profiles

MAX_CONFIGS = 2_000_000


def thread_counts(cores: int, smt: int) -> list[int]:
    out, p = [], 1
    while p < cores:
        out.append(p)
        p *= 2
    out.append(cores)
    if smt > 1:
        out.append(cores * smt)
    return out


def rank_counts(threads_node: int, sockets: int) -> list[int]:
    cands = {1, sockets}
    r = sockets
    while r <= threads_node:
        cands.add(r)
        r *= 2
    cands.add(threads_node)
    return sorted(c for c in cands if c >= 1 and threads_node % c == 0)


@dataclass
class TaskPlans:
    workload: str
    machine: str
    rows: list  # dicts sorted by total_s
    n_configs: int

    def to_dict(self) -> dict:
        return {"workload": self.workload, "machine": self.machine, "configurations": self.n_configs,
                "plans": self.rows}


def search(spec, machine, *, runtimes=None, fix: "dict | None" = None, top: int = 10) -> TaskPlans:
    """Every configuration priced, sorted by run time; ``fix`` pins plan keys (runtime, threads, sockets, grain,
    ranks)."""
    fix = dict(fix or {})
    prof = profiles(runtimes, socket=machine.socket)
    sock = machine.socket
    summary = spec.summary()
    grains = list(spec.grains) if spec.dag is None else [0]
    axes = {"runtime": list(range(len(prof.names))), "threads": thread_counts(sock.cores, sock.smt),
            "sockets": list(range(1, machine.sockets_per_node + 1)), "grain": list(range(len(grains)))}
    if "runtime" in fix:
        if fix["runtime"] not in prof.names:
            raise SpecError(f"unknown runtime {fix['runtime']!r}", key="--fix runtime", allowed=list(prof.names))
        axes["runtime"] = [prof.names.index(fix["runtime"])]
    for k in ("threads", "sockets"):
        if k in fix:
            axes[k] = [int(fix[k])]
    if "grain" in fix:
        if int(fix["grain"]) not in grains:
            raise SpecError(f"grain {fix['grain']} is not one of the workload's", key="--fix grain",
                            allowed=[str(g) for g in grains])
        axes["grain"] = [grains.index(int(fix["grain"]))]
    # the product runtime × threads × sockets × grain (grain fastest), each row followed by its rank counts:
    # built as arrays (rank lists per distinct threads × sockets, padded and masked) — no per-plan Python objects
    r, t, s, g = (x.ravel() for x in np.meshgrid(axes["runtime"], axes["threads"], axes["sockets"], axes["grain"],
                                                 indexing="ij"))
    pair, pinv = np.unique(np.stack([t, s]), axis=1, return_inverse=True)
    lists = []
    for tt, ss in pair.T.tolist():
        ranks = [int(fix["ranks"])] if "ranks" in fix else (rank_counts(tt * ss, ss) if spec.mpi is not None else [1])
        lists.append([k for k in ranks if (tt * ss) % k == 0])
    width = max([len(x) for x in lists] + [1])
    ks = np.zeros((len(lists), width))
    valid = np.zeros((len(lists), width), bool)
    for i, x in enumerate(lists):
        ks[i, :len(x)] = x
        valid[i, :len(x)] = True
    rows_k, rows_ok = ks[pinv.reshape(-1)], valid[pinv.reshape(-1)]
    n_combos = int(rows_ok.sum())
    if n_combos == 0:
        raise SpecError("no configuration is left after --fix", key="--fix")
    if n_combos > MAX_CONFIGS:
        raise SpecError(f"{n_combos:,} configurations is above {MAX_CONFIGS:,}", key="--fix")
    base = np.repeat(np.arange(len(r)), width).reshape(len(r), width)[rows_ok]
    a = np.stack([r[base], t[base], s[base], g[base], rows_k[rows_ok]]).astype(float)
    out = evaluate(spec, machine, a[0].astype(int), a[1], a[2], a[3].astype(int), a[4], prof=prof, summary=summary)
    order = np.argsort(out["total_s"], kind="stable")
    n = len(order) if top == 0 else min(top, len(order))
    rows = []
    for rank, i in enumerate(order[:n], 1):
        gi = int(a[3][i])
        rows.append({"rank": rank, "runtime": prof.names[int(a[0][i])], "threads": int(a[1][i]),
                     "sockets": int(a[2][i]), "grain": int(grains[gi]), "ranks": int(a[4][i]),
                     "grain_s": float(summary.grain_s[gi]), "total_s": float(out["total_s"][i]),
                     "speedup": float(out["speedup"][i]), **{k: float(out[k][i]) for k in TIME_PARTS}})
    return TaskPlans(spec.name, machine.name, rows, n_combos)
