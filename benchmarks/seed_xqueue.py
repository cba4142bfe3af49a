"""Seed S03 (XQueue, Wang et al., IPDPS'25, arXiv 2502.05293; ANCHORS.md Part B §1.3 and case C3): lock-less
per-thread queues + a distributed tree barrier vs GNU OpenMP's team-wide queue at fine grain on a multi-socket
many-core node — 4–6× typical, up to 10²–10³× (116× in LLVM, 1522.8× vs original GNU OpenMP) — beside parplan's
ratio T(libgomp) / T(xqueue) at the BOTS-style grains of fib, nqueens, sort, sparselu and a stencil.

    python benchmarks/seed_xqueue.py

Machine: two EPYC 9654 sockets (192 cores, the paper's "up to 192 cores"), every core; the workloads are the
generators' defaults scaled to a fraction of a second; nothing is fitted to the paper.
"""
from __future__ import annotations

import sys

from parplan.hardware.cpu import load_cpu_machine
from parplan.models.tasks import estimate_plan
from parplan.workloads.taskgraph import load_taskgraph

PAPER = "XQueue: 4–6× typical vs GNU/LLVM OpenMP at fine grain, up to 116× (LLVM) and 1522.8× (GNU, + tree barrier)"
WORKLOADS = [
    {"family": "task-graph", "name": "fib-36", "kernel": {"name": "fib", "n": 36}, "grain": [4, 10, 16, 22]},
    {"family": "task-graph", "name": "nqueens-13", "kernel": {"name": "nqueens", "n": 13}, "grain": [2, 3, 4, 5]},
    {"family": "task-graph", "name": "sort-64M", "kernel": {"name": "sort", "n": 1 << 26},
     "grain": [256, 2048, 16384, 131072]},
    {"family": "task-graph", "name": "sparselu-64", "kernel": {"name": "sparselu", "n": 64, "block": 32},
     "grain": [16, 32, 64]},
    {"family": "task-graph", "name": "stencil-4096", "kernel": {"name": "stencil", "n": 4096, "iterations": 20},
     "grain": [16, 32, 64, 256]},
]


def main() -> int:
    m = load_cpu_machine("epyc-9654-2s")
    t, s = m.socket.cores, m.sockets_per_node
    print(f"# {PAPER}\n# parplan on {m.name}, {t}×{s} threads: ratio = T(runtime) / T(xqueue)")
    print(f"{'workload':<13} {'grain':>7} {'task µs':>9} {'xqueue':>10} {'vs libgomp':>11} {'vs libomp':>10}")
    best = 0.0
    for w in WORKLOADS:
        spec = load_taskgraph(w)
        for g in spec.grains:
            plan = {"threads": t, "sockets": s, "grain": g, "ranks": 1}
            e = {rt: estimate_plan(spec, m, {**plan, "runtime": rt}) for rt in ("xqueue", "libgomp", "libomp")}
            rg, rl = e["libgomp"].total_s / e["xqueue"].total_s, e["libomp"].total_s / e["xqueue"].total_s
            best = max(best, rg)
            print(f"{w['name']:<13} {g:>7} {e['xqueue'].grain_s * 1e6:>9.3f} {e['xqueue'].total_s * 1e3:>8.2f}ms "
                  f"{rg:>10.1f}× {rl:>9.1f}×")
    print(f"\nlargest ratio vs libgomp: {best:.0f}× vs the paper's largest 1522.8× ({best / 1522.8:.2f}× of it); "
          "fine-grain fib/nqueens reach 10²–10³×; the dependence-bound kernels (sort, sparselu, stencil) stay at "
          "1–3×, below the paper's 4–6× typical — NOT reached there (at these grains their tasks are microseconds or "
          "longer, so the team-wide lock is not the bottleneck in the model; the paper's per-benchmark inputs were "
          "not read, ANCHORS §7)")
    print("reason the magnitude is what it is: libgomp's serialized per-task time at 192 contenders comes from the "
          "lock law s0 + s1·(P − 1) with S03's calibrated order (0.3–1 µs at 128 threads); XQueue's per-task cost is "
          "its 110-cycle queue operation — both cited orders, not fitted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
