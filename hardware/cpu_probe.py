"""Measure THIS machine into a user ``cpu-socket`` file (and a one-node ``cpu-cluster`` file beside it) that ``--hw``
accepts — the task-graph family's calibration (``parplan calibrate cpu``, issue 14 item 5).

What is measured, each the min (time) or max (rate) over repetitions, on a machine other jobs may share:

* **cores / SMT / sockets / caches / clock** — ``os.cpu_count`` and ``lscpu`` (``/proc/cpuinfo`` "cpu MHz" for the
  clock; a VM reports its nominal clock);
* **per-task overhead** — fib-like spawning (``hardware/cpu_kernels/fib.c``): the slope of (T(fib n, cutoff c) − T(serial
  elision)) over the task count across cutoffs, on one thread.  libgomp runs a task at once when the team has one
  thread (``GOMP_task``: no team → undeferred, gcc libgomp/task.c), so an empty-task loop would time only a function
  call; the fib slope charges what a recursive spawn + taskwait really costs;
* **contention** — the same fine-grain fib on every core: its time per task is the serialized time per task at full
  contention (the lock law's s(P) at P = cores), when it exceeds the one-thread cost shared by the cores;
* **dependences** — one producer's empty tasks with and without five distinct dependences each (``deps.c``): the
  cost per dependence on one thread and on every core (libgomp registers them under the team lock);
* **bandwidth** — STREAM triad (24 B per element, McCalpin's counting) with the OpenMP team (``stream.c``; numpy
  triad in threads without a compiler) and with one core;
* **DRAM latency** — a dependent pointer chase over a random cycle far above the L3 (``stream.c``);
* **per-core FP64 GEMM** — numpy ``matmul`` in a subprocess with one BLAS thread.

The C kernels are compiled with the system compiler (``$CC`` or ``cc``, ``-O2 -fopenmp``) into a temporary folder;
without a compiler or OpenMP the task figures are left out (the file is still written) and a message says so.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from parplan.errors import SpecError

KERNELS = ("fib", "empty_tasks", "deps", "nqueens", "sort", "stencil", "stream")
FIB_N, FIB_CUTOFFS = 28, (2, 4, 6, 8)  # fib(28): 1.0M tasks at cutoff 2 — a fraction of a second per run
DEP_TASKS = 100_000
TEAM_RUNS = 3  # each measurement repeated as whole processes too (min): other jobs on the cores disturb single runs


class NoOpenMP(RuntimeError):
    """No C compiler, or one without OpenMP: the C kernels cannot be built here."""


def omp_sources() -> Path:
    """The C kernels shipped with the package (``parplan/hardware/cpu_kernels/*.c``); NoOpenMP if missing."""
    d = Path(__file__).resolve().parent / "cpu_kernels"
    if not (d / "fib.c").is_file():
        raise NoOpenMP(f"the C kernels (cpu_kernels/*.c) are not next to this installation ({d})")
    return d


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise NoOpenMP("no C compiler (cc, gcc, clang or $CC) on this machine")
    return cc


def build_kernels(outdir: "str | Path", names=KERNELS) -> dict:
    """Compile ``names`` from hardware/cpu_kernels with ``cc -O2 -fopenmp`` into ``outdir``: {name: executable}."""
    cc, src, out = compiler(), omp_sources(), Path(outdir)
    exes = {}
    for n in names:
        exe = out / n
        p = subprocess.run([cc, "-O2", "-fopenmp", str(src / f"{n}.c"), "-o", str(exe)], capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            raise NoOpenMP(f"{Path(cc).name} -fopenmp failed on {n}.c: {p.stderr.strip()[:200]}")
        exes[n] = exe
    return exes


def omp_runtime() -> str:
    """The OpenMP runtime the system compiler links: libomp for clang, libgomp for gcc."""
    try:
        v = subprocess.run([compiler(), "--version"], capture_output=True, text=True, timeout=30).stdout.lower()
    except (OSError, subprocess.SubprocessError):
        return "libgomp"
    return "libomp" if "clang" in v else "libgomp"


def run_kernel(exe: "str | Path", args, threads: int, timeout: float = 300.0) -> dict:
    """Run one kernel with OMP_NUM_THREADS = ``threads`` (the runtime's default binding and wait policy), its JSON
    line as a dict."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    p = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{Path(exe).name} {' '.join(map(str, args))} failed: {p.stderr.strip()[:200]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def fib_tasks(n: int, cutoff: int) -> float:
    """Tasks fib.c creates: two per call with argument ≥ max(cutoff, 2) (as workloads/taskgraph.py counts them)."""
    from parplan.workloads.taskgraph import kernel_summary, KernelEntry

    return float(kernel_summary(KernelEntry(name="fib", n=n), [cutoff]).tasks[0])


def task_costs(exes: dict, cores: int, reps: int = 5) -> dict:
    """Per-task cost on one thread (the fib slope) and the serialized time per task on every core."""
    import numpy as np

    runs = {c: [] for c in FIB_CUTOFFS}
    for _ in range(TEAM_RUNS):  # round-robin over the cutoffs: a busy spell on the cores hits one run of each
        for c in FIB_CUTOFFS:
            runs[c].append(run_kernel(exes["fib"], [FIB_N, c, reps], 1))
    xs = [fib_tasks(FIB_N, c) for c in FIB_CUTOFFS]
    ys = [min(d["time_s"] for d in runs[c]) - min(d["serial_s"] for d in runs[c]) for c in FIB_CUTOFFS]
    slope = float(np.polyfit(xs, ys, 1)[0])  # seconds per task (least squares over the cutoffs)
    out = {"task_overhead_s": max(slope, 1e-10), "fib_points": [[x, y] for x, y in zip(xs, ys)]}
    if cores > 1:
        t = min(run_kernel(exes["fib"], [FIB_N, FIB_CUTOFFS[0], reps], cores)["time_s"] for _ in range(TEAM_RUNS))
        per = t / xs[0]
        if per > out["task_overhead_s"] / cores:
            out["task_contention_s"] = per
        out["fib_all_cores_s"] = t
    if "deps" in exes:  # dependence registration: one producer, five distinct dependences per task (deps.c)
        one = min(run_kernel(exes["deps"], [DEP_TASKS, reps], 1)["per_dependence_s"] for _ in range(TEAM_RUNS))
        out["task_dependence_s"] = max(one, 1e-10)
        if cores > 1:
            team = min(run_kernel(exes["deps"], [DEP_TASKS, reps], cores)["per_dependence_s"]
                       for _ in range(TEAM_RUNS))
            out["task_dependence_contention_s"] = max(team, out["task_dependence_s"])
    return out


def stream_c(exes: dict, cores: int, reps: int = 5) -> dict:
    one = max((run_kernel(exes["stream"], [20_000_000, reps, 4_000_000], 1) for _ in range(2)),
              key=lambda d: d["triad_bytes_per_s"])
    team = max((run_kernel(exes["stream"], [20_000_000, reps, 4_000_000], cores) for _ in range(2)),
               key=lambda d: d["triad_bytes_per_s"])
    return {"core_bw": one["triad_bytes_per_s"], "socket_bw": max(team["triad_bytes_per_s"], one["triad_bytes_per_s"]),
            "latency_s": min(one["latency_s"], team["latency_s"])}


def stream_numpy(cores: int, reps: int = 5, n: int = 10_000_000) -> dict:
    """Triad a = b + 3c in numpy (two passes: tmp = 3c; a = b + tmp → 40 B moved, counted as STREAM's 24 B so the
    figure is comparable: a lower bound), one thread and ``cores`` threads (numpy releases the GIL in ufunc loops)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    def triad(_=None) -> float:
        a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
        best = 1e30
        for _ in range(reps):
            t0 = time.perf_counter()
            np.multiply(c, 3.0, out=a)
            np.add(b, a, out=a)
            best = min(best, time.perf_counter() - t0)
        return 24.0 * n / best

    one = triad()
    with ThreadPoolExecutor(cores) as ex:
        team = sum(ex.map(triad, range(cores)))
    return {"core_bw": one, "socket_bw": max(one, team), "latency_s": None}


_GEMM = ("import time, numpy as np; n = 1024; a = np.random.rand(n, n); b = np.random.rand(n, n); a @ b; "
         "best = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range({reps})); "
         "print(2.0 * n ** 3 / best)")


def gemm_per_core(reps: int = 5) -> float:
    """FP64 FLOP/s of one core: numpy matmul 1024³ with one BLAS thread (a subprocess, so the thread count holds)."""
    env = {**os.environ, **{k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    p = subprocess.run([sys.executable, "-c", _GEMM.format(reps=reps)], capture_output=True, text=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"numpy GEMM failed: {p.stderr.strip()[:200]}")
    return float(p.stdout.strip())


def _lscpu() -> dict:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {k.strip(): v.strip() for k, v in (ln.split(":", 1) for ln in text.splitlines() if ":" in ln)}


def _cache(text: "str | None", per: int) -> "str | None":
    """lscpu's "96 KiB (2 instances)" → one instance's size."""
    if not text:
        return None
    m = re.match(r"([\d.]+)\s*([KMG]i?B)(?:\s*\((\d+) instances?\))?", text)
    if not m:
        return None
    size, unit, inst = float(m.group(1)), m.group(2), int(m.group(3) or per)
    return f"{size / max(inst, 1):g} {unit}"


def machine_facts() -> dict:
    ls = _lscpu()
    logical = os.cpu_count() or 1
    smt = int(ls.get("Thread(s) per core", "1") or 1)
    sockets = int(ls.get("Socket(s)", "1") or 1)
    cores = int(ls.get("Core(s) per socket", "0") or 0) or max(1, logical // (smt * sockets))
    mhz = None
    try:
        m = re.search(r"cpu MHz\s*:\s*([\d.]+)", Path("/proc/cpuinfo").read_text())
        mhz = float(m.group(1)) if m else None
    except OSError:
        pass
    if mhz is None and ls.get("CPU max MHz"):
        mhz = float(ls["CPU max MHz"])
    flags = ls.get("Flags", "").split()
    width = "simd512" if "avx512f" in flags else "simd256" if "avx2" in flags or "avx" in flags else "simd128"
    return {"cores": cores, "smt": smt, "sockets": sockets, "clock_ghz": (mhz or 2000.0) / 1000.0,
            "clock_known": mhz is not None, "vendor": (ls.get("Vendor ID") or "unknown").replace(" ", "-"),
            "model": ls.get("Model name") or "unknown", "width": width,
            "l1d": _cache(ls.get("L1d cache"), cores * sockets) or "32 KiB",
            "l2": _cache(ls.get("L2 cache"), cores * sockets) or "1 MiB", "l3": _cache(ls.get("L3 cache"), sockets)}


def calibrate_cpu(*, reps: int = 5, log=None) -> tuple[dict, dict, list]:
    """(socket mapping, machine mapping, notes) measured on this machine."""
    log = log or (lambda s: None)
    f = machine_facts()
    cores, notes = f["cores"], []
    log(f"{f['model']}: {cores} cores × {f['smt']} SMT, {f['sockets']} socket(s)")
    tasks, bw = {}, None
    try:
        with tempfile.TemporaryDirectory(prefix="parplan-omp-") as tmp:
            exes = build_kernels(tmp, ("fib", "deps", "stream"))
            log("built fib.c, deps.c and stream.c; measuring task costs (fib slope, dependences) and STREAM triad")
            tasks = task_costs(exes, cores * f["smt"], reps)
            bw = stream_c(exes, cores * f["smt"], reps)
    except NoOpenMP as e:
        notes.append(f"task costs not measured: {e}")
        log(notes[-1])
    if bw is None:
        bw = stream_numpy(cores * f["smt"], reps)
    log("measuring per-core GEMM (numpy, one BLAS thread)")
    gemm = gemm_per_core(reps)
    lanes = {"simd512": 8, "simd256": 4, "simd128": 2}[f["width"]]
    fpc = gemm / (f["clock_ghz"] * 1e9)
    ident = re.sub(r"[^a-z0-9-]+", "-", f"here-{f['model'].lower()}").strip("-")[:60] or "here"
    lat = bw["latency_s"]
    sock = {
        "id": ident, "name": f"{f['model']} (measured here)", "kind": "cpu-socket", "vendor": f["vendor"],
        "cores": cores, "smt": f["smt"], "base_clock_ghz": round(f["clock_ghz"], 3),
        # measured: numpy GEMM FLOP/cycle at the widest width; scalar = that / FP64 lanes of the width (derived)
        "fp64_flops_per_cycle": {"scalar": round(max(fpc / lanes, 0.01), 3), f["width"]: round(fpc, 3)},
        "l1d_per_core": f["l1d"], "l2_per_core": f["l2"], **({"l3": f["l3"]} if f["l3"] else {}),
        "stream_bandwidth": f"{bw['socket_bw'] / 1e9:.2f} GB/s", "core_bandwidth": f"{bw['core_bw'] / 1e9:.2f} GB/s",
        "dram_latency": f"{(lat if lat else 100e-9) * 1e9:.1f} ns",
        "source": "measured by `parplan calibrate cpu` (fib slope, STREAM triad, pointer chase, numpy GEMM)"}
    if lat is None:
        notes.append("dram_latency not measured (no C compiler): 100 ns assumed")
    if "task_overhead_s" in tasks:
        sock["task_overhead"] = f"{tasks['task_overhead_s'] * 1e9:.2f} ns"
        sock["task_runtime"] = omp_runtime()
        for k in ("task_contention", "task_dependence", "task_dependence_contention"):
            if f"{k}_s" in tasks:
                sock[k] = f"{tasks[k + '_s'] * 1e9:.2f} ns"
    if not f["clock_known"]:
        notes.append("clock not reported: 2 GHz assumed (FLOP/cycle scale with it)")
    sock["notes"] = "; ".join([f"fib({FIB_N}) slope points (tasks, excess s): {tasks.get('fib_points')}"] + notes)
    machine = {"name": f"{ident}-node", "kind": "cpu-cluster", "socket": None, "sockets_per_node": f["sockets"],
               "source": "measured by `parplan calibrate cpu` (one node of this machine)"}
    if f["sockets"] > 1:
        machine["inter_socket"] = {"name": "measured-host", "bandwidth": sock["stream_bandwidth"],
                                   "latency": "100 ns", "source": "assumed: the socket's bandwidth, 100 ns"}
    return sock, machine, notes


def write_files(sock: dict, machine: dict, output: Path) -> Path:
    """Write the socket file at ``output`` and the machine file ``<stem>-node.yaml`` beside it; the machine file."""
    import yaml

    from parplan.hardware.cpu import load_cpu_machine

    output.write_text(yaml.safe_dump(sock, sort_keys=False, allow_unicode=True))
    node = output.with_name(output.stem + "-node.yaml")
    node.write_text(yaml.safe_dump({**machine, "socket": output.name}, sort_keys=False, allow_unicode=True))
    load_cpu_machine(output), load_cpu_machine(node)  # both are accepted by --hw
    return node


