"""Process-network family (mAPN): platforms, the composition rules on a hand-worked case, the enumeration against a
hand-computed Pareto front, physics, the engine's agreement, the seed and the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.executor.process_network import agreement
from parplan.hardware.platform import load_platform, platform_ids
from parplan.variants import estimate, suggest
from parplan.workloads.variants import load_variants

runner = CliRunner()
BOARD = {"id": "toy", "name": "toy board", "kind": "embedded-platform", "memory": "1 GiB", "source": "assumed: a test",
         "core_types": [{"name": "big", "count": 2, "clock_ghz": 2.0, "relative_speed": 1.0, "power_active": "2 W",
                         "power_idle": "0.5 W"},
                        {"name": "little", "count": 2, "clock_ghz": 1.0, "relative_speed": 0.5,
                         "power_active": "0.5 W", "power_idle": "0.1 W"}]}
TWO = {"family": "process-network", "name": "two", "stages": [
    {"name": "a", "replicas": 1, "core_types": ["big"], "alternatives": [{"name": "x", "time": "0.1 s"}]},
    {"name": "b", "replicas": [1, 2], "core_types": ["big"],
     "alternatives": [{"name": "good", "time": "0.4 s", "quality": 0.9}, {"name": "fast", "time": "0.2 s",
                                                                        "quality": 0.6}]}]}


def test_platform_catalog():
    assert {"odroid-xu4", "rk3588", "ryzen-5950x"} <= set(platform_ids())
    for i in platform_ids():
        p = load_platform(i)
        assert p.memory_bytes > 0 and all(c.count > 0 and c.power_active_w >= c.power_idle_w for c in p.core_types)
    xu4 = load_platform("odroid-xu4")
    assert [(c.name, c.count) for c in xu4.core_types] == [("a15", 4), ("a7", 4)]


def test_composition_by_hand():
    # a: 0.1 s on a big core; b = fast x1 on the other big core: X = min(1/0.1, 1/0.2) = 5 items/s, latency 0.3 s,
    # energy = 2 W·0.1 + 0.5 W·(1/5 − 0.1) + 2 W·0.2 + 0.5 W·(1/5 − 0.2) = 0.2 + 0.05 + 0.4 + 0 = 0.65 J
    r = estimate(TWO, BOARD, "a=xx1@big,b=fastx1@big")
    assert r["throughput_per_s"] == pytest.approx(5.0) and r["latency_s"] == pytest.approx(0.3)
    assert r["energy_per_item_j"] == pytest.approx(0.65) and r["quality"] == pytest.approx(0.6)
    assert r["active_energy_j"] + r["idle_energy_j"] == pytest.approx(r["energy_per_item_j"])


def test_hand_pareto_front():
    # only 2 big cores: a takes one, so b has x1 (x2 needs a third core): good (X 2.5, E 0.2 + 0.5·0.3 + 0.8 = 1.15, Q .9) and fast
    # (X 5, E .65, Q .6) — neither dominates: the front is both
    vs = suggest(TWO, BOARD, top=0)
    assert vs.n_variants == 4 and vs.n_feasible == 2
    got = sorted((round(r["throughput_per_s"], 9), round(r["energy_per_item_j"], 9), r["quality"]) for r in vs.rows)
    assert got == [(2.5, 1.15, 0.9), (5.0, 0.65, 0.6)]


def test_enumeration_equals_hand_front(root, monkeypatch):
    monkeypatch.chdir(root)
    import seed_mapn

    spec = load_variants(root / "examples/subtitling.yaml")
    for pid in ("odroid-xu4", "ryzen-5950x"):
        plat = load_platform(pid)
        assert seed_mapn.hand_front(spec, plat) == seed_mapn.tool_front(spec, plat)
    f = seed_mapn.fixed_vs_explored(spec, load_platform("odroid-xu4"))
    assert f["best"]["throughput_per_s"] > f["fixed"]["throughput_per_s"] and f["cheaper_more"]


@settings(max_examples=25, deadline=None)
@given(speed=st.floats(1.0, 10.0), idle=st.floats(0.0, 0.5))
def test_faster_cores_never_slower(speed, idle):
    fast = json.loads(json.dumps(BOARD))
    fast["core_types"][0]["relative_speed"] = speed
    fast["core_types"][0]["power_idle"] = idle
    slow = json.loads(json.dumps(fast))
    slow["core_types"][0]["relative_speed"] = 1.0
    a = estimate(TWO, fast, "b=goodx1@big")
    b = estimate(TWO, slow, "b=goodx1@big")
    assert a["throughput_per_s"] >= b["throughput_per_s"] and a["latency_s"] <= b["latency_s"]
    assert np.isfinite(a["energy_per_item_j"])


def test_more_cores_never_lose_variants():
    more = json.loads(json.dumps(BOARD))
    more["core_types"][0]["count"] = 3
    assert suggest(TWO, more, top=0).n_feasible >= suggest(TWO, BOARD, top=0).n_feasible


def test_engine_agrees(root):
    rows = agreement(root / "examples/subtitling.yaml", "odroid-xu4", top=4, n_items=160)
    assert len(rows) >= 10 and all(abs(r["error"]) <= 0.05 for r in rows)


def test_infeasible_says_why():
    tight = dict(TWO, constraints={"min_throughput": 100})
    with pytest.raises(SpecError, match="min_throughput"):
        suggest(tight, BOARD)


@pytest.mark.parametrize("args,code", [
    (["suggest", "examples/subtitling.yaml", "--hw", "odroid-xu4", "--format", "json"], 0),
    (["estimate", "examples/subtitling.yaml", "--hw", "rk3588"], 0),
    (["validate", "examples/subtitling.yaml", "--hw", "ryzen-5950x"], 0),
    (["check", "examples/subtitling.yaml", "--hw", "odroid-xu4", "--min-tokens-per-s", "1000"], 1),
    (["estimate", "examples/subtitling.yaml", "--hw", "odroid-xu4", "--plan", "render=nox1@a15"], 2),
    (["suggest", "examples/subtitling.yaml", "--hw", "no-such-board"], 2),
    (["suggest", "examples/subtitling.yaml", "--hw", "odroid-xu4", "--precision", "bf16"], 2),
])
def test_cli(root, monkeypatch, args, code):
    monkeypatch.chdir(root)
    r = runner.invoke(app, args)
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output
