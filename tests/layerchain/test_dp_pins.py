"""PipeEdge's DP and the layer-chain search decide and price exactly as before the DP was vectorized over stage
counts (issue 16): every case of ``dp_cases`` against its pins (dp_pins.json, recorded from the layer-by-layer DP
before the change: the decoded stages, the bottleneck, the state count, digests of the whole value table h and of
the parent table, and each search's full result), and against the reference path — the DP's recurrence written
out state by state (``reference_dp``, schedule.cpp's loops: layer, device type descending, device set, last
layer, next type; strict improvement keeps the first optimum) — table for table on the smaller cases."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from parplan.errors import SpecError
from parplan.models import edge as M
from parplan.models import edge_terms as T
from parplan.planner.spaces.layerchain import pipeedge_dp, pipeedge_tables, search
from tests.layerchain.dp_cases import DP_CASES, SEARCH_CASES, load

PINS = Path(__file__).with_name("dp_pins.json")
REL = 1e-12
REFERENCE = ("vit-example", "pipeedge-p1", "vit-4pi-only", "pipeedge-p1-mb1", "vgg16-mixed-src",
             "resnet18-mixed", "mobilenet-cecpa", "pipeedge-on-4pi", "vit-pipar")  # ~0.5 s each at most


def reference_dp(spec, cluster) -> tuple:
    """(h, parent, stages, bottleneck): the DP of ``pipeedge_dp`` one state and one transition at a time."""
    job = spec.inference
    mb, nb, L = job.microbatch, spec.dtype_bytes, len(spec.layers)
    times, a, groups = M._Times(spec, cluster, mb, job.dtype), spec.arrays(), cluster.groups
    n, counts, first = len(groups), [g[2] for g in groups], [g[1] for g in groups]
    pp = [1]
    for c in counts:
        pp.append(pp[-1] * (c + 1))
    mask = pp[-1]
    src = M.source_slot(spec, cluster)
    src_group = cluster.group_of(src) if src is not None else None
    cum = [[0.0] + np.cumsum(times(first[u])).tolist() for u in range(n)]
    out_b = (a["out_elements"] * nb * mb).tolist()
    in_b = (np.concatenate([[spec.input_elements], a["out_elements"][:-1]]) * nb * mb).tolist()
    mem_cum = [0.0] + np.cumsum(a["mem_bytes"]).tolist()
    cap = [cluster.devices[first[u]].memory_bytes for u in range(n)]

    def up(x, y):
        return cluster.link(x, y).up_bytes_per_s

    def digit(S, u):
        return S // pp[u] % (counts[u] + 1)

    inf = math.inf
    h = [[[inf] * n for _ in range(mask)] for _ in range(L + 1)]
    parent = [[[(-1, -1)] * n for _ in range(mask)] for _ in range(L + 1)]
    for u in range(n):
        h[0][0][u] = 0.0 if src is None or src_group == groups[u][0] else in_b[0] / up(src, first[u])
    res, res_idx = inf, None
    for i in range(L):
        ends = [[inf] * n for _ in range(mask)]
        for u in range(n - 1, -1, -1):
            back = 0.0  # none where the source ran the last stage: the whole chain, or as its type's only device
            if src is not None and not (src_group == groups[u][0] and (i == 0 or counts[u] == 1)):
                back = out_b[-1] / up(first[u] + 1 if first[u] == src else first[u], src)
            for S in range(mask):
                h0 = h[i][S][u]
                if h0 == inf or digit(S, u) == counts[u]:
                    continue
                for j in range(i + 1, L + 1):
                    mem = mem_cum[j] - mem_cum[i] + (in_b[i] * T.DATA_BUFFERS_IN if i > 0 else 0.0) \
                        + out_b[j - 1] * T.DATA_BUFFERS_OUT + in_b[i] + out_b[j - 1]
                    if not cap[u] > mem:
                        continue
                    comp = cum[u][j] - cum[u][i]
                    if j == L:
                        ends[S][u] = max(max(h0, comp), back)
                        continue
                    for v in range(n):
                        if digit(S, v) == counts[v]:
                            continue
                        if u == v and counts[u] == 1:
                            comm = inf
                        else:
                            comm = out_b[j - 1] / up(first[u], first[v] + (1 if u == v else 0))
                        cost = max(h0, max(comp, comm))
                        if cost < h[j][S + pp[u]][v]:
                            h[j][S + pp[u]][v] = cost
                            parent[j][S + pp[u]][v] = (i, u)
        for S in range(mask):
            for u in range(n):
                if ends[S][u] < res:
                    res, res_idx = ends[S][u], (i, S, u)
    if res_idx is None:
        raise SpecError("no pipeline fits", key="--hw")
    i, S, u = res_idx
    typed, layer = [(u, i, L)], i
    while layer > 0:
        li, lu = parent[layer][S][u]
        S -= pp[lu]
        typed.append((lu, li, layer))
        layer, u = li, lu
    typed.reverse()
    used, stages = [0] * n, []
    for t, lo, hi in typed:
        stages.append((first[t] + used[t], lo, hi))
        used[t] += 1
    if src is not None and src_group == groups[typed[0][0]][0] and stages[0][0] != src:
        for k, (slot, lo, hi) in enumerate(stages):
            if slot == src:
                stages[k] = (stages[0][0], lo, hi)
                break
        stages[0] = (src, stages[0][1], stages[0][2])
    return np.array(h), np.array(parent), stages, res


def parent_table(tab) -> np.ndarray:
    """The parent (layer, type) of every reached state, by the DP's own backtracking rule."""
    h = tab.h
    par = np.full(h.shape + (2,), -1, dtype=np.int64)
    for j, S, v in zip(*np.nonzero(np.isfinite(h))):
        if j > 0:
            par[j, S, v] = tab.parent(int(j), int(S), int(v))
    return par


def digest(x: np.ndarray) -> list:
    """[count of finite entries, their Σ, Σ·(1 + flat index mod 97)] of a table."""
    x = np.asarray(x, dtype=float).ravel()
    ok = np.isfinite(x) & (x >= 0)
    w = 1.0 + np.flatnonzero(ok) % 97
    return [int(ok.sum()), float(x[ok].sum()), float((x[ok] * w).sum())]


def _near(got, want, path="") -> None:
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), path
        for k in want:
            _near(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), path
        for k, (g, w) in enumerate(zip(got, want)):
            _near(g, w, f"{path}[{k}]")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got == pytest.approx(want, rel=REL, abs=0.0), path
    else:
        assert got == want, path


@pytest.fixture(scope="module")
def pins() -> dict:
    return json.loads(PINS.read_text())


@pytest.mark.parametrize("case", DP_CASES, ids=[c[0] for c in DP_CASES])
def test_dp_equals_its_pins(case, pins):
    name, w, hw = case
    spec, c = load(w, hw)
    want = pins["dp"][name]
    stages, bott, states = pipeedge_dp(spec, c)
    assert [list(s) for s in stages] == want["stages"] and states == want["states"]
    assert bott == pytest.approx(want["bottleneck"], rel=REL, abs=0.0)
    tab = pipeedge_tables(spec, c)
    _near(digest(tab.h), want["h"], "h")
    par = parent_table(tab)
    _near(digest(par[..., 0]) + digest(par[..., 1]), want["parent"], "parent")


@pytest.mark.parametrize("name", REFERENCE)
def test_dp_equals_the_state_by_state_recurrence(name):
    _, w, hw = next(c for c in DP_CASES if c[0] == name)
    spec, c = load(w, hw)
    h, par, stages, res = reference_dp(spec, c)
    tab = pipeedge_tables(spec, c)
    np.testing.assert_array_equal(tab.h, h)  # max and min of the same floats: equal, not only close
    np.testing.assert_array_equal(parent_table(tab), par)
    got = pipeedge_dp(spec, c)
    assert got[0] == stages and got[1] == res


@pytest.mark.parametrize("case", SEARCH_CASES, ids=[c[0] for c in SEARCH_CASES])
def test_search_equals_its_pins(case, pins):
    name, w, hw, objective = case
    spec, c = load(w, hw)
    _near(json.loads(json.dumps(search(spec, c, objective=objective, top=0).to_dict())), pins["search"][name])


def _random_chain(seed: int) -> dict:
    """A chain of 1..9 layers with random FLOPs, weights and activations (some too big for a board's memory)."""
    rng = np.random.default_rng(seed)
    L = (1, 2, 3, 6, 9)[seed % 5]
    layers = [{"name": f"l{i}", "flops": float(rng.uniform(1e8, 2e10)),
               "params": float(rng.choice([1e5, 3e6, 4e8, 2.5e9], p=[0.4, 0.4, 0.15, 0.05])),
               "out_elements": float(rng.choice([1e3, 2e5, 1e6]))} for i in range(L)]
    src = [None, "a-0", "b-0", "c-1"][seed % 4]
    inf = {"microbatch": int(rng.choice([1, 8, 64])), "dtype": "fp32", "requests": 10}
    if src is not None:
        inf["source"] = src
    return {"family": "layer-chain", "name": f"rand-{seed}", "layers": layers, "input_elements": 150528.0,
            "inference": inf}


@pytest.mark.parametrize("seed", range(20))
def test_dp_on_random_short_chains_equals_the_recurrence(seed):
    """Chains shorter than the device count, one layer, memory that fits nowhere: the same tables, plan or error."""
    from tests.layerchain.dp_cases import SMALL_MIXED

    spec, c = load(_random_chain(seed), SMALL_MIXED)
    try:
        h, par, stages, res = reference_dp(spec, c)
    except SpecError:
        with pytest.raises(SpecError, match="no pipeline"):
            pipeedge_dp(spec, c)
        return
    tab = pipeedge_tables(spec, c)
    np.testing.assert_array_equal(tab.h, h)
    np.testing.assert_array_equal(parent_table(tab), par)
    assert pipeedge_dp(spec, c)[:2] == (stages, res)


def test_dp_in_small_array_steps_is_the_same(monkeypatch):
    """The min over a stage's first layer taken in blocks (large chains) gives the same tables."""
    import parplan.planner.spaces.layerchain as lc

    spec, c = load(*next(x for x in DP_CASES if x[0] == "vgg16-mixed-src")[1:])
    whole = pipeedge_tables(spec, c)
    monkeypatch.setattr(lc, "DP_CHUNK", 50)
    blocks = pipeedge_tables(spec, c)
    np.testing.assert_array_equal(blocks.h, whole.h)
    assert blocks.res_idx == whole.res_idx and blocks.res == whole.res


def test_one_layer_from_the_server_needs_no_return_hop():
    """The result's return from a later stage is priced only for the types a chain can end on there (schedule.cpp's
    loop): a one-layer chain whose source is the only server ends nowhere else, so no such hop is looked up."""
    w = {"family": "layer-chain", "name": "one", "input_elements": 1e4,
         "inference": {"microbatch": 1, "source": "server"},
         "layers": [{"name": "a", "flops": 1e9, "params": 1e6, "out_elements": 1e4}]}
    spec, c = load(w, "edge-4pi-server")
    h, par, stages, res = reference_dp(spec, c)
    assert pipeedge_dp(spec, c)[:2] == (stages, res) == ([(4, 0, 1)], res)
    np.testing.assert_array_equal(pipeedge_tables(spec, c).h, h)
