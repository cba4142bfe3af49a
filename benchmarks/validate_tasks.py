"""The task-graph closed form (models/tasks.py) against the work-stealing executor (executor/worksteal.py) on the
issue-14 validation set: kernels × runtimes × threads × grains on catalog machines — a printed table, every case's
error, and the worst ones.

    python benchmarks/validate_tasks.py            # ≈ 1–2 min (Python discrete-event simulation)
    python benchmarks/validate_tasks.py --quick    # a third of the cases

Both sides read one runtime profile (catalogs/calibration/task_runtimes.yaml) and one machine; the executor plays the
deques, steals, the team-wide lock, the producer and the merges, the closed form sums its terms.  The closed form's
MPI parts are left out (the executor simulates one rank).
"""
from __future__ import annotations

import argparse
import sys
import time

from parplan.executor.worksteal import agreement

RUNTIMES = ["libgomp", "libomp", "nanos6", "xqueue", "taskgraph", "taskiter", "lowsync-ws", "chase-lev-ws"]
# (workload, machine, threads per socket): sizes kept so one simulation is well under a second
CASES = [
    ({"family": "task-graph", "name": "fib-24", "kernel": {"name": "fib", "n": 24}, "grain": [8, 12, 16]},
     "epyc-7763-2s", [1, 8, 64]),
    ({"family": "task-graph", "name": "nqueens-10", "kernel": {"name": "nqueens", "n": 10}, "grain": [2, 3, 4]},
     "xeon-8480p-2s", [1, 8, 56]),
    ({"family": "task-graph", "name": "sort-1M", "kernel": {"name": "sort", "n": 1 << 20},
      "grain": [2048, 16384, 131072]}, "epyc-9654-2s", [1, 8, 96]),
    ({"family": "task-graph", "name": "stencil-gs-1024", "kernel": {"name": "stencil", "n": 1024, "iterations": 3},
      "grain": [32, 64, 128]}, "epyc-7763-2s", [1, 8, 64]),
    ({"family": "task-graph", "name": "sparselu-32", "kernel": {"name": "sparselu", "n": 32, "block": 64},
      "grain": [8, 16]}, "grace-superchip", [1, 8, 72]),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="two runtimes per workload")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for spec, hw, threads in CASES:
        rts = RUNTIMES if not a.quick else ["libgomp", "lowsync-ws"]
        for r in agreement(spec, hw, threads=threads, runtimes=rts):
            rows.append({"workload": spec["name"], "machine": hw, **r})
    print(f"{'workload':<16} {'machine':<16} {'runtime':<12} {'thr':>4} {'grain':>7} {'simulated':>11} "
          f"{'closed form':>11} {'error':>7}")
    for r in rows:
        print(f"{r['workload']:<16} {r['machine']:<16} {r['runtime']:<12} {r['threads']:>4} {r['grain']:>7} "
              f"{r['simulated_s'] * 1e3:>9.4f}ms {r['predicted_s'] * 1e3:>9.4f}ms {100 * r['error']:>+6.1f}%")
    errs = sorted(abs(r["error"]) for r in rows)
    n = len(rows)
    print(f"\n{n} cases in {time.perf_counter() - t0:.0f} s: within ±5 % {sum(e <= 0.05 for e in errs)}, ±10 % "
          f"{sum(e <= 0.10 for e in errs)}, ±20 % {sum(e <= 0.20 for e in errs)}; median |error| "
          f"{100 * errs[n // 2]:.1f} %, worst {100 * errs[-1]:.1f} %")
    print("per workload: cases, within ±5 %, within ±20 %, worst |error|")
    for w in dict.fromkeys(r["workload"] for r in rows):
        es = [abs(r["error"]) for r in rows if r["workload"] == w]
        print(f"  {w:<16} {len(es):>4} {sum(e <= 0.05 for e in es):>4} {sum(e <= 0.20 for e in es):>4} "
              f"{100 * max(es):6.1f} %")
    by = {}
    for r in rows:
        by.setdefault((r["workload"], r["runtime"]), []).append(abs(r["error"]))
    print("worst per workload × runtime (|error| max):")
    for (w, rt), es in sorted(by.items(), key=lambda kv: -max(kv[1]))[:8]:
        print(f"  {w:<16} {rt:<12} {100 * max(es):5.1f} %  over {len(es)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
