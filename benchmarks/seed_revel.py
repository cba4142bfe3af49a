"""Seed S06 (REVEL; Weng, Dadu, Nowatzki, arXiv 1905.06238 / HPCA 2020): "4.6–37× lower latency than equally
provisioned DSPs" on inductive dense linear algebra, the gap largest at small matrices (sync- and masking-bound)
and shrinking as n grows (SEEDS S06(d): → ~1–3× at n ≥ 256, derived).

    python benchmarks/seed_revel.py

parplan's figure: the latency of the best plan the planner finds on ``c6678`` (8 C66x cores: barrier hand-offs,
padded vector tails, per-loop control, in-order phases) over the best on ``revel-8lane`` (the same 8 × 8 fp32
lanes and memory: stream hand-offs, implicit masking, vector-stream control, dataflow overlap of the pivot chain),
for Cholesky, QR, TRSV and FFT at n ∈ {16, 32, 64, 128, 256}; beside it the DSP with all 8 cores (S06(d)'s
"DSP-8core" as provisioned).  The executor replays both best plans and confirms each latency (and so the ratio).
Nothing is fitted to the paper's figure: every device constant is in the catalog with its source or reasoning.
"""
from __future__ import annotations

import sys

from parplan.executor.dataflow import simulate_plan
from parplan.hardware.dsp import load_dsp
from parplan.planner.spaces.dataflow import search_nest
from parplan.workloads.dataflow import load_dataflow

PAPER = "REVEL (arXiv 1905.06238 / HPCA 2020 abstracts): 4.6×–37× lower latency than equally provisioned DSPs"
KERNELS = ("cholesky", "qr", "trsv", "fft")
SIZES = (16, 32, 64, 128, 256)
BAND = (4.6, 37.0)


def _best(spec, dsp, fix=None) -> dict:
    return search_nest(spec, dsp, top=1, fix=fix).rows[0]


def _plan(row) -> dict:
    return {k: row[k] for k in ("cores", "vector", "unroll", "sync")}


def ratios(kernels=KERNELS, sizes=SIZES, simulate: bool = True) -> list[dict]:
    dsp, revel = load_dsp("c6678"), load_dsp("revel-8lane")
    rows = []
    for k in kernels:
        for n in sizes:
            spec = load_dataflow({"family": "dataflow", "name": f"{k}-{n}", "kernel": {"name": k, "n": n}})
            a, b = _best(spec, dsp), _best(spec, revel)
            a8 = _best(spec, dsp, fix={"cores": dsp.cores})
            row = {"kernel": k, "n": n, "dsp_s": a["total_s"], "dsp_cores": a["cores"], "revel_s": b["total_s"],
                   "ratio": a["total_s"] / b["total_s"], "ratio_8core": a8["total_s"] / b["total_s"],
                   "dsp_sync_share": a["sync_s"] / a["total_s"], "dsp_ctrl_share": a["control_s"] / a["total_s"]}
            if simulate:
                sa, sb = simulate_plan(spec, dsp, _plan(a)), simulate_plan(spec, revel, _plan(b))
                row["sim_ratio"] = sa.makespan_s / sb.makespan_s
            rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    small = [r["ratio"] for r in rows if r["n"] <= 64]
    small8 = [r["ratio_8core"] for r in rows if r["n"] <= 64]
    shrink = {k: [r["ratio"] for r in rows if r["kernel"] == k] for k in {r["kernel"] for r in rows}}
    in_band = [r for r in rows if r["n"] <= 64 and BAND[0] <= r["ratio"] <= BAND[1]]
    return {"small_min": min(small), "small_max": max(small), "small8_min": min(small8), "small8_max": max(small8),
            "in_band": len(in_band),
            "small_cases": len(small), "shrinking": sorted(k for k, v in shrink.items() if v[-1] < max(v)),
            "sim_agrees": all(abs(r.get("sim_ratio", r["ratio"]) / r["ratio"] - 1) <= 0.05 for r in rows)}


def main() -> int:
    rows = ratios()
    print(f"# {PAPER}")
    print("# parplan: best plan on c6678 (8x C66x) / best plan on revel-8lane (same lanes); executor replays both")
    print(f"{'kernel':<9}{'n':>5} {'DSP best':>10} {'cores':>5} {'REVEL':>10} {'ratio':>7} {'8-core':>7} "
          f"{'executor':>9} {'DSP sync':>8} {'DSP ctrl':>8}")
    for r in rows:
        print(f"{r['kernel']:<9}{r['n']:>5} {r['dsp_s'] * 1e6:>8.2f}µs {r['dsp_cores']:>5} "
              f"{r['revel_s'] * 1e6:>8.2f}µs {r['ratio']:>6.1f}× {r['ratio_8core']:>6.1f}× {r['sim_ratio']:>8.1f}× "
              f"{100 * r['dsp_sync_share']:>7.0f}% {100 * r['dsp_ctrl_share']:>7.0f}%")
    s = summary(rows)
    print(f"\npaper: {BAND[0]}–{BAND[1]}× (small matrices); parplan at n ≤ 64: "
          f"{s['small_min']:.1f}–{s['small_max']:.1f}× "
          f"({s['in_band']}/{s['small_cases']} cases in the band); the ratio falls from its peak by n = 256 for "
          f"{', '.join(s['shrinking']) or 'no kernel'}; the DSP pinned to all 8 cores: {s['small8_min']:.1f}–"
          f"{s['small8_max']:.1f}×; executor {'confirms' if s['sim_agrees'] else 'disagrees'}")
    reached = s["in_band"] >= s["small_cases"] // 2 and s["small_max"] <= BAND[1]
    print(("reached in part: " if reached else "not reached: ")
          + f"{s['in_band']} of {s['small_cases']} small-matrix cases fall in 4.6–37×; the band's top (37×) is not "
          "reached — the catalog's DSP costs (300-cycle barrier, 20-cycle loop overhead, no masking) give at most "
          f"{s['small_max']:.1f}×, and the smallest sizes stay near the pivot chain's latency on both machines; "
          "TRSV/FFT keep a 1-core DSP plan whose per-iteration overhead does not shrink with n, so their ratio grows "
          "with n instead of shrinking (REVEL's per-kernel tables and DSP setup were not read: ANCHORS B §7)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
