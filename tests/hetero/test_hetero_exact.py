"""The exact in-process solvers of the heterogeneous programs (planner/hetero_exact.py) against brute force and
against CBC solving the same programs as ILPs: equal optima on hand-made and random instances, and the same best
plan from the whole planner."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import assume, given, settings, strategies as st

from parplan.hardware import load_cluster
from parplan.planner.hetero import _shape_costs, block_orders, build_layer_ilp, make_solver, plan_hetero, solve
from parplan.planner.hetero_exact import ExactSolver, solve_data, solve_layers
from parplan.planner.hetero_ilp import LayerTerms, build_typed_data_ilp, layer_terms
from parplan.workloads import load_workload

from tests.hetero.test_hetero_ilp import MIXED, SMALL, brute_force_layers


def _brute_layers(lt: LayerTerms) -> float:
    S, L, best = len(lt.a_s), lt.layers, math.inf
    for cuts in itertools.combinations(range(1, L), S - 1):
        n = [b - a for a, b in zip((0,) + cuts, cuts + (L,))]
        if any(k * m > r for k, m, r in zip(n, lt.mem_bytes, lt.room_bytes)):
            continue
        taus = [a * k + b for a, k, b in zip(lt.a_s, n, lt.b_s)]
        best = min(best, (lt.micro_batches - 1) * max(taus) + sum(taus))
    return best


def test_layer_example_by_hand():
    # two positions, 1 s and 2 s per layer, 6 layers, m = 3: n = (4, 2) gives τ = (4, 4): 2·4 + 8 = 16
    lt = LayerTerms((1.0, 2.0), (0.0, 0.0), (1.0, 1.0), (10.0, 10.0), 6, 3)
    sol = solve_layers(lt)
    assert sol.status == "Optimal" and sol.layers == (4, 2) and sol.objective_s == pytest.approx(16.0)
    # memory caps position 0 at 3 layers: n = (3, 3), τ = (3, 6): 2·6 + 9 = 21
    sol = solve_layers(LayerTerms((1.0, 2.0), (0.0, 0.0), (1.0, 1.0), (3.0, 10.0), 6, 3))
    assert sol.layers == (3, 3) and sol.objective_s == pytest.approx(21.0)
    # nothing fits: infeasible, as the ILP says
    assert solve_layers(LayerTerms((1.0, 2.0), (0.0, 0.0), (1.0, 1.0), (2.0, 2.0), 6, 3)).status == "Infeasible"


@settings(max_examples=60, deadline=None)
@given(S=st.integers(1, 4), L=st.integers(4, 12), m=st.integers(1, 16),
       a=st.lists(st.floats(0.1, 5.0), min_size=4, max_size=4), b=st.lists(st.floats(0.0, 3.0), min_size=4, max_size=4),
       caps=st.lists(st.integers(1, 12), min_size=4, max_size=4))
def test_layer_program_equals_brute_force(S, L, m, a, b, caps):
    lt = LayerTerms(tuple(a[:S]), tuple(b[:S]), (1.0,) * S, tuple(float(c) for c in caps[:S]), L, m)
    sol = solve_layers(lt)
    brute = _brute_layers(lt)
    if math.isinf(brute):
        assert sol.status == "Infeasible"
    else:
        assert sol.status == "Optimal" and sum(sol.layers) == L
        assert sol.objective_s == pytest.approx(brute, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(T=st.integers(1, 3), M=st.integers(3, 12), z=st.lists(st.floats(0.1, 4.0), min_size=3, max_size=3),
       f=st.lists(st.floats(0.0, 5.0), min_size=3, max_size=3), R=st.lists(st.integers(1, 2), min_size=3, max_size=3))
def test_data_program_equals_brute_force(T, M, z, f, R):
    z, f, R = z[:T], f[:T], R[:T]
    # the brute force tries M^(replicas) splits: at most 4 replicas (12^4 ≈ 21k), never an unbounded product
    assume(sum(R) <= min(M, 4))
    makespan, shares = solve_data(z, f, R, M)
    zk = [z[t] for t in range(T) for _ in range(R[t])]
    fk = [f[t] for t in range(T) for _ in range(R[t])]
    brute = min(max(a * s + c for a, s, c in zip(zk, ms, fk))
                for ms in itertools.product(range(1, M + 1), repeat=len(zk)) if sum(ms) == M)
    assert sum(shares) == M and min(shares) >= 1
    assert makespan == pytest.approx(brute, rel=1e-12)
    assert max(a * s + c for a, s, c in zip(zk, shares, fk)) == pytest.approx(makespan, rel=1e-12)


@pytest.mark.parametrize("z,f,R,M", [([1.0, 2.0], [0.5, 1.0], [2, 1], 9), ([1.0, 1.5, 3.0], [0.2, 0.3, 0.9], [1, 2, 1], 11),
                                     ([2.0], [0.0], [4], 7)])
def test_data_program_equals_cbc(z, f, R, M):
    prob, v = build_typed_data_ilp(z, f, R, M)
    status, _ = solve(prob, make_solver("cbc", 30))
    assert status == "Optimal"
    assert solve_data(z, f, R, M)[0] == pytest.approx(v["T"].value(), rel=1e-6)


@pytest.mark.parametrize("counts,m", [(((0, 1), (1, 1)), 4), (((0, 2), (1, 1)), 8), (((0, 1), (1, 2)), 2)])
def test_layer_program_on_real_shapes_equals_cbc_and_brute_force(counts, m):
    w, c = load_workload(SMALL), load_cluster(MIXED)
    sc = _shape_costs(w, c, counts, 2, 1, "none", m, 2)
    exact, ilp = math.inf, math.inf
    for order in block_orders(sc):
        sol = solve_layers(layer_terms(w, sc, 1, order))
        if sol.status == "Optimal":
            exact = min(exact, sol.objective_s)
        prob, _ = build_layer_ilp(w, sc, 1, order)
        status, _ = solve(prob, make_solver("cbc", 30))
        if status == "Optimal":
            ilp = min(ilp, prob.objective.value())
    assert exact == pytest.approx(brute_force_layers(w, sc, 1), rel=1e-12)
    assert exact == pytest.approx(ilp, rel=1e-6)


@pytest.mark.parametrize("cluster", [MIXED, "mixed-h100-a100-64"])
def test_planner_exact_and_cbc_pick_the_same_best_step(cluster):
    w = load_workload("llama2-13b", global_batch=64, seq_len=4096) if isinstance(cluster, str) else load_workload(SMALL)
    a = plan_hetero(w, cluster, baselines=False, solver="cbc")
    b = plan_hetero(w, cluster, baselines=False)
    assert b.stats["solver"] == "exact" and isinstance(make_solver("exact"), ExactSolver)
    assert b.best.result.step_time_s == pytest.approx(a.best.result.step_time_s, rel=1e-9)
