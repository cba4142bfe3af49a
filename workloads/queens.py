"""The n-queens search tree the generator (``workloads/taskgraph.py``) and the work-stealing executor
(``executor/worksteal_graphs.py``) price and play: valid partial boards per depth, and near the root the tree itself —
how many children each node has and how many nodes its subtree holds, in depth-first order (BOTS nqueens and
``hardware/cpu_kernels/nqueens.c`` explore the same tree with the same bitmask DFS).
"""
from __future__ import annotations

from functools import lru_cache

SHALLOW = 6  # depths 0..SHALLOW keep the tree itself (≤ 241,484 nodes at depth 6 for n = 14)


@lru_cache(maxsize=32)
def queens_tree(n: int) -> tuple:
    """(counts, children, sizes): ``counts[d]`` valid boards at depth d (d = 0..n); for d ≤ min(SHALLOW, n),
    ``children[d][i]`` and ``sizes[d][i]`` are the children and the subtree nodes (itself included) of the i-th node
    of depth d in depth-first order — the children of depth d's nodes are consecutive runs of depth d + 1's."""
    counts = [0] * (n + 1)
    top = min(SHALLOW, n)
    children = [[] for _ in range(top + 1)]
    sizes = [[] for _ in range(top + 1)]
    full = (1 << n) - 1

    def go(row: int, cols: int, d1: int, d2: int) -> int:
        counts[row] += 1
        if row == n:
            if row <= top:
                children[row].append(0)
                sizes[row].append(1)
            return 1
        free = full & ~(cols | d1 | d2)
        size, kids = 1, 0
        while free:
            bit = free & -free
            free ^= bit
            size += go(row + 1, cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1)
            kids += 1
        if row <= top:
            children[row].append(kids)
            sizes[row].append(size)
        return size

    go(0, 0, 0, 0)
    return tuple(counts), tuple(tuple(c) for c in children), tuple(tuple(s) for s in sizes)


def queens_levels(n: int) -> tuple:
    """Valid partial boards per depth of the n-queens search tree."""
    return queens_tree(n)[0]
