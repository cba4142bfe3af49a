"""The goodput model by hand: Young/Daly, rates from the Llama 3 table, checkpoint times, limits and monotonicity."""
from __future__ import annotations

import math

import numpy as np
import pytest

from parplan.errors import SpecError
from parplan.models.primitives.reliability import (BREAKDOWN, FailureRates, Redundancy, Reliability, checkpoint_times,
                                                   daly_interval, goodput, system_mtbf_s, young_interval)

TOT = 405e9 * 14.0  # bytes: bf16 weights + fp32 master and Adam moments of a 405B model
DEV = TOT / 16384 * 8


def test_young_is_sqrt_two_delta_m():
    assert young_interval(120.0, 3600.0 * 24) == pytest.approx(math.sqrt(2 * 120.0 * 86400.0))
    assert np.allclose(young_interval([1.0, 8.0], [2.0, 1.0]), [2.0, 4.0])


@pytest.mark.parametrize("m_min, published", [(24 * 60, 117.0), (6 * 60, 57.0), (15, 9.1)])
def test_daly_reproduces_his_published_cases(m_min, published):
    # Daly 2006, Figs. 3-5: δ = 5 min; τ_opt = 117, 57, 9.1 min for M = 24 h, 6 h, 15 min
    assert float(daly_interval(5.0, m_min)) == pytest.approx(published, abs=0.5)
    assert float(daly_interval(10.0, 4.0)) == 4.0  # δ ≥ 2M: τ = M


def test_llama3_rates_give_its_mtbf():
    r = FailureRates.from_profile("llama3-16k")
    # 419 interruptions in 54 days on 16,384 GPUs: one every 3.09 h
    assert float(system_mtbf_s(r, 16384, 8)) / 3600 == pytest.approx(54 * 24 / 419, rel=1e-9)
    assert sum(r.by_cause(16384, 8).values()) == pytest.approx(419 / (54 * 24))
    # per device and per node rates scale with devices and nodes
    assert float(system_mtbf_s(r, 32768, 8)) == pytest.approx(float(system_mtbf_s(r, 16384, 8)) / 2)
    assert r.per_device_per_hour == pytest.approx((148 + 72 + 19 + 17 + 6 + 6) / 16384 / 1296)
    with pytest.raises(SpecError):
        FailureRates.from_profile("nope")


def test_checkpoint_times_by_mode():
    for mode in ("sync", "async", "in-memory"):
        ck = checkpoint_times(DEV, TOT, Reliability(mode=mode).resolved())
        assert float(ck["write_s"]) >= float(ck["stall_s"]) > 0
    sync = checkpoint_times(DEV, TOT, Reliability(storage_bandwidth=1e12).resolved())
    assert float(sync["stall_s"]) == pytest.approx(TOT / 1e12)  # aggregate storage bound
    a = checkpoint_times(DEV, TOT, Reliability(mode="async", host_copy_bandwidth=1e10).resolved())
    assert float(a["stall_s"]) == pytest.approx(DEV / 1e10) and float(a["lag_s"]) == pytest.approx(TOT / 2e12)


def _g(cfg=None, n=16384, steps=20000, step=10.0, **kw):
    return {k: float(np.asarray(v)[0]) for k, v in goodput([step], steps, DEV, TOT, n, 8, cfg, **kw).items()}


def test_breakdown_sums_to_the_time():
    for cfg in (Reliability(), Reliability(mode="async"), Reliability(redundancy=Redundancy("replication", 2)),
                Reliability(redundancy=Redundancy("abft"))):
        g = _g(cfg)
        assert sum(g[k] for k in BREAKDOWN) == pytest.approx(g["time_to_train_s"], rel=1e-9)
        assert g["time_p10_s"] <= g["time_to_train_s"] <= g["time_p90_s"]
        assert g["useful_s"] == 20000 * 10.0 and 0 < g["goodput"] < 1


def test_goodput_tends_to_one_as_mtbf_grows():
    vals = [_g(Reliability(rates=FailureRates.from_profile().scaled(f)))["goodput"] for f in (1.0, 1e-2, 1e-4, 1e-8)]
    assert vals == sorted(vals) and vals[-1] > 0.9999


def test_more_failures_never_raise_goodput():
    base = FailureRates.from_profile()
    for mode in ("sync", "async", "in-memory"):
        g = [_g(Reliability(mode=mode, rates=base.scaled(f)))["goodput"] for f in np.geomspace(0.01, 100, 25)]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(g, g[1:])), (mode, g)
    # and more devices (same plan, same step) fail more often
    g = [_g(n=n)["goodput"] for n in (1024, 4096, 16384, 65536, 262144)]
    assert g == sorted(g, reverse=True)


def test_chosen_interval_is_young_daly():
    g = _g(steps=200000, step=1.0)
    d, m = g["checkpoint_stall_s"], g["mtbf_s"]
    # the exact optimum (with restarts D) lies near Young/Daly's τ; the grid's spacing is ≈ 5 %
    assert g["checkpoint_interval_s"] == pytest.approx(float(daly_interval(d, m)), rel=0.25)
    assert g["checkpoint_interval_s"] == pytest.approx(float(young_interval(d, m)), rel=0.25)


def test_first_order_waste_at_llama3_scale():
    # waste ≈ δ/τ + (τ/2 + D)/M (Young's first-order model) at 16k GPUs; Llama 3 reports > 90 % effective time
    g = _g(steps=100000)
    d, m, tau, D = g["checkpoint_stall_s"], g["mtbf_s"], g["checkpoint_interval_s"], g["restart_each_s"]
    first_order = d / tau + (tau / 2 + D) / m
    assert 1 - g["goodput"] == pytest.approx(first_order, rel=0.1)
    assert g["goodput"] > 0.9


def test_redundancy_masks_at_600k():
    none = _g(n=600000, steps=3000)
    rep = _g(Reliability(redundancy=Redundancy("replication", 2)), n=600000, steps=3000)
    assert rep["redundancy_s"] >= rep["useful_s"]  # replication doubles the compute
    assert rep["expected_interrupts"] < 0.01 * none["expected_interrupts"]
    spare = _g(Reliability(redundancy=Redundancy("spare", 4)), n=600000, steps=3000)
    rep4 = _g(Reliability(redundancy=Redundancy("replication", 4)), n=600000, steps=3000)
    assert spare["compute_overhead"] == 2.5 and spare["time_to_train_s"] < rep4["time_to_train_s"]


def test_bad_input_is_a_spec_error():
    with pytest.raises(SpecError):
        Reliability(mode="lazy").resolved()
    with pytest.raises(SpecError):
        Reliability(redundancy=Redundancy("replication", 1)).resolved()
    with pytest.raises(SpecError):
        Reliability(storage_bandwidth=0.0).resolved()
    with pytest.raises(SpecError):
        goodput([0.0], 10, DEV, TOT, 8, 8)
