"""Gate on the agreement with the experts (benchmarks/expert_agreement.py): the share of published plans that rank
in the top 10, or within 5 % of the planner's best, among the plans their source's framework could run then.

The fidelity issue's target (≥ 80 %) is not met yet (64 %: see the README's paragraph on the benchmark), so
``test_agreement_target`` is a strict xfail; ``test_agreement_no_regression`` holds today's figure."""
from __future__ import annotations

import pytest

from expert_agreement import agreement_in_framework, agreement_table
from published_runs import load_runs

REGRESSION_AGREEMENT = 0.64  # today's 32 of 50 rows: a regression guard, not the target
TARGET_AGREEMENT = 0.80


@pytest.fixture(scope="module")
def table():
    runs, _, _ = load_runs()
    return agreement_table(runs)


def test_every_fully_stated_published_plan_is_ranked(table):
    assert len(table) == 50
    # a plan the model says does not fit never counts as agreeing
    assert agreement_in_framework(table[~table.fits]) == 0.0


def test_maxtext_of_dec_2023_ranks_only_single_micro_batch_plans(table):
    s24 = table[table.source == "S24"]
    assert len(s24) == 14 and (s24.framework == "MaxText Dec 2023").all()
    # the framework's best plan holds the whole per-replica batch in one micro-batch (mbs = B / dp)
    for r in s24.itertuples():
        if r.framework_best_plan != "—":
            dp = int(r.framework_best_plan.split(" dp")[1].split()[0])
            mbs = int(r.framework_best_plan.split(" mbs")[1].split()[0])
            assert dp * mbs == r.global_batch, r


def test_agreement_no_regression(table):
    assert agreement_in_framework(table) >= REGRESSION_AGREEMENT - 1e-9


@pytest.mark.xfail(strict=True, reason="expert agreement target not met: 64 % of published plans in the top 10 or "
                                       "within 5 % of the best their framework could run (target 80 %)")
def test_agreement_target(table):
    assert agreement_in_framework(table) >= TARGET_AGREEMENT
