"""Pins the Timeloop-style mapping model and the mapspace search to the per-loop formulation they were first written
in: every output of ``evaluate_mappings`` (valid, cycles, per-level reads, writes, cycles and energy, per-tensor
reads / fills / updates) on random and mutated mappings equals the reference below exactly, on the Eyeriss
example, a GEMM, a strided and dilated convolution (explicit and derived storage) and the T1 case; the searches'
ranked rows are pinned by a digest of their exact values."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from parplan.hardware.dsp import load_dsp
from parplan.models.dataflow_energy import RELEVANT, TENSORS, evaluate_mappings, fanouts, footprint, storage_view
from parplan.planner.spaces import dataflow as sdf
from parplan.workloads.dataflow import DIMS, load_dataflow
from tests.dataflow import mapspace_reference as ref

STRIDED = {"family": "dataflow", "name": "conv-s2-d2", "problem": {"shape": "conv2d", "dims": {
    "C": 12, "K": 16, "R": 3, "S": 5, "P": 14, "Q": 10, "N": 2}, "stride": 2, "dilation": 2, "dtype": "fp32"}}
CASES = [("examples/dataflow-conv-eyeriss.yaml", "eyeriss-256"), ("examples/dataflow-gemm.yaml", "eyeriss-168"),
         (STRIDED, "eyeriss-168"), (STRIDED, "c6678"),
         ("examples/dataflow-conv1d-t1.yaml", "examples/dataflow-t1-arch.yaml")]


# --- the reference: the per-loop formulation (one array pass per loop above every level) --------------------------

def _ref_tile_changes(T, perm, l, rel, *, distinct=False):
    M, L, _ = T.shape
    acc = np.ones(M)
    run = np.ones(M, bool)
    rows = np.arange(M)
    for j in range(l + 1, L):
        for p in range(len(DIMS)):
            d = perm[:, j, p]
            f = T[rows, j, d]
            r = rel[d]
            if distinct:
                acc *= np.where(r, f, 1.0)
                continue
            run &= ~((f > 1) & r)
            acc *= np.where(run, 1.0, f)
    return acc


def _ref_evaluate(problem, levels, mac_instances, mac_energy_j, T, S, perm):
    T = np.asarray(T, float)
    S = np.asarray(S, float)
    M, L, _ = T.shape
    B = np.cumprod(T * S, axis=1)
    spat = np.prod(S, axis=2)
    util = np.ones((M, L))
    for l in range(L - 2, -1, -1):
        util[:, l] = util[:, l + 1] * spat[:, l + 1]
    mac_util = util[:, 0] * spat[:, 0]
    macs = problem.macs
    fan = fanouts(levels, mac_instances)
    valid = np.all(spat <= fan[None, :] + 1e-9, axis=1)
    reads = np.zeros((M, L))
    writes = np.zeros((M, L))
    per_tensor = {}
    for t in TENSORS:
        rel = RELEVANT[t]
        held = [l for l, lv in enumerate(levels) if t in lv.holds]
        tile = {l: footprint(B[:, l, :], t, problem.stride, problem.dilation) for l in held}
        changes = {l: _ref_tile_changes(T, perm, l, rel) for l in held}
        acc = {}
        child = -1
        for l in held:
            between = S[:, child + 1:l + 1, :]
            irrelevant_spatial = np.prod(np.where(rel[None, None, :], 1.0, between), axis=(1, 2))
            if child < 0:
                traffic = macs / (util[:, l] * irrelevant_spatial)
            else:
                traffic = changes[child] * tile[child] * (util[:, child] / util[:, l]) / irrelevant_spatial
            outer = l == held[-1]
            if t == "outputs":
                distinct = _ref_tile_changes(T, perm, l, rel, distinct=True) * tile[l]
                fills = 0.0 if outer else changes[l] * tile[l]
                r, u = np.maximum(0.0, traffic - distinct), traffic
            else:
                r, u = traffic, 0.0
                fills = 0.0 if outer else changes[l] * tile[l]
            acc[l] = (r + 0.0 * traffic, fills + 0.0 * traffic, u + 0.0 * traffic)
            reads[:, l] += acc[l][0]
            writes[:, l] += acc[l][1] + acc[l][2]
            child = l
        per_tensor[t] = acc
    for l, lv in enumerate(levels):
        if lv.words is not None:
            used = sum(footprint(B[:, l, :], t, problem.stride, problem.dilation) for t in TENSORS if t in lv.holds)
            valid &= used <= lv.words
    rbw = np.array([lv.read_bw for lv in levels])
    wbw = np.array([lv.write_bw for lv in levels])
    level_cycles = np.maximum(reads / rbw[None, :], writes / wbw[None, :])
    compute_cycles = macs / mac_util
    cycles = np.maximum(compute_cycles, level_cycles.max(axis=1))
    e_access = np.array([lv.access_energy_j for lv in levels])
    level_energy = util * (reads + writes) * e_access[None, :]
    out = {"valid": valid, "cycles": cycles, "compute_cycles": compute_cycles, "level_cycles": level_cycles,
           "reads": reads, "writes": writes, "util": util, "utilized_macs": mac_util,
           "utilization": mac_util / mac_instances,
           "mac_j": np.full(M, macs * mac_energy_j), "level_j": level_energy, "per_tensor": per_tensor}
    out["energy_j"] = out["mac_j"] + level_energy.sum(axis=1)
    return out


def _ref_arrays(dim, prime, L, spatial_levels, slots, A):
    size = A.shape[0]
    F = np.ones((size, slots, len(DIMS)))
    rows = np.arange(size)
    for j in range(len(dim)):
        F[rows, A[:, j], dim[j]] *= prime[j]
    S = np.ones((size, L, len(DIMS)))
    for i, l in enumerate(spatial_levels):
        S[:, l, :] = F[:, L + i, :]
    return F[:, :L, :], S


# --- the mappings compared ----------------------------------------------------------------------------------------

def _setup(root, w, hw):
    spec = load_dataflow(root / w if isinstance(w, str) else w)
    dsp = load_dsp(root / hw if hw.endswith(".yaml") else hw)
    problem = spec.problem
    levels, mac_inst, mac_e = storage_view(dsp, problem.dtype)
    L = len(levels)
    fan = fanouts(levels, mac_inst)
    spatial = tuple(l for l in range(L) if fan[l] > 1)
    dims, primes = [], []
    for d, n in enumerate(problem.sizes):
        for p in sdf._primes(n):
            dims.append(d)
            primes.append(p)
    space = sdf._Space(np.array(dims, int), np.array(primes, float), L, spatial, L + len(spatial))
    return spec, dsp, problem, levels, mac_inst, mac_e, space


def _mappings(space, seed, n=3000):
    """Random (Dirichlet-spread) mappings, then mutations of them (moved factors, swapped loops)."""
    rng = np.random.default_rng(seed)
    A = sdf._initial(space, rng, n)
    perm = np.argsort(rng.random((n, space.L, len(DIMS))), axis=2)
    A2, p2 = ref._mutate(space, A, perm, rng)  # the search's mutation before issue 16 (its reference copy)
    return np.concatenate([A, A2]), np.concatenate([perm, p2])


def _assert_same(got, ref):
    assert set(got) == set(ref)
    for k, v in ref.items():
        if k == "per_tensor":
            assert set(got[k]) == set(v)
            for t, acc in v.items():
                assert set(got[k][t]) == set(acc)
                for lvl, parts in acc.items():
                    for a, b in zip(got[k][t][lvl], parts, strict=True):
                        np.testing.assert_array_equal(a, b, err_msg=f"{t} level {lvl}")
        else:
            np.testing.assert_array_equal(got[k], v, err_msg=k)


@pytest.mark.parametrize("w,hw", CASES)
def test_evaluate_equals_the_per_loop_reference(root, w, hw):
    spec, dsp, problem, levels, mi, me, space = _setup(root, w, hw)
    A, perm = _mappings(space, seed=7)
    T, S = space.arrays(A)
    rT, rS = _ref_arrays(space.dim, space.prime, space.L, space.spatial_levels, space.slots, A)
    np.testing.assert_array_equal(T, rT)
    np.testing.assert_array_equal(S, rS)
    got = evaluate_mappings(problem, levels, mi, me, T, S, perm)
    _assert_same(got, _ref_evaluate(problem, levels, mi, me, rT, rS, perm))
    assert got["valid"].any()  # the comparison covers fitting mappings, not only rejected ones


def test_user_mapping_equals_the_reference():
    import timeloop_cases as tc
    from parplan.models.dataflow_energy import mapping_arrays

    w = load_dataflow({"family": "dataflow", "name": "t2", "problem": {"shape": "conv2d", "dims": tc.T2_LAYER},
                       "mapping": tc.T2_MAPPING})
    levels, mi, me = storage_view(load_dsp("eyeriss-256"), "int16")
    T, S, perm = mapping_arrays(w.problem, levels, w.mapping)
    _assert_same(evaluate_mappings(w.problem, levels, mi, me, T, S, perm),
                 _ref_evaluate(w.problem, levels, mi, me, T, S, perm))


def _digest(rows) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=repr).encode()).hexdigest()[:16]


# (workload, hardware, objective, max mappings) → (mappings priced, best energy J, best cycles, digest of the rows)
SEARCHES = [
    (CASES[0], "energy", 60_000, (60080, 0.24570792588083198, 308281344.0, "0ff7b8785debe05f")),
    (CASES[1], "latency", 20_000, (20112, 1.3905076224e-05, 16384.0, "30d22b5f34007044")),
    (CASES[2], "edp", 20_000, (20112, 6.931266299999999e-06, 5742.0, "6b30d1785d272f8a")),
    (CASES[3], "energy", 5_000, (5060, 0.0004304, 43040.0, "527fe40830b1f4af")),
]


@pytest.mark.parametrize("i", range(len(SEARCHES)))
def test_search_rows_pinned(root, i):
    (w, hw), objective, n, pinned = SEARCHES[i]
    spec, dsp = _setup(root, w, hw)[:2]
    r = sdf.search_mappings(spec, dsp, objective=objective, max_mappings=n)
    got = (r.n_configs, r.rows[0]["energy_j"], r.rows[0]["cycles"], _digest(r.rows))
    assert got == pinned


def test_sample_draws_equal_the_reference(root):
    """The sample's slots (the count of cumulative Dirichlet weights each draw passes) and loop orders (argsort of
    uniform draws, equal draws in index order) equal their one-call formulations."""
    space = _setup(root, *CASES[0])[-1]
    A = sdf._initial(space, np.random.default_rng(3), 5000)
    rng = np.random.default_rng(3)
    cum = np.cumsum(rng.dirichlet(np.full(space.slots, 0.5), 5000), axis=1)
    u = rng.random((5000, len(space.dim)))
    np.testing.assert_array_equal(A, np.minimum((u[:, :, None] > cum[:, None, :]).sum(axis=2), space.slots - 1))
    R = np.random.default_rng(4).random((5000, space.L, len(DIMS)))
    np.testing.assert_array_equal(sdf._orders(R), np.argsort(R, axis=2))
    R = np.random.default_rng(5).integers(0, 3, (5000, space.L, len(DIMS))).astype(float)  # ties
    np.testing.assert_array_equal(sdf._orders(R), np.argsort(R, axis=2, kind="stable"))
