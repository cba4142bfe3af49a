"""Reference executor of the process-network family: a stream of items played through the replicated stages of one
variant on the shared engine (``executor/engine.py``) — one stream per replica (a core), item j of stage i on
replica j mod r_i (round-robin, as a mAPN parallel region distributes tokens), each op waiting for the item's
previous stage.

Two plays: (1) every item available at once — the steady-state completion rate over the second half of the items
is the throughput; (2) a source paced at that measured rate (a source stream of one op per item) — the mean
latency of the second half, and the energy per item from the cores' busy and idle time over that window (busy:
the op's busy energy; idle: P_idle × the replica cores' remaining time).  Nothing of the closed form's X, L or E is
used by the plays.
"""
from __future__ import annotations

import numpy as np

from parplan.executor import engine as E
from parplan.planner.spaces.variants import parse_variant, single

DEFAULT_ITEMS = 400
MAX_ITEMS = 100_000


def _program(stage_t, stage_r, n_items: int, period: float = 0.0):
    prog = E.Program()
    src = prog.add_stream("source", -1) if period > 0 else None
    streams = [[prog.add_stream(f"s{i}.r{k}", i) for k in range(int(r))] for i, r in enumerate(stage_r)]
    ops = np.zeros((len(stage_t), n_items), dtype=int)
    rel = np.full(n_items, -1)
    for j in range(n_items):
        prev = -1
        if src is not None:
            prev = prog.add_op(E.OPTIMIZER, src, period)  # the source releases item j at the end of this op
            rel[j] = prev
        for i, (t, r) in enumerate(zip(stage_t, stage_r)):
            o = prog.add_op(E.FWD, streams[i][j % int(r)], float(t), mb=j, part=i)
            if prev >= 0:
                prog.dep(prev, o)
            ops[i, j] = o
            prev = o
    return prog, ops, rel


def play(spec, platform, choice: list, n_items: int = DEFAULT_ITEMS) -> dict:
    if not 8 <= n_items <= MAX_ITEMS:
        raise ValueError(f"n_items {n_items} outside [8, {MAX_ITEMS}]")
    cols, m = single(spec, platform, choice)
    t = [float(c["t"][0]) for c in cols]
    r = [int(c["r"][0]) for c in cols]
    e = [float(c["e"][0]) for c in cols]
    ct = [int(c["ctype"][0]) for c in cols]
    prog, ops, _ = _program(t, r, n_items)
    res = E.run(prog)
    last = np.array([res.end[o] for o in ops[-1]])
    h = n_items // 2
    X = (n_items - h) / (last[-1] - last[h - 1])
    prog, ops, rel = _program(t, r, n_items, period=1.0 / X)
    res = E.run(prog)
    start = np.array([res.end[o] for o in rel])  # release times
    done = np.array([res.end[o] for o in ops[-1]])
    lat = float((done[h:] - start[h:]).mean())
    # energy over the window of items h..n−1 released: busy energy of their ops + idle power of every replica core
    w0, w1 = start[h - 1], start[-1]
    items = n_items - h
    idle = 0.0
    for i in range(len(t)):
        busy = 0.0
        for j in range(n_items):
            a, b = res.start[ops[i, j]], res.end[ops[i, j]]
            busy += max(0.0, min(b, w1) - max(a, w0))
        idle += platform.core_types[ct[i]].power_idle_w * max(r[i] * (w1 - w0) - busy, 0.0)
    active = sum(e)  # each item's busy energy is the op's (durations are the stage times)
    return {"throughput_per_s": float(X), "latency_s": lat, "energy_per_item_j": active + idle / items,
            "predicted": {k: float(m[k][0]) for k in ("throughput_per_s", "latency_s", "energy_per_item_j")}}


def agreement(model, hw, *, plans: "list[str] | None" = None, top: int = 4, n_items: int = DEFAULT_ITEMS) -> list:
    """Closed form vs the engine for the Pareto set's first ``top`` variants (or ``plans``) of a workload."""
    from parplan.hardware.platform import load_platform
    from parplan.planner.spaces.variants import search
    from parplan.workloads.variants import load_variants

    spec, plat = load_variants(model), load_platform(hw)
    if plans is None:
        plans = [r["plan"] for r in search(spec, plat, top=top).rows]
    rows = []
    for text in plans:
        p = play(spec, plat, parse_variant(text, spec, plat), n_items)
        for metric in ("throughput_per_s", "latency_s", "energy_per_item_j"):
            sim, pred = p[metric], p["predicted"][metric]
            rows.append({"plan": text, "metric": metric, "simulated": sim, "predicted": pred,
                         "error": pred / sim - 1.0 if sim else 0.0})
    return rows
