"""Physics of the dataflow models (hypothesis, each property paired with an explicit example): parts sum to the
totals and stay finite; a faster clock, more bandwidth or a cheaper hand-off never predicts slower; more memory
never makes a fitting mapping stop fitting; the executor agrees with the closed form."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parplan.hardware.dsp import load_dsp
from parplan.models.dataflow import estimate_plan, parse_plan
from parplan.workloads.dataflow import load_dataflow

DEVICES = ("c6678", "revel-8lane", "tda4vm-c7x", "vision-p6")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw):
    name = draw(st.sampled_from(("cholesky", "qr", "trsv", "trsm", "fft")))
    n = 2 ** draw(st.integers(1, 8)) if name == "fft" else draw(st.integers(2, 96))
    dev = load_dsp(draw(st.sampled_from(DEVICES)))
    plan = {"cores": draw(st.integers(1, dev.cores)), "vector": draw(st.sampled_from(("on", "off"))),
            "unroll": draw(st.sampled_from((1, 2, 4, 8))), "sync": dev.sync_modes()[0]}
    spec = load_dataflow({"family": "dataflow", "name": "p", "kernel": {"name": name, "n": n}})
    return spec, dev, plan


def _est(spec, dev, plan):
    return estimate_plan(spec, dev, parse_plan(",".join(f"{k}={v}" for k, v in plan.items()), spec, dev))


def test_example_parts_sum():
    spec = load_dataflow({"family": "dataflow", "name": "c", "kernel": {"name": "cholesky", "n": 64}})
    e = _est(spec, load_dsp("c6678"), {"cores": 8, "vector": "on", "unroll": 1, "sync": "barrier"})
    assert sum(e.parts.values()) == pytest.approx(e.total_s, rel=1e-12)


@SETTINGS
@given(cases())
def test_parts_sum_and_finite(case):
    spec, dev, plan = case
    e = _est(spec, dev, plan)
    assert all(math.isfinite(v) and v >= 0 for v in e.parts.values())
    assert sum(e.parts.values()) == pytest.approx(e.total_s, rel=1e-9)
    assert sum(e.energy_parts.values()) == pytest.approx(e.energy_j, rel=1e-9)
    assert e.total_s > 0 and 0 < e.utilization <= 1.0 + 1e-9


def _faster(dev, factor):
    mem = tuple(dataclasses.replace(m, bytes_per_s=m.bytes_per_s * factor) for m in dev.memory)
    return dataclasses.replace(dev, clock_hz=dev.clock_hz * factor, memory=mem,
                               dram_bytes_per_s=(dev.dram_bytes_per_s or 0) * factor,
                               sync_cycles={k: v / factor for k, v in dev.sync_cycles.items()})


def test_example_faster_is_not_slower():
    spec = load_dataflow({"family": "dataflow", "name": "t", "kernel": {"name": "trsv", "n": 64}})
    dev = load_dsp("c6678")
    plan = {"cores": 8, "vector": "on", "unroll": 1, "sync": "barrier"}
    assert _est(spec, _faster(dev, 2.0), plan).total_s <= _est(spec, dev, plan).total_s


@SETTINGS
@given(cases(), st.floats(1.0, 8.0))
def test_faster_hardware_never_slower(case, factor):
    spec, dev, plan = case
    assert _est(spec, _faster(dev, factor), plan).total_s <= _est(spec, dev, plan).total_s * (1 + 1e-12)


@SETTINGS
@given(cases(), st.floats(1.0, 64.0))
def test_more_memory_never_slower(case, factor):
    spec, dev, plan = case
    big = dataclasses.replace(dev, memory=tuple(dataclasses.replace(m, bytes=m.bytes * factor) for m in dev.memory))
    assert _est(spec, big, plan).total_s <= _est(spec, dev, plan).total_s * (1 + 1e-12)


@settings(max_examples=15, deadline=None)
@given(cases())
def test_executor_agrees(case):
    from parplan.executor.dataflow import simulate_plan

    spec, dev, plan = case
    e = _est(spec, dev, plan)
    sim = simulate_plan(spec, dev, plan)
    assert abs(e.total_s / sim.makespan_s - 1) <= 0.05


@settings(max_examples=20, deadline=None)
@given(st.floats(1.0, 16.0))
def test_more_capacity_keeps_a_mapping_fitting(factor):
    from parplan.models.dataflow_energy import evaluate_mappings, storage_view

    dev = load_dsp("eyeriss-256")
    spec = load_dataflow({"family": "dataflow", "name": "g", "kernel": {"name": "gemm", "m": 64, "n": 32, "k": 48,
                                                                        "dtype": "int16"}})
    levels, mi, me = storage_view(dev, "int16")
    rng = np.random.default_rng(1)
    L = len(levels)
    T = np.ones((2000, L, 7))
    for d, size in enumerate(spec.problem.sizes):  # each prime factor of each dim to a random level's loop
        x = size
        p = 2
        while x > 1:
            while x % p == 0:
                T[np.arange(2000), rng.integers(0, L, 2000), d] *= p
                x //= p
            p += 1
    S = np.ones_like(T)
    perm = np.tile(np.arange(7), (2000, L, 1))
    base = evaluate_mappings(spec.problem, levels, mi, me, T, S, perm)["valid"]
    bigger = tuple(dataclasses.replace(lv, words=None if lv.words is None else lv.words * factor) for lv in levels)
    more = evaluate_mappings(spec.problem, bigger, mi, me, T, S, perm)["valid"]
    assert base.any() and np.all(more[base])


def test_cyclic_padding_is_exact_where_the_executor_found_it():
    """The case hypothesis drew in CI (Cholesky n = 4, one C6678 core, vector on, unroll 8): every loop is shorter
    than one unrolled vector (w = v·U), so each pays a whole padded op — the closed form once averaged half a chunk
    per loop and priced it 5 % fast; the padding is now summed exactly (``dataflow_terms.cyclic_ceil_sum``)."""
    from parplan.executor.dataflow import simulate_plan
    from parplan.models.dataflow_terms import cyclic_ceil_sum, floor_sum

    assert floor_sum(4, 3, 2, 1) == sum((2 * i + 1) // 3 for i in range(4)) == 4
    assert cyclic_ceil_sum(10.0, 3.0, 4.0, 4.0) == 3 + 2 + 1 + 1  # lengths 10, 7, 4, 1 on 4-wide ops
    spec = load_dataflow({"family": "dataflow", "name": "p", "kernel": {"name": "cholesky", "n": 4}})
    dev, plan = load_dsp("c6678"), {"cores": 1, "vector": "on", "unroll": 8, "sync": "barrier"}
    assert _est(spec, dev, plan).total_s == pytest.approx(simulate_plan(spec, dev, plan).makespan_s, rel=1e-9)
