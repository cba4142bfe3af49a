"""The executor's failure injection (seeded Monte Carlo) confirms the analytical goodput within 5 %."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.errors import SpecError
from parplan.executor.failures import simulate_failures
from parplan.models.primitives.reliability import FailureRates, Redundancy, Reliability

TOT = 405e9 * 14.0
DEV = TOT / 16384 * 8

SCENARIOS = [
    ("16k sync", 16384, Reliability(), 20000, 60),
    ("16k async", 16384, Reliability(mode="async"), 20000, 60),
    ("64k in-memory", 65536, Reliability(mode="in-memory"), 5000, 60),
    ("600k checkpoint/restart", 600000, Reliability(), 3000, 20),
    ("600k replication 2", 600000, Reliability(redundancy=Redundancy("replication", 2)), 3000, 10),
    ("600k SPARe 3", 600000, Reliability(redundancy=Redundancy("spare", 3)), 3000, 10),
]


@pytest.mark.parametrize("name, n, cfg, steps, runs", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_monte_carlo_matches_analytical_within_5_percent(name, n, cfg, steps, runs):
    sim = simulate_failures(10.0, steps, DEV, TOT, n, 8, cfg, runs=runs, seed=7)
    assert sim.failures >= 1000, sim.failures  # enough failures to mean something
    assert abs(sim.relative_error) < 0.05, (name, sim.analytic["time_to_train_s"], sim.mean_s)
    assert sum(sim.by_cause.values()) == sim.failures


def test_spread_is_close_to_the_monte_carlo_one():
    sim = simulate_failures(10.0, 20000, DEV, TOT, 16384, 8, Reliability(), runs=300, seed=3)
    a = sim.analytic
    assert sim.failures >= 1000
    width_mc, width_an = sim.p90_s - sim.p10_s, a["time_p90_s"] - a["time_p10_s"]
    assert width_an == pytest.approx(width_mc, rel=0.35)


def test_seeded_and_reproducible():
    a = simulate_failures(10.0, 2000, DEV, TOT, 16384, 8, runs=3, seed=11)
    b = simulate_failures(10.0, 2000, DEV, TOT, 16384, 8, runs=3, seed=11)
    assert np.array_equal(a.times_s, b.times_s)


def test_no_failures_is_the_failure_free_timeline():
    cfg = Reliability(rates=FailureRates.from_profile().scaled(1e-12))
    sim = simulate_failures(10.0, 1000, DEV, TOT, 1024, 8, cfg, runs=2, seed=0)
    assert sim.failures == 0
    assert sim.mean_s == pytest.approx(sim.analytic["time_to_train_s"], rel=1e-6)


def test_too_much_work_is_refused():
    with pytest.raises(SpecError):
        simulate_failures(10.0, 10**7, DEV, TOT, 600000, 8, runs=1000, max_events=1000)
