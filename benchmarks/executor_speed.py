"""Speed of the reference executor: ops, engine events, and events per second.

    python benchmarks/executor_speed.py [--repeat N]

For each case the program is built (schedule expansion), run (the discrete-event engine) and analyzed (per-device
statistics, memory timelines); the table gives the wall time of each phase and the engine's throughput in events
per second (one event = one event of the engine's heap: an op finishing, a transfer joining after its latency, a
transfer re-timed — counted alike where the contention-free pass computes them without the heap).  The first case
is the scale target: one step of Llama 3 405B on 16,384 H100 (tp8 pp16 dp128, mbs 1, global batch 2048), which
must simulate in ≤ 10 s.  Throughput target: ≥ 1.5·10⁶ engine events/s on every large case (≥ 100,000 events).
Wall times vary with the machine and its load; the best of ``--repeat`` runs is shown.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time

from rich.console import Console
from rich.table import Table

from parplan.executor.costs import PipelineCosts, model_costs
from parplan.executor.engine import run
from parplan.executor.simulate import _device_factors, analyze, build_program
from parplan.hardware.catalog import load_cluster
from parplan.models.estimate import validate_plan
from parplan.models.plan import parse_plan
from parplan.workloads.loader import load_workload

TARGET_405B_S = 10.0
TARGET_EVENTS_PER_S = 1.5e6  # on every case of at least BIG_EVENTS events
BIG_EVENTS = 100_000

CASES = [
    # (label, workload, cluster, plan, mode)
    ("Llama 3 405B, 16,384 H100 (target)", "llama3-405b", "h100-16384", "tp=8,pp=16,mbs=1,zero=1,sp=true", "replica"),
    ("GPT-3 175B, Selene, interleaved", "gpt3-175b", "selene-a100-3072", "tp=8,pp=16,vpp=2,mbs=1,zero=1,sp=true",
     "replica"),
    ("Llama 3 70B, 64 H100, ZeRO-3", "llama3-70b", "dgx-h100-64", "tp=8,pp=2,mbs=1,zero=3,recompute=full,sp=true",
     "replica"),
    ("Llama 2 7B, 64 H100, full cluster", "llama2-7b", "dgx-h100-64", "tp=1,pp=8,mbs=1,zero=1", "full"),
    ("Megatron 1T, Selene, pp128", "megatron-1t", "selene-a100-3072", "tp=8,pp=128,mbs=1,zero=0,recompute=full",
     "replica"),
    ("synthetic 1F1B p=32, m=8192", None, None, None, "replica"),
]


def _costs(case):
    label, wid, cid, text, mode = case
    if wid is None:
        return PipelineCosts.uniform(32, 8192, 1.0, 2.0, p2p_s=0.05), mode
    w, c = load_workload(wid), load_cluster(cid)
    plan = parse_plan(text, c.n_devices)
    validate_plan(w, c, plan)
    return model_costs(w, c, plan)[0], mode


def measure(case, repeat: int) -> dict:
    costs, mode = _costs(case)
    replicas = costs.dp_replicas if mode == "full" else 1
    best = None
    for _ in range(repeat):
        factors = _device_factors({}, replicas, costs.pp, [])
        sched = "interleaved" if costs.vpp > 1 else "1f1b"
        t0 = time.perf_counter()
        built = build_program(costs, sched, replicas, factors)
        t1 = time.perf_counter()
        res = run(built.prog)
        t2 = time.perf_counter()
        s = analyze(built, res, costs, sched, mode, replicas, factors, [])
        t3 = time.perf_counter()
        rec = {"case": case[0], "ops": len(built.prog), "events": res.events, "build_s": t1 - t0, "run_s": t2 - t1,
               "analyze_s": t3 - t2, "total_s": t3 - t0, "step_time_s": s.step_time_s}
        if best is None or rec["total_s"] < best["total_s"]:
            best = rec
    return best


def heap_ceiling(n: int = 1_000_000) -> float:
    """Events/s of a bare heap loop (one pop + one push of a 4-tuple per event on a 64-entry heap): the ceiling
    for any heap-driven simulator in this interpreter on this machine."""
    import heapq
    import itertools

    h: list = []
    nxt = itertools.count().__next__
    push, pop = heapq.heappush, heapq.heappop
    for i in range(64):
        push(h, (i * 0.01, 0, nxt(), i))
    t0 = time.perf_counter()
    for _ in range(n):
        t, _p, _s, o = pop(h)
        push(h, (t + 0.64, 0, nxt(), o))
    return n / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (best shown)")
    args = ap.parse_args(argv)
    con = Console(width=160)
    t = Table(title=f"reference executor speed (Python {platform.python_version()}, {platform.machine()})")
    for col in ("case", "ops", "engine events", "build s", "engine s", "analyze s", "total s", "events/s (engine)",
                "events/s (total)", "step s"):
        t.add_column(col, justify="left" if col == "case" else "right")
    rows = [measure(c, args.repeat) for c in CASES]
    for r in rows:
        t.add_row(r["case"], f"{r['ops']:,}", f"{r['events']:,}", f"{r['build_s']:.3f}", f"{r['run_s']:.3f}",
                  f"{r['analyze_s']:.3f}", f"{r['total_s']:.3f}", f"{r['events'] / r['run_s']:,.0f}",
                  f"{r['events'] / r['total_s']:,.0f}", f"{r['step_time_s']:.3f}")
    con.print(t)
    big = [r for r in rows if r["events"] >= BIG_EVENTS] or rows
    low = min(big, key=lambda r: r["events"] / r["run_s"])
    low_rate = low["events"] / low["run_s"]
    t405 = rows[0]["total_s"]
    con.print(f"Llama 3 405B on 16,384 H100: {t405:.3f} s per simulated step (target ≤ {TARGET_405B_S:g} s): "
              f"{'met' if t405 <= TARGET_405B_S else 'NOT met'}")
    con.print(f"reference: a bare heap loop (pop + push per event, no work) runs {heap_ceiling():,.0f} events/s here")
    con.print(f"engine throughput on the large cases (≥ {BIG_EVENTS:,} events): at least {low_rate:,.0f} events/s "
              f"({low['case']}; target ≥ {TARGET_EVENTS_PER_S:,.0f} on each): "
              f"{'met' if low_rate >= TARGET_EVENTS_PER_S else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
