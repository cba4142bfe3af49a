"""Partial plans (contract v2): omitted knobs are chosen, reported, and priced exactly like a full plan."""
from __future__ import annotations

import pytest

import parplan
from parplan.errors import SpecError
from parplan.models.estimate import estimate_plan
from parplan.workloads.loader import load_workload
from parplan.hardware.catalog import load_cluster


def test_partial_plan_reports_what_it_chose_and_prices_it_like_the_full_plan():
    e = parplan.estimate("llama3-70b", "dgx-h100-64", "tp=8,pp=4")
    assert set(e.chosen) >= {"mbs", "vpp", "zero", "recompute", "sp"}
    assert (e.plan.tp, e.plan.pp) == (8, 4) and e.fits
    full = estimate_plan(load_workload("llama3-70b"), load_cluster("dgx-h100-64"), e.plan)
    assert full.step_time_s == pytest.approx(e.step_time_s, rel=1e-12)


def test_a_full_plan_chooses_nothing():
    e = parplan.estimate("llama2-7b", "dgx-a100-8", "tp=2,mbs=1,vpp=1,zero=1,recompute=none,sp=true",
                         global_batch=64)
    assert e.chosen == {} and e.plan.zero == 1


def test_framework_limits_the_completion():
    # torchtitan has no ZeRO-1 distributed optimizer (its profile); the completion never picks what it cannot run
    e = parplan.estimate("llama3-8b", "dgx-h100-64", "tp=1", framework="torchtitan", global_batch=512)
    assert e.framework == "torchtitan" and e.plan.zero in (0, 3)
    from parplan.models.framework import get_framework

    assert get_framework("torchtitan").plan_reasons(e.plan) == []


def test_intervals_bracket_the_estimate():
    e = parplan.estimate("llama3-70b", "dgx-h100-64", "tp=8,pp=4")
    assert e.step_time_low_s <= e.step_time_s <= e.step_time_high_s
    assert e.tokens_per_s_low <= e.tokens_per_s <= e.tokens_per_s_high
    assert e.provenance_class == "calibrated"


def test_an_impossible_pin_is_the_plain_error():
    with pytest.raises(SpecError, match="tp=16 does not divide kv_heads=8"):
        parplan.estimate("llama3-70b", "dgx-h100-64", "tp=16")
