"""Invariants of the planner (hypothesis), each paired with an explicit example; explanations; sizing inputs."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import cluster_dict
from parplan.errors import SpecError
from parplan.hardware import load_cluster
from parplan.planner import SearchOptions, parse_fix, rank, run_search, suggest_plans
from parplan.planner.explain import _pareto_min, infeasibility, need_text, STATE_KNOBS
from parplan.planner.sizing import parse_duration, parse_tokens, scale_cluster
from parplan.workloads import load_workload

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEVICES = {"a100-sxm-80gb": ("nvlink3", "ib-hdr200"), "h100-sxm-80gb": ("nvlink4", "ib-ndr400")}


def cluster(dev: str, nodes: int):
    intra, inter = DEVICES[dev]
    return load_cluster(cluster_dict(device=dev, nodes=nodes, intra=intra, inter=inter))


def best_tps(w, c, **opts) -> float | None:
    ev = run_search(w, c, SearchOptions(**opts))
    o = rank(ev)
    return float(ev.metrics["tokens_per_s"][o[0]]) if o.size else None


# --- adding devices never makes the best plan slower -------------------------------------------------------------
def check_doubling(w, dev, nodes):
    small = best_tps(w, cluster(dev, nodes))
    if small is None:
        return
    big = best_tps(w, cluster(dev, 2 * nodes))
    assert big is not None, "a job that fits on n nodes must fit on 2n"
    assert big >= small * (1 - 1e-9)


def test_doubling_nodes_never_slows_the_best_plan_example():
    w = load_workload("llama3-70b", global_batch=128, seq_len=4096)
    small, big = best_tps(w, cluster("h100-sxm-80gb", 2)), best_tps(w, cluster("h100-sxm-80gb", 4))
    assert small is not None and big > 1.8 * small
    check_doubling(w, "h100-sxm-80gb", 2)


@SETTINGS
@given(wname=st.sampled_from(["llama2-7b", "llama3-8b", "mpt-7b", "gpt3-175b"]),
       batch=st.sampled_from([32, 48, 64, 128, 256]), seq=st.sampled_from([2048, 4096]),
       dev=st.sampled_from(sorted(DEVICES)), nodes=st.sampled_from([1, 2, 4]))
def test_doubling_nodes_never_slows_the_best_plan(wname, batch, seq, dev, nodes):
    check_doubling(load_workload(wname, global_batch=batch, seq_len=seq), dev, nodes)


# --- pins only ever remove plans: the pinned best is never better ------------------------------------------------
def check_pin(w, c, key, value):
    free = best_tps(w, c)
    pinned = best_tps(w, c, fix=parse_fix({key: value}))
    if pinned is not None:
        assert free is not None and pinned <= free * (1 + 1e-12)


def test_pinning_never_beats_the_free_search_example():
    w, c = load_workload("llama2-7b", global_batch=64), cluster("a100-sxm-80gb", 2)
    assert best_tps(w, c, fix={"tp": 8}) < best_tps(w, c)
    check_pin(w, c, "tp", 8)


@SETTINGS
@given(key=st.sampled_from(["tp", "pp", "zero", "mbs", "recompute", "cp"]), value=st.integers(0, 4),
       batch=st.sampled_from([32, 64, 128]))
def test_pinning_never_beats_the_free_search(key, value, batch):
    if key == "recompute":
        value = ["none", "selective", "full"][value % 3]
    elif key == "zero":
        value = value % 4
    else:
        value = 2 ** value
    check_pin(load_workload("llama2-7b", global_batch=batch), cluster("a100-sxm-80gb", 2), key, value)


# --- more headroom never lets more plans fit ---------------------------------------------------------------------
def check_headroom(w, c, h1, h2):
    a = run_search(w, c, SearchOptions(memory_headroom=min(h1, h2)))
    b = run_search(w, c, SearchOptions(memory_headroom=max(h1, h2)))
    assert not np.any(b.fits & ~a.fits)


def test_more_headroom_never_admits_more_plans_example():
    w, c = load_workload("llama3-70b", global_batch=64), cluster("h100-sxm-80gb", 2)
    check_headroom(w, c, 0.0, 0.3)
    assert run_search(w, c, SearchOptions(memory_headroom=0.3)).fits.sum() < run_search(w, c).fits.sum()


@SETTINGS
@given(h1=st.floats(0.0, 0.5), h2=st.floats(0.0, 0.5), nodes=st.sampled_from([1, 2]))
def test_more_headroom_never_admits_more_plans(h1, h2, nodes):
    check_headroom(load_workload("llama3-70b", global_batch=64), cluster("h100-sxm-80gb", nodes), h1, h2)


# --- explanations -----------------------------------------------------------------------------------------------
def test_pareto_minimum():
    v = np.array([[1, 3], [2, 2], [3, 1], [2, 3], [3, 3], [1, 4]])
    assert _pareto_min(v).tolist() == [[1, 3], [2, 2], [3, 1]]


def test_need_is_met_by_every_fitting_plan():
    w, c = load_workload("gpt3-175b", global_batch=64), cluster("a100-sxm-80gb", 8)
    ev = run_search(w, c)
    assert 0 < ev.fits.sum() < len(ev.space)
    fail = np.flatnonzero(~ev.fits)
    text = need_text(ev, fail, STATE_KNOBS)
    assert text.startswith("need ")
    # every fitting plan satisfies at least one listed alternative (the full set; the text shows the simplest 3)
    P = ev.space.plans
    lines = infeasibility(ev)
    assert any("plans exceed memory at the first stage (model state dominates" in x for x in lines)
    assert lines[0].startswith(f"{sum(ev.space.excluded_factorizations.values()):,} of ")
    fits = np.flatnonzero(ev.fits)
    V = np.stack([P.pp[fits], P.tp[fits], P.zero[fits], P.cp[fits]], axis=1)
    M = _pareto_min(V)
    for alt in M:
        assert np.any(np.all(V == alt, axis=1))  # each alternative is a fitting plan's setting
    assert all(np.any(np.all(row >= M, axis=1)) for row in np.unique(V, axis=0))  # every fitting plan meets one


def test_explain_example_counts_add_up():
    ps = suggest_plans(load_workload("llama3-70b", global_batch=128), cluster("h100-sxm-80gb", 4), top=3)
    lines = ps.explain()
    assert "runner-up" in lines[0]
    import re

    counts = [int(m.group(1).replace(",", "")) for x in lines
              if (m := re.match(r"^([\d,]+) (?:plans exceed|plan exceeds) memory", x))]
    assert sum(counts) == ps.stats.valid_plans - ps.stats.fitting
    # the default 5 % memory headroom (issue 11): 80 GiB less 5 %
    assert f"{ps.stats.fitting:,} of {ps.stats.valid_plans:,} valid plans fit in 76.0 GiB per device" in lines


# --- sizing inputs ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, seconds", [("30d", 30 * 86400), ("12h", 43200), ("90m", 5400), ("3600", 3600),
                                           (7200, 7200), ("2w", 14 * 86400), ("1.5d", 1.5 * 86400)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text, tokens", [("15T", 15e12), ("300B", 3e11), ("2e12", 2e12), (1e9, 1e9), ("5M", 5e6)])
def test_parse_tokens(text, tokens):
    assert parse_tokens(text) == pytest.approx(tokens)


@pytest.mark.parametrize("bad", ["soon", "-3d", "0", "3y"])
def test_bad_duration(bad):
    with pytest.raises(SpecError, match="--deadline"):
        parse_duration(bad)


def test_scale_cluster_keeps_the_node_type():
    c = load_cluster("dgx-h100-64")
    big = scale_cluster(c, 32)
    assert big.n_devices == 256 and big.group.device == c.group.device and big.group.inter_node == c.group.inter_node
    assert big.name == "dgx-h100-64[32 nodes]" and scale_cluster(c, 8) is c


def test_deadline_sizing_matches_the_equivalent_target():
    w, c = load_workload("llama2-7b", global_batch=256), load_cluster("dgx-a100-8")
    a = suggest_plans(w, c, deadline="10d", token_budget="100B", max_nodes=16, top=1)
    b = suggest_plans(w, c, target_tokens_per_s=100e9 / 864000, max_nodes=16, top=1)
    assert a.sizing.n_nodes == b.sizing.n_nodes and a.best.plan == b.best.plan
    assert a.best.tokens_per_s * 864000 >= 100e9
