"""Closed form (models/replication.py) vs the discrete-event executor (executor/replication.py) for the
replicated-service family: saturation throughput of SMR, scheduler-based parallel SMR and P-SMR across dependent
fractions and thread counts, and mean latency at half and 80 % of capacity for dependent-free mixes (the S01(d)
KV store on smr-3x-16c-10gbe).  The issue requires ≤ 5 % on ≥ 10 cases.

    python benchmarks/validate_replication.py
"""
from __future__ import annotations

import sys

from seed_psmr import HW, workload

from parplan.executor.replication import simulate_plan
from parplan.hardware.cpu import load_cpu_machine
from parplan.models.replication import estimate_plan, evaluate

THROUGHPUT = [(0.0, "psmr", 4, 4, 32), (0.0, "psmr", 16, 1, 32), (0.01, "psmr", 4, 4, 32), (0.01, "psmr", 16, 4, 32),
              (0.1, "psmr", 8, 4, 32), (1.0, "psmr", 8, 4, 32), (0.01, "sched-psmr", 4, 1, 32),
              (0.1, "sched-psmr", 8, 1, 32), (0.0, "sched-psmr", 16, 1, 1), (0.0, "smr", 1, 1, 8)]
LATENCY = [(0.0, "psmr", 8, 2, 8, 0.5), (0.0, "psmr", 16, 4, 1, 0.5), (0.0, "smr", 1, 1, 1, 0.5),
           (0.0, "sched-psmr", 8, 1, 8, 0.5), (0.0, "psmr", 4, 2, 8, 0.8)]


def rows(n_cmds=None) -> list[dict]:
    m = load_cpu_machine(HW)
    out = []
    for d, s, n, g, b in THROUGHPUT:
        spec, plan = workload(d), {"scheme": s, "threads": n, "rings": g, "batch": b}
        e = estimate_plan(spec, m, plan)
        sim = simulate_plan(spec, m, plan, n_cmds=n_cmds)
        out.append({"case": f"d={d} {e.plan_string()}", "metric": "kcmd/s", "predicted": e.throughput_per_s / 1e3,
                    "simulated": sim.throughput_per_s / 1e3, "bound": e.limit})
    for d, s, n, g, b, rho in LATENCY:
        spec, plan = workload(d), {"scheme": s, "threads": n, "rings": g, "batch": b}
        e = estimate_plan(spec, m, plan)
        lam = rho * e.throughput_per_s
        pred = float(evaluate(spec, m, s, n, g, b, lam)["latency_s"])
        sim = simulate_plan(spec, m, plan, load=lam, n_cmds=n_cmds)
        out.append({"case": f"d={d} {e.plan_string()} at {rho:.0%}", "metric": "latency µs", "predicted": pred * 1e6,
                    "simulated": sim.latency_s * 1e6, "bound": e.limit})
    for r in out:
        r["error"] = r["predicted"] / r["simulated"] - 1.0
    return out


def main() -> int:
    rs = rows()
    print(f"{'case':<52} {'metric':<10} {'closed form':>12} {'executor':>12} {'error':>8}")
    for r in rs:
        print(f"{r['case']:<52} {r['metric']:<10} {r['predicted']:>12.2f} {r['simulated']:>12.2f} "
              f"{100 * r['error']:>+7.2f}%")
    ok = sum(abs(r["error"]) <= 0.05 for r in rs)
    print(f"{ok}/{len(rs)} within 5 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
