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


def _check_pinned(fix: dict, machine) -> None:
    """Pinned threads, sockets and ranks within the machine's bounds (those ``models.tasks.validate`` holds an
    estimate's plan to), so that a search never prices a plan the machine cannot run."""
    sock = machine.socket
    most = sock.cores * sock.smt
    if "threads" in fix and not 1 <= int(fix["threads"]) <= most:
        raise SpecError(f"threads = {fix['threads']} per socket: {sock.name} has {sock.cores} cores × {sock.smt} SMT",
                        key="--fix threads", hint=f"1..{most}")
    if "sockets" in fix and not 1 <= int(fix["sockets"]) <= machine.sockets_per_node:
        raise SpecError(f"sockets = {fix['sockets']}: {machine.name} has {machine.sockets_per_node} per node",
                        key="--fix sockets", hint=f"1..{machine.sockets_per_node}")
    if "ranks" in fix and int(fix["ranks"]) < 1:
        raise SpecError(f"ranks = {fix['ranks']}: at least one rank per node", key="--fix ranks",
                        hint="a whole number ≥ 1 dividing threads × sockets")


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
    _check_pinned(fix, machine)
    if "grain" in fix:
        if int(fix["grain"]) not in grains:
            raise SpecError(f"grain {fix['grain']} is not one of the workload's", key="--fix grain",
                            allowed=[str(g) for g in grains])
        axes["grain"] = [grains.index(int(fix["grain"]))]
    # the plans: runtime × (threads, sockets) × grain (grain fastest), each followed by the rank counts of its
    # threads × sockets; priced on broadcast axes — runtime [R, 1, 1], (threads, sockets, ranks) combination
    # [1, C, 1], grain [1, 1, G] — so each term is computed at the axes it depends on (the same floats per plan as a
    # flat array of plans), then read in the plans' order through one index array
    ct, cs, ck, blocks = [], [], [], []
    G = len(axes["grain"])
    for tt in axes["threads"]:
        for ss in axes["sockets"]:
            ranks = [int(fix["ranks"])] if "ranks" in fix else (rank_counts(tt * ss, ss) if spec.mpi is not None
                                                                 else [1])
            ks = [k for k in ranks if (tt * ss) % k == 0]
            c0 = len(ct)
            ct += [tt] * len(ks)
            cs += [ss] * len(ks)
            ck += ks
            blocks.append((c0 + np.arange(len(ks)))[None, :] * G + np.arange(G)[:, None])  # [grain, rank count]
    C, Rn = len(ct), len(axes["runtime"])
    n_combos = Rn * C * G
    if n_combos == 0:
        raise SpecError("no configuration is left after --fix", key="--fix")
    if n_combos > MAX_CONFIGS:
        raise SpecError(f"{n_combos:,} configurations is above {MAX_CONFIGS:,}", key="--fix")
    ridx, gidx = np.array(axes["runtime"]), np.array(axes["grain"])
    ct, cs, ck = (np.array(x, dtype=float) for x in (ct, cs, ck))
    out = evaluate(spec, machine, ridx[:, None, None], ct[None, :, None], cs[None, :, None], gidx[None, None, :],
                   ck[None, :, None], prof=prof, summary=summary)
    plan = (np.arange(Rn)[:, None] * (C * G) + np.concatenate([b.ravel() for b in blocks])[None, :]).ravel()
    total = np.broadcast_to(out["total_s"], (Rn, C, G)).reshape(-1)
    order = plan[_ranked(total[plan], top)]  # the ranked plans' places on the axes
    at = np.unravel_index(order, (Rn, C, G))
    col = {k: np.broadcast_to(out[k], (Rn, C, G))[at].tolist() for k in ("total_s", "speedup") + TIME_PARTS}
    gsel = gidx[at[2]]
    keys = zip(ridx[at[0]].tolist(), ct[at[1]].tolist(), cs[at[1]].tolist(), gsel.tolist(), ck[at[1]].tolist(),
               summary.grain_s[gsel].tolist())
    rows = []
    for i, (ri, tt, ss, g, kk, gs) in enumerate(keys):
        rows.append({"rank": i + 1, "runtime": prof.names[ri], "threads": int(tt), "sockets": int(ss),
                     "grain": int(grains[g]), "ranks": int(kk), "grain_s": gs, "total_s": col["total_s"][i],
                     "speedup": col["speedup"][i], **{k: col[k][i] for k in TIME_PARTS}})
    return TaskPlans(spec.name, machine.name, rows, n_combos)


def _ranked(total: np.ndarray, top: int) -> np.ndarray:
    """The first ``top`` (0: all) indices of the stable ascending order of ``total``, without sorting past them:
    every index up to the top-th smallest value, ties included, sorted stably."""
    if top == 0 or top >= len(total):
        return np.argsort(total, kind="stable")
    kth = np.partition(total, top - 1)[top - 1]
    if not np.isfinite(kth):  # NaN or ∞ among the first: the full sort's order
        return np.argsort(total, kind="stable")[:top]
    near = np.flatnonzero(total <= kth)
    return near[np.argsort(total[near], kind="stable")][:top]
