"""Seed S11 (SwiftFusion / StreamFusion, Yang et al., arXiv 2601.20273): topology-aware sequence parallelism for
diffusion-transformer (DiT) inference — the paper's 1.35× mean (up to 1.77×) multi-node speedup, priced by parplan's
DiT family (``family: dit-inference``: models/dit.py on the measured kernel and collective curves) and confirmed by
its executor (executor/dit.py).

Scenario (../shared/SEEDS.md S11 (d)): 1, 2 and 4 nodes × 8 H100 (NVLink4, one 400 Gb/s NIC per GPU); the seed's
assumed 12B DiT (catalogs/workloads/dit/dit-12b.yaml: h = 3072, 24 heads) at s ∈ {16k, 64k, 256k} tokens, batch 1,
50 steps.  Plan A = USP: Ulysses inside a node (u = 8) × ring across nodes (r = nodes), blocking all-to-alls,
two-sided (one node: Ulysses 8).  Plan B = topology-aware: the ring inside a node over NVLink (r = 8), Ulysses across
nodes (u = nodes) with its all-to-all cut into head chunks pipelined with attention (Torus Attention), one-sided —
the best of chunks 1, 2, 4 (one node: Ulysses 8, one-sided).  The overlap is what the schedule hides, not an input.
"Reached" is decided before looking: the multi-node mean within ±0.15 of the paper's 1.35×.

    python benchmarks/seed_swiftfusion.py
"""
from __future__ import annotations

import sys

PAPER_MEAN, PAPER_MAX = 1.35, 1.77
PAPER = "SwiftFusion: 1.35× on average, up to 1.77×, over the state-of-the-art SP approach (abstract)"
TOKENS = (16384, 65536, 262144)
NODES = (1, 2, 4)
BAND = 0.15


def workload(s: int) -> dict:
    return {"family": "dit-inference", "name": f"dit-12b-{s // 1024}k", "model": "dit-12b", "tokens": s,
            "batch": 1, "steps": 50, "precision": "bf16"}


def plans(nodes: int) -> tuple:
    if nodes == 1:
        return "sp=ulysses,u=8,comm=two-sided", ["sp=ulysses,u=8,comm=one-sided"]
    return (f"sp=usp,u=8,r={nodes},comm=two-sided",
            [f"sp=torus,u={nodes},r=8,comm=one-sided,chunks={k}" for k in (1, 2, 4) if (24 // nodes) % k == 0])


def rows(simulate: bool = True) -> list:
    from parplan.executor.dit import simulate_plan
    from parplan.hardware.catalog import load_cluster
    from parplan.models.dit import estimate_plan, parse_plan
    from parplan.models.dit_terms import dit_context
    from parplan.planner.spaces.dit import search
    from parplan.workloads.dit import load_dit

    out = []
    for nodes in NODES:
        cluster = load_cluster(f"h100-sxm-80gb:{nodes}x8")
        for s in TOKENS:
            spec = load_dit(workload(s))
            c = dit_context(spec, cluster)
            pa, pbs = plans(nodes)
            a = estimate_plan(spec, cluster, parse_plan(pa, spec, c), c)
            bs = [estimate_plan(spec, cluster, parse_plan(t, spec, c), c) for t in pbs]
            b = min(bs, key=lambda e: e.step_s)
            best = search(spec, cluster, top=1, fix={"dp": 1}).rows[0]
            row = {"nodes": nodes, "tokens": s, "plan_a": a.plan_string(), "plan_b": b.plan_string(),
                   "a_s": a.step_s, "b_s": b.step_s, "speedup": a.step_s / b.step_s,
                   "hidden_b": b.hidden_fraction, "best": f"{best['sp']} u={best['u']} r={best['r']} "
                   f"tp={best['tp']} {best['comm']} k={best['chunks']}", "best_speedup": a.step_s / best["step_s"]}
            if simulate:
                sa = simulate_plan(spec, cluster, a.plan, c).step_s
                sb = simulate_plan(spec, cluster, b.plan, c).step_s
                row.update(sim_speedup=sa / sb, sim_error=max(abs(a.step_s / sa - 1), abs(b.step_s / sb - 1)))
            out.append(row)
    return out


def main(argv=None) -> int:
    rs = rows()
    print(f"paper: {PAPER}")
    print("scenario: 12B DiT (h 3072, 24 heads, assumed), batch 1, 50 steps, H100 nodes × 8; A = USP two-sided, "
          "B = ring-in-node × Ulysses-across (Torus, pipelined chunks) one-sided")
    print(f"{'nodes':>5} {'tokens':>7} {'A step':>10} {'B step':>10} {'B/A model':>9} {'B/A exec':>8} "
          f"{'hidden B':>8}  {'B plan chunks':<14} {'search best (vs A)':<40}")
    for r in rs:
        print(f"{r['nodes']:>5} {r['tokens']:>7} {r['a_s'] * 1e3:>8.1f}ms {r['b_s'] * 1e3:>8.1f}ms "
              f"{r['speedup']:>8.3f}× {r['sim_speedup']:>7.3f}× {100 * r['hidden_b']:>7.0f}%  "
              f"{r['plan_b'].rsplit('=', 1)[-1]:<14} {r['best']} ({r['best_speedup']:.2f}×)")
    multi = [r["speedup"] for r in rs if r["nodes"] > 1]
    mean, top = sum(multi) / len(multi), max(multi)
    print(f"parplan multi-node B/A: mean {mean:.2f}×, max {top:.2f}×   (paper: mean {PAPER_MEAN}×, max {PAPER_MAX}×); "
          f"model vs executor within {100 * max(r['sim_error'] for r in rs):.2f} %")
    if abs(mean - PAPER_MEAN) <= BAND:
        print(f"claim REACHED: the multi-node mean lies within ±{BAND} of {PAPER_MEAN}×")
    else:
        why = ("the topology-aware plan's gain in this model comes from the two-sided copy kernels' SM share "
               "(DeepSeek-V3's 20/132 SMs) and per-exchange sync; its chunked inter-node all-to-alls sit below the "
               "measured network all-to-all curve's smallest point (7.6 MB), where the curve is latency-bound, so "
               "chunking adds exposed time at 16k tokens, and USP's ring already hides most of its inter-node K/V "
               "behind attention at 64k–256k")
        print(f"claim NOT reached: multi-node mean {mean:.2f}× vs {PAPER_MEAN}× (band ±{BAND}): {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
