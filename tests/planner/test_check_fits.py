"""``check`` (the API under the CLI) never passes a plan that does not fit: hypothesis over plans of a space and
memory fractions, and the search form; a memory fraction above 1 is an error, not a loosened check."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parplan.errors import SpecError

# --- check never passes a plan that does not fit (hypothesis) -------------------------------------------------------
_SPACE = {}


def _space():
    if not _SPACE:
        from parplan.hardware.catalog import load_cluster
        from parplan.planner.spaces import build_space
        from parplan.workloads.loader import load_workload

        w, c = load_workload("llama2-7b", global_batch=64), load_cluster("dgx-a100-8")
        _SPACE.update(w=w, c=c, space=build_space(w, c.n_devices, 8))
    return _SPACE


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.0, 1.0, exclude_min=True), st.integers(0, 10**9))
def test_check_never_passes_a_plan_that_does_not_fit(fraction, seed):
    from parplan.planner.check import check_plans

    s = _space()
    P = s["space"].plans
    plan = P.plan(seed % len(P))
    r = check_plans(s["w"], s["c"], plan, max_memory_fraction=fraction)
    e = r.estimate
    if r.ok:
        assert e.fits and e.memory_peak_bytes <= fraction * e.memory_capacity_bytes
    if not e.fits:
        assert not r.ok and r.failures


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.05, 1.0), st.floats(1.0, 1e7))
def test_check_search_passes_only_fitting_plans(fraction, tokens):
    from parplan.planner.check import check_plans

    s = _space()
    r = check_plans(s["w"], s["c"], max_memory_fraction=fraction, min_tokens_per_s=tokens)
    if r.ok:
        assert r.estimate.fits and r.estimate.memory_peak_bytes <= fraction * r.estimate.memory_capacity_bytes


def test_memory_fraction_above_one_is_an_error_in_the_api():
    import parplan

    with pytest.raises(SpecError, match="max-memory-fraction: bad value 2"):
        parplan.check("llama2-7b", "dgx-a100-8", max_memory_fraction=2, global_batch=64)
