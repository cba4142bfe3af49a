"""How the whole `parplan suggest` command grows with the cluster: wall time and peak memory of one fresh process,
from 8 to 131,072 devices, for a dense 70B and a 405B training job, an MoE training job and a serving deployment.

    python benchmarks/scaling.py [--sizes 8,64,512,4096,32768,131072] [--repeat 2]

Each row is one ``python -m parplan suggest MODEL --hw h100-sxm-80gb:NODESx8 --format json -o FILE --quiet`` process
(the serving rows add ``--serve examples/serve-chat.yaml``): wall = the process's wall time (best of --repeat), peak
= its maximum resident set (``os.wait4``), plans = valid plans (deployments) the search counted, and "× / 8× devices"
= the wall-time growth from the previous size.  Everything is one core of this machine; compare shapes, not seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOBS = [  # label, model, extra arguments
    ("Llama 3 70B (dense)", "llama3-70b", []),
    ("Llama 3 405B (dense)", "llama3-405b", []),
    ("Mixtral 8x7B (MoE)", "mixtral-8x7b", []),
    ("Llama 3 70B serving", "llama3-70b", ["--serve", str(ROOT / "examples" / "serve-chat.yaml")]),
]


def run_once(model: str, devices: int, extra: list[str]) -> tuple[float, float, int | None, str]:
    """Wall seconds, peak resident bytes, plans counted, and the outcome of one suggest process."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, "-m", "parplan", "suggest", model, "--hw", f"h100-sxm-80gb:{devices // 8}x8",
               "--format", "json", "-o", str(out), "--quiet", *extra]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        proc.returncode = os.waitstatus_to_exitcode(status)
        peak = usage.ru_maxrss * 1024.0  # kilobytes on Linux
        if proc.returncode != 0:
            return wall, peak, None, (err.splitlines() or ["exit %d" % proc.returncode])[-1][:90]
        doc = json.loads(out.read_text())
        search = doc.get("search", {})
        plans = search.get("valid_plans", search.get("candidates"))  # training plans | serving deployments
        return wall, peak, plans, "ok"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,64,512,4096,32768,131072")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# parplan suggest as one process per row (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print(f"{'job':<22} {'devices':>8} {'wall s':>7} {'peak MiB':>9} {'plans':>9} {'growth':>7}  outcome")
    for label, model, extra in JOBS:
        prev = None
        for n in sizes:
            best = None
            for _ in range(max(1, args.repeat)):
                r = run_once(model, n, extra)
                best = r if best is None or r[0] < best[0] else best
            wall, peak, plans, outcome = best
            growth = f"{wall / prev:.2f}×" if prev else ""
            print(f"{label:<22} {n:>8,} {wall:>7.2f} {peak / 2**20:>9.0f} "
                  f"{'' if plans is None else f'{plans:,}':>9} {growth:>7}  {outcome}")
            prev = wall
    return 0


if __name__ == "__main__":
    sys.exit(main())
