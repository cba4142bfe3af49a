"""The serving search built on arrays (issue 16) reports what the object-by-object search did: the golden outputs
recorded from it before the change (``serving_search_golden.py``: stats, the whole ranked list's digest, its
first rows, the Pareto front, the closest deployment and the advice, floats to 1e-12 relative), and the same rows
as a straightforward reference kept here — every candidate as a ``Deployment`` object, every row priced
(``evaluate_serving``), ranked and grouped one row at a time — and the pieces that replaced per-row Python."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serving_search_golden as G  # noqa: E402

from parplan.errors import SpecError  # noqa: E402
from parplan.models.serving import estimate_at, evaluate_serving  # noqa: E402
from parplan.models.serving_arrays import DeploymentSet, unique_rows  # noqa: E402
from parplan.models.serving_plan import Deployment, Pool  # noqa: E402
from parplan.models.serving_queue import erlang_c  # noqa: E402
from parplan.planner import serving_search as ss  # noqa: E402
from parplan.planner.spaces import serving as sp  # noqa: E402
from parplan.serving import _inputs  # noqa: E402

GOLDEN = json.loads(G.GOLDEN.read_text())


@pytest.mark.parametrize("name", list(G.CASES))
def test_search_matches_the_recorded_object_search(name):
    got = G._normal(G.snapshot(G.run_case(name)))
    diff = G.mismatches(GOLDEN[name], got)
    assert not diff, f"{len(diff)} differences, first: {diff[:3]}"


def _reference_candidates(w, c, s, modes=None) -> list:
    """The enumeration as nested loops, one ``Deployment`` at a time (the order the arrays must keep)."""
    m, n = w.model, c.n_devices
    dpn = int(getattr(c.group, "scale_up_devices", c.group.devices_per_node))
    moe = hasattr(m, "experts")
    modes = tuple(modes or (sp.MODES if moe else sp.MODES[:2]))
    tps = [t for t in sp._pow2_upto(dpn) if m.heads % t == 0]
    pps = [p for p in (1, 2, 4, 8) if p <= m.layers and p <= n]
    spds = sorted({0.0, float(s.spd_drop_budget)})
    shapes = [(tp, dp, ep) for tp in tps for dp in (sp._pow2_upto(dpn // tp) if moe else [1])
              for ep in (sorted({1, tp * dp}) if moe else [1]) if not (ep > 1 and m.experts % ep)]
    out = []
    if "aggregated" in modes:
        out += [Deployment("aggregated", (Pool("mixed", R, tp, pp, ep, dp, B, C),), spd_drop=spd, fused_ar_a2a=f)
                for tp, dp, ep in shapes for pp in pps for R in sp._replica_counts(n // (tp * pp * dp))
                for B in sp.BATCHES for C in sp.CHUNKS for spd in (spds if tp > 1 else [0.0])
                for f in ([False, True] if moe and ep > 1 and tp > 1 else [False])]
    if "disaggregated" in modes and n >= 2:
        out += [Deployment("disaggregated", (Pool("prefill", Rp, tp_p, 1, ep_p, dp_p, B, 0),
                                             Pool("decode", Rd, tp_d, 1, ep_d, dp_d, B, 0)))
                for tp_p, dp_p, ep_p in shapes for tp_d, dp_d, ep_d in shapes
                for Rp in sp._replica_counts((n - tp_d * dp_d) // (tp_p * dp_p))
                for Rd in sp._replica_counts((n - Rp * tp_p * dp_p) // (tp_d * dp_d)) for B in sp.BATCHES]
    if "af-disaggregated" in modes and moe:
        eps = [e for e in sp._pow2_upto(n) if m.experts % e == 0 and e >= 2]
        out += [Deployment("af-disaggregated", (Pool("attention", Ra, tp, 1, 1, dp, B, C),
                                                Pool("expert", 1, 1, 1, e_ep, 1, B, 0)), micro_batches=mb)
                for tp in tps for dp in sp._pow2_upto(dpn // tp) for e_ep in eps
                for Ra in sp._replica_counts((n - e_ep) // (tp * dp)) for B in sp.BATCHES for C in (0, 2048)
                for mb in sp.MICRO_BATCHES]
    return out


@pytest.mark.parametrize("model, hw, extra, modes", [
    ("llama3-8b", "h100-sxm-80gb:2x8", {"spd_drop_budget": 0.5}, None),
    ("mixtral-8x7b", "h100-sxm-80gb:1x8", {"spd_drop_budget": 0.25}, None),
    ("qwen3-30b-a3b", "h100-sxm-80gb:1x8", {}, ("af-disaggregated", "aggregated")),
    ("llama3-8b", "h100-sxm-80gb:1x1", {}, None),
])
def test_candidate_arrays_keep_the_nested_loop_order(model, hw, extra, modes):
    w, c, s = _inputs(model, hw, {"isl": 2048, "osl": 256, "concurrency": 64, **extra})
    want = _reference_candidates(w, c, s, modes)
    got = sp.candidates(w, c, s, modes)
    assert got == want and [d.to_string() for d in got] == [d.to_string() for d in want]
    assert all(type(d.pools[0].tp) is int and type(d.spd_drop) is float for d in got)


def test_max_candidates_refuses_as_before():
    w, c, s = _inputs("mixtral-8x7b", "h100-sxm-80gb:2x8", str(G.ROOT / G.CHAT))
    n = len(sp.candidate_set(w, c, s))
    assert len(sp.candidate_set(w, c, s, max_candidates=n)) == n
    with pytest.raises(SpecError, match=f"more than {n - 1:,} candidate deployments") as e:
        sp.candidate_set(w, c, s, max_candidates=n - 1)
    assert e.value.key == "--serve" and "restrict the modes" in str(e.value.hint)


def _reference_search(w, c, s, modes=None):
    """The search one row at a time: every row priced, Python keys of rounded outcomes, the Pareto scan."""
    deps = _reference_candidates(w, c, s, modes)
    res = evaluate_serving(w, c, s, deps)
    score, ok = res["output_tokens_per_s_per_device"], res["slo_ok"]
    simple = np.array([d.n_devices * 1e6 + sum(p.max_batch * 10 + p.chunk_tokens / 1e3 for p in d.pools)
                       for d in deps])
    order = np.lexsort((simple, np.round(res["tpot_p50_s"], 9), np.round(res["ttft_p99_s"], 9), -np.round(score, 6)))
    ranked, counts, seen = [], [], {}
    for i in order:
        if not ok[i]:
            continue
        key = (round(float(score[i]), 4), round(float(res["ttft_p99_s"][i]), 6),
               round(float(res["tpot_p50_s"][i]), 6), deps[i].mode, int(res["n_devices"][i]))
        if key in seen:
            counts[seen[key]] += 1
            continue
        seen[key] = len(ranked)
        counts.append(1)
        ranked.append(int(i))
    lat = res["tpot_p50_s"]
    live = res["fits"] & ~res["overloaded"]
    idx = sorted((i for i in np.flatnonzero(live) if np.isfinite(lat[i])), key=lambda i: (lat[i], -score[i]))
    front = ss._pareto_loop(score, lat, idx)[:50]
    est = lambda i: estimate_at(res, i, deps[i], w, c, s).to_dict()  # noqa: E731
    closest = None
    if not ranked:
        i, _ = ss._why(s, DeploymentSet.from_deployments(deps), res)
        closest = None if i is None else est(i)
    return {"ranked": [est(i) for i in ranked], "equivalent": counts, "pareto": [est(i) for i in front],
            "closest": closest, "stats": (len(deps), int(res["fits"].sum()), int(ok.sum()))}


@pytest.mark.parametrize("name", ["chat-llama3-70b-1x8", "open-mla-deepseek-v2-lite-1x8", "af-only-qwen3-30b-1x8",
                                  "infeasible-slo-llama3-70b", "overloaded-llama3-8b"])
def test_search_matches_the_row_by_row_reference(name):
    model, hw, serve, kw = G.CASES[name]
    w, c, s = _inputs(model, hw, str(G.ROOT / serve) if isinstance(serve, str) else serve)
    ref = _reference_search(w, c, s, kw.get("modes"))
    ps = ss.suggest_serving_plans(w, c, s, top=0, **kw)
    got = {"ranked": [e.to_dict() for e in ps.ranked], "equivalent": ps.equivalent,
           "pareto": [e.to_dict() for e in ps.pareto], "closest": None if ps.closest is None else ps.closest.to_dict(),
           "stats": (ps.stats["candidates"], ps.stats["fitting"], ps.stats["passing"])}
    diff = G.mismatches(G._normal(ref), G._normal(got), rel=0.0)  # the same floats, bit for bit
    assert not diff, f"{len(diff)} differences, first: {diff[:3]}"


def test_round_as_python_is_round():
    rng = np.random.default_rng(7)
    halves = (np.arange(-2000, 2000) + 0.5) / 1e4  # decimal halves, the cases np.round may resolve otherwise
    x = np.concatenate([rng.lognormal(0, 6, 4000), -rng.random(500), halves, halves * 1e4, [0.0, -0.0, np.inf,
                        -np.inf, 2.0 ** 40 + 0.5, 1e300, 5e-324, 0.00015, 0.00025, 1.0000005]])
    for nd in (4, 6):
        got = ss._round_as_python(x, nd)
        want = [round(float(v), nd) for v in x]
        assert all(a == b and math.copysign(1, a) == math.copysign(1, b) for a, b in zip(got, want))
    assert np.isnan(ss._round_as_python(np.array([np.nan]), 4)[0])


def test_distinct_outcomes_group_as_a_dict_of_python_floats():
    order = np.arange(8) * 3
    a = np.array([1.0, 1.0, 0.0, -0.0, np.nan, np.nan, 2.0, 1.0])
    b = np.array([1, 1, 2, 2, 3, 3, 1, 2])
    rows, counts = ss._distinct_outcomes(order, (a, b))
    keys, want_rows, want_counts = {}, [], []
    for j, key in enumerate(zip(a.tolist(), b.tolist())):
        if key in keys:
            want_counts[keys[key]] += 1
        else:
            keys[key] = len(want_rows)
            want_rows.append(int(order[j]))
            want_counts.append(1)
    assert rows.tolist() == want_rows and counts.tolist() == want_counts


def test_unique_rows_and_pareto_records():
    rng = np.random.default_rng(3)
    cols = (rng.integers(0, 3, 500), rng.integers(0, 2, 500).astype(float) * 0.5)
    first, inv = unique_rows(*cols)
    for col in cols:
        assert np.array_equal(col[first][inv], col)
    assert len(first) == len({(a, b) for a, b in zip(*cols)})
    tput, lat = rng.random(400) * 100, rng.random(400)
    tput[::7] = tput[::7].round(1)  # ties
    ok = rng.random(400) < 0.8
    idx = sorted((i for i in np.flatnonzero(ok)), key=lambda i: (lat[i], -tput[i]))
    assert ss._pareto(tput, lat, ok) == ss._pareto_loop(tput, lat, idx)


def test_erlang_c_sums_each_row_to_its_own_server_count():
    rng = np.random.default_rng(5)
    c, rho = rng.integers(1, 40, 3000).astype(float), rng.random(3000) * 1.05
    a, rc = c * np.clip(rho, 0.0, 1.0 - 1e-12), np.clip(rho, 0.0, 1.0 - 1e-12)
    term, s = np.ones_like(a), np.zeros_like(a)
    for k in range(int(c.max())):  # the loop over every row at once
        s = s + np.where(k < c, term, 0.0)
        term = np.where(k < c, term * a / (k + 1.0), term)
    last = term / (1.0 - rc)
    assert np.array_equal(erlang_c(c, rho), last / (s + last))
