"""The task-graph search prices every plan exactly as it did before it was vectorized over its axes (issue 16):
each case of ``search_cases`` against its pins (search_pins.json, recorded from the plan-by-plan arrays before the
change: the plan count, the first and sampled ranked rows in full, and per column an exact digest of the integer
and text columns and two sums of every float column), and against the reference path — ``models.tasks.evaluate``
on arrays of the very plans the search ranked, one entry per plan — to 1e-12 relative."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from parplan.hardware.cpu import load_cpu_machine
from parplan.models.tasks import estimate_plan, evaluate
from parplan.models.tasks_terms import TIME_PARTS, profiles
from parplan.workloads.taskgraph import load_taskgraph
from tests.tasks.search_cases import CASES, run

PINS = Path(__file__).with_name("search_pins.json")
KEYS = ("runtime", "threads", "sockets", "grain", "ranks")
FLOATS = ("grain_s", "total_s", "speedup") + TIME_PARTS
REL = 1e-12
SAMPLES = 12  # ranked rows pinned in full, evenly spaced from the best to the worst


def digest(rows: list) -> dict:
    """Exact digests of the key columns, and Σx and Σx·(1 + rank mod 97) of each float column."""
    out = {k: hashlib.sha256("|".join(str(r[k]) for r in rows).encode()).hexdigest()[:16] for k in ("rank",) + KEYS}
    w = 1.0 + np.arange(len(rows)) % 97
    for k in FLOATS:
        x = np.array([r[k] for r in rows])
        out[k] = [float(x.sum()), float((x * w).sum())]
    return out


def pinned(rows: list, n: int) -> dict:
    idx = sorted({int(i) for i in np.linspace(0, len(rows) - 1, SAMPLES).round()} | set(range(min(5, len(rows)))))
    return {"n_configs": n, "rows": {str(i): rows[i] for i in idx}, "digest": digest(rows)}


def _same_row(got: dict, want: dict) -> None:
    for k, v in want.items():
        if isinstance(v, float):
            assert got[k] == pytest.approx(v, rel=REL, abs=0.0), k
        else:
            assert got[k] == v, k


@pytest.fixture(scope="module")
def pins() -> dict:
    return json.loads(PINS.read_text())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_search_equals_its_pins(case, pins):
    res = run(case)
    want = pins[case[0]]
    assert res.n_configs == want["n_configs"] == len(res.rows)
    for i, row in want["rows"].items():
        _same_row(res.rows[int(i)], row)
    got = digest(res.rows)
    for k, v in want["digest"].items():
        if isinstance(v, list):
            assert got[k] == pytest.approx(v, rel=REL, abs=0.0), k
        else:
            assert got[k] == v, k


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_search_equals_the_flat_evaluation(case):
    """Every ranked plan's parts, total and speedup equal ``evaluate`` on one flat array entry per plan."""
    name, w, hw, kw = case
    spec, m = load_taskgraph(w), load_cpu_machine(hw)
    res = run(case)
    prof = profiles(kw.get("runtimes"), socket=m.socket)
    grains = list(spec.grains) if spec.dag is None else [0]
    rows = res.rows
    ridx = np.array([prof.names.index(r["runtime"]) for r in rows])
    gi = np.array([grains.index(r["grain"]) for r in rows])
    t, s, k = (np.array([float(r[x]) for r in rows]) for x in ("threads", "sockets", "ranks"))
    # one row of plans ([1, N]: no runtime axis, so both iterations are priced for every plan and picked per plan),
    # and the flat [N] arrays (the replayed iteration priced for the replay runtimes' plans alone)
    ref = evaluate(spec, m, ridx[None], t[None], s[None], gi[None], k[None], prof=prof)
    flat = evaluate(spec, m, ridx, t, s, gi, k, prof=prof)
    for key in ("total_s", "speedup") + TIME_PARTS:
        got = [r[key] for r in rows]
        np.testing.assert_allclose(got, ref[key][0], rtol=REL, atol=0.0, err_msg=key)
        np.testing.assert_allclose(got, flat[key], rtol=REL, atol=0.0, err_msg=key)
    assert np.all(np.diff(ref["total_s"][0]) >= 0)  # ranked by run time


def test_best_plan_equals_its_estimate():
    for case in CASES[:2]:
        spec, m = load_taskgraph(case[1]), load_cpu_machine(case[2])
        best = run(case, top=1).rows[0]
        e = estimate_plan(spec, m, {k: best[k] for k in KEYS})
        assert e.total_s == pytest.approx(best["total_s"], rel=REL)
        for k in TIME_PARTS:
            assert e.parts[k] == pytest.approx(best[k], rel=REL, abs=0.0)


@pytest.mark.parametrize("case", CASES[:4] + CASES[-3:], ids=[c[0] for c in CASES[:4] + CASES[-3:]])
def test_top_rows_are_the_first_of_the_whole_ranking(case):
    whole = run(case).rows
    for top in (1, 7, len(whole) + 3):
        assert run(case, top=top).rows == whole[:top]


def test_partial_ranking_keeps_the_stable_order_of_ties():
    from parplan.planner.spaces.taskgraph import _ranked

    rng = np.random.default_rng(7)
    for _ in range(200):
        x = rng.integers(0, 6, size=int(rng.integers(1, 40))).astype(float)  # many ties
        if rng.random() < 0.3:
            x[rng.integers(0, len(x))] = rng.choice([np.inf, np.nan])
        full = np.argsort(x, kind="stable")
        for top in (0, 1, 3, len(x), len(x) + 1):
            want = full if top == 0 else full[:top]
            assert _ranked(x, top).tolist() == want.tolist()


def test_runtimes_on_a_trailing_axis_price_as_one_plan_at_a_time():
    """Runtimes along the last axis of a broadcast (the replay subset applies to a leading axis only)."""
    spec, m = load_taskgraph(CASES[0][1]), load_cpu_machine(CASES[0][2])
    prof = profiles(socket=m.socket)
    r = np.arange(len(prof.names))
    t = np.array([[8.0], [64.0]])
    grid = evaluate(spec, m, r, t, 2.0, 1, 1.0, prof=prof)
    for a in range(2):
        for b in r:
            one = evaluate(spec, m, int(b), float(t[a, 0]), 2.0, 1, 1.0, prof=prof)
            for key in ("total_s",) + TIME_PARTS:
                assert grid[key][a, b] == pytest.approx(float(one[key]), rel=REL, abs=0.0), key
