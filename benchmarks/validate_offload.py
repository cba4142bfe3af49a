"""Closed form (models/offload.py: one request's flow-shop time, T_R = T_1 + (R − 1)·max resource busy time for R
pipelined requests) vs the discrete-event executor (executor/offload.py, the shared engine) for the offload family:
the S13 element kernel and 3-stage chain on catalogs/offload_nodes/caf-k40-phi.yaml — every accelerator, resident
and copy-back chains, 1 to 16 chunks, mixed CPU/device placements, remote actors.  The issue requires ≤ 5 % on ≥ 10.

    python benchmarks/validate_offload.py
"""
from __future__ import annotations

import sys

from seed_caf import CHAIN, HW, MANDEL

from parplan.executor.offload import simulate_plan
from parplan.hardware.offload import load_offload_node
from parplan.models.offload import estimate_plan, parse_plan
from parplan.workloads.offload import load_offload

CASES = [  # (workload, requests, remote, plan)
    (MANDEL, 4, False, "place=tesla-k40,chunks=1,n=1e6"),
    (MANDEL, 4, False, "place=tesla-k40,chunks=16,n=1e7"),
    (MANDEL, 4, False, "place=xeon-phi-5110p,chunks=4,n=1e6"),
    (MANDEL, 4, False, "place=hd-p4600,chunks=1,n=1e6"),
    (MANDEL, 4, True, "place=tesla-k40,chunks=1,n=1e6"),
    (CHAIN, 8, False, "place=tesla-k40,resident=true,chunks=1,n=1e7"),
    (CHAIN, 8, False, "place=tesla-k40,resident=false,chunks=1,n=1e7"),
    (CHAIN, 8, False, "place=tesla-k40,resident=false,chunks=16,n=1e7"),
    (CHAIN, 8, False, "place=cpu+tesla-k40+tesla-k40,resident=true,chunks=4,n=1e6"),
    (CHAIN, 8, False, "place=tesla-k40+xeon-phi-5110p+cpu,resident=true,chunks=1,n=1e6"),
    (CHAIN, 8, False, "place=xeon-phi-5110p,resident=false,chunks=4,n=1e7"),
    (CHAIN, 8, True, "place=tesla-k40,resident=true,chunks=4,n=1e6"),
    (CHAIN, 1, False, "place=tesla-k40,resident=true,chunks=16,n=1e8"),
]


def rows() -> list[dict]:
    node = load_offload_node(HW)
    out = []
    for w, reqs, remote, text in CASES:
        spec = load_offload({**w, "requests": reqs, "remote": remote})
        plan = parse_plan(text, spec, node)
        e = estimate_plan(spec, node, plan)
        sim = simulate_plan(spec, node, plan)
        out.append({"case": f"{spec.name} R={reqs}{' remote' if remote else ''} {text}", "predicted_s": e.requests_s,
                    "simulated_s": sim.makespan_s, "error": e.requests_s / sim.makespan_s - 1.0,
                    "bottleneck": e.bottleneck})
    return out


def main() -> int:
    rs = rows()
    print(f"{'case':<82} {'closed form':>12} {'executor':>12} {'error':>8}  bottleneck")
    for r in rs:
        print(f"{r['case']:<82} {r['predicted_s'] * 1e3:>10.3f}ms {r['simulated_s'] * 1e3:>10.3f}ms "
              f"{100 * r['error']:>+7.2f}%  {r['bottleneck']}")
    ok = sum(abs(r["error"]) <= 0.05 for r in rs)
    print(f"{ok}/{len(rs)} within 5 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
