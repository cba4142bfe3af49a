"""Accuracy of parplan's serving model against published inference runs, leave-one-source-out.

    python benchmarks/serving_accuracy.py [--csv OUT.csv]

Every row of data/published_inference_runs.csv that serving_rows.py can express is predicted: the throughput rows
(TensorRT-LLM gptSessionBenchmark, static batching: output tokens / the whole generate call, context phase
included) with ``parplan.models.serving_static.static_batch`` on the row's batch, first-token latency (batch 1, one
request at a time) with ``parplan.models.serving.estimate_serving`` (TTFT p50 of a closed loop of one user).

Fitted: only the GLOBAL engine terms of ``FIT_TERMS`` (one value each, for every row of every source), on the
source-balanced MAPE of the rows they are fitted on.  The reported accuracy is leave-one-source-out: each source's
rows are predicted with the terms fitted on the other sources only; the all-source fit is the value kept in
catalogs/calibration/serving.yaml (this script says whether it still matches).  Per-op efficiencies are not fitted
(kernel layer: catalogs/calibration/kernels.yaml).  Target (issue 12): MAPE ≤ 15 % on throughput and on first-token
latency.
"""
from __future__ import annotations

import argparse
import math
import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving_rows import ENGINE_PROFILE, Row, ape, load_rows  # noqa: E402

TARGET_MAPE_PCT = 15.0  # issue 12 "Accuracy against published runs"
METRICS = ("throughput", "ttft")
# global engine terms fitted on the rows (engine profile ENGINE_PROFILE of serving.yaml) and the grids searched:
# the share of the legacy masked-MHA kernel's repeated per-query-head KV loads that reach HBM (serving_terms
# kv_loads_per_head: 0 all L2 hits … 1 every load from HBM), and the release's fp8 GEMMs (TensorRT 9.1) as a
# fraction of the measured fp8 MAMF (0.5 … 1)
FIT_TERMS = {"reload_hbm_fraction": tuple(round(0.05 * i, 2) for i in range(21)),
             "fp8_gemm_scale": tuple(round(0.5 + 0.05 * i, 2) for i in range(11))}


def predict(row: Row, terms: dict | None = None) -> tuple[float, object]:
    """parplan's figure for the row's metric (and the estimate itself) under engine ``terms``."""
    if row.metric == "throughput":
        from parplan.models.serving_static import static_batch

        est = static_batch(row.workload, row.cluster, row.serving, row.deployment, engine_terms=terms)
        return float(est.output_tokens_per_s_per_device), est
    from parplan.models.serving import estimate_serving

    est = estimate_serving(row.workload, row.cluster, row.serving, row.deployment, engine_terms=terms)
    return float(est.ttft_p50_s), est


def _mape(errors: list[float]) -> float:
    finite = [abs(e) for e in errors if math.isfinite(e)]
    return sum(finite) / len(finite) if finite else float("nan")


def _balanced(rows: list[Row], values: dict) -> float:
    """Mean over (metric, source) groups of the groups' MAPE (each source weighs the same, however many rows)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r.metric, r.source_id), []).append(ape(values[r.row_id], r.measured))
    return _mape([_mape(v) for v in groups.values()])


def grid_predictions(rows: list[Row]) -> list[tuple[dict, dict]]:
    """(terms, {row_id: predicted}) at every point of the FIT_TERMS grid (computed once, shared by every fit)."""
    import itertools

    names = list(FIT_TERMS)
    out = []
    for combo in itertools.product(*FIT_TERMS.values()):
        terms = dict(zip(names, combo))
        out.append((terms, {r.row_id: predict(r, terms)[0] for r in rows}))
    return out


def fit(rows: list[Row], grid: list[tuple[dict, dict]] | None = None) -> dict:
    """The FIT_TERMS values minimizing the source-balanced MAPE of ``rows`` (grid search; ties: the first)."""
    grid = grid if grid is not None else grid_predictions(rows)
    best, best_err = None, math.inf
    for terms, values in grid:
        err = _balanced(rows, values)
        if err < best_err - 1e-9:
            best, best_err = terms, err
    return best


def _dominant(est, metric: str) -> str:
    parts = est.generation_breakdown_s if metric == "throughput" else est.prefill_breakdown_s
    k, v = max(parts.items(), key=lambda kv: kv[1])
    return f"{k.removesuffix('_s')} {100 * v / max(sum(parts.values()), 1e-30):.0f} %"


def why(t: dict) -> str:
    """What the model leaves out for a row of this kind (the worst rows' explanation)."""
    dev, m, e = t["device"], t["metric"], t["loso_error_pct"]
    if m == "throughput" and dev.startswith("a100") and t["osl"] >= 2048:
        return ("A100, 16-bit KV cache: the legacy kernel's per-query-head reloads are priced at the HBM share fitted "
                "on fp8-KV H100/H200 rows; a 16-bit cache skips the fp8→fp16 conversion each reload pays (XQA blog: "
                "'reducing data loading and conversion'), so these generation steps run faster than priced")
    if m == "throughput" and t["source"] == "I02" and t["osl"] <= 128 and e > 0:
        return ("H200 v0.5.0 'preliminary measured performance': total vs per-GPU not stated and the fp8 KV cache "
                "assumed by the collector; a 16-bit cache would double the attention reads (over-predicted)")
    if m == "throughput" and t["osl"] >= 2048:
        return ("long generation on the legacy masked-MHA kernel: the per-query-head reload share is one global "
                "term; the real L2 hit rate varies with the group size (8 for Llama-2-70B, 29 for Falcon-180B)")
    if m == "throughput" and t["isl"] >= 2048 and t["osl"] <= 128:
        return ("the context phase (batch × 2048 prompt tokens) dominates: priced with the one fp8 GEMM fraction "
                "fitted for the release, mostly set by 128-token and decode-heavy rows")
    if m == "ttft" and dev.startswith(("h100", "h200")) and e < 0:
        return ("H100 fp8 context phase faster than measured: fp8 GEMMs priced at the fp8 MAMF (cuBLAS of 2024–25); "
                "TensorRT 9.1's FP8 kernels of v0.5 and the fp16→fp8 activation casts before every GEMM (torchao: "
                "fp8 below bf16 at small shapes) are not priced")
    if m == "ttft" and dev.startswith("a100") and t["isl"] <= 128 and e > 0:
        return ("a 128-token prompt's GEMMs (M = 128) are priced on tile/wave quantization without split-K: "
                "compute-bound at ~0.58 of peak where a split-K kernel would be bound by the weights' read")
    return "no known omission"


def accuracy_table(rows: list[Row], all_terms: dict | None = None, loso_terms: dict | None = None) -> list[dict]:
    """Per row: published, predicted with the all-source fit (in-sample) and with its source held out (LOSO)."""
    out = []
    for row in rows:
        value, est = predict(row, all_terms)
        held = predict(row, loso_terms[row.source_id])[0] if loso_terms else value
        out.append({"row_id": row.row_id, "source": row.source_id, "model": row.model,
                    "device": row.cluster.group.device.id, "n": row.cluster.n_devices,
                    "deployment": row.deployment.to_string(), "isl": int(row.serving.isl.mean),
                    "osl": int(row.serving.osl.mean), "weights": row.serving.weights, "metric": row.metric,
                    "measured": row.measured, "predicted": value, "error_pct": ape(value, row.measured),
                    "loso_predicted": held, "loso_error_pct": ape(held, row.measured),
                    "fits": bool(est.fits), "dominant": _dominant(est, row.metric),
                    "assumptions": "; ".join(row.assumptions)})
    for t in out:
        t["why"] = why(t)
    return out


def summarize(table: list[dict]) -> dict:
    """Per metric: MAPE per source in-sample and leave-one-source-out (``loso_error_pct``, else ``error_pct``),
    the LOSO MAPE over all rows and source-balanced, and the rows by LOSO error, worst first."""
    out: dict = {}
    for m in METRICS:
        sub = [t for t in table if t["metric"] == m]
        lo = lambda t: t.get("loso_error_pct", t["error_pct"])  # noqa: E731
        srcs = sorted({t["source"] for t in sub})
        per_source = {s: _mape([t["error_pct"] for t in sub if t["source"] == s]) for s in srcs}
        loso = {s: _mape([lo(t) for t in sub if t["source"] == s]) for s in srcs}
        ranked = sorted(sub, key=lambda t: -abs(lo(t)) if math.isfinite(lo(t)) else -math.inf)
        out[m] = {"rows": len(sub), "mape_pct": _mape([lo(t) for t in sub]), "per_source": per_source,
                  "loso_per_source": loso, "balanced_mape_pct": _mape(list(loso.values())) if loso else float("nan"),
                  "worst": ranked[0] if ranked else None, "ranked": ranked}
    return out


def _rows_table(table: list[dict]):
    from rich.table import Table

    t = Table(title="parplan serving model vs published inference runs (LOSO: the row's source held out of the fit)")
    cols = ("row", "src", "model", "device", "deployment", "ISL/OSL", "w", "metric", "published", "predicted",
            "error %", "LOSO pred.", "LOSO %", "dominant part")
    for c in cols:
        t.add_column(c, justify="right" if c in ("published", "predicted", "error %", "LOSO pred.", "LOSO %") else "left")
    for r in table:
        fmt = (lambda v: f"{v:,.0f}") if r["metric"] == "throughput" else (lambda v: f"{1000 * v:.1f} ms")
        t.add_row(r["row_id"], r["source"], r["model"][:12], r["device"][:9], r["deployment"],
                  f"{r['isl']}/{r['osl']}", r["weights"], "tok/s/GPU" if r["metric"] == "throughput" else "TTFT",
                  fmt(r["measured"]), fmt(r["predicted"]), f"{r['error_pct']:+.1f}", fmt(r["loso_predicted"]),
                  f"{r['loso_error_pct']:+.1f}", r["dominant"])
    return t


@lru_cache(maxsize=1)
def evaluate():
    """(rows, skipped, rows in the file, terms fitted on every source, {source: terms fitted without it}, per-row
    table) — computed once per process (the grid of predictions takes seconds)."""
    rows, skipped, n_file = load_rows()
    sources = sorted({r.source_id for r in rows})
    grid = grid_predictions(rows)
    all_terms = fit(rows, grid)
    loso_terms = {s: fit([r for r in rows if r.source_id != s], grid) for s in sources}
    return rows, skipped, n_file, all_terms, loso_terms, accuracy_table(rows, all_terms, loso_terms)


def run(argv: list[str] | None = None, console=None) -> dict:
    from rich.console import Console
    from rich.table import Table

    from parplan.models.serving_terms import serving_file

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="also write the per-row table to this CSV file")
    args = ap.parse_args(argv)
    con = console or Console(width=200)
    rows, skipped, n_file, all_terms, loso_terms, table = evaluate()
    con.print(_rows_table(table))
    for t in table:
        if t["assumptions"]:
            con.print(f"{t['row_id']}: {t['assumptions']}")
    for rid, src, why_ in skipped:
        con.print(f"left out {rid} ({src}): {why_}")
    s = summarize(table)
    st = Table(title="MAPE by source: in-sample (terms fitted on every source) and leave-one-source-out")
    for c in ("metric", "source", "rows", "in-sample MAPE %", "LOSO MAPE %", "terms fitted without it"):
        st.add_column(c, justify="right")
    for m in METRICS:
        for src, v in s[m]["per_source"].items():
            k = sum(1 for t in table if t["metric"] == m and t["source"] == src)
            st.add_row(m, src, str(k), f"{v:.1f}", f"{s[m]['loso_per_source'][src]:.1f}",
                       ", ".join(f"{a}={b:g}" for a, b in loso_terms[src].items()))
    con.print(st)
    ok = True
    for m in METRICS:
        met = s[m]["mape_pct"] <= TARGET_MAPE_PCT and s[m]["balanced_mape_pct"] <= TARGET_MAPE_PCT
        ok = ok and met
        w = s[m]["worst"]
        con.print(f"{m}: {s[m]['rows']} rows, LOSO MAPE {s[m]['mape_pct']:.1f} % (source-balanced "
                  f"{s[m]['balanced_mape_pct']:.1f} %); worst {w['row_id']} {w['loso_error_pct']:+.1f} % "
                  f"(target ≤ {TARGET_MAPE_PCT:.0f} %: {'MET' if met else 'NOT MET'})")
    con.print("worst rows and why:")
    for m in METRICS:
        for t in s[m]["ranked"][:4]:
            con.print(f"  {t['row_id']} {m} {t['loso_error_pct']:+.1f} % ({t['model']}, {t['device']}, "
                      f"{t['isl']}/{t['osl']}): {t['why']}")
    con.print(f"coverage: {len(rows)} of {n_file} rows expressible ({100 * len(rows) / n_file:.0f} %)")
    kept = serving_file().engines[ENGINE_PROFILE]
    same = all(abs(getattr(kept, k) - v) < 1e-9 for k, v in all_terms.items())
    con.print("global engine terms fitted on every source: " + ", ".join(f"{k}={v:g}" for k, v in all_terms.items())
              + f" (serving.yaml {ENGINE_PROFILE}: " + ", ".join(f"{k}={getattr(kept, k):g}" for k in all_terms)
              + (", matches)" if same else ", DIFFERS: update it)"))
    if args.csv:
        import csv

        with open(args.csv, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(table)
    return {"ok": ok, "summary": s, "table": table, "skipped": skipped, "coverage": len(rows) / n_file,
            "terms": all_terms, "loso_terms": loso_terms, "terms_match_catalog": same}


def main(argv: list[str] | None = None) -> int:
    return 0 if run(argv)["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
