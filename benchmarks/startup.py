"""Start-up of the ``parplan`` command: whole-process wall times beside bare Python, and the phases of a suggest.

    python benchmarks/startup.py [--repeat N]

Whole processes (the best of ``--repeat`` runs each, ``python -m parplan.cli.app`` — the console script without
an installer's shim in front of it): ``python -c pass`` and ``python -c "import numpy"`` (the floor), then
``parplan --help``, ``parplan catalog list`` and ``parplan suggest llama3-405b --hw h100-16384``.  Then, in a
fresh process each time, that suggest split into its phases: imports (the CLI and everything the search and the
table need), load (workload and cluster catalogs), search (every plan priced and ranked) and render (the table).
Targets (issue 16): --help and catalog list ≤ 0.25 s, the suggest ≤ 0.35 s as a whole process.  The machine's
load is printed: compare tables measured on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

MODEL, HW = "llama3-405b", "h100-16384"
TARGETS = {"parplan --help": 0.25, "parplan catalog list": 0.25, f"parplan suggest {MODEL} --hw {HW}": 0.35}

_PHASES = f"""
import json, time
t0 = time.perf_counter()
import parplan.cli.app  # noqa: F401
from parplan.api import _search_options
from parplan.cli.suggest_cmd import render_plans
from parplan.hardware.catalog import load_cluster
from parplan.planner.planset import suggest_plans
from parplan.planner.search import DEFAULT_MEMORY_HEADROOM
from parplan.workloads.loader import load_workload
t1 = time.perf_counter()
w, c = load_workload({MODEL!r}), load_cluster({HW!r})
t2 = time.perf_counter()
ps = suggest_plans(w, c, top=10, options=_search_options(None, DEFAULT_MEMORY_HEADROOM, False, 32, None))
t3 = time.perf_counter()
text = render_plans(ps, max_rows=10, width=160)
t4 = time.perf_counter()
print(json.dumps({{"imports": t1 - t0, "load": t2 - t1, "search": t3 - t2, "render": t4 - t3}}))
"""


def wall(argv: list[str], repeat: int) -> float:
    best = float("inf")
    env = dict(os.environ, COLUMNS="160")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        best = min(best, time.perf_counter() - t0)
    return best


def phases(repeat: int) -> dict:
    best: dict = {}
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _PHASES], capture_output=True, text=True, check=True).stdout
        rec = json.loads(out.strip().splitlines()[-1])
        if not best or sum(rec.values()) < sum(best.values()):
            best = rec
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (best shown)")
    args = ap.parse_args(argv)
    py = sys.executable
    cli = [py, "-m", "parplan.cli.app"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"start-up (Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, load "
          f"{load:.2f}; best of {args.repeat})")
    rows = [("python -c pass", [py, "-c", "pass"]), ('python -c "import numpy"', [py, "-c", "import numpy"]),
            ("parplan --help", cli + ["--help"]), ("parplan catalog list", cli + ["catalog", "list"]),
            (f"parplan suggest {MODEL} --hw {HW}", cli + ["suggest", MODEL, "--hw", HW, "--quiet"])]
    print(f"{'command':<44} {'wall s':>7} {'target':>7}")
    for label, cmd in rows:
        t = wall(cmd, args.repeat)
        target = TARGETS.get(label)
        mark = "" if target is None else f"{target:>7.2f} {'met' if t <= target else 'NOT met'}"
        print(f"{label:<44} {t:>7.3f} {mark}")
    ph = phases(max(1, args.repeat // 2))
    print(f"\nsuggest {MODEL} --hw {HW}, in one fresh process (best of {max(1, args.repeat // 2)}):")
    for k, v in ph.items():
        print(f"  {k:<8} {v:>7.3f} s")
    print(f"  {'total':<8} {sum(ph.values()):>7.3f} s (+ the interpreter's own start: python -c pass above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
