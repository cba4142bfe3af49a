"""The task graphs the work-stealing executor (``executor/worksteal.py``) plays, from a workload's DAG summary at a
plan's grain: fib's real call tree, n-queens' search tree cut at the cutoff depth, mergesort's tree with its merges,
the Gauss-Seidel stencil's block wavefront, sparse LU's step graph, a layered DAG for other single producers, a
balanced binary spawn tree for recursive ones.  Each builder returns per-task
work and children (trees) or predecessors (layers); graphs above ``max_tasks`` are refused."""
from __future__ import annotations

import math

from parplan.errors import SpecError


def _fib_graph(n: int, cutoff: int, unit: float):
    """(work, children) of fib(n)'s task tree with a cutoff: tasks below it run fib_seq serially."""
    from parplan.workloads.taskgraph import _fib_calls

    work, kids = [], []

    def make(k: int) -> int:
        i = len(work)
        work.append(0.0)
        kids.append(())
        if k < max(cutoff, 2):
            work[i] = _fib_calls(k) * unit
        else:
            work[i] = unit
            kids[i] = (make(k - 1), make(k - 2))
        return i

    make(n)
    return work, kids


def _tree(n_tasks: int, total: float):
    """A balanced binary spawn tree of about ``n_tasks`` tasks: internal nodes spawn, leaves carry the work."""
    leaves = max(1, int(round((n_tasks + 1) / 2)))
    grain = total / leaves
    work, kids = [], []

    def make(m: int) -> int:
        i = len(work)
        work.append(0.0)
        kids.append(())
        if m <= 1:
            work[i] = grain
        else:
            kids[i] = (make(m // 2), make(m - m // 2))
        return i

    make(leaves)
    return work, kids


def _level_tree(counts, cutoff: int, total: float):
    """n-queens' search tree cut at depth ``cutoff`` (benchmarks/omp/nqueens.c): ``counts[d]`` valid boards at depth
    d; a node at depth d < cutoff spawns its children (counts[d+1] spread evenly over the counts[d] parents), a node at
    the cutoff depth carries an equal share of the subtrees below it."""
    c = max(1, min(cutoff, len(counts) - 1))
    while c > 1 and counts[c] == 0:
        c -= 1
    work, kids = [], []
    leaf = total / max(counts[c], 1)

    def make(d: int, width: int) -> list:
        """``width`` nodes of depth d: their ids."""
        ids = list(range(len(work), len(work) + width))
        for _ in ids:
            work.append(0.0 if d < c else leaf)
            kids.append(())
        if d < c:
            child = make(d + 1, counts[d + 1])
            per, extra = divmod(len(child), width)
            pos = 0
            for j, i in enumerate(ids):
                m = per + (j < extra)
                kids[i] = tuple(child[pos:pos + m])
                pos += m
        return ids

    make(0, 1)
    return work, kids


def _queens_graph(n: int, cutoff: int, unit: float):
    """n-queens' search tree itself (``workloads/queens.py``) cut at depth ``cutoff``: a node above it spawns its
    children (one unit each), a node at it searches its whole subtree serially (its nodes × unit)."""
    from parplan.workloads.queens import queens_tree

    _, children, sizes = queens_tree(n)
    c = max(1, min(cutoff, n))
    work, kids = [], []
    frontier = [0]  # ids of depth d's nodes, in depth-first order
    work.append(unit if c > 0 else sizes[0][0] * unit)
    kids.append(())
    for d in range(c):
        nxt = []
        for i, node in enumerate(frontier):
            ids = []
            for _ in range(children[d][i]):
                ids.append(len(work))
                work.append(unit)
                kids.append(())
            kids[node] = tuple(ids)
            nxt += ids
        frontier = nxt
    for i, node in enumerate(frontier):  # the cutoff depth: each searches its subtree
        work[node] = sizes[c][i] * unit
    return work, kids


def _sort_graph(n_elems: int, cutoff: int, unit: float, ranks: float):
    """Mergesort's task tree (benchmarks/omp/sort.c): halves above ``cutoff`` elements spawn two tasks, leaves sort
    serially (c·log2 c units), each internal node merges its m elements after both halves (m units, 16·m bytes) —
    the join continuation the last finishing half's worker runs (Cilk's sync; no dispatch)."""
    work, kids, join, jbytes = [], [], [], []
    per_rank = n_elems / max(ranks, 1.0)

    def make(m: float) -> int:
        i = len(work)
        work.append(0.0)
        kids.append(())
        join.append(0.0)
        jbytes.append(0.0)
        if m <= cutoff:
            work[i] = m * math.log2(max(m, 2.0)) * unit
        else:
            h = m / 2.0
            kids[i] = (make(h), make(m - h))
            join[i] = m * unit
            jbytes[i] = 16.0 * m
        return i

    make(per_rank)
    return work, kids, join, jbytes


def _layers(n_tasks: int, layers: int, deps: int, grain: float):
    """A layered DAG: ``layers`` rows of equal width; task j of row l depends on tasks j-1..j+1 of row l-1."""
    layers = max(1, min(layers, n_tasks))
    width = max(1, n_tasks // layers)
    preds = []
    for l in range(layers):
        for j in range(width):
            if l == 0:
                preds.append(())
            else:
                base = (l - 1) * width
                cand = [base + j] + [base + x for x in (j - 1, j + 1) if 0 <= x < width]
                preds.append(tuple(cand[:max(1, min(deps, 3))]))
    return [grain] * (layers * width), preds


def _wavefront(nb: int, grain: float):
    """One Gauss-Seidel sweep over an nb × nb block grid, in the producer's row-major creation order
    (hardware/cpu_kernels/stencil.c): block (i, j) waits for (i − 1, j) and (i, j − 1), the blocks it reads updated."""
    preds = [tuple(x for x in ((i - 1) * nb + j if i else -1, i * nb + j - 1 if j else -1) if x >= 0)
             for i in range(nb) for j in range(nb)]
    return [grain] * (nb * nb), preds


def _sparselu_graph(nb: int, t: float):
    """BOTS sparselu's task graph on a dense nb × nb block matrix, in the producer's creation order (step j: lu0,
    fwd of row j, bdiv of column j, bmod of the trailing blocks): lu0(j) after bmod(j, j) of step j − 1; fwd(j, c)
    and bdiv(r, j) after lu0(j) and their block's bmod of step j − 1; bmod(r, c) after bdiv(r, j), fwd(j, c) and its
    block's bmod of step j − 1 (the last writer of each block).  Kernels of 2/3, 1, 1 and 2 × t seconds."""
    work, preds = [], []
    last = {}  # block -> the task that last wrote it

    def add(w, deps, block):
        preds.append(tuple(d for d in dict.fromkeys(deps) if d >= 0))
        work.append(w)
        last[block] = len(work) - 1
        return len(work) - 1

    for j in range(nb):
        d = add(2 / 3 * t, [last.get((j, j), -1)], (j, j))
        row = {c: add(t, [d, last.get((j, c), -1)], (j, c)) for c in range(j + 1, nb)}
        col = {r: add(t, [d, last.get((r, j), -1)], (r, j)) for r in range(j + 1, nb)}
        for r in range(j + 1, nb):
            for c in range(j + 1, nb):
                add(2 * t, [col[r], row[c], last.get((r, c), -1)], (r, c))
    return work, preds


def build_graph(spec, gi: int, ranks_total: float, max_tasks: int):
    s = spec.summary()
    N = s.tasks[gi] / ranks_total
    if N > max_tasks:
        raise SpecError(f"{N:,.0f} tasks per iteration and rank are above the simulation budget of {max_tasks:,}",
                        key="--plan grain", hint="simulate a coarser grain or a smaller instance")
    grain = s.work_s[gi] / s.tasks[gi]
    k = spec.kernel
    from parplan.workloads.taskgraph import DEFAULT_UNIT_S

    if k is not None and k.name == "fib" and ranks_total == 1:
        work, kids = _fib_graph(k.n, int(s.grain[gi]), k.unit_s or DEFAULT_UNIT_S["fib"])
        return "tree", work, kids, [0.0] * len(work), None
    if k is not None and k.name == "nqueens" and ranks_total == 1:
        from parplan.workloads.queens import SHALLOW, queens_levels

        if int(s.grain[gi]) <= SHALLOW:  # the tree is known to the cutoff depth: play it as it is
            work, kids = _queens_graph(k.n, int(s.grain[gi]), k.unit_s or DEFAULT_UNIT_S["nqueens"])
        else:
            work, kids = _level_tree(queens_levels(k.n), int(s.grain[gi]), s.work_s[gi])
        return "tree", work, kids, [0.0] * len(work), None
    if k is not None and k.name == "sort":
        work, kids, join, jbytes = _sort_graph(k.n, int(s.grain[gi]), k.unit_s or DEFAULT_UNIT_S["sort"], ranks_total)
        return "tree", work, kids, [0.0] * len(work), (join, jbytes)
    byte_per_task = s.bytes[gi] / s.tasks[gi]
    if k is not None and k.name == "stencil" and (k.variant or "gauss-seidel") == "gauss-seidel" and ranks_total == 1:
        work, preds = _wavefront(math.ceil(k.n / int(s.grain[gi])), grain)
        return "layers", work, preds, [byte_per_task] * len(work), None
    if k is not None and k.name == "sparselu" and ranks_total == 1:
        nb = int(s.grain[gi])
        t = float(s.work_s[gi]) / sum((2 / 3) + 2 * (nb - j - 1) + 2 * (nb - j - 1) ** 2 for j in range(nb))
        work, preds = _sparselu_graph(nb, t)
        return "layers", work, preds, [byte_per_task] * len(work), None
    if s.producer == "single":
        layers = int(round(min(s.span_s[gi], s.work_s[gi] / ranks_total) / grain))
        work, preds = _layers(int(round(N)), layers, int(s.deps[gi]), grain)
        return "layers", work, preds, [byte_per_task] * len(work), None
    work, kids = _tree(int(round(N)), s.work_s[gi] / ranks_total)
    leaves = sum(1 for w in work if w > 0)
    return "tree", work, kids, [s.bytes[gi] / ranks_total / leaves if w > 0 else 0.0 for w in work], None
