"""Accuracy of parplan's step-time prediction against published training runs.

    python benchmarks/accuracy.py [--csv OUT.csv]

For every row of data/published_training_runs.csv that parplan can express, the published figure is converted to a
measured step time with that source's own FLOP convention, the same configuration is estimated, and the per-row,
per-source and source-balanced MAPE are printed — for all rows, and for the held-out (test) rows that calibration
(benchmarks/calibrate.py) never saw.  Targets: source-balanced MAPE ≤ 10 %, no row worse than 25 %.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from published_runs import accuracy_table, load_runs, summarize  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

TARGET_BALANCED_MAPE_PCT = 10.0
TARGET_MAX_APE_PCT = 25.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="also write the per-row table to this CSV file")
    args = ap.parse_args(argv)
    runs, skipped = load_runs()
    table = accuracy_table(runs)
    con = Console(width=160)
    t = Table(title="parplan step time vs published measurements")
    for col in ("row", "src", "split", "model", "device", "n", "prec", "plan (as priced)", "measured s", "predicted s",
                "error %"):
        t.add_column(col, justify="right" if col in ("n", "measured s", "predicted s", "error %") else "left")
    for r in table.itertuples():
        plan = r.plan.replace(",ep=1", "").replace(",cp=1", "")
        t.add_row(r.row_id, r.source, r.split, r.model, r.device, str(r.n), r.precision, plan,
                  f"{r.measured_s:.3f}", f"{r.predicted_s:.3f}", f"{r.error_pct:+.1f}")
    con.print(t)
    for rid, src, why in skipped:
        con.print(f"skipped {rid} ({src}): {why}")
    s_all = summarize(table)
    s_test = summarize(table[table.split == "test"])
    s_cal = summarize(table[table.split == "calibration"])
    st = Table(title="MAPE by source (|predicted − measured| / measured)")
    for col in ("source", "rows", "MAPE % (all)", "rows (test)", "MAPE % (test)"):
        st.add_column(col, justify="right")
    for src in sorted(s_all["per_source"]):
        n_all = int((table.source == src).sum())
        n_test = int(((table.source == src) & (table.split == "test")).sum())
        st.add_row(src, str(n_all), f"{s_all['per_source'][src]:.1f}", str(n_test),
                   f"{s_test['per_source'][src]:.1f}" if src in s_test["per_source"] else "—")
    con.print(st)
    for name, s in (("all rows", s_all), ("calibration rows", s_cal), ("test rows (held out)", s_test)):
        con.print(f"{name:22s}: {s['rows']:2d} rows  MAPE {s['mape_pct']:5.1f} %  source-balanced MAPE "
                  f"{s['balanced_mape_pct']:5.1f} %  worst row {s['max_ape_pct']:5.1f} %")
    ok = s_all["balanced_mape_pct"] <= TARGET_BALANCED_MAPE_PCT and s_all["max_ape_pct"] <= TARGET_MAX_APE_PCT
    con.print(f"target (balanced MAPE ≤ {TARGET_BALANCED_MAPE_PCT:.0f} %, every row ≤ {TARGET_MAX_APE_PCT:.0f} %): "
              + ("MET" if ok else "NOT MET"))
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
