"""Task-graph workloads (``family: task-graph``): a DAG summary, or a generator for a standard kernel, with a grain
knob, plus an optional hybrid MPI decomposition (ranks × threads).

A workload file::

    family: task-graph
    name: stencil-gs-4096
    kernel: {name: stencil, n: 4096, iterations: 200, point_s: 2.0e-9, variant: gauss-seidel}
    grain: [32, 64, 128, 256, 512]       # the knob the planner sweeps: block size (stencil), cutoff (fib, sort),
                                         # depth (nqueens), blocks per side (sparselu), tau (bfs),
                                         # vertices inserted per round (tmfg)
    mpi: {face_bytes: 32768, dims: 2, allreduces_per_iteration: 0}   # optional: halo exchange per iteration

or ``dag: {work_s, span_s, tasks, deps_per_task, bytes_per_task, iterations, rounds, depth, producer}`` instead of
``kernel`` (one grain).  ``summary()`` returns a :class:`DagSummary` of numpy arrays along the grain axis — per
iteration: work T₁ (seconds of useful work on one core), span T∞, tasks, bytes moved, dependencies per task, spawn
depth on the critical path, synchronized rounds; and the iterations.  Task counts and spans of the kernels are the
closed forms of their BOTS-style recursions (each cited where it is defined).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Optional, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, short
from parplan.spec import Name, validate
from parplan.workloads.family import FamilyInfo
from parplan.workloads.queens import queens_tree

KERNELS = ("fib", "nqueens", "sort", "stencil", "sparselu", "bfs", "tmfg")
MAX_GRAINS = 64
MAX_LEVEL_BLOCKS = 1 << 16  # blocks per side of a stencil or sparse LU grid (levels listed one by one)
VARIANTS = {"stencil": ("gauss-seidel", "jacobi"), "tmfg": ("exact", "approx")}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class KernelEntry(_Strict):
    name: Literal["fib", "nqueens", "sort", "stencil", "sparselu", "bfs", "tmfg"]
    n: int = Field(gt=0, le=1 << 40)  # fib argument, board size, elements, grid side, matrix blocks side, vertices
    # (bfs; tmfg: data points, i.e. rows of the correlation matrix)
    iterations: int = Field(default=1, ge=1, le=10**7)
    unit_s: Optional[float] = Field(default=None, gt=0, le=1.0, strict=False)  # seconds per call/node/element/point/flop/edge
    variant: Optional[Literal["gauss-seidel", "jacobi", "exact", "approx"]] = None  # stencil: gauss-seidel | jacobi;
    # tmfg: exact | approx all-pairs shortest paths in DBHT
    block: Optional[int] = Field(default=None, gt=0, le=1 << 20)  # sparselu: block size (elements per side)
    edges: Optional[int] = Field(default=None, gt=0, le=1 << 42)  # bfs: edges
    diameter: Optional[int] = Field(default=None, gt=0, le=1 << 30)  # bfs: rounds of a frontier algorithm


class DagEntry(_Strict):
    work_s: float = Field(gt=0, le=1e9, strict=False)
    span_s: float = Field(gt=0, le=1e9, strict=False)
    tasks: float = Field(ge=1, le=1e13, strict=False)
    deps_per_task: float = Field(default=0.0, ge=0, le=64, strict=False)
    bytes_per_task: float = Field(default=0.0, ge=0, le=1e12, strict=False)
    iterations: int = Field(default=1, ge=1, le=10**7)
    rounds: int = Field(default=1, ge=1, le=10**9)
    depth: float = Field(default=1.0, ge=1, le=1e9, strict=False)
    producer: Literal["single", "recursive"] = "recursive"


class MpiEntry(_Strict):
    face_bytes: float = Field(ge=0, le=1e13, strict=False)  # bytes of one face of the whole domain (ghost layer)
    dims: int = Field(default=3, ge=1, le=3)
    allreduces_per_iteration: int = Field(default=0, ge=0, le=10**4)
    serial_fraction: float = Field(default=0.0, ge=0, lt=1, strict=False)  # per-rank work not threaded (Amdahl)


class TaskGraphFile(_Strict):
    family: Literal["task-graph"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    kernel: Optional[KernelEntry] = None
    dag: Optional[DagEntry] = None
    grain: Optional[list[int]] = Field(default=None, min_length=1, max_length=MAX_GRAINS)
    mpi: Optional[MpiEntry] = None


# default seconds per unit of each kernel (one core ~3 GHz; calibrate: `parplan calibrate cpu` or measure T_1)
DEFAULT_UNIT_S = {"fib": 2.0e-9,  # one fib call ~6 cycles (benchmarks/omp/fib.c, measured here: omp_measure.py)
                  "nqueens": 1.5e-8,  # one board node (bitmask test + recursion) ~45 cycles (assumed)
                  "sort": 3.0e-9,  # one element per merge level ~9 cycles (assumed)
                  "stencil": 2.0e-9,  # one 5-point update ~6 cycles, in cache (assumed)
                  "sparselu": 2.5e-11,  # one FP64 flop of a block GEMM-like update at ~40 GFLOP/s per core (assumed)
                  "bfs": 5.0e-9,  # one edge visit (assumed)
                  "tmfg": 1.0e-9}  # one correlation-entry gain update / one edge relaxation (~3 cycles, assumed)
DEFAULT_GRAINS = {"fib": [10, 14, 18, 22, 26], "nqueens": [1, 2, 3, 4], "sort": [256, 2048, 16384, 131072],
                  "stencil": [32, 64, 128, 256, 512], "sparselu": [8, 16, 32, 64], "bfs": [1, 64, 512, 4096],
                  "tmfg": [1, 10, 100, 1000]}


@dataclass(frozen=True)
class DagSummary:
    """Per iteration, one entry per grain value (numpy arrays of equal length)."""
    grain: np.ndarray  # the knob value
    work_s: np.ndarray  # T1: useful work on one core
    span_s: np.ndarray  # T∞ of useful work
    tasks: np.ndarray
    deps: np.ndarray  # dependencies per task
    bytes: np.ndarray  # bytes moved to/from memory
    depth: np.ndarray  # spawn/steal levels on the critical path (each pays a burden)
    rounds: np.ndarray  # synchronized rounds (barriers) per iteration
    iterations: int
    producer: str  # "single": one thread creates every task; "recursive": tasks create tasks
    # per grain (None: not known): one iteration's level-synchronous structure — (widths, task seconds): level l holds
    # widths[l] independent tasks of task_s[l] each (Brent 1974: a level-by-level greedy schedule on P workers takes
    # Σ_l ⌈widths[l]/P⌉·task_s[l]); the generated fork-join sorts and block wavefronts have one
    levels: Optional[tuple] = None
    # per grain (None: none): the span is the DAG's exact longest path, so the greedy bound (1 − 1/P)·T∞ prices it
    # (Graham 1969), not Cilkscale's 1.7·T∞ estimate for spans known only in order of magnitude
    span_exact: Optional[np.ndarray] = None

    @property
    def grain_s(self) -> np.ndarray:
        return self.work_s / self.tasks


@dataclass(frozen=True)
class TaskGraphSpec:
    name: str
    source: str
    kernel: Optional[KernelEntry]
    dag: Optional[DagEntry]
    grains: tuple
    mpi: Optional[MpiEntry]
    family: str = "task-graph"
    extra: dict = field(default_factory=dict)

    def summary(self, grains: "list[int] | None" = None) -> DagSummary:
        if self.dag is not None:
            d = self.dag
            one = np.ones(1)
            return DagSummary(one * 0, one * d.work_s, one * d.span_s, one * d.tasks, one * d.deps_per_task,
                              one * d.bytes_per_task * d.tasks, one * d.depth, one * d.rounds, d.iterations, d.producer)
        return kernel_summary(self.kernel, list(grains if grains is not None else self.grains))


# --- kernel generators -----------------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _fib_calls(k: int) -> int:
    """Calls made by the naive recursion fib(k) (fib(0), fib(1) are leaves): calls(k) = 1 + calls(k-1) + calls(k-2)."""
    a, b = 1, 1  # calls(0), calls(1)
    for _ in range(k - 1):
        a, b = b, 1 + a + b
    return b if k >= 1 else 1


def _fib(n: int, unit: float, cutoffs: list[int]) -> tuple:
    # nodes with argument k in fib(n)'s call tree: cnt(n) = 1, cnt(k) = cnt(k+1) + cnt(k+2) (BOTS fib, cutoff variant)
    cnt = np.zeros(n + 3)
    cnt[n] = 1
    for k in range(n - 1, -1, -1):
        cnt[k] = cnt[k + 1] + cnt[k + 2]
    rows = []
    for c in cutoffs:
        c = max(2, min(c, n))
        internal = cnt[c:n + 1].sum()  # calls with k >= cutoff spawn two tasks (BOTS: if n < cutoff: fib_seq)
        tasks = max(1.0, 2 * internal)
        work = _fib_calls(n) * unit
        span = ((n - c + 1) + _fib_calls(c - 1)) * unit  # the leftmost path, then the largest serial leaf
        rows.append((c, work, span, tasks, 0.0, 0.0, n - c + 1, 1))
    return rows, "recursive"


def _nqueens(n: int, unit: float, depths: list[int]) -> tuple:
    if n > 14:
        raise SpecError(f"nqueens n = {n} is above 14 (the generator enumerates the tree)", key="kernel.n")
    lv, _, sizes = queens_tree(n)
    total = float(sum(lv))
    rows, exact = [], []
    for c in depths:
        c = max(1, min(c, n))
        tasks = float(sum(lv[1:c + 1]))  # one task per valid placement at depth 1..cutoff (BOTS nqueens cutoff)
        if c < len(sizes) and sizes[c]:  # the tree is known to this depth: its largest cutoff subtree
            span, ex = (c + max(sizes[c])) * unit, True  # the spawn path, then that subtree serially
        else:
            leaf = (total - sum(lv[:c + 1])) / max(lv[c], 1)  # mean subtree under a cutoff-depth task
            span, ex = (c + 1.5 * leaf) * unit, False  # 1.5: largest-subtree / mean (assumed; subtrees vary)
        rows.append((c, total * unit, min(span, total * unit), max(tasks, 1.0), 0.0, 0.0, c, 1))
        exact.append(ex)
    return rows, "recursive", np.array(exact)


def _sort_levels(n: int, unit: float, c: int) -> tuple:
    """The mergesort's levels: the 2^L leaf sorts (c·log2 c each), then the merges level by level up to the root
    (2^k merges of n/2^k elements at level k) — their work sums to n·log2 n."""
    L = int(max(0.0, math.ceil(math.log2(n / c))))
    widths = [2.0**L] + [2.0**k for k in range(L - 1, -1, -1)]
    task_s = [c * math.log2(c) * unit] + [n / 2.0**k * unit for k in range(L - 1, -1, -1)]
    return np.array(widths), np.array(task_s)


def _sort(n: int, unit: float, cutoffs: list[int]) -> tuple:
    rows, levels = [], []
    for c in cutoffs:
        c = max(2, min(c, n))
        widths, task_s = _sort_levels(n, unit, c)
        L = len(widths) - 1  # merge levels above the leaves
        work = n * math.log2(n) * unit
        # a leaf sort, then the serial merges on the path up: n + n/2 + … over the levels above the leaves
        span = float(task_s.sum())
        bytes_ = 16.0 * n * L  # one read + one write of 8 B per element per merge level above the leaves
        rows.append((c, work, min(span, work), max(1.0, 2 * (widths[0] - 1)), 0.0, bytes_, L + 1, 1))
        levels.append((widths, task_s))
    return rows, "recursive", tuple(levels)


def _level_blocks(kernel: str, nb: int, what: str) -> int:
    """``nb`` blocks per side, within ``MAX_LEVEL_BLOCKS`` (the generators list a level per anti-diagonal or step)."""
    if nb > MAX_LEVEL_BLOCKS:
        raise SpecError(f"{kernel}: {nb:,} blocks per side ({what}) is above {MAX_LEVEL_BLOCKS:,}: its levels are "
                        "listed one by one", key="grain", hint="a coarser grain, or a dag: summary for a larger run")
    return nb


def _stencil_levels(k: KernelEntry, unit: float, b: int) -> tuple:
    """A sweep's levels: Gauss-Seidel's anti-diagonals of the nb × nb block grid (width min(d + 1, nb, 2nb − 1 − d)),
    Jacobi's one level of nb² blocks."""
    nb = _level_blocks("stencil", math.ceil(k.n / b), f"n = {k.n:,} over grain {b:,}")
    if (k.variant or "gauss-seidel") != "gauss-seidel":
        return np.array([float(nb * nb)]), np.array([b * b * unit])
    d = np.arange(2 * nb - 1, dtype=np.float64)
    widths = np.minimum(np.minimum(d + 1.0, float(nb)), 2.0 * nb - 1.0 - d)
    return widths, np.full(len(widths), b * b * unit)


def _stencil(k: KernelEntry, unit: float, blocks: list[int]) -> tuple:
    gs = (k.variant or "gauss-seidel") == "gauss-seidel"
    rows, levels = [], []
    for b in blocks:
        b = max(1, min(b, k.n))
        widths, task_s = _stencil_levels(k, unit, b)
        grain, tasks = b * b * unit, float(widths.sum())
        span = float(task_s.sum())  # Gauss-Seidel: the anti-diagonal wavefront of blocks; Jacobi: one block
        bytes_ = tasks * (2 * 8.0 * b * b + 4 * 8.0 * b)  # read + write the block, read four halo edges
        rows.append((b, tasks * grain, span, tasks, 5.0 if gs else 1.0, bytes_, 1.0, 1))
        levels.append((widths, task_s))
    return rows, "single", tuple(levels)


def _sparselu_levels(nb: int, t: float) -> tuple:
    """Step j's three levels: lu0 of the diagonal block, the fwd/bdiv of its row and column (2(nb − j − 1)), the
    bmod updates of the trailing blocks ((nb − j − 1)²) — 2/3, 1 and 2 block kernels of t seconds each."""
    widths, task_s = [], []
    for j in range(nb):
        r = nb - j - 1
        for w, ts in ((1, 2 / 3), (2 * r, 1.0), (r * r, 2.0)):
            if w:
                widths.append(float(w))
                task_s.append(ts * t)
    return np.array(widths), np.array(task_s)


def _sparselu(k: KernelEntry, unit: float, nbs: list[int]) -> tuple:
    n = k.n * (k.block or 1)  # matrix side in elements
    rows, levels = [], []
    for nb in nbs:
        nb = _level_blocks("sparselu", max(1, min(nb, n)), f"grain {nb:,}")
        bs = n / nb
        t = bs**3 * unit  # a block kernel (lu0 2/3, fwd/bdiv 1, bmod 2 × bs³; BOTS sparselu, dense upper bound)
        widths, task_s = _sparselu_levels(nb, t)
        tasks, work = float(widths.sum()), float((widths * task_s).sum())
        span = nb * (2 / 3 + 1 + 2) * t  # lu0 → fwd → bmod per step
        bytes_ = tasks * 3 * 8.0 * bs * bs  # each task touches ~three blocks
        rows.append((nb, work, min(span, work), tasks, 2.5, bytes_, 3.0 * nb, 1))
        levels.append((widths, task_s))
    return rows, "single", tuple(levels)


def _bfs(k: KernelEntry, unit: float, taus: list[int]) -> tuple:
    n, m = k.n, k.edges or 8 * k.n
    D = k.diameter or max(1, int(math.log2(n)))
    rows = []
    for tau in taus:
        tau = max(1, tau)
        hops = min(float(tau), max(1.0, n / D))  # VGC: a task advances up to tau vertices per round (PASGAL, S27)
        rounds = max(1.0, D / hops)
        inflation = 1.0 + (0.1 if tau > 1 else 0.0)  # revisits of VGC's local searches (assumed 10 %)
        work = (n + m) * unit * inflation
        tasks = rounds * max(1.0, (n / rounds) / tau)
        span = rounds * tau * unit * (m / n)
        rows.append((tau, work, min(span, work), tasks, 0.0, 12.0 * (n + m), 1.0, rounds))
    return rows, "recursive"


def _tmfg(k: KernelEntry, unit: float, prefixes: list[int]) -> tuple:
    """TMFG construction + DBHT's all-pairs shortest paths (S17, SEEDS.md (b)); the knob is the prefix: vertices
    inserted per round (1 = the one-vertex-per-round original; the aggregated algorithm inserts many)."""
    n = k.n
    if n < 8 or n > 1_000_000:
        raise SpecError(f"tmfg n = {n}: 8..1,000,000 data points", key="kernel.n")
    exact = (k.variant or "exact") == "exact"
    lg = math.log2(n)
    # DBHT APSP on the planar TMFG (3n − 6 edges): a Dijkstra per source, n·(n + 3n)·log2 n relaxations (exact);
    # the approximate variant is taken as hop-count BFS (no heap: the log factor saved; assumed — the paper's
    # approximation scheme was not read)
    apsp = n * 4.0 * n * (lg if exact else 1.0) * unit
    rows = []
    for g in prefixes:
        kk = max(1, min(g, n - 4))
        rounds = math.ceil((n - 4) / kk)
        tmfg = 3.0 * n * n * unit  # each inserted vertex makes 3 faces whose best-gain scan reads n entries (derived)
        tasks = 3.0 * (n - 4) + n  # one task per new face scan, one per APSP source
        span = rounds * n * unit + 4.0 * n * (lg if exact else 1.0) * unit  # a face scan per round, then one source
        depth = rounds * math.log2(max(2.0, 3.0 * kk)) + lg  # a fork-join over 3k face scans per round, then APSP
        bytes_ = 24.0 * n * n + 8.0 * n * n  # the face scans read n doubles each; APSP writes the n × n distances
        rows.append((kk, tmfg + apsp, span, tasks, 0.0, bytes_, depth, rounds + 1))
    return rows, "recursive"


def kernel_summary(k: KernelEntry, grains: list[int]) -> DagSummary:
    unit = k.unit_s or DEFAULT_UNIT_S[k.name]
    levels = exact = None  # only the generators that know their DAG's levels (its exact span) return them
    if k.name == "fib":
        if k.n > 90:
            raise SpecError(f"fib n = {k.n} is above 90", key="kernel.n")
        rows, prod = _fib(k.n, unit, grains)
    elif k.name == "nqueens":
        rows, prod, exact = _nqueens(k.n, unit, grains)
    elif k.name == "sort":
        rows, prod, levels = _sort(k.n, unit, grains)
    elif k.name == "stencil":
        rows, prod, levels = _stencil(k, unit, grains)
    elif k.name == "sparselu":
        rows, prod, levels = _sparselu(k, unit, grains)
    elif k.name == "bfs":
        rows, prod = _bfs(k, unit, grains)
    else:
        rows, prod = _tmfg(k, unit, grains)
    a = np.array(rows, dtype=float).T
    return DagSummary(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], k.iterations, prod, levels, exact)


def spec_from_dict(data: Any, file: str | None = None) -> TaskGraphSpec:
    e = validate(TaskGraphFile, data, file=file)
    if (e.kernel is None) == (e.dag is None):
        raise SpecError("give exactly one of kernel or dag", file=file, key="kernel")
    if e.dag is not None and e.grain is not None:
        raise SpecError("a dag summary has one grain: grain applies to kernel generators", file=file, key="grain")
    if e.kernel is not None:
        k = e.kernel
        if k.variant is not None and k.variant not in VARIANTS.get(k.name, ()):
            raise SpecError(f"variant {k.variant!r} does not apply to the {k.name} kernel", file=file,
                            key="kernel.variant", allowed=[f"{n}: {v}" for n, vs in VARIANTS.items() for v in vs])
        for key in ("block", "edges", "diameter"):
            allowed = {"block": "sparselu", "edges": "bfs", "diameter": "bfs"}[key]
            if getattr(k, key) is not None and k.name != allowed:
                raise SpecError(f"{key} applies to the {allowed} kernel, not {k.name}", file=file, key=f"kernel.{key}")
        if e.grain is not None and any(g <= 0 for g in e.grain):
            raise SpecError(f"bad value {short(e.grain)}: grain values are positive integers", file=file, key="grain")
    grains = tuple(e.grain) if e.grain is not None else tuple(DEFAULT_GRAINS[e.kernel.name]) if e.kernel else (0,)
    spec = TaskGraphSpec(e.name, e.source or (file or "inline"), e.kernel, e.dag, grains, e.mpi)
    try:
        spec.summary()  # generator errors (n too large) at load time
    except SpecError as err:  # named at the file (and line) the generator's values came from
        from parplan.spec import locate

        raise locate(err, data, file) from None
    return spec


def load_taskgraph(ref: Any) -> TaskGraphSpec:
    """A task-graph workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, TaskGraphSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):  # the registry's transformer-style entry point is not used
    raise SpecError("task-graph workloads are files of their own (family: task-graph at the top level)", file=file,
                    key=f"{prefix}.family", hint="see docs/tasks.md")


FAMILY = FamilyInfo(
    name="task-graph",
    summary="task-parallel programs on NUMA CPU sockets: DAG summaries or generated kernels (fib, nqueens, sort, "
            "stencil, sparselu, bfs, tmfg), runtimes libgomp/libomp/nanos6/XQueue/taskgraph/taskiter/low-sync WS",
    spec_type=TaskGraphSpec,
    architecture_schema=TaskGraphFile,
    build_spec=_build,
    model="parplan.models.tasks",
    space="parplan.planner.spaces.taskgraph",
    executor="parplan.executor.worksteal",
    verbs="parplan.cli.tasks_out",
    load=load_taskgraph,
)
