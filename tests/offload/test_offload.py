"""Offload family: the node catalog, workloads, the closed form's hand-derivable terms and break-even (SEEDS.md
S13(b)), residency and chunking, physics invariants, the heritage report (S25(b)), the planner and the verbs through
the CLI, the executor's agreement, and the seeds' claims."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.hardware.offload import load_offload_node, node_from_dict, node_ids
from parplan.models.offload import TIME_PARTS, break_even, chain_terms, estimate_plan, fit_reasons, parse_plan
from parplan.workloads.offload import load_offload
from parplan.workloads.registry import verbs_for

runner = CliRunner()
HW = "caf-k40-phi"
ONE = {"family": "offload", "name": "k", "kernels": [{"name": "k", "ops_per_element": 1000, "bytes_in": 8,
                                                      "bytes_out": 4}]}


def node(bw="12 GB/s", launch="10 us", ops="4 TOP/s", mem="12 GB"):
    return node_from_dict({"name": "t", "kind": "offload-node", "host": {"ops_per_s": "200 GOP/s"},
                           "accelerators": [{"id": "g", "kind": "discrete-gpu", "ops_per_s": ops, "efficiency": 1.0,
                                             "memory": mem, "memory_bandwidth": "300 GB/s", "launch": launch,
                                             "enqueue": "5 us", "h2d": {"bandwidth": bw, "latency": "10 us"},
                                             "d2h": {"bandwidth": bw, "latency": "10 us"}, "source": "test device"}],
                           "actor": {"message": "10 us"}, "source": "test node"})


def test_catalog_nodes_and_examples_load(root):
    assert set(node_ids()) >= {"caf-k40-phi", "heritage-rtx4090"}
    n = load_offload_node(HW)
    assert {a.kind for a in n.accelerators} == {"discrete-gpu", "coprocessor", "integrated-gpu"}
    assert all(len(a.source) > 8 for a in n.accelerators)
    assert load_offload_node("heritage-rtx4090").accelerators[0].memory_bytes == pytest.approx(24 * 2**30)
    for f in ("mandelbrot-offload", "offload-chain", "offload-heritage"):
        assert load_offload(root / f"examples/{f}.yaml").name
        assert verbs_for(str(root / f"examples/{f}.yaml")).__name__ == "parplan.cli.offload_out"


def test_bad_inputs_are_spec_errors():
    with pytest.raises(SpecError, match="exactly one"):
        load_offload({"family": "offload", "name": "x"})
    with pytest.raises(SpecError, match="bogus"):
        load_offload({**ONE, "bogus": 1})
    with pytest.raises(SpecError, match="h2d"):
        node_from_dict({"name": "t", "kind": "offload-node", "host": {"ops_per_s": "1 GOP/s"}, "source": "test node",
                        "accelerators": [{"id": "g", "kind": "discrete-gpu", "ops_per_s": "1 TOP/s", "memory": "1 GB",
                                          "memory_bandwidth": "1 GB/s", "launch": "1 us", "source": "test device"}]})
    s, nd = load_offload(ONE), load_offload_node(HW)
    for bad in ("place=gpu", "chunks=0", "resident=maybe", "n=-3", "speed=2"):
        with pytest.raises(SpecError):
            parse_plan(bad, s, nd)


def test_terms_and_break_even_by_hand():
    s, nd = load_offload(ONE), node()
    p = parse_plan("place=g,n=1e6", s, nd)
    t = chain_terms(s, nd, p, 1e6)
    expect = 10e-6 + 5e-6 + (10e-6 + 8e6 / 12e9) + 10e-6 + 1e9 / 4e12 + (10e-6 + 4e6 / 12e9)  # S13(b) T_off(n)
    assert float(t["total_s"]) == pytest.approx(expect)
    assert sum(float(t[k]) for k in TIME_PARTS) == pytest.approx(float(t["total_s"]))
    # n* = (t_msg + t_enq + t_launch + latencies − t_msg(cpu)) / (c/X_cpu − c/X_dev − (b_in + b_out)/BW)
    n_star = (5e-6 + 10e-6 + 20e-6) / (1000 / 200e9 - 1000 / 4e12 - 12 / 12e9)
    assert break_even(s, nd, p) == pytest.approx(n_star, rel=1e-6)
    slow = node(ops="100 GOP/s")  # slower than the host: never breaks even
    assert break_even(s, slow, parse_plan("place=g", s, slow)) == float("inf")


def test_residency_saves_the_transfer_term():
    s = load_offload({"family": "offload", "name": "c", "kernels": [
        {"name": f"k{i}", "ops_per_element": 10, "bytes_in": 4, "bytes_out": 4} for i in range(3)]})
    nd = node()
    res, cb = (float(chain_terms(s, nd, parse_plan(f"place=g,resident={r},n=1e7", s, nd), 1e7)["total_s"])
               for r in ("true", "false"))
    term = 2 * (4 / 12e9 + 4 / 12e9) * 1e7 + 2 * 20e-6  # (k−1)(b_out/BW + b_in/BW)·n + latencies
    assert cb - res == pytest.approx(term)


@settings(max_examples=40, deadline=None)
@given(n=st.floats(1.0, 1e9), bw=st.floats(1e9, 1e11), faster=st.floats(1.0, 8.0), chunks=st.sampled_from([1, 3, 16]),
       mem=st.floats(1e8, 1e11))
def test_physics(n, bw, faster, chunks, mem):
    s = load_offload(ONE)
    slow_node, fast_node = node(bw=bw, mem=mem), node(bw=bw * faster, ops=f"{4 * faster} TOP/s", mem=mem * faster)
    p = {"place": ("g",), "resident": True, "chunks": chunks, "api": "actor", "n": n}
    a, b = chain_terms(s, slow_node, p, n), chain_terms(s, fast_node, p, n)
    assert float(b["total_s"]) <= float(a["total_s"]) * (1 + 1e-12)
    assert np.isfinite(float(a["total_s"]))
    assert sum(float(a[k]) for k in TIME_PARTS) == pytest.approx(float(a["total_s"]))
    if not fit_reasons(s, slow_node, p, n):  # more device memory never makes a plan not fit
        assert not fit_reasons(s, fast_node, p, n)


def test_memory_infeasible_says_what_fits():
    s, nd = load_offload(ONE), node(mem="1 GB")
    e = estimate_plan(s, nd, parse_plan("place=g,n=1e9", s, nd))
    assert not e.fits and "fits with n ≤" in e.reasons[0]


def test_heritage_storage_and_edits(root):
    from parplan.models.offload_heritage import heritage_report

    r = heritage_report(load_offload(root / "examples/offload-heritage.yaml"), load_offload_node("heritage-rtx4090"))
    assert r.storage_bytes["texture_bytes"] == 8 * 4096 ** 2 * 5  # ≈ 671 MB (S25(d))
    speed = [o / g for g, o in zip(r.edit_gpu_s, r.edit_octree_s)]
    assert speed == sorted(speed) and speed[0] > 10  # the GPU's lead grows with the brush
    assert 0 < r.break_even_painted_fraction < 1


def test_planner_break_even_and_best_per_size(root):
    from parplan.planner.spaces.offload import search

    ps = search(load_offload(root / "examples/mandelbrot-offload.yaml"), load_offload_node(HW))
    be = {b["accelerator"]: b["n_star"] for b in ps.break_even if b["api"] == "actor"}
    assert 1e4 <= be["tesla-k40"] < be["xeon-phi-5110p"] <= 1e6 and be["hd-p4600"] == float("inf")
    # the figures docs/offload.md quotes: (t_msg + t_enqueue + t_launch) over the per-element saving
    assert be["tesla-k40"] == pytest.approx(1.14e4, rel=0.01) and be["xeon-phi-5110p"] == pytest.approx(1.16e5, rel=0.01)
    by_n = {r["n"]: r for r in ps.rows}
    assert by_n[1e3]["place"] == "cpu" and by_n[1e8]["place"] == "tesla-k40"


def test_cli_verbs(root):
    ex = str(root / "examples/mandelbrot-offload.yaml")
    r = runner.invoke(app, ["suggest", ex, "--hw", HW])
    assert r.exit_code == 0 and "break-even" in r.stdout, r.output
    r = runner.invoke(app, ["estimate", ex, "--hw", HW, "--plan", "place=tesla-k40,n=1e6", "--format", "json"])
    doc = json.loads(r.stdout)
    assert sum(doc["breakdown_s"].values()) == pytest.approx(doc["total_s"])
    r = runner.invoke(app, ["estimate", str(root / "examples/offload-heritage.yaml"), "--hw", "heritage-rtx4090"])
    assert r.exit_code == 0 and "671 MB" in r.stdout
    for bad in (["estimate", ex, "--hw", HW, "--plan", "place=gpu"], ["estimate", ex, "--hw", "nope"],
                ["suggest", ex, "--hw", HW, "--seq-len", "8"]):
        r = runner.invoke(app, bad)
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    chk = ["check", ex, "--hw", HW]
    assert runner.invoke(app, chk + ["--max-step-time-s", "10"]).exit_code == 0
    assert runner.invoke(app, chk + ["--max-step-time-s", "1e-6"]).exit_code == 1
    r = runner.invoke(app, ["validate", str(root / "examples/offload-chain.yaml"), "--hw", HW, "--plan",
                            "place=tesla-k40,resident=false,chunks=4,n=1e6"])
    assert r.exit_code == 0 and "1/1 within" in r.stdout, r.output


def test_executor_agrees_and_seeds_reach(root):
    from seed_caf import claims, results
    from seed_heritage import claims as h_claims, report

    from parplan.executor.offload import agreement

    rows = agreement(root / "examples/offload-chain.yaml", HW)
    assert sum(abs(r["error"]) <= 0.05 for r in rows) >= 0.9 * len(rows)
    assert all(ok for _, ok, _ in claims(results()))
    got = {text: ok for text, ok, _ in h_claims(report(), report(painted_fraction=0.1))}
    assert got["texture storage ≈ 671 MB"] and got["texture smaller when dense, octree when sparse"]
