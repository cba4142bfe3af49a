"""Cost model of the process-network family (mAPN, S16(b)): a variant picks, for every stage i, an algorithm
alternative a_i, a data-parallel degree r_i and a core type c_i (all replicas of a stage on one type).

* time on the core type: t_i = times[c] or time / relative_speed(c)
* throughput X = min_i r_i / t_i (replicas served round-robin; the slowest stage sets the rate)
* latency L = Σ_i t_i (one item through an unloaded pipeline, the source at ≤ X)
* energy per item E = Σ_i [e_i + P_idle(c_i)·(r_i/X − t_i)]: the busy part e_i = energy_j[c] or P_active(c)·t_i,
  and the stage's r_i cores idle for the rest of the r_i/X core-seconds each item holds them
* quality Q = Π_i q_i (or min_i), memory M = Σ_i r_i·mem_i
* cores: Σ_{i: c_i = c} r_i ≤ count(c) for every type c

Every function takes numpy arrays over variants (V,) per stage, so one plan and the whole enumeration run the same
code.  ``evaluate`` returns the metrics, their parts (energy: active_energy_j + idle_energy_j) and the
feasibility with the first violated constraint per variant.
"""
from __future__ import annotations

import numpy as np

ENERGY_PARTS = ("active_energy_j", "idle_energy_j")
CONSTRAINTS = ("cores", "memory", "min_throughput", "max_latency", "max_energy_per_item_j", "min_quality")


def option_table(spec, platform, stage) -> list:
    """Every (alternative, replicas, core type) of one stage with its time, busy energy, memory, quality."""
    types = platform.core_types
    allowed = stage.core_types or tuple(c.name for c in types)
    rows = []
    for ai, a in enumerate(stage.alternatives):
        for ci, c in enumerate(types):
            if c.name not in allowed:
                continue
            t = a.times_s.get(c.name, a.time_s / c.relative_speed)
            e = a.energy_j.get(c.name, c.power_active_w * t)
            for r in range(stage.r_min, stage.r_max + 1):
                rows.append((ai, r, ci, t, e, a.memory_bytes, a.quality))
    return rows


def evaluate(spec, platform, cols: list) -> dict:
    """Metrics of V variants; ``cols[i]`` = dict of arrays for stage i: alt, r, ctype, t, e, mem, q.  The arrays of
    the stages broadcast together: (V,) each for a list of variants, or stage i's options along axis i of the grid
    (the search's Cartesian product, every sum and minimum over stages built up stage by stage — shared
    sub-expressions, the same left-to-right sums as one variant's)."""
    S = len(cols)
    shape = np.broadcast_shapes(*[np.shape(c["r"]) for c in cols])
    X = cols[0]["r"] / cols[0]["t"]  # items per second: min_i r_i / t_i
    latency = cols[0]["t"]
    active = cols[0]["e"]
    quality = cols[0]["q"]
    memory = cols[0]["r"] * cols[0]["mem"]
    for c in cols[1:]:
        X = np.minimum(X, c["r"] / c["t"])
        latency = latency + c["t"]
        active = active + c["e"]
        quality = quality * c["q"] if spec.quality_mode == "product" else np.minimum(quality, c["q"])
        memory = memory + c["r"] * c["mem"]
    X, latency, active, quality, memory = (np.broadcast_to(v, shape) for v in (X, latency, active, quality, memory))
    p_idle_of = np.array([c.power_idle_w for c in platform.core_types])
    idle = None  # held cores waiting for the bottleneck: Σ_i P_idle(c_i)·(r_i/X − t_i)
    for c in cols:
        v = p_idle_of[c["ctype"]] * np.maximum(c["r"] / X - c["t"], 0.0)
        idle = v if idle is None else idle + v
    cores = []  # types × V: Σ_{i: c_i = c} r_i
    for j in range(len(platform.core_types)):
        acc = cols[0]["r"] * (cols[0]["ctype"] == j)
        for c in cols[1:]:
            acc = acc + c["r"] * (c["ctype"] == j)
        cores.append(np.broadcast_to(acc, shape))
    cores = np.stack(cores) if S else np.zeros((len(platform.core_types),) + shape)
    caps = np.array([c.count for c in platform.core_types]).reshape((-1,) + (1,) * len(shape))
    k = spec.constraints
    mem_cap = k.max_memory_bytes if k.max_memory_bytes is not None else platform.memory_bytes
    checks = {"cores": (cores <= caps).all(axis=0), "memory": memory <= mem_cap,
              "min_throughput": X >= (k.min_throughput or 0.0) * (1 - 1e-12),
              "max_latency": latency <= (k.max_latency_s if k.max_latency_s is not None else np.inf) * (1 + 1e-12),
              "max_energy_per_item_j": active + idle <= (k.max_energy_per_item_j
                                                         if k.max_energy_per_item_j is not None else np.inf) * (1 + 1e-12),
              "min_quality": quality >= (k.min_quality or 0.0) * (1 - 1e-12)}
    ok = np.logical_and.reduce([checks[c] for c in CONSTRAINTS])
    return {"throughput_per_s": X, "latency_s": latency, "energy_per_item_j": active + idle,
            "active_energy_j": active, "idle_energy_j": idle, "quality": quality, "memory_bytes": memory,
            "cores_used": cores, "feasible": ok, "checks": checks,
            "stage_time_s": np.stack([np.broadcast_to(c["t"], shape) for c in cols])}


PARETO_BLOCK = 4096


def pareto(X, E, Q) -> np.ndarray:
    """Indices of the variants no other one dominates (throughput ↑, energy per item ↓, quality ↑; one per equal
    triple), by descending throughput.

    In the order (X ↓, E ↑, Q ↓) every earlier variant has X no lower, so a variant is kept iff no earlier one has
    E no higher and Q no lower — and by transitivity it is enough to test the kept front and the earlier survivors
    of its own block: blocks of candidates are screened against the front in one array comparison, the few
    survivors against each other."""
    X, E, Q = np.asarray(X), np.asarray(E), np.asarray(Q)
    order = np.lexsort((-Q, E, -X))
    fe, fq, keep = np.empty(0), np.empty(0), []
    for b in range(0, len(order), PARETO_BLOCK):
        blk = order[b:b + PARETO_BLOCK]
        e, q = E[blk], Q[blk]
        if fe.size:
            dom = np.zeros(len(blk), bool)
            for f in range(0, fe.size, 256):  # bound the (block × front) comparison
                dom |= ((fe[None, f:f + 256] <= e[:, None]) & (fq[None, f:f + 256] >= q[:, None])).any(axis=1)
            blk, e, q = blk[~dom], e[~dom], q[~dom]
        if not len(blk):
            continue
        # survivors against the earlier survivors of the block (strictly lower triangle)
        m = len(blk)
        beaten = np.zeros(m, bool)
        for s0 in range(0, m, 512):
            sl = slice(s0, min(m, s0 + 512))
            d = (e[None, :] <= e[sl, None]) & (q[None, :] >= q[sl, None])
            d &= np.arange(m)[None, :] < np.arange(s0, sl.stop)[:, None]
            beaten[sl] = d.any(axis=1)
        blk = blk[~beaten]
        keep.extend(int(i) for i in blk)
        fe, fq = np.concatenate([fe, E[blk]]), np.concatenate([fq, Q[blk]])
    return np.array(keep, dtype=int)
