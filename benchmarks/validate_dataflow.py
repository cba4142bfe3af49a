"""Closed form vs the event-engine executor for the dataflow family: inductive kernels × devices × plans.

    python benchmarks/validate_dataflow.py

The closed form (``models/dataflow_terms.py``) prices each iteration's busiest core with closed-form sums over the
loop groups (and half a chunk of padding per loop for cyclically dealt triangular groups); the executor
(``executor/dataflow.py``) deals every loop to its core, prices it, and plays cores, the dependence chain, the
memory link and the hand-offs on ``executor/engine.py``.  Target (issue 15): within 5 % on at least 10 cases.
"""
from __future__ import annotations

import sys

from parplan.executor.dataflow import agreement

CASES = [  # (kernel, n, device, plans)
    ("cholesky", 64, "c6678", ["cores=1", "cores=8", "cores=4,unroll=2", "cores=8,vector=off"]),
    ("cholesky", 128, "revel-8lane", ["cores=8", "cores=2,unroll=4"]),
    ("qr", 48, "c6678", ["cores=1,unroll=4", "cores=8,unroll=2"]),
    ("qr", 64, "revel-8lane", ["cores=8"]),
    ("trsv", 200, "c6678", ["cores=1", "cores=8,unroll=8"]),
    ("trsv", 96, "tda4vm-c7x", ["cores=1,unroll=2"]),
    ("trsm", 40, "c6678", ["cores=8,unroll=2"]),
    ("fft", 1024, "c6678", ["cores=4"]),
    ("fft", 256, "vision-p6", ["cores=1,unroll=4"]),
    ("cholesky", 100, "vision-p6", ["cores=1,vector=on,unroll=2"]),
]
TOL = 0.05


def run_cases() -> list[dict]:
    rows = []
    for kernel, n, hw, plans in CASES:
        spec = {"family": "dataflow", "name": f"{kernel}-{n}", "kernel": {"name": kernel, "n": n}}
        rows += agreement(spec, hw, plans=plans)
    return rows


def main() -> int:
    rows = run_cases()
    print(f"{'workload':<14}{'device':<13}{'plan':<42}{'executor':>12}{'closed form':>13}{'error':>9}")
    for r in rows:
        print(f"{r['workload']:<14}{r['device']:<13}{r['plan']:<42}{r['simulated_s'] * 1e6:>10.3f}µs"
              f"{r['predicted_s'] * 1e6:>11.3f}µs{100 * r['error']:>+8.2f}%")
    ok = sum(abs(r["error"]) <= TOL for r in rows)
    print(f"\n{ok}/{len(rows)} within {100 * TOL:.0f} %")
    return 0 if ok >= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
