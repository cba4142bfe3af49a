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
    """Metrics of V variants; ``cols[i]`` = dict of arrays for stage i: alt, r, ctype, t, e, mem, q."""
    r = np.stack([c["r"] for c in cols])  # S × V
    t = np.stack([c["t"] for c in cols])
    e = np.stack([c["e"] for c in cols])
    ct = np.stack([c["ctype"] for c in cols])
    q = np.stack([c["q"] for c in cols])
    X = (r / t).min(axis=0)  # items per second
    latency = t.sum(axis=0)
    p_idle = np.array([c.power_idle_w for c in platform.core_types])[ct]
    active = e.sum(axis=0)
    idle = (p_idle * np.maximum(r / X - t, 0.0)).sum(axis=0)  # held cores waiting for the bottleneck
    quality = q.prod(axis=0) if spec.quality_mode == "product" else q.min(axis=0)
    memory = (r * np.stack([c["mem"] for c in cols])).sum(axis=0)
    cores = np.stack([(r * (ct == j)).sum(axis=0) for j in range(len(platform.core_types))])  # types × V
    caps = np.array([c.count for c in platform.core_types])[:, None]
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
            "cores_used": cores, "feasible": ok, "checks": checks, "stage_time_s": t}


def pareto(X, E, Q) -> np.ndarray:
    """Indices of the variants no other one dominates (throughput ↑, energy per item ↓, quality ↑; one per equal
    triple), by descending throughput."""
    order = np.lexsort((-Q, E, -X))
    kx, ke, kq, keep = [], [], [], []
    for i in order:
        x, e, q = X[i], E[i], Q[i]
        if keep:
            ax, ae, aq = np.array(kx), np.array(ke), np.array(kq)
            if np.any((ax >= x) & (ae <= e) & (aq >= q)):
                continue
        keep.append(int(i))
        kx.append(x)
        ke.append(e)
        kq.append(q)
    return np.array(keep, dtype=int)
