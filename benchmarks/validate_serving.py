"""Analytical serving estimate vs the serving executor on a matrix of deployments.

    python benchmarks/validate_serving.py [--requests 1000] [--seed 0] [--csv OUT.csv] [--tolerance 0.15]

Every row is estimated with ``models.serving.estimate_serving`` and simulated with ``executor.serving
.simulate_serving`` (the same ``PoolCost``s price every engine iteration; the executor plays arrivals, chunked
prefill, continuous batching, paged KV and preemption request by request).  The table prints each side's TTFT
p50/p99, TPOT p50 and output tokens/s with the relative difference (analytical − simulated) / simulated, the
simulated preemptions and whether the run is saturated.  Exit status 1 when a row differs by more than the
tolerance on TPOT or throughput (the TTFT columns are printed, not gated: the tails are what the simulation is for).

The matrix: Llama 3 8B and 70B (dense) and Mixtral 8x7B (MoE) on DGX H100 nodes; aggregated (chunked prefill,
several tp and replica counts), disaggregated prefill/decode, attention/expert (MegaScale-Infer) for the MoE model;
each at a low and a high load (Poisson), and closed loops.
"""
from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table

from parplan.executor.serving_agree import compare_serving
from parplan.serving import _inputs

CLUSTER = "dgx-h100-64"
LOW = {"isl": 2048, "osl": 256, "arrival_rate_per_s": 1.0}
MIX = {"isl": {"dist": "lognormal", "mean": 1500, "p99": 6000}, "osl": {"dist": "uniform", "min": 64, "max": 512}}
# (model, deployment, serve spec)
MATRIX = [
    ("llama3-8b", "tp=1,batch=64,chunk=2048,replicas=1", LOW),
    ("llama3-8b", "tp=1,batch=64,chunk=2048,replicas=1", {**LOW, "arrival_rate_per_s": 8.0}),
    ("llama3-8b", "tp=2,batch=128,chunk=4096,replicas=2", {**MIX, "arrival_rate_per_s": 20.0}),
    ("llama3-8b", "tp=1,batch=256,chunk=8192,replicas=4", {**MIX, "concurrency": 256}),
    ("llama3-8b", "prefill:1x(tp=1)+decode:1x(tp=1,batch=128)", {**LOW, "arrival_rate_per_s": 4.0}),
    ("llama3-8b", "prefill:2x(tp=1)+decode:2x(tp=2,batch=256)", {**MIX, "arrival_rate_per_s": 16.0}),
    ("llama3-70b", "tp=8,batch=64,chunk=2048,replicas=1", LOW),
    ("llama3-70b", "tp=8,batch=64,chunk=2048,replicas=1", {**LOW, "arrival_rate_per_s": 3.0}),
    ("llama3-70b", "tp=4,batch=128,chunk=2048,replicas=2", {**MIX, "arrival_rate_per_s": 2.0}),
    ("llama3-70b", "tp=8,batch=256,chunk=8192,replicas=2", {**MIX, "concurrency": 128}),
    ("llama3-70b", "tp=8,batch=128,chunk=4096,replicas=1", {"isl": 2048, "osl": 256, "concurrency": 64}),
    ("llama3-70b", "prefill:1x(tp=8)+decode:1x(tp=8,batch=128)", LOW),
    ("llama3-70b", "prefill:1x(tp=8)+decode:1x(tp=8,batch=128)", {**LOW, "arrival_rate_per_s": 3.0}),
    ("llama3-70b", "prefill:2x(tp=4)+decode:1x(tp=8,batch=256)", {**MIX, "arrival_rate_per_s": 3.0}),
    ("mixtral-8x7b", "tp=2,batch=128,chunk=2048,replicas=2", LOW),
    ("mixtral-8x7b", "tp=2,batch=128,chunk=2048,replicas=2", {**LOW, "arrival_rate_per_s": 6.0}),
    ("mixtral-8x7b", "tp=4,batch=256,chunk=4096,replicas=2", {**MIX, "arrival_rate_per_s": 8.0}),
    ("mixtral-8x7b", "tp=8,ep=8,batch=256,chunk=8192,replicas=1", {**MIX, "concurrency": 128}),
    ("mixtral-8x7b", "prefill:1x(tp=2)+decode:1x(tp=4,batch=256)", {**LOW, "arrival_rate_per_s": 4.0}),
    ("mixtral-8x7b", "prefill:2x(tp=2)+decode:2x(tp=2,batch=128)", {**MIX, "arrival_rate_per_s": 6.0}),
    ("mixtral-8x7b", "attention:2x(tp=4,batch=256)+expert:1x(ep=8);micro_batches=2", {**LOW, "arrival_rate_per_s": 2.0}),
    ("mixtral-8x7b", "attention:2x(tp=2,batch=128)+expert:1x(ep=4);micro_batches=3", {**LOW, "arrival_rate_per_s": 1.0}),
]
AF_REQUESTS = 300  # af-disaggregated rows: their attention cost is not affine in kv (~1 ms a call), fewer requests
GATED = ("tpot_s", "output_tokens_per_s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=0.15)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args(argv)
    t = Table(title=f"analytical vs simulated serving on {CLUSTER} (an. / sim., diff = (an. − sim.) / sim.)")
    for c in ("#", "model", "deployment", "load", "TTFT p50 ms", "d", "TTFT p99 ms", "d", "TPOT ms", "d", "tok/s",
              "d", "preempt", "s"):
        t.add_column(c, justify="left" if c in ("model", "deployment", "load") else "right")
    rows, bad, t0 = [], 0, time.time()
    for i, (model, dep, serve) in enumerate(MATRIX, 1):
        w, c, s = _inputs(model, CLUSTER, serve)
        n = AF_REQUESTS if dep.startswith("attention") else args.requests
        a = compare_serving(w, c, s, dep, n_requests=n, seed=args.seed)
        row = {"model": model, **a.row(), "load": s.load}
        rows.append(row)
        cells = []
        for k in ("ttft_p50_s", "ttft_p99_s", "tpot_s", "output_tokens_per_s"):
            an, si = a.analytical[k], a.simulated[k]
            f = (lambda x: f"{x:,.0f}") if k == "output_tokens_per_s" else (lambda x: f"{1e3 * x:,.1f}")
            cells += [f"{f(an)} / {f(si)}", f"{100 * a.diff(k):+.0f}%"]
        off = any(abs(a.diff(k)) > args.tolerance for k in GATED)
        bad += off
        load = (f"{s.arrival_rate_per_s:g}/s" if s.arrival_rate_per_s else f"N={s.concurrency}")
        t.add_row(str(i), model, dep, load, *cells, str(a.sim.preemptions), "sat" if a.sim.saturated else "",
                  style="bold" if off else None)
    con = Console(width=260)
    con.print(t)
    con.print(f"{len(rows)} deployments, {bad} beyond ±{100 * args.tolerance:g} % on TPOT or throughput "
              f"({time.time() - t0:.0f} s)")
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.csv, index=False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
