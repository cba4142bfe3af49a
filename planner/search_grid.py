"""The search's grid evaluation, its layout: which rows are priced together on which knob columns, and the grid
with its row axis last (``planner.search.evaluate_space``)."""
from __future__ import annotations

import numpy as np

from parplan.models.plan_arrays import PlanArrays

MAX_GROUPS = 8  # row groups priced on their own knob columns; the smallest are merged beyond this
GROUP_GAIN = 0.75  # price the rows in groups only where that prices at most this fraction of the one grid's cells


def column_groups(target: np.ndarray, min_cells: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                           np.ndarray]]:
    """Rows (ascending) grouped by the knob columns that hold a cell of ``target`` (rows, zero, recompute, sp):
    (rows, zero levels, recompute modes, sp values) per group, the last three bool; rows without a cell dropped.
    Groups of fewer than ``min_cells`` grid cells (each group is at least one ``evaluate`` call) are merged, and
    one group is kept where the groups would not save enough cells (``GROUP_GAIN``)."""
    cols = (target.any(axis=(2, 3)), target.any(axis=(1, 3)), target.any(axis=(1, 2)))
    flat = np.concatenate(cols, axis=1)
    live = np.flatnonzero(flat[:, :cols[0].shape[1]].any(axis=1))
    if live.size == 0:
        return []
    bits = flat[live]
    if bits.shape[1] < 63:  # each row's columns as the bits of one integer: one sort of integers
        keys = bits.astype(np.int64) @ (np.int64(1) << np.arange(bits.shape[1], dtype=np.int64))
        _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        pats = bits[first]
    else:
        pats, inv = np.unique(bits, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    nz, nr = cols[0].shape[1], cols[1].shape[1]

    def group(rows, pat):  # [rows, columns, cells]
        return [rows, pat, rows.size * int(pat[:nz].sum()) * int(pat[nz:nz + nr].sum()) * int(pat[nz + nr:].sum())]

    groups = [group(live[inv == g], pats[g]) for g in range(len(pats))]
    while len(groups) > 1 and (len(groups) > MAX_GROUPS or min(g[2] for g in groups) < min_cells):
        groups.sort(key=lambda g: -g[2])  # merge the two smallest: the union of their columns
        (ra, pa, _), (rb, pb, _) = groups.pop(), groups.pop()
        groups.append(group(np.sort(np.concatenate([ra, rb])), pa | pb))
    one = group(live, np.logical_or.reduce(pats, axis=0))
    if sum(g[2] for g in groups) > GROUP_GAIN * one[2]:
        groups = [one]
    groups.sort(key=lambda g: int(g[0][0]))
    return [(r, p[:nz], p[nz:nz + nr], p[nz + nr:]) for r, p, _ in groups]


def take_cols(a: np.ndarray, idx) -> np.ndarray:
    """``a`` (rows, zero, recompute, sp) restricted to the knob columns ``idx`` (slices or index arrays)."""
    for ax, ix in enumerate(idx, start=1):
        if not isinstance(ix, slice):
            a = np.take(a, ix, axis=ax)
    return a


def rows_last(G: PlanArrays) -> PlanArrays:
    """The grid with its row axis last — (zero, recompute, sp, row) — as views: the model's broadcasts then run
    their inner loops along the rows (hundreds of elements) instead of the 2–6 knob cells, element for element the
    same arithmetic."""
    for k in G.__dataclass_fields__:
        a = getattr(G, k)
        if isinstance(a, np.ndarray) and a.ndim == 4:
            setattr(G, k, a.transpose(1, 2, 3, 0))
    return G
