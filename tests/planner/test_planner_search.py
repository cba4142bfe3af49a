"""The search space and the vectorized search: rules, equality with `estimate`, ranking, determinism."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import cluster_dict
from parplan.errors import SpecError
from parplan.hardware import load_cluster
from parplan.models.estimate import estimate_plan, validate_plan
from parplan.models.training import MEMORY_PARTS, TIME_PARTS
from parplan.planner import EXPORT_COLUMNS, SearchOptions, build_space, parse_fix, rank, run_search, suggest_plans
from parplan.planner.search import evaluate_plans, memory_lower_bound
from parplan.workloads import load_workload

W7 = load_workload("llama2-7b", global_batch=64, seq_len=4096)
W70 = load_workload("llama3-70b", global_batch=128, seq_len=8192)
GPT = load_workload("gpt3-175b", global_batch=96, seq_len=2048, attention="materialized")
A100_2 = load_cluster(cluster_dict(nodes=2))
H100_4 = load_cluster(cluster_dict(device="h100-sxm-80gb", nodes=4, intra="nvlink4", inter="ib-ndr400"))
A100_8 = load_cluster(cluster_dict(nodes=8))

CASES = {"7b-a100x16": (W7, A100_2), "70b-h100x32": (W70, H100_4), "gpt3-a100x64": (GPT, A100_8)}


def space_of(w, c, **kw):
    return build_space(w, c.n_devices, c.group.devices_per_node, **kw)


# --- rules ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_plan_of_the_space_is_valid_for_estimate(case):
    w, c = CASES[case]
    sp = space_of(w, c)
    assert len(sp) > 100
    rng = np.random.default_rng(0)
    for i in rng.choice(len(sp), size=150, replace=False):
        validate_plan(w, c, sp.plans.plan(int(i)))  # raises on an invalid plan


def test_space_rules_hold_on_every_plan():
    w, c = W70, H100_4
    P = space_of(w, c).plans
    L, B, s = w.model.layers, w.training.global_batch, w.training.seq_len
    assert np.all(P.dp * P.tp * P.pp * P.cp == c.n_devices)
    assert np.all(P.tp <= 8) and np.all(w.model.kv_heads % P.tp == 0) and np.all(w.model.heads % P.tp == 0)
    assert np.all(P.pp <= L)
    assert np.all((P.cp == 1) | (s % (2 * P.cp) == 0))
    assert np.all(B % (P.dp * P.mbs) == 0)
    m = B // (P.dp * P.mbs)
    v = P.vpp > 1
    assert np.all((P.pp[v] > 1) & (L % (P.pp[v] * P.vpp[v]) == 0) & (m[v] % P.pp[v] == 0))
    assert not np.any(P.sp & (P.tp == 1))  # sp only with tp > 1
    assert not np.any((P.zero > 0) & (P.dp * P.cp == 1))
    assert np.all(P.mbs <= 32)
    # uneven layer split: pp need not divide L when vpp = 1 (80 layers, pp = 32 is searched)
    assert np.any((L % P.pp != 0) & (P.vpp == 1))
    assert set(np.unique(P.zero)) == {0, 1, 2, 3} and set(np.unique(P.recompute)) == {0, 1, 2}


def test_space_has_no_duplicate_plans():
    P = space_of(W70, H100_4).plans
    keys = np.stack([P.dp, P.tp, P.pp, P.cp, P.mbs, P.vpp, P.zero, P.recompute, P.sp.astype(np.int64), P.cp_kind],
                    axis=1)  # every plan axis, the context-parallel layout included
    assert np.unique(keys, axis=0).shape[0] == keys.shape[0]


def test_cross_node_tp_only_when_allowed():
    w = load_workload("gpt3-175b", global_batch=64)  # 96 heads: tp 16 divides them
    assert space_of(w, A100_8).plans.tp.max() == 8
    P = space_of(w, A100_8, allow_cross_node_tp=True).plans
    assert 16 in set(P.tp.tolist()) and np.all((P.tp <= 8) | (P.tp % 8 == 0))


def test_fix_pins_every_key():
    fix = parse_fix(["tp=4", "pp=2,zero=1", "recompute=selective", "sp=true", "mbs=2"])
    P = space_of(W70, H100_4, fix=fix).plans
    assert len(P) > 0
    assert set(P.tp.tolist()) == {4} and set(P.pp.tolist()) == {2} and set(P.zero.tolist()) == {1}
    assert set(P.recompute.tolist()) == {1} and P.sp.all() and set(P.mbs.tolist()) == {2}


@pytest.mark.parametrize("bad, msg", [
    ("tpp=4", "--fix: unknown plan key 'tpp'"),
    ("zero=5", "--fix zero: bad value 5"),
    ("recompute=some", "--fix recompute: bad value 'some'"),
    ("tp", "--fix: expected key=value, got 'tp'"),
])
def test_bad_fix_is_one_clear_error(bad, msg):
    with pytest.raises(SpecError) as err:
        parse_fix([bad])
    assert str(err.value).startswith(msg)


@pytest.mark.parametrize("pin", ["ep=2", "etp=2"])
def test_expert_pins_on_a_dense_workload_are_one_clear_error(pin):
    from parplan.planner.spaces import build_space as family_space

    with pytest.raises(SpecError) as err:
        family_space(W70, H100_4.n_devices, H100_4.group.devices_per_node, fix=parse_fix([pin]))
    key = pin.split("=")[0]
    assert str(err.value).startswith(f"--fix {key}: {pin} needs a mixture-of-experts workload")


def test_exclusion_counts_add_up():
    sp = space_of(W70, H100_4)
    assert sp.excluded_factorizations["tp_heads"] > 0  # tp = 16, 32 do not divide kv_heads = 8 … and tp > 8
    assert sp.excluded_plans["sp_tp1"] > 0 and sp.excluded_plans["vpp"] > 0


# --- evaluation: the search's numbers are `estimate`'s ------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_search_numbers_equal_estimate_on_a_random_sample(case):
    w, c = CASES[case]
    ev = run_search(w, c, SearchOptions(prune=False))
    P = ev.space.plans
    full = evaluate_plans(w, ev.hw, P)  # chunked, as the search runs it
    rng = np.random.default_rng(1)
    keys = ("step_time_s", "tokens_per_s", "mfu", "hfu", "memory_peak_bytes", "micro_batches",
            "model_flops_per_step", "compute_bound_s") + TIME_PARTS + MEMORY_PARTS
    for i in rng.choice(len(P), size=40, replace=False):
        e = estimate_plan(w, c, P.plan(int(i)))
        got = {"step_time_s": e.step_time_s, "tokens_per_s": e.tokens_per_s, "mfu": e.mfu, "hfu": e.hfu,
               "memory_peak_bytes": e.memory_peak_bytes, "micro_batches": e.micro_batches,
               "model_flops_per_step": e.model_flops_per_step, "compute_bound_s": e.compute_bound_s,
               **e.breakdown.time_s, **e.breakdown.memory_bytes}
        for k in keys:
            assert float(full[k][i]) == pytest.approx(got[k], rel=1e-9, abs=1e-12), (k, P.plan(int(i)))
        assert bool(full["fits"][i]) == e.fits
        # the metrics kept by the search itself
        assert ev.metrics["tokens_per_s"][i] == pytest.approx(e.tokens_per_s, rel=1e-9)
        assert ev.metrics["memory_peak_bytes"][i] == pytest.approx(e.memory_peak_bytes, rel=1e-9)


def test_suggested_estimates_equal_estimate():
    ps = suggest_plans(W70, H100_4, top=5)
    df = ps.to_frame()
    for e, row in zip(ps, df.itertuples(index=False)):
        ref = estimate_plan(W70, H100_4, e.plan)
        assert e.to_dict() == ref.to_dict()
        assert row.tokens_per_s == pytest.approx(ref.tokens_per_s, rel=1e-12)
        for k in TIME_PARTS:
            assert getattr(row, k) == pytest.approx(ref.breakdown.time_s[k], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("case", sorted(CASES))
def test_memory_lower_bound_never_exceeds_peak(case):
    w, c = CASES[case]
    ev = run_search(w, c, SearchOptions(prune=False))
    lb = memory_lower_bound(w, ev.space.plans, ev.hw)
    assert np.all(lb <= ev.metrics["memory_peak_bytes"] * (1 + 1e-12))


def test_pruning_changes_nothing_but_the_work(monkeypatch):
    import parplan.planner.search as search

    monkeypatch.setattr(search, "SPLIT_BELOW", 1.0)  # always price zero levels separately when pruning
    w = load_workload("llama3-70b", global_batch=64)
    a = run_search(w, A100_8)
    b = run_search(w, A100_8, SearchOptions(prune=False))
    assert a.n_evaluated < b.n_evaluated
    assert np.array_equal(a.fits, b.fits)
    assert np.array_equal(rank(a), rank(b))
    assert not np.any(a.evaluated & a.state_alone_over)  # exactly the plans over the bound were skipped
    assert np.all(a.evaluated | a.state_alone_over)
    for k in ("tokens_per_s", "memory_peak_bytes"):
        assert np.array_equal(a.metrics[k][a.evaluated], b.metrics[k][a.evaluated])


# --- ranking -------------------------------------------------------------------------------------------------------
def test_ranking_is_sorted_and_only_fitting_plans():
    ev = run_search(W70, H100_4)
    o = rank(ev)
    assert o.size == ev.fits.sum()
    t = ev.metrics["tokens_per_s"][o]
    assert np.all(np.diff(t) <= 1e-12 * t[0])
    assert np.all(ev.metrics["memory_peak_bytes"][o] <= ev.limit_bytes)


def test_ties_break_on_memory_then_plan_axes():
    ev = run_search(W7, A100_2)
    o = rank(ev)
    P, m = ev.space.plans, ev.metrics
    q = np.round(-m["tokens_per_s"][o] * (1e12 / m["tokens_per_s"][o].max()))
    tied = np.flatnonzero(np.diff(q) == 0)
    assert tied.size > 0  # e.g. dp=8,mbs=2 and dp=4,cp=2,mbs=4 do identical work per device
    for j in tied:
        a, b = o[j], o[j + 1]
        ka = (m["memory_peak_bytes"][a], P.tp[a], P.pp[a], P.cp[a], P.dp[a], P.mbs[a], P.vpp[a], P.cp_kind[a],
              P.zero[a], P.recompute[a], P.sp[a])
        kb = (m["memory_peak_bytes"][b], P.tp[b], P.pp[b], P.cp[b], P.dp[b], P.mbs[b], P.vpp[b], P.cp_kind[b],
              P.zero[b], P.recompute[b], P.sp[b])
        assert ka < kb


def test_memory_objective_puts_the_smallest_peak_first():
    ps = suggest_plans(W70, H100_4, objective="memory", top=20)
    mem = [e.memory_peak_bytes for e in ps]
    assert mem == sorted(mem)
    ev = ps.evaluated
    assert mem[0] == pytest.approx(ev.metrics["memory_peak_bytes"][ev.fits].min(), rel=1e-12)


def test_cost_objective_needs_a_price():
    with pytest.raises(SpecError) as err:
        suggest_plans(W7, A100_2, objective="cost")
    assert "needs a price" in str(err.value) and "--price-per-hour" in str(err.value)
    ps = suggest_plans(W7, A100_2, objective="cost", price_per_hour=2.0, top=3)
    df = ps.to_frame()
    usd = 16 * 2.0 / 3600 / df.tokens_per_s * 1e6
    assert np.allclose(df.usd_per_million_tokens, usd)
    assert list(df.plan) == list(suggest_plans(W7, A100_2, top=3).to_frame().plan)  # fixed size: cost ∝ 1/throughput


def test_headroom_shrinks_the_fitting_set():
    a = run_search(W70, H100_4)
    b = run_search(W70, H100_4, SearchOptions(memory_headroom=0.2))
    assert b.fits.sum() < a.fits.sum()
    assert np.all(b.metrics["memory_peak_bytes"][b.fits] <= 0.8 * b.hw.memory_capacity_bytes)
    with pytest.raises(SpecError, match="--memory-headroom"):
        run_search(W70, H100_4, SearchOptions(memory_headroom=0.7))


def test_planset_protocol():
    ps = suggest_plans(W7, A100_2, top=4)
    assert len(ps) == 4 and ps.best is ps[0] and list(ps)[0].plan == ps.best.plan
    df = ps.to_frame()
    assert tuple(df.columns) == EXPORT_COLUMNS and list(df["rank"]) == [1, 2, 3, 4]
    assert df.fits.all()
    assert np.allclose(df[list(TIME_PARTS)].sum(axis=1), df.step_time_s, rtol=1e-9)
    assert np.allclose(df[list(MEMORY_PARTS)].sum(axis=1), df.memory_peak_bytes, rtol=1e-9)
    # top=0: every fitting plan, equal outcomes grouped (issue 11): each row counts the plans it stands for
    every = suggest_plans(W7, A100_2, top=0)
    assert int(every.equivalent.sum()) == every.stats.fitting and len(every) <= every.stats.fitting
    assert len(suggest_plans(W7, A100_2, top=0, group_ties=False)) == every.stats.fitting


def test_repeated_searches_are_identical():
    a = suggest_plans(GPT, A100_8, top=0).to_frame()
    b = suggest_plans(GPT, A100_8, top=0).to_frame()
    assert a.equals(b)


def test_heterogeneous_cluster_is_bad_input():
    with pytest.raises(SpecError, match="homogeneous"):
        suggest_plans(W7, load_cluster("mixed-h100-a100-v100"))


def test_space_order_is_the_tie_break_order():
    """rank() relies on it: plan index order is ascending (tp, pp, cp, dp, mbs, vpp, cp_kind, zero, recompute, sp)."""
    from parplan.planner.search import TIE_AXES

    for w, c in CASES.values():
        P = space_of(w, c).plans
        keys = np.stack([getattr(P, a).astype(np.int64) for a in TIE_AXES], axis=1)
        order = np.lexsort(keys.T[::-1])
        assert np.array_equal(order, np.arange(len(P)))


def test_grid_evaluation_equals_flat_evaluation():
    from parplan.planner.search import KEEP, evaluate_space

    for w, c in CASES.values():
        ev = run_search(w, c, SearchOptions(prune=False))
        grid, priced = evaluate_space(w, ev.hw, ev.space, KEEP)
        assert priced.all()
        flat = evaluate_plans(w, ev.hw, ev.space.plans, KEEP)
        for k in KEEP:
            assert np.array_equal(grid[k], flat[k]), k
