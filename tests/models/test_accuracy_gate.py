"""Gate on the published-runs accuracy (benchmarks/accuracy.py, leave-one-source-out).

The fidelity issue's targets — source-balanced LOSO MAPE ≤ 10 %, no source above 20 %, coverage ≥ 95 % of dense
rows — are asserted by ``test_loso_targets``.  They are NOT met yet (LOSO 16.8 % balanced, worst source 27.3 %:
H100 runs of llm-foundry FSDP and torchtitan are predicted 15–44 % too fast, NeMo fp8 10–28 %), so that test is a strict
xfail: it shows in every run, and it fails loudly the day the model meets the targets (then drop the mark).
``test_loso_no_regression`` holds today's figures so a model change cannot silently make them worse.
"""
from __future__ import annotations

import pytest

from accuracy import TARGET_BALANCED_MAPE_PCT, TARGET_COVERAGE, TARGET_MAX_SOURCE_MAPE_PCT, coverage
from loso import loso_table
from parplan.models.primitives.framework_terms import FrameworkTerms, framework_terms
from published_runs import load_runs, summarize

# today's figures (benchmarks/accuracy.py), rounded up by 0.5 point: a regression guard, not the target
REGRESSION_BALANCED_PCT = 17.3
REGRESSION_WORST_SOURCE_PCT = 27.8


@pytest.fixture(scope="module")
def loso():
    runs, skipped, n_file = load_runs()
    table, _ = loso_table(runs, fit=framework_terms() != FrameworkTerms())
    return summarize(table), coverage(runs, skipped, n_file)


def test_every_published_row_is_set_up_and_dense_coverage_is_met(loso):
    _, (n_ok, n_dense, cov) = loso
    assert n_dense == 131 and n_ok == 128
    assert cov >= TARGET_COVERAGE


def test_loso_no_regression(loso):
    s, _ = loso
    assert s["balanced_mape_pct"] <= REGRESSION_BALANCED_PCT, s
    assert s["max_source_mape_pct"] <= REGRESSION_WORST_SOURCE_PCT, s


@pytest.mark.xfail(strict=True, reason="fidelity targets not met yet: LOSO 16.8 % balanced, worst source 27.3 %")
def test_loso_targets(loso):
    s, _ = loso
    assert s["balanced_mape_pct"] <= TARGET_BALANCED_MAPE_PCT, s
    assert s["max_source_mape_pct"] <= TARGET_MAX_SOURCE_MAPE_PCT, s


# --- mixture-of-experts rows (the moe-transformer family), the same method -------------------------------------
REGRESSION_MOE_BALANCED_PCT = 29.2  # today's 28.7 % (each run's own expert all-to-all overlap), rounded up by 0.5 point


@pytest.fixture(scope="module")
def moe():
    from accuracy import moe_accuracy

    runs, left_out, table = moe_accuracy(framework_terms() != FrameworkTerms())
    return runs, left_out, summarize(table)


def test_every_published_moe_row_is_expressed(moe):
    runs, left_out, _ = moe
    assert len(runs) == 9 and not left_out, left_out


def test_moe_no_regression(moe):
    assert moe[2]["balanced_mape_pct"] <= REGRESSION_MOE_BALANCED_PCT, moe[2]


@pytest.mark.xfail(strict=True, reason="MoE target not met: 28.7 % source-balanced (one source, S08); small "
                                       "fine-grained MoE (Qwen3-30B-A3B, gpt-oss-120b) predicted 19-76 % fast")
def test_moe_target(moe):
    from accuracy import TARGET_MOE_BALANCED_MAPE_PCT

    assert moe[2]["balanced_mape_pct"] <= TARGET_MOE_BALANCED_MAPE_PCT, moe[2]
