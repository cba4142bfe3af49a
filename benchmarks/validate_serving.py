"""Analytical serving estimate vs the serving executor on a matrix of deployments.

    python benchmarks/validate_serving.py [--requests 1000] [--seed 0] [--csv OUT.csv] [--tolerance 0.15]

Every row is estimated with ``models.serving.estimate_serving`` and simulated with ``executor.serving
.simulate_serving`` (the same ``PoolCost``s price every engine iteration; the executor plays arrivals, chunked
prefill, continuous batching, paged KV and preemption request by request).  The table prints each side's TTFT
p50/p99, TPOT p50 and output tokens/s with the relative difference (analytical − simulated) / simulated, the
simulated preemptions and whether the run is saturated.  Exit status 1 when a row differs by more than the
tolerance on TTFT p50, TPOT or throughput, or by more than twice it on TTFT p99.

Like for like: an open loop's model is evaluated at the arrival rate the simulation's seeded arrivals actually offer
in its measured window (600 Poisson arrivals of seed 0 come 6 % slower than the nominal rate); a closed loop leaves
out the first 2·N requests as warm-up (its N clients all start at t = 0, and the burst of N simultaneous prompts
is a transient, not the steady state both sides describe) and plays at least 6·N requests.

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

from parplan.executor.serving import simulate_serving
from parplan.executor.serving_mix import draw_requests, mix_from_serving
from parplan.models.serving import as_deployment, estimate_serving
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
    ("mixtral-8x7b", "tp=2,dp=4,ep=8,batch=256,chunk=4096,replicas=1", {**LOW, "arrival_rate_per_s": 2.0}),
    ("mixtral-8x7b", "tp=2,dp=4,ep=8,batch=256,chunk=4096,replicas=1", {**MIX, "arrival_rate_per_s": 8.0}),
    ("mixtral-8x7b", "prefill:1x(tp=2,dp=2,ep=4)+decode:1x(tp=4,batch=256)", {**LOW, "arrival_rate_per_s": 4.0}),
    ("mixtral-8x7b", "attention:2x(tp=4,batch=256)+expert:1x(ep=8);micro_batches=2", {**LOW, "arrival_rate_per_s": 2.0}),
    ("mixtral-8x7b", "attention:2x(tp=2,batch=128)+expert:1x(ep=4);micro_batches=3", {**LOW, "arrival_rate_per_s": 1.0}),
]
AF_REQUESTS = 300  # af-disaggregated rows: their attention cost is not affine in kv (~1 ms a call), fewer requests
GATED = ("ttft_p50_s", "tpot_s", "output_tokens_per_s")
KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_s", "output_tokens_per_s")


def compare(w, c, s, dep_text, n: int, seed: int):
    """(analytical, simulated, simulation) of one row, like for like (module docstring)."""
    from dataclasses import replace

    dep = as_deployment(dep_text, c.n_devices)
    warm = None
    if s.load == "closed":
        n, warm = max(n, 6 * s.concurrency), 2 * s.concurrency
    sim = simulate_serving(w, c, s, dep, n_requests=n, seed=seed, warmup=warm)
    if s.load == "open":
        arr = draw_requests(mix_from_serving(s), n, seed).arrival_s
        w0 = sim.warmup
        s = replace(s, arrival_rate_per_s=float((n - 1 - w0) / (arr[n - 1] - arr[w0])))
    e = estimate_serving(w, c, s, dep)
    an = {"ttft_p50_s": e.ttft_p50_s, "ttft_p99_s": e.ttft_p99_s, "tpot_s": e.tpot_p50_s,
          "output_tokens_per_s": e.output_tokens_per_s}
    si = {"ttft_p50_s": sim.ttft_s.p50, "ttft_p99_s": sim.ttft_s.p99, "tpot_s": sim.tpot_s.p50,
          "output_tokens_per_s": sim.output_tokens_per_s}
    return an, si, sim


def diff(a: float, s: float) -> float:
    return (a - s) / s if s > 0 else (0.0 if a == s else float("inf"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=0.10)
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
        an, si, sim = compare(w, c, s, dep, n, args.seed)
        row = {"model": model, "deployment": dep, "load": s.load, "preemptions": sim.preemptions,
               "requests": sim.n_requests, "warmup": sim.warmup}
        cells = []
        for k in KEYS:
            row[f"analytical_{k}"], row[f"simulated_{k}"], row[f"diff_{k}"] = an[k], si[k], diff(an[k], si[k])
            f = (lambda x: f"{x:,.0f}") if k == "output_tokens_per_s" else (lambda x: f"{1e3 * x:,.1f}")
            cells += [f"{f(an[k])} / {f(si[k])}", f"{100 * diff(an[k], si[k]):+.0f}%"]
        rows.append(row)
        off = any(abs(row[f"diff_{k}"]) > args.tolerance for k in GATED) \
            or abs(row["diff_ttft_p99_s"]) > 2 * args.tolerance
        bad += off
        load = (f"{s.arrival_rate_per_s:g}/s" if s.arrival_rate_per_s else f"N={s.concurrency}")
        t.add_row(str(i), model, dep, load, *cells, str(sim.preemptions), "sat" if sim.saturated else "",
                  style="bold" if off else None)
    con = Console(width=260)
    con.print(t)
    con.print(f"{len(rows)} deployments, {bad} beyond ±{100 * args.tolerance:g} % on TTFT p50, TPOT or throughput "
              f"or ±{200 * args.tolerance:g} % on TTFT p99 "
              f"({time.time() - t0:.0f} s)")
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.csv, index=False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
