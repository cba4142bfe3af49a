"""Every placement of a kernel chain priced at once: the offload search's array form of ``chain_terms`` +
``requests_time`` + the fit test of ``device_bytes`` (models/offload.py), bit-identical to pricing each placement
on its own.

A placement is a sequence of segments (``segments``); a request's parts and shared busy seconds are sums over its
segments in chain order, its own queues' busy seconds belong to one segment.  Placements that share their first
segments share those partial sums, so the placements form a trie of segments: each trie node holds the running
parts, the running sum of every shared resource (host, a device's links and compute, the network), the largest
busy seconds of the segments' own queues so far and whether a segment overflowed its device — its parent's plus
one segment's terms (``segment_terms``, computed once per distinct (first stage, last stage, place)), added in the
same order as ``chain_terms`` adds them, so every figure is the same float.  The work is one array step per chain
position over the trie's nodes (≈ 4/3 × the placements for a full product) instead of one call per placement.
"""
from __future__ import annotations

import numpy as np

from parplan.models.offload import TIME_PARTS, segment_bytes, segment_terms


def _trie(codes: np.ndarray, start: np.ndarray, ends: np.ndarray, n_types: int) -> tuple:
    """(leaf node of each placement, per chain position: (new node ids, parent ids, segment type keys)).  Node 0 is
    the empty chain; a segment's type key is (first stage · L + last stage) · places + place."""
    P, L = codes.shape
    B = n_types // (L * L)
    cur = np.zeros(P, dtype=np.int64)
    steps, count = [], 1
    for j in range(L):
        rows = np.flatnonzero(start[:, j])
        if not rows.size:
            continue
        t = (j * L + ends[rows, j]) * B + codes[rows, j]
        uk, first, inv = np.unique(cur[rows] * n_types + t, return_index=True, return_inverse=True)
        ids = count + np.arange(len(uk))
        steps.append((ids, cur[rows][first], t[first]))
        cur[rows] = ids[inv.reshape(-1)]
        count += len(uk)
    return cur, steps, count


def price_placements(spec, node, places: list, resident: bool, k, api, n) -> dict:
    """Parts (TIME_PARTS and ``total_s``), ``t_r`` (the workload's requests pipelined) and ``bad`` (a segment needs
    more than its device's memory) of every placement in ``places`` × the broadcast grid of chunks ``k``, API ``api``
    and sizes ``n``: arrays [placements, *grid]."""
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    z = 0.0 * n
    actor = np.asarray(api) == "actor"
    grid = np.broadcast_shapes(k.shape, actor.shape, n.shape)
    ids = ["cpu"] + [a.id for a in node.accelerators]
    code = {p: i for i, p in enumerate(ids)}
    codes = np.array([[code[p] for p in pl] for pl in places], dtype=np.int64).reshape(len(places), -1)
    P, L = codes.shape
    B = len(ids)
    start = np.ones((P, L), dtype=bool)
    if resident:  # a resident chain keeps consecutive stages on one device in one segment (``segments``)
        start[:, 1:] = ~((codes[:, 1:] != 0) & (codes[:, 1:] == codes[:, :-1]))
    nxt = np.full((P, L + 1), L, dtype=np.int64)
    for j in range(L - 1, -1, -1):
        nxt[:, j] = np.where(start[:, j], j, nxt[:, j + 1])
    ends = nxt[:, 1:] - 1  # the last stage of the segment that starts at j
    leaf, steps, count = _trie(codes, start, ends, L * L * B)
    types = np.unique(np.concatenate([t for _, _, t in steps]))
    # one segment_terms call per distinct segment
    mem = {a.id: a.memory_bytes for a in node.accelerators}
    adds, busy, bad = [], [], []
    for t in types.tolist():
        je, w = divmod(t, B)
        j, e = divmod(je, L)
        where, idx = ids[w], list(range(j, e + 1))
        add, seg_busy = segment_terms(spec, node, where, idx, k, actor, n, z)
        own, shared = {}, {}
        for key, v, is_shared in seg_busy:
            if is_shared:
                shared.setdefault(key, []).append(v)
            else:
                own[key] = own.get(key, z) + v
        own_max = np.zeros(grid)
        for v in own.values():
            own_max = np.maximum(own_max, v)  # a max is exact in any order
        adds.append(add)
        busy.append((own_max, shared))
        bad.append(np.broadcast_to(segment_bytes(spec, idx, n, k) > mem[where], grid) if where != "cpu"
                   else np.zeros(grid, dtype=bool))
    T = len(types)

    def table(terms: list) -> np.ndarray:
        out = np.zeros((T, *grid))
        for i, v in enumerate(terms):
            if v is not None:
                out[i] = v
        return out

    # per field: the addend tables, one per addend position (a missing addend adds an exact 0)
    fields: dict = {}
    for part in TIME_PARTS:
        depth = max(len(a.get(part, [])) for a in adds)
        fields[part] = [table([a[part][d] if d < len(a.get(part, [])) else None for a in adds])
                        for d in range(depth)]
    keys = list(dict.fromkeys(key for _, sh in busy for key in sh))
    for key in keys:
        depth = max(len(sh.get(key, [])) for _, sh in busy)
        fields[key] = [table([sh[key][d] if d < len(sh.get(key, [])) else None for _, sh in busy])
                       for d in range(depth)]
    own_tab = table([b for b, _ in busy])
    bad_tab = np.stack(bad)
    node_val = {f: np.zeros((count, *grid)) for f in fields}
    node_own = np.zeros((count, *grid))
    node_bad = np.zeros((count, *grid), dtype=bool)
    for new, parent, t in steps:
        ti = np.searchsorted(types, t)
        for f, tabs in fields.items():
            v = node_val[f][parent]
            for tab in tabs:
                v = v + tab[ti]
            node_val[f][new] = v
        node_own[new] = np.maximum(node_own[parent], own_tab[ti])
        node_bad[new] = node_bad[parent] | bad_tab[ti]
    parts = {p: node_val[p][leaf] for p in TIME_PARTS}
    total = sum(parts[p] for p in TIME_PARTS)
    worst = node_own[leaf]
    for key in keys:
        worst = np.maximum(worst, node_val[key][leaf])
    t_r = total + (spec.requests - 1) * worst  # requests_time: T_1 + (R − 1)·max resource busy time
    return {"parts": {**parts, "total_s": total}, "t_r": t_r, "bad": node_bad[leaf]}
