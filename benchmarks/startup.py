"""Start-up of the ``parplan`` command: whole-process wall times beside bare Python, and the phases of a suggest.

    python benchmarks/startup.py [--repeat N]

Whole processes (the best of ``--repeat`` runs each, ``python -m parplan.cli.app`` — the console script without
an installer's shim in front of it): ``python -c pass`` and ``python -c "import numpy"`` (the floor), then
``parplan --help``, ``parplan catalog list`` and ``parplan suggest llama3-405b --hw h100-16384``.  Then, in a
fresh process each time, that suggest split into its phases: imports (the CLI and everything the search and the
table need), load (workload and cluster catalogs), search (every plan priced and ranked) and render (the table).
Targets (issue 16): --help and catalog list ≤ 0.25 s, the suggest ≤ 0.35 s as a whole process.  The machine's
load is printed: compare tables measured on a quiet machine.

Whether parplan's modules load from bytecode is printed too: a source checkout run with PYTHONDONTWRITEBYTECODE set
(and no __pycache__) compiles every module at every start, ~50 ms of a suggest, which an installed wheel (pip
byte-compiles it) never pays.  ``--bytecode`` measures that installed case: every command runs once with its
bytecode cached in a temporary folder (PYTHONPYCACHEPREFIX), then from it; the checkout is left as it is.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
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


def wall(argv: list[str], repeat: int, env: dict | None = None) -> float:
    best = float("inf")
    env = dict(env or os.environ, COLUMNS="160")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        best = min(best, time.perf_counter() - t0)
    return best


def phases(repeat: int, env: dict | None = None) -> dict:
    best: dict = {}
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _PHASES], capture_output=True, text=True, check=True,
                             env=env).stdout
        rec = json.loads(out.strip().splitlines()[-1])
        if not best or sum(rec.values()) < sum(best.values()):
            best = rec
    return best


def bytecode_state(env: dict) -> str:
    """"cached" when parplan's modules load from .pyc files, else why each start compiles them."""
    if env.get("PYTHONPYCACHEPREFIX"):
        return "cached in a temporary folder (--bytecode: as an installed wheel)"
    spec = importlib.util.find_spec("parplan.cli.app")
    src = spec.origin if spec is not None else None
    pyc = importlib.util.cache_from_source(src) if src and src.endswith(".py") else None
    if pyc and os.path.exists(pyc) and os.path.getmtime(pyc) >= os.path.getmtime(src):
        return "cached (.pyc)"
    if sys.flags.dont_write_bytecode or env.get("PYTHONDONTWRITEBYTECODE"):
        return "compiled at every start (PYTHONDONTWRITEBYTECODE, no .pyc: --bytecode measures an installed wheel)"
    return "compiled once, then cached"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (best shown)")
    ap.add_argument("--bytecode", action="store_true",
                    help="bytecode cached (in a temporary folder) for every module, as for an installed wheel")
    args = ap.parse_args(argv)
    py = sys.executable
    env = dict(os.environ)
    cache = None
    if args.bytecode:
        cache = tempfile.mkdtemp(prefix="parplan-pyc-")
        env["PYTHONPYCACHEPREFIX"] = cache
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        return _report(py, args.repeat, env)
    finally:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)


def _report(py: str, repeat: int, env: dict) -> int:
    cli = [py, "-m", "parplan.cli.app"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"start-up (Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, load "
          f"{load:.2f}; best of {repeat}); parplan bytecode: {bytecode_state(env)}")
    rows = [("python -c pass", [py, "-c", "pass"]), ('python -c "import numpy"', [py, "-c", "import numpy"]),
            ("parplan --help", cli + ["--help"]), ("parplan catalog list", cli + ["catalog", "list"]),
            (f"parplan suggest {MODEL} --hw {HW}", cli + ["suggest", MODEL, "--hw", HW, "--quiet"])]
    if env.get("PYTHONPYCACHEPREFIX"):  # one run each writes the bytecode of every module it imports
        for _, cmd in rows:
            wall(cmd, 1, env)
        phases(1, env)
    print(f"{'command':<44} {'wall s':>7} {'target':>7}")
    for label, cmd in rows:
        t = wall(cmd, repeat, env)
        target = TARGETS.get(label)
        mark = "" if target is None else f"{target:>7.2f} {'met' if t <= target else 'NOT met'}"
        print(f"{label:<44} {t:>7.3f} {mark}")
    n = max(1, repeat // 2)
    ph = phases(n, env)
    print(f"\nsuggest {MODEL} --hw {HW}, in one fresh process (best of {n}):")
    for k, v in ph.items():
        print(f"  {k:<8} {v:>7.3f} s")
    print(f"  {'total':<8} {sum(ph.values()):>7.3f} s (+ the interpreter's own start: python -c pass above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
