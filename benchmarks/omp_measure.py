"""Measured here vs predicted: the C/OpenMP kernels of ``hardware/cpu_kernels/`` (fib, nqueens, sort, stencil) at several
grains and thread counts on THIS machine, beside the task-graph model's prediction for the same runs on this machine's
calibrated socket file (``parplan calibrate cpu``), with the error per row (issue 14 item 5; target ≤ 20 % at every
grain, the fine-grain collapse predicted).

    python benchmarks/omp_measure.py                    # calibrates first (≈ 15 s), then ≈ 1 min of runs
    python benchmarks/omp_measure.py --hw mycpu-node.yaml --quick

What the model is given per row: the machine file, the runtime the compiler links (libgomp for gcc), the plan
(threads, grain), and the kernel's serial-elision time T_S measured in the same process (the work T₁ = T_S, as
Cilkscale takes the measured one-core time) — nothing fitted to the row.  The calibration's fib slope is fib's own
spawning cost, so the fib rows test the laws (how the cost scales with tasks and threads), the other kernels test
transfer to other task shapes.  Without a C compiler with OpenMP it prints why and exits 0.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

from parplan.hardware.cpu_probe import NoOpenMP, build_kernels, calibrate_cpu, omp_runtime, run_kernel, write_files
from parplan.hardware.cpu import load_cpu_machine
from parplan.models.tasks import estimate_plan
from parplan.workloads.queens import queens_levels
from parplan.workloads.taskgraph import _fib_calls, load_taskgraph

# (kernel, C arguments before the grain, grains, C arguments after the grain, model kernel entry)
FULL = {"fib": (30, [2, 4, 6, 10, 14, 20]), "nqueens": (13, [1, 2, 3, 4, 5]),
        "sort": (1 << 21, [128, 1024, 8192, 65536, 524288]), "stencil": (1026, [8, 16, 32, 64, 128, 256])}
QUICK = {"fib": (26, [2, 10, 18]), "nqueens": (11, [1, 3, 5]), "sort": (1 << 18, [256, 16384]),
         "stencil": (258, [8, 64])}
STENCIL_ITERS = 10


RUNS = 3  # each row: the min over RUNS processes of the min over reps (other jobs share the cores)


def measure(exes: dict, kernel: str, n: int, grain: int, threads: int, reps: int, runs: int = RUNS) -> dict:
    args = [n, grain, STENCIL_ITERS, reps] if kernel == "stencil" else [n, grain, reps]
    ds = [run_kernel(exes[kernel], args, threads) for _ in range(runs)]
    return {"time_s": min(d["time_s"] for d in ds), "serial_s": min(d["serial_s"] for d in ds)}


def model_workload(kernel: str, n: int, grain: int, serial_s: float) -> dict:
    """The task-graph workload of one measured run, its unit time from the measured serial elision."""
    import math

    if kernel == "fib":
        units, k = _fib_calls(n), {"name": "fib", "n": n}
    elif kernel == "nqueens":
        units, k = sum(queens_levels(n)), {"name": "nqueens", "n": n}
    elif kernel == "sort":
        units, k = n * math.log2(n), {"name": "sort", "n": n}
    else:  # the C grid has a one-point fixed border: (n − 2)² updated points per sweep
        side = n - 2
        units, k = side * side * STENCIL_ITERS, {"name": "stencil", "n": side, "iterations": STENCIL_ITERS,
                                                  "variant": "gauss-seidel"}
    k["unit_s"] = serial_s / units
    return {"family": "task-graph", "name": f"{kernel}-{n}-here", "kernel": k, "grain": [grain]}


def rows(exes: dict, machine, runtime: str, cases: dict, threads: list, reps: int, runs: int = RUNS) -> list:
    out = []
    for kernel, (n, grains) in cases.items():
        for g in grains:
            for p in threads:
                d = measure(exes, kernel, n, g, p, reps, runs)
                spec = load_taskgraph(model_workload(kernel, n, g, d["serial_s"]))
                e = estimate_plan(spec, machine, {"runtime": runtime, "threads": p, "sockets": 1, "grain": g,
                                                  "ranks": 1})
                top = max(e.parts, key=e.parts.get)
                out.append({"kernel": kernel, "n": n, "grain": g, "threads": p, "tasks": e.tasks,
                            "grain_s": e.grain_s, "serial_s": d["serial_s"], "measured_s": d["time_s"],
                            "predicted_s": e.total_s, "error": e.total_s / d["time_s"] - 1.0, "dominant": top})
    return out


def collapse(rs: list) -> list:
    """Per kernel and thread count: does the model put the slowest grain where the measurement does, and does the
    fine-grain end slow down in both (measured finest/best vs predicted finest/best)?"""
    out = []
    keys = sorted({(r["kernel"], r["threads"]) for r in rs})
    for k, p in keys:
        sel = sorted((r for r in rs if r["kernel"] == k and r["threads"] == p), key=lambda r: r["grain"])
        fine = sel[0] if k != "nqueens" else sel[-1]  # nqueens: a deeper cutoff is a finer grain
        mb, pb = min(r["measured_s"] for r in sel), min(r["predicted_s"] for r in sel)
        out.append((k, p, fine["measured_s"] / mb, fine["predicted_s"] / pb))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hw", help="a calibrated socket/machine file (default: calibrate now)")
    ap.add_argument("--quick", action="store_true", help="small instances, 3 repetitions")
    ap.add_argument("--reps", type=int, default=None)
    a = ap.parse_args(argv)
    reps = a.reps or (3 if a.quick else 5)
    cores = os.cpu_count() or 1
    threads = sorted({1, min(2, cores), cores}) if cores <= 4 else [1, 2, cores // 2, cores]
    with tempfile.TemporaryDirectory(prefix="parplan-omp-") as tmp:
        try:
            exes = build_kernels(tmp, ("fib", "nqueens", "sort", "stencil", "stream"))
        except NoOpenMP as e:
            print(f"skipped: {e}")
            return 0
        if a.hw:
            machine = load_cpu_machine(a.hw)
        else:
            sock, mach, _ = calibrate_cpu(reps=reps, log=lambda s: print(f"# {s}", file=sys.stderr))
            from pathlib import Path

            node = write_files(sock, mach, Path(tmp) / "here.yaml")
            machine = load_cpu_machine(node)
        runtime = machine.socket.task_runtime or omp_runtime()
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        rs = rows(exes, machine, runtime, QUICK if a.quick else FULL, threads, reps)
    s = machine.socket
    print(f"# {s.name}: {s.cores} cores, task overhead {1e9 * (s.task_overhead_s or 0):.0f} ns, contention "
          f"{1e9 * (s.task_contention_s or 0):.0f} ns/task at {s.cores} threads, dependence "
          f"{1e9 * (s.task_dependence_s or 0):.0f}/{1e9 * (s.task_dependence_contention_s or 0):.0f} ns (1/{s.cores} "
          f"threads), runtime {runtime}; load average {load:.2f} at the start (other jobs share the cores); times are "
          f"the min of {RUNS} processes × {reps} repetitions")
    print(f"{'kernel':<8} {'n':>8} {'grain':>7} {'thr':>3} {'tasks':>10} {'task µs':>8} {'measured':>10} "
          f"{'predicted':>10} {'error':>7}  dominant")
    for r in rs:
        print(f"{r['kernel']:<8} {r['n']:>8} {r['grain']:>7} {r['threads']:>3} {r['tasks']:>10,.0f} "
              f"{r['grain_s'] * 1e6:>8.3f} {r['measured_s']:>9.4f}s {r['predicted_s']:>9.4f}s "
              f"{100 * r['error']:>+6.1f}%  {r['dominant'].removesuffix('_s')}")
    within = sum(abs(r["error"]) <= 0.20 for r in rs)
    print(f"{within}/{len(rs)} rows within ±20 %; median |error| "
          f"{100 * sorted(abs(r['error']) for r in rs)[len(rs) // 2]:.1f} %")
    print("fine-grain collapse (finest grain / best grain), measured vs predicted:")
    for k, p, m, pr in collapse(rs):
        print(f"  {k:<8} {p} thr: measured {m:6.2f}×, predicted {pr:6.2f}×"
              f"{'' if (m > 1.5) == (pr > 1.5) else '   <- direction missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
