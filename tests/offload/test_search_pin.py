"""Pins what the offload and replicated-service searches price: every plan's totals and breakdown parts (all of
them, as per-field sums, weighted sums, extremes and counts of infinities), the ranked rows (order, plan, bottleneck,
fit) and a sample of plans' exact figures, on the benchmark instances (benchmarks/family_speed.py) and the
examples.  The reference figures were recorded from the per-placement / padded-ring implementation before the
search was vectorized; a faster search must reproduce them."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from parplan.hardware.cpu import load_cpu_machine
from parplan.hardware.offload import load_offload_node
from parplan.models.replication import evaluate
from parplan.planner.spaces import offload as sof
from parplan.planner.spaces import replication as srp
from parplan.workloads.offload import load_offload
from parplan.workloads.replication import load_replication

REF = json.loads((Path(__file__).with_name("search_pin_ref.json")).read_text())

OFFLOAD_5 = {"family": "offload", "name": "five-stage-chain", "source": "benchmark instance: 5 element kernels",
             "kernels": [{"name": f"k{i}", "ops_per_element": 20 * (i + 1) ** 2, "bytes_in": 4, "bytes_out": 4}
                         for i in range(5)],
             "sizes": [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 3e8, 1e9], "requests": 8,
             "search": {"chunks": [1, 2, 4, 8, 16], "api": ["actor", "native"]}}
OFFLOAD_REMOTE = {**OFFLOAD_5, "name": "five-stage-remote", "remote": True, "requests": 3,
                  "kernels": [{"name": f"k{i}", "ops_per_element": 7 * (i + 2), "bytes_in": 4 * (i + 1),
                               "bytes_out": 2 * (i + 2)} for i in range(4)]}


def _kv(root, **search):
    import yaml

    doc = yaml.safe_load((root / "examples/kv-store.yaml").read_text())
    if search:
        doc["search"] = search
    return doc


def offload_cases(root):
    ex = root / "examples"
    return {
        "chain5": (OFFLOAD_5, "caf-k40-phi", None),
        "chain5-n1e7": (OFFLOAD_5, "caf-k40-phi", {"n": 1e7}),
        "remote4": (OFFLOAD_REMOTE, "caf-k40-phi", None),
        "mandelbrot": (ex / "mandelbrot-offload.yaml", "caf-k40-phi", None),
        "mandelbrot-4090": (ex / "mandelbrot-offload.yaml", "heritage-rtx4090", None),
        "chain3": (ex / "offload-chain.yaml", "caf-k40-phi", None),
        "chain3-fixed": (ex / "offload-chain.yaml", "caf-k40-phi",
                         {"place": ("tesla-k40", "tesla-k40", "cpu"), "resident": True}),
    }


def replication_cases(root):
    wide = {"threads": list(range(1, 33)), "rings": list(range(1, 33)), "batch": list(range(1, 33)),
            "schemes": ["smr", "sched-psmr", "psmr"]}
    free = _kv(root, threads=[1, 3, 8, 13], rings=[1, 2, 5, 7], batch=[1, 4, 30], schemes=["smr", "sched-psmr", "psmr"])
    free["clients"] = {"load_fraction": 0.8}  # latency at a share of each plan's throughput
    return {
        "kv": (_kv(root), "smr-3x-16c-10gbe"),
        "kv-wide": (_kv(root, **wide), "smr-3x-16c-10gbe"),
        "kv-load-fraction": (free, "smr-3x-16c-10gbe"),
        "kv-one-node": (_kv(root), "xeon-8380-2s"),
    }


def _aggregate(x) -> dict:
    x = np.asarray(x)
    if x.dtype.kind in "biu":
        v = x.astype(np.int64).ravel()
        return {"sum": int(v.sum()), "wsum": int((v * (1 + np.arange(v.size) % 13)).sum()), "n": int(v.size)}
    v = x.astype(float).ravel()
    fin = np.isfinite(v)
    w = 1.0 + (np.arange(v.size) % 13) / 13.0
    f = np.where(fin, v, 0.0)
    return {"sum": float(f.sum()), "wsum": float((f * w).sum()), "min": float(v[fin].min()) if fin.any() else 0.0,
            "max": float(v[fin].max()) if fin.any() else 0.0, "inf": int((~fin).sum()), "n": int(v.size)}


def _sample(x, k: int = 12) -> list:
    v = np.asarray(x, dtype=float).ravel()
    idx = np.unique(np.linspace(0, v.size - 1, k).astype(int))
    return [float(v[i]) for i in idx]


def _rows_hash(rows: list, keys: tuple) -> str:
    return hashlib.sha256(json.dumps([[r[k] for k in keys] for r in rows], default=str).encode()).hexdigest()


OFFLOAD_ROW_KEYS = ("rank", "n", "place", "resident", "chunks", "api", "fits", "bottleneck", "reasons")
REPLICATION_ROW_KEYS = ("rank", "scheme", "threads", "rings", "batch", "fits", "limit", "reasons")


def offload_figures(w, hw, fix) -> dict:
    spec, node = load_offload(w), load_offload_node(hw)
    sp = sof.price_space(spec, node, fix)
    arrays = {"t_r": sp["t_r"], "bad": sp["bad"], **sp["parts"]}
    res = sof.search(spec, node, fix=fix, top=0 if fix and "n" in fix else 10)
    return {"agg": {k: _aggregate(v) for k, v in arrays.items()},
            "sample": {k: _sample(v) for k, v in arrays.items() if v.dtype.kind == "f"},
            "rows": _rows_hash(res.rows, OFFLOAD_ROW_KEYS), "n_rows": len(res.rows), "n_configs": res.n_configs,
            "row_figures": _aggregate([[r[k] for k in ("total_s", "requests_s", "cpu_s", "speedup")]
                                       for r in res.rows]),
            "break_even": [b["n_star"] for b in res.break_even]}


def _replication_arrays(out: dict) -> dict:
    arrays = {k: v for k, v in out.items() if k != "latency_parts"}
    arrays.update({f"lat:{k}": v for k, v in out["latency_parts"].items()})
    return arrays


def replication_figures(w, hw) -> dict:
    spec, m = load_replication(w), load_cpu_machine(hw)
    s, *knobs = srp._combos(spec, m, {})
    a = np.array(knobs, dtype=float)
    arrays = _replication_arrays(evaluate(spec, m, s, a[0], a[1], a[2], spec.offered_load))
    rows = {}
    for obj in srp.OBJECTIVES:
        res = srp.search(spec, m, objective=obj, top=0 if len(s) < 200 else 50)
        rows[obj] = {"hash": _rows_hash(res.rows, REPLICATION_ROW_KEYS), "n": len(res.rows),
                     "figures": _aggregate([[r["throughput_per_s"], r["latency_s"]] for r in res.rows]),
                     "feasible": res.n_feasible}
    return {"agg": {k: _aggregate(v) for k, v in arrays.items()},
            "sample": {k: _sample(v) for k, v in arrays.items() if np.asarray(v).dtype.kind == "f"},
            "rows": rows, "n_configs": len(s)}


def _close(got, want, path=""):
    if isinstance(want, dict):
        assert set(got) == set(want), path
        for k in want:
            _close(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for i, (g, x) in enumerate(zip(got, want)):
            _close(g, x, f"{path}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300), path
    else:
        assert got == want, path


@pytest.mark.parametrize("case", ["chain5", "chain5-n1e7", "remote4", "mandelbrot", "mandelbrot-4090", "chain3",
                                  "chain3-fixed"])
def test_offload_search_prices_as_pinned(root, case):
    w, hw, fix = offload_cases(root)[case]
    _close(offload_figures(w, hw, fix), REF["offload"][case], case)


@pytest.mark.parametrize("case", ["kv", "kv-wide", "kv-load-fraction", "kv-one-node"])
def test_replication_search_prices_as_pinned(root, case):
    w, hw = replication_cases(root)[case]
    _close(replication_figures(w, hw), REF["replication"][case], case)


@pytest.mark.parametrize("case", ["chain5", "remote4"])
def test_offload_batch_is_each_placement_priced_alone(root, case):
    """The trie of segments (models/offload_batch.py) gives each placement's figures bit for bit as chain_terms +
    requests_time on that placement alone."""
    from parplan.models.offload import TIME_PARTS, chain_terms, requests_time

    w, hw, _ = offload_cases(root)[case]
    spec, node = load_offload(w), load_offload_node(hw)
    sp = sof.price_space(spec, node)
    C, A = len(sp["chunks"]), len(sp["apis"])
    k, api = np.asarray(sp["chunks"], float)[:, None, None], np.asarray(sp["apis"])[None, :, None]
    for p in np.linspace(0, len(sp["places"]) - 1, 23).astype(int):
        for r, res in enumerate(sp["residents"]):
            one = chain_terms(spec, node, {"place": sp["places"][p], "resident": res, "chunks": k, "api": api}, sp["n"])
            rows = slice((p * len(sp["residents"]) + r) * C * A, (p * len(sp["residents"]) + r + 1) * C * A)
            want = {key: np.broadcast_to(one[key], (C, A, len(sp["n"]))).reshape(C * A, -1)
                    for key in (*TIME_PARTS, "total_s")}
            want["t_r"] = np.broadcast_to(requests_time(one, spec.requests)[0], (C, A, len(sp["n"]))).reshape(C * A, -1)
            for key, v in want.items():
                got = sp["t_r"][rows] if key == "t_r" else sp["parts"][key][rows]
                assert np.array_equal(got, v), (key, sp["places"][p], res)


@pytest.mark.parametrize("case", ["kv-wide", "kv-load-fraction"])
def test_replication_top_rows_are_the_full_ranking_head(root, case):
    """Ranking only the plans that can reach the top gives the head of the full ranking."""
    w, hw = replication_cases(root)[case]
    spec, m = load_replication(w), load_cpu_machine(hw)
    for obj in srp.OBJECTIVES:
        full = srp.search(spec, m, objective=obj, top=0).rows
        for top in (1, 10, 57):
            assert srp.search(spec, m, objective=obj, top=top).rows == full[:top]
