"""Work/span primitives of task-parallel execution, on numpy arrays of any broadcastable shape (seconds, counts).

* ``greedy`` — Graham/Brent: T_P ≤ T1/P + T∞ (ANCHORS.md Part B §1.1).
* ``cilkscale`` — the burdened-dag bound of OpenCilk's Cilkscale (``Cilkscale_vis/plotter.py``):
  T_P = T1/P + (1 − 1/P)·1.7·T1/PAR_b, PAR_b the burdened parallelism (ANCHORS.md Part B §1.2, H).
* ``burdened_span`` — T̂∞ = T∞ + depth·burden: every continuation/steal edge on the critical path pays a migration
  burden (Cilkview, He–Leiserson–Leiserson SPAA 2010).
* ``lock_law`` — serialized time per task on a team-wide lock, s(P) = s0 + s1·(P − 1): cache-line bouncing grows
  with contenders (S03, SEEDS.md (b)).
* ``barrier`` — centralized c·P vs tree c·⌈log2 P⌉ (S03 (b)).
* ``numa_bandwidth`` — the harmonic local/remote mix 1/BW = (1 − r)/BW_local + r/BW_remote, per-core bandwidth
  saturating at the socket's STREAM figure (ANCHORS.md Part B §1.5).
* ``halo`` — Hockney α + bytes/β per message (ANCHORS.md Part B §1.6).
"""
from __future__ import annotations

import numpy as np

SPAN_COEFFICIENT = 1.7  # Cilkscale plotter.py: "We scale the span term by 1.7 based on the span coefficient in the Cilkview paper"


def greedy(work, span, p):
    """Graham/Brent greedy-schedule bound T1/P + T∞."""
    return np.asarray(work) / p + np.asarray(span)


def cilkscale(t1, par_b, p, coeff: float = SPAN_COEFFICIENT):
    """Cilkscale's bound_runtime(T1, PAR, P) = T1/P + (1 − 1/P)·coeff·T1/PAR (T1 = measured 1-core time)."""
    p = np.asarray(p, dtype=float)
    t1 = np.asarray(t1, dtype=float)
    return t1 / p + (1.0 - 1.0 / p) * coeff * t1 / np.asarray(par_b, dtype=float)


def burdened_span(span, depth, burden):
    """T∞ plus one migration burden per spawn level on the critical path."""
    return np.asarray(span) + np.asarray(depth) * np.asarray(burden)


def span_term(span_b, p, coeff: float = SPAN_COEFFICIENT):
    """The span part of the burdened bound, (1 − 1/P)·coeff·T̂∞ (zero on one worker)."""
    p = np.asarray(p, dtype=float)
    return (1.0 - 1.0 / p) * coeff * np.asarray(span_b)


def lock_law(s0, s1, p):
    """Serialized seconds per task on a contended team-wide lock with P contenders."""
    return np.asarray(s0) + np.asarray(s1) * (np.asarray(p, dtype=float) - 1.0)


def lock_throughput(hold, think, p):
    """Tasks per second through a team-wide lock held ``hold`` s per task by ``p`` workers that each spend ``think``
    s per task outside it: the closed queueing network of one FCFS station and a delay station, by Schweitzer's
    approximate mean-value analysis (Schweitzer 1979; Reiser & Lavenberg, JACM 27(2) 1980) — R = S·(1 + Q·(P − 1)/P),
    X = P/(R + Z), Q = X·R, solved in closed form: X = 2P / (SP + Z + √((SP + Z)² − 4·S·Z·(P − 1))).  It is exact at
    P = 1 (1/(S + Z)) and tends to both bounds, 1/S (the lock saturated) and P/Z (no lock)."""
    S, Z = np.asarray(hold, dtype=float), np.asarray(think, dtype=float)
    P = np.maximum(np.asarray(p, dtype=float), 1.0)
    b = S * P + Z
    return 2.0 * P / np.maximum(b + np.sqrt(np.maximum(b * b - 4.0 * S * Z * (P - 1.0), 0.0)), 1e-300)


def barrier(kind_tree, c, p):
    """One barrier among P threads: c·P centralized, c·⌈log2 P⌉ for a tree (0 on one thread)."""
    p = np.asarray(p, dtype=float)
    levels = np.ceil(np.log2(np.maximum(p, 1.0)))
    return np.where(p <= 1, 0.0, np.where(kind_tree, c * levels, c * p))


def numa_bandwidth(threads_per_socket, sockets, core_bw, stream_bw, remote_bw, remote_fraction):
    """Memory bandwidth of ``sockets`` sockets with ``threads_per_socket`` streaming threads each, a fraction
    ``remote_fraction`` of the bytes served by another socket's memory over the inter-socket link."""
    local = np.minimum(np.asarray(threads_per_socket) * core_bw, stream_bw) * sockets
    remote = np.minimum(np.asarray(threads_per_socket) * core_bw, remote_bw) * sockets
    r = np.asarray(remote_fraction)
    return 1.0 / ((1.0 - r) / local + r / np.maximum(remote, 1e-30))


def halo(messages, bytes_per_message, alpha, beta_bytes_per_s):
    """Hockney cost of ``messages`` messages of ``bytes_per_message`` bytes each."""
    return np.asarray(messages) * (alpha + np.asarray(bytes_per_message) / beta_bytes_per_s)


def allreduce_latency(n_ranks, alpha):
    """Latency term of a small-message allreduce (recursive doubling): 2·⌈log2 R⌉·α (0 for one rank)."""
    r = np.asarray(n_ranks, dtype=float)
    return np.where(r <= 1, 0.0, 2.0 * np.ceil(np.log2(np.maximum(r, 1.0))) * alpha)


def level_schedule(levels, gi, workers):
    """A level-by-level greedy schedule (Brent 1974): Σ_l ⌈w_l / P⌉·t_l seconds for level widths w_l and task
    seconds t_l (``levels[g]`` for grain index g) on P workers, per configuration (``gi`` and ``workers`` broadcast):
    each distinct (grain, P) priced once, by the same row sums."""
    g, p = np.asarray(gi), np.asarray(workers, dtype=float)
    gu, ginv = np.unique(g, return_inverse=True)
    pu, pinv = np.unique(p, return_inverse=True)
    table = np.empty((len(gu), len(pu)))
    for a, gg in enumerate(gu.tolist()):
        w, ts = levels[int(gg)]
        table[a] = (np.ceil(w[None, :] / np.maximum(pu[:, None], 1.0)) * ts[None, :]).sum(axis=1)
    return table[ginv.reshape(g.shape), pinv.reshape(p.shape)]
