"""The analytical goodput model against the executor's failure injection (seeded Monte Carlo), 1k → 600k devices.

Each scenario: a dense model's checkpoint (bf16 weights + fp32 master and Adam moments = 14 bytes per parameter),
a 10 s step, the Llama 3 failure rates (catalogs/calibration/failures.yaml), a checkpoint mode and a redundancy
scheme; the run is as long as ≈ 200 failures and is played enough times for ≥ 1,000 failures.  Passes when every
scenario's expected time to train agrees within 5 %.

    python benchmarks/validate_goodput.py [--runs-failures 1000] [--seed 0]
"""
from __future__ import annotations

import argparse
import math
import sys

from parplan.executor.failures import simulate_failures
from parplan.models.primitives.reliability import Redundancy, Reliability, system_mtbf_s

TOLERANCE = 0.05
STEP_S = 10.0
BYTES_PER_PARAM = 14.0  # 2 (bf16 weights) + 12 (fp32 master, Adam m and v): ZeRO paper Sec. 3.1, K = 12
# (name, devices, parameters, reliability)
SCENARIOS = [
    ("1k  8B sync", 1024, 8e9, Reliability()),
    ("4k  70B sync", 4096, 70e9, Reliability()),
    ("8k  70B async", 8192, 70e9, Reliability(mode="async")),
    ("16k 405B sync (Llama 3)", 16384, 405e9, Reliability()),
    ("16k 405B in-memory", 16384, 405e9, Reliability(mode="in-memory")),
    ("32k 405B async", 32768, 405e9, Reliability(mode="async")),
    ("64k 405B sync", 65536, 405e9, Reliability()),
    ("100k 1T sync", 100000, 1e12, Reliability()),
    ("100k 1T ABFT", 100000, 1e12, Reliability(redundancy=Redundancy("abft", abft_rebuild_s=600.0))),
    ("300k 1T async", 300000, 1e12, Reliability(mode="async")),
    ("600k 1T checkpoint/restart", 600000, 1e12, Reliability()),
    ("600k 1T replication x2", 600000, 1e12, Reliability(redundancy=Redundancy("replication", 2))),
    ("600k 1T SPARe r=3", 600000, 1e12, Reliability(redundancy=Redundancy("spare", 3))),
]


def run(failures_wanted: int = 1000, seed: int = 0) -> list[dict]:
    rows = []
    for name, n, params, cfg in SCENARIOS:
        total = params * BYTES_PER_PARAM
        per_device = total / n * 8  # a tensor × pipeline group of 8-way data-parallel-unique state per device
        mtbf = float(system_mtbf_s(cfg.rates, n, 8))
        steps = max(200, int(200 * mtbf / STEP_S))  # ≈ 200 failures per run
        runs = max(3, math.ceil(failures_wanted / 180))
        sim = simulate_failures(STEP_S, steps, per_device, total, n, 8, cfg, runs=runs, seed=seed)
        while sim.failures < failures_wanted:
            runs *= 2
            sim = simulate_failures(STEP_S, steps, per_device, total, n, 8, cfg, runs=runs, seed=seed)
        a = sim.analytic
        rows.append({"scenario": name, "devices": n, "mtbf_h": mtbf / 3600, "steps": steps, "runs": runs,
                     "failures": sim.failures, "interrupts": sim.interrupts,
                     "interval_steps": int(a["steps_per_checkpoint"]), "goodput_model": a["goodput"],
                     "goodput_sim": sim.goodput, "p10_model_h": a["time_p10_s"] / 3600,
                     "p10_sim_h": sim.p10_s / 3600, "p90_model_h": a["time_p90_s"] / 3600,
                     "p90_sim_h": sim.p90_s / 3600, "error": sim.relative_error})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--failures", type=int, default=1000, help="simulated failures per scenario, at least")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = run(args.failures, args.seed)
    print(f"{'scenario':28} {'devices':>8} {'MTBF h':>8} {'k':>5} {'fails':>6} {'intr':>6} {'goodput':>8} "
          f"{'sim':>8} {'error':>7}  p10/p90 model vs sim (h)")
    for r in rows:
        print(f"{r['scenario']:28} {r['devices']:>8,} {r['mtbf_h']:>8.2f} {r['interval_steps']:>5} {r['failures']:>6} "
              f"{r['interrupts']:>6} {r['goodput_model']:>8.4f} {r['goodput_sim']:>8.4f} {100 * r['error']:>+6.2f}%  "
              f"{r['p10_model_h']:.1f}/{r['p90_model_h']:.1f} vs {r['p10_sim_h']:.1f}/{r['p90_sim_h']:.1f}")
    worst = max(abs(r["error"]) for r in rows)
    ok = worst < TOLERANCE
    print(f"{len(rows)} scenarios, {sum(r['failures'] for r in rows):,} simulated failures; worst |error| "
          f"{100 * worst:.2f} % ({'within' if ok else 'OUTSIDE'} {100 * TOLERANCE:.0f} %)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
