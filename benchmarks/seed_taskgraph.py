"""Seed S08 (Taskgraph: A Low Contention OpenMP Tasking Framework, Yu, Royuela, Quiñones, IEEE TPDS 2023, arXiv
2212.04771; SEEDS.md S08 (d), ANCHORS.md Part B §1.4 and case C4): record the task dependency graph once, replay it
from the second execution on — below vanilla LLVM task overhead — beside parplan's ratios at task grains
g ≈ 5, 20, 100, 1000 µs, with the work-stealing executor playing the same plans.

    python benchmarks/seed_taskgraph.py

Scenario (S08 (d)): one 48-core socket — a Xeon Platinum 8480+ with 48 of its 56 cores (the catalog has no 48-core
Xeon; the per-task costs are the runtime profiles', not the socket's); a heat-diffusion Gauss-Seidel stencil
(4096², one task per block with five dependences, one producer), 100 executions of the task region, block side
chosen so the task grain is ≈ g at 2 ns per point update.  Compared: LLVM OpenMP tasks (libomp) and GCC (libgomp)
vs taskgraph record/replay (base libomp + record in execution 1, replay afterwards).

What the paper states (abstract, [seed]/[abs]): taskgraph "outperforms the vanilla OpenMP system in terms of
performance and scalability, for all structured and unstructured parallelism, and considering coarse and fine
grained tasks"; its speedup figures were not read (ANCHORS.md §7).  The numeric targets are therefore SEEDS.md's
derived expectations — ≥ 2× at g ≤ 20 µs, → 1× at g ≥ 1 ms, the first (recording) execution 1.0–1.1× slower than
vanilla — and ANCHORS case C4's replay-vs-LLVM ≈ 5× / vs-GCC ≈ 7.5× at small grain (taskiter's averages, M).
Nothing is fitted.
"""
from __future__ import annotations

import math
import sys

from parplan.executor.worksteal import simulate_plan
from parplan.hardware.cpu import load_cpu_machine
from parplan.models.tasks import estimate_plan
from parplan.models.tasks_terms import profiles
from parplan.workloads.taskgraph import load_taskgraph

GRAINS_US = (5, 20, 100, 1000)
UNIT_S = 2.0e-9  # s per 5-point update (examples/stencil.yaml's assumed figure)
N, ITERS, THREADS = 4096, 100, 48
SIM_GRAINS_US = (5, 20, 100)  # the executor plays these (the 1 ms grain adds nothing: 36 tasks, span-bound)
C4 = {"libomp": 5.0, "libgomp": 7.5}  # ANCHORS case C4 (taskiter's averages as the replay target, M)


def blocks_for(grains_us, unit=UNIT_S) -> list[int]:
    return [max(8, int(round(math.sqrt(g * 1e-6 / unit)))) for g in grains_us]


def stencil(n: int, iters: int, blocks: list[int]):
    return load_taskgraph({"family": "task-graph", "name": f"heat-gs-{n}", "grain": blocks,
                           "kernel": {"name": "stencil", "n": n, "iterations": iters, "unit_s": UNIT_S,
                                      "variant": "gauss-seidel"}})


def plan(rt: str, b: int) -> dict:
    return {"runtime": rt, "threads": THREADS, "sockets": 1, "grain": b, "ranks": 1}


def rows(m=None) -> list[dict]:
    """Per grain: model times of libomp / libgomp / taskgraph over ITERS executions, the first execution's ratio
    (record vs vanilla), per-task runtime cost, and the executor's libomp/taskgraph ratio on the smaller grid."""
    m = m or load_cpu_machine("xeon-8480p-2s")
    blocks = blocks_for(GRAINS_US)
    spec, once = stencil(N, ITERS, blocks), stencil(N, 1, blocks)
    prof = profiles(["libomp", "taskgraph"], socket=m.socket)
    v = {k: a for k, a in prof.values.items()}
    out = []
    for g, b in zip(GRAINS_US, blocks):
        e = {rt: estimate_plan(spec, m, plan(rt, b)) for rt in ("libomp", "libgomp", "taskgraph")}
        first = {rt: estimate_plan(once, m, plan(rt, b)).total_s for rt in ("libomp", "taskgraph")}
        d = float(spec.summary().deps[blocks.index(b)])
        # runtime cost per task: vanilla LLVM create + d·dep + sched (+ the serialized part) vs a replayed task
        per_task = {"libomp": float(v["create"][0] + d * v["dep"][0] + v["sched"][0] + v["lock_s0"][0]
                                    + v["lock_s1"][0] * (THREADS - 1)),
                    "taskgraph": float(v["replay"][1])}
        r = {"g_us": g, "block": b, "grain_s": e["libomp"].grain_s, **{f"{rt}_s": e[rt].total_s for rt in e},
             "vs_libomp": e["libomp"].total_s / e["taskgraph"].total_s,
             "vs_libgomp": e["libgomp"].total_s / e["taskgraph"].total_s,
             "first_ratio": first["taskgraph"] / first["libomp"],
             "overhead_libomp_s": per_task["libomp"], "overhead_taskgraph_s": per_task["taskgraph"]}
        if g in SIM_GRAINS_US:
            s = {rt: simulate_plan(spec, m, plan(rt, b)).makespan_s for rt in ("libomp", "taskgraph")}
            r["sim_vs_libomp"] = s["libomp"] / s["taskgraph"]
            r["model_small_vs_libomp"] = r["vs_libomp"]
        out.append(r)
    return out


def verdict(rs: list[dict]) -> tuple[bool, str]:
    fine = [r for r in rs if r["g_us"] <= 20]
    coarse = [r for r in rs if r["g_us"] >= 1000]
    ok_fine = all(r["vs_libomp"] >= 2.0 for r in fine)
    fine_txt = ", ".join(f"{r['g_us']} µs {r['vs_libomp']:.2f}×" for r in fine)
    ok_coarse = all(abs(r["vs_libomp"] - 1) <= 0.1 for r in coarse)
    ok_first = all(1.0 <= r["first_ratio"] <= 1.1 for r in rs)
    ok_below = all(r["overhead_taskgraph_s"] < r["overhead_libomp_s"] for r in rs)
    sims = [r for r in rs if "sim_vs_libomp" in r]
    ok_sim = all(0.5 <= r["sim_vs_libomp"] / r["model_small_vs_libomp"] <= 2.0 for r in sims)
    parts = [f"≥ 2× vs LLVM at g ≤ 20 µs: {'yes' if ok_fine else 'NO'} ({fine_txt}: the single producer's "
             "creation, 1.5 µs per task, is serialized only while it exceeds the work path)",
             f"≈ 1× at 1 ms: {'yes' if ok_coarse else 'NO'}",
             f"recording execution 1.0–1.1× vanilla: {'yes' if ok_first else 'NO'}",
             f"per-task cost below vanilla at every grain: {'yes' if ok_below else 'NO'}",
             f"executor within a factor 2 of the model's ratio at 5–100 µs: {'yes' if ok_sim else 'NO'}"]
    return ok_fine and ok_coarse and ok_first and ok_below and ok_sim, "; ".join(parts)


def main() -> int:
    m = load_cpu_machine("xeon-8480p-2s")
    rs = rows(m)
    print(f"# S08 taskgraph: {N}² Gauss-Seidel heat stencil, {ITERS} executions, {THREADS} threads on one socket of "
          f"{m.name}")
    print(f"{'g µs':>6} {'block':>5} {'libomp':>9} {'taskgraph':>10} {'vs LLVM':>8} {'vs GCC':>8} {'1st exec':>8} "
          f"{'µs/task LLVM':>12} {'replay':>7} {'executor vs LLVM':>16}")
    for r in rs:
        sim = (f"{r['sim_vs_libomp']:>6.2f}× (model {r['model_small_vs_libomp']:.2f}×)" if "sim_vs_libomp" in r
               else "   (not simulated)")
        print(f"{r['g_us']:>6} {r['block']:>5} {r['libomp_s']:>8.3f}s {r['taskgraph_s']:>9.3f}s {r['vs_libomp']:>7.2f}× "
              f"{r['vs_libgomp']:>7.2f}× {r['first_ratio']:>7.3f}× {r['overhead_libomp_s'] * 1e6:>12.3f} "
              f"{r['overhead_taskgraph_s'] * 1e6:>7.3f} {sim}")
    fine = rs[0]
    print("\npaper: taskgraph outperforms vanilla LLVM OpenMP at coarse and fine grain (abstract); speedup figures "
          "not read.  SEEDS.md (derived): ≥ 2× at g ≤ 20 µs, → 1× at 1 ms, first execution 1.0–1.1× slower.")
    print(f"ANCHORS C4 (replay at small grain, taskiter's averages): ≈ {C4['libomp']}× vs LLVM, ≈ {C4['libgomp']}× vs "
          f"GCC; parplan at g = {fine['g_us']} µs: {fine['vs_libomp']:.2f}× vs LLVM, {fine['vs_libgomp']:.2f}× vs GCC "
          f"({'within a factor 2' if all(0.5 <= fine[k] / C4[rt] <= 2 for k, rt in (('vs_libomp', 'libomp'), ('vs_libgomp', 'libgomp'))) else 'outside a factor 2'})")
    ok, why = verdict(rs)
    print(("reached: " if ok else "not reached: ") + why)
    return 0


if __name__ == "__main__":
    sys.exit(main())
