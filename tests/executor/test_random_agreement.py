"""The executor against the analytical model on a small seeded sample of random fitting plans (the CI-sized run of
benchmarks/validate_random.py, which draws 300).  The target — ≥ 98 % within 5 %, none beyond 10 % — is not met
(97.3 % on the 300-plan run, max 11.0 %: the 8 plans beyond 5 % are ZeRO-3 plans, 7 of them MoE with the
all-to-all on a port shared with DP traffic or with CP), so it is a strict xfail; today's share on this sample is
a no-regression guard."""
from __future__ import annotations

import numpy as np
import pytest

from validate_random import CASES, draw

from parplan.executor.agreement import compare_plan

REGRESSION_WITHIN_5_PCT = 0.958  # today: 69 of 72 (0.958) on this sample


@pytest.fixture(scope="module")
def diffs():
    rng = np.random.default_rng(7)
    out = []
    for case in CASES:
        w, c, plans = draw(case, 12, rng)
        out += [abs(compare_plan(w, c, p).step_diff) for p in plans]
    return np.array(out)


def test_random_agreement_does_not_regress(diffs):
    assert len(diffs) == 12 * len(CASES)
    assert (diffs <= 0.05).mean() >= REGRESSION_WITHIN_5_PCT, np.sort(diffs)[-8:]


@pytest.mark.xfail(strict=True, reason="random-plan agreement target not met (97.3 % within 5 % on 300 plans)")
def test_random_agreement_target(diffs):
    assert (diffs <= 0.05).mean() >= 0.98 and diffs.max() <= 0.10
