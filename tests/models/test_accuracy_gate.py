"""Regression gate on the published-runs accuracy (benchmarks/accuracy.py): a model change that breaks the targets
fails CI instead of slipping through.  Targets from the core issue: source-balanced MAPE ≤ 10 %, no row > 25 %."""
from __future__ import annotations

from published_runs import accuracy_table, load_runs, summarize


def test_published_runs_accuracy_targets():
    runs, skipped = load_runs()
    assert len(runs) == 47 and len(skipped) == 3  # rows the model can express / cannot (each with its reason)
    s = summarize(accuracy_table(runs))
    assert s["balanced_mape_pct"] <= 10.0, s
    assert s["max_ape_pct"] <= 25.0, s
    held_out = summarize(accuracy_table([r for r in runs if r.split == "test"]))
    assert held_out["balanced_mape_pct"] <= 10.0, held_out
