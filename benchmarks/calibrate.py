"""Fit the global framework terms on every published run and write them, with the LOSO intervals.

    python benchmarks/calibrate.py [--dry-run]

Writes ``catalogs/calibration/framework_terms.yaml`` (layer overhead, overlap interference, compute derate: the
only constants fitted on end-to-end runs, one value each for every device and framework) and
``catalogs/calibration/intervals.yaml`` (80 % bands of measured / predicted per provenance class, from the
leave-one-source-out predictions).  Kernel-level efficiencies are not fitted: they come from measurements
(``catalogs/calibration/kernels.yaml``).  Deterministic: the fit starts from zero terms every time.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml  # noqa: E402

from loso import TERM_NAMES, fit_all, intervals, loso_table  # noqa: E402
from parplan.models.primitives.framework_terms import FrameworkTerms  # noqa: E402
from published_runs import load_runs, summarize  # noqa: E402

CAL = Path(__file__).resolve().parents[1] / "catalogs" / "calibration"
SOURCES = {
    "layer_overhead_s": "host-side gap per layer per pass (launch latency, framework glue); fitted",
    "overlap_interference": "fraction of overlapped (hidden) communication time by which the concurrent compute "
                            "slows down (SM and HBM contention); fitted",
    "compute_derate": "sustained-clock derate of GPU kernels over the short-burst (boost-clock) kernel measurements "
                      "(power and thermal limits); not applied to TPUs (fixed clock, one compiled program); fitted",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="print, do not write the catalog files")
    ap.add_argument("--zero-terms", metavar="WHY", help="write zero terms (and the intervals of the kernel-level "
                    "model alone) even where the fitted ones lower the LOSO error, for the reason given")
    args = ap.parse_args(argv)
    runs, skipped, n_file = load_runs()
    terms = fit_all(runs)
    table_fit, _ = loso_table(runs, fit=True)
    table_zero, _ = loso_table(runs, fit=False)
    m_fit, m_zero = summarize(table_fit)["balanced_mape_pct"], summarize(table_zero)["balanced_mape_pct"]
    print(f"LOSO source-balanced MAPE: with fitted terms {m_fit:.1f} %, kernel-level model alone {m_zero:.1f} %")
    n_src = len({r.source_id for r in runs})
    # model selection by the cross-validated error: terms are kept only when they generalize
    keep = m_fit < m_zero and not args.zero_terms
    table = table_fit if keep else table_zero
    if not keep:
        terms = FrameworkTerms()
    bands = intervals(table)
    # families with rows of their own get their own band (the same LOSO method; the MoE rows: benchmarks/accuracy.py)
    from accuracy import moe_accuracy

    moe_runs, _, moe_table = moe_accuracy(keep)
    if moe_table is not None and len(moe_table) >= 8:
        ratio = moe_table.measured_s / moe_table.predicted_s
        bands["families"] = {"moe-transformer": {"low": round(min(float(ratio.quantile(0.1)), 1.0), 3),
                                                 "high": round(max(float(ratio.quantile(0.9)), 1.0), 3),
                                                 "rows": int(len(moe_table))}}
    doc = {}
    for name in TERM_NAMES:
        doc[name] = round(float(getattr(terms, name)), 9)
        doc[name.removesuffix("_s") + "_source"] = SOURCES[name]
    doc["source"] = (f"benchmarks/calibrate.py on {len(runs)} rows of {n_src} sources of "
                        "benchmarks/data/published_training_runs.csv (source-balanced mean |log error|); "
                        + (f"kept: LOSO {m_fit:.1f} % vs {m_zero:.1f} % without terms" if keep else
                           f"not applied: fitted terms gave LOSO {m_fit:.1f} % vs {m_zero:.1f} % without them"
                           + (f" ({args.zero_terms})" if args.zero_terms else "")))
    bands["source"] = (f"benchmarks/calibrate.py: leave-one-source-out predictions of {len(table)} dense rows "
                       "(and of each family's own rows); 10th/90th percentiles of measured/predicted")
    for name in TERM_NAMES:
        print(f"{name:22s} = {getattr(terms, name):.6g}")
    for cls in ("calibrated", "derived", "defaults"):
        print(f"interval {cls:10s}: ×{bands[cls]['low']:.3f} … ×{bands[cls]['high']:.3f} ({bands[cls]['rows']} rows)")
    for fam, b in bands.get("families", {}).items():
        print(f"interval {fam}: ×{b['low']:.3f} … ×{b['high']:.3f} ({b['rows']} rows)")
    if not args.dry_run:
        head = "# The global framework terms (see models/primitives/framework_terms.py); written by benchmarks/calibrate.py.\n"
        (CAL / "framework_terms.yaml").write_text(head + yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        head = "# 80 % step-time intervals by provenance class (models/primitives/uncertainty.py); written by benchmarks/calibrate.py.\n"
        (CAL / "intervals.yaml").write_text(head + yaml.safe_dump(bands, sort_keys=False), encoding="utf-8")
        print("wrote catalogs/calibration/framework_terms.yaml and intervals.yaml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
