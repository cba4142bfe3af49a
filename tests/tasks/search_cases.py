"""Task-graph searches whose full priced outputs are pinned (tests/tasks/test_search_pins.py): the benchmark's two
rows (benchmarks/family_speed.py), the example, and one search per kernel generator, DAG summary, runtime subset,
``--fix`` and MPI/multi-node combination, so every branch of ``tasks_terms`` is priced at least once."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"

STENCIL_BIG = {"family": "task-graph", "name": "stencil-gs-16384-mpi", "kernel": {
    "name": "stencil", "variant": "gauss-seidel", "n": 16384, "iterations": 200, "unit_s": 2.0e-9},
    "grain": [16 * i for i in range(1, 65)],
    "mpi": {"face_bytes": 16384 * 8, "dims": 2, "allreduces_per_iteration": 1}}  # = family_speed.STENCIL_BIG


def _k(name: str, kernel: dict, grain=None, mpi=None) -> dict:
    d = {"family": "task-graph", "name": name, "kernel": kernel}
    if grain is not None:
        d["grain"] = grain
    if mpi is not None:
        d["mpi"] = mpi
    return d


def _dag(name: str, producer: str, mpi=None) -> dict:
    d = {"family": "task-graph", "name": name, "dag": {"work_s": 2.0, "span_s": 0.01, "tasks": 2.0e5,
                                                      "deps_per_task": 2.0, "bytes_per_task": 4096.0,
                                                      "iterations": 10, "rounds": 3, "depth": 12.0,
                                                      "producer": producer}}
    if mpi is not None:
        d["mpi"] = mpi
    return d


MPI3 = {"face_bytes": 3.0e7, "dims": 3, "allreduces_per_iteration": 2, "serial_fraction": 0.01}

# (name, workload, machine, search keyword arguments)
CASES = [
    ("stencil-example", EX / "stencil.yaml", EX / "epyc-2s.yaml", {}),
    ("stencil-big", STENCIL_BIG, "epyc-7763-2s-x16", {}),
    ("fib", _k("fib", {"name": "fib", "n": 30}), "xeon-8480p-2s", {}),
    ("nqueens", _k("nq", {"name": "nqueens", "n": 10}), "epyc-9654-2s", {}),
    ("sort", _k("sort", {"name": "sort", "n": 1 << 22, "iterations": 3}), "grace-superchip", {}),
    ("sparselu", _k("lu", {"name": "sparselu", "n": 64, "block": 32}), "xeon-8380-2s", {}),
    ("bfs", _k("bfs", {"name": "bfs", "n": 1_000_000, "edges": 10_000_000, "diameter": 20}), "xeon-8480p-8s", {}),
    ("tmfg", _k("tmfg", {"name": "tmfg", "n": 2000, "variant": "approx"}), "epyc-7763-2s", {}),
    ("jacobi-mpi", _k("jac", {"name": "stencil", "variant": "jacobi", "n": 8192, "iterations": 50},
                      [64, 256, 1024], MPI3), "a64fx-384", {}),
    ("sort-mpi-smt4", _k("sortm", {"name": "sort", "n": 1 << 20}, [512, 8192], MPI3), "bgq-mira", {}),
    ("dag-single", _dag("ds", "single"), "bgq-mira", {}),
    ("dag-recursive-mpi", _dag("dr", "recursive", MPI3), "smr-3x-16c-10gbe", {}),
    ("stencil-fix", EX / "stencil.yaml", EX / "epyc-2s.yaml",
     {"fix": {"runtime": "libomp", "sockets": 1}}),
    ("stencil-runtimes", EX / "stencil.yaml", "xeon-8480p-8s",
     {"runtimes": ["libgomp", "taskiter", "lowsync-ws", "chase-lev-ws"]}),
    ("stencil-big-fix-ranks", STENCIL_BIG, "epyc-7763-2s-x16", {"fix": {"ranks": 4, "grain": 256}}),
]


def run(case, top: int = 0):
    """The search of one case, every plan returned (``top=0``)."""
    from parplan.hardware.cpu import load_cpu_machine
    from parplan.planner.spaces.taskgraph import search
    from parplan.workloads.taskgraph import load_taskgraph

    _, w, hw, kw = case
    return search(load_taskgraph(w), load_cpu_machine(hw), top=top, **kw)
