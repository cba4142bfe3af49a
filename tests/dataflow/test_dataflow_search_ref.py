"""The mapspace search (issue 16: validity first, an integer pricer, the pool in the pricer's layout) against the
search as it stood before (``mapspace_reference``, priced by ``evaluate_mappings`` itself), on both rows of
benchmarks/family_speed.py and every dataflow example: every priced mapping's factors and fit exactly, the loop
order of every one that fits exactly, every objective and tie-break value to 1e-12 relative (they are in fact bit
for bit the same), and the ranked rows — the chosen mappings and all their metrics — exactly.  The pricer alone
equals ``evaluate_mappings`` on random and mutated mappings, its exact-integer path and its fallback, and the
sample's cheap necessary condition keeps every mapping that fits."""
from __future__ import annotations

import json

import numpy as np
import pytest

from parplan.errors import SpecError
from parplan.hardware.dsp import load_dsp
from parplan.models.dataflow_energy import evaluate_mappings, fanouts, storage_view
from parplan.models.dataflow_price import FROM_ORDER, SearchPricer
from parplan.planner.spaces import dataflow as sdf
from parplan.planner.spaces import dataflow_mapspace as dm
from parplan.workloads.dataflow import DIMS, load_dataflow
from tests.dataflow import mapspace_reference as ref

EYE = "examples/dataflow-conv-eyeriss.yaml"
GEMM = "examples/dataflow-gemm.yaml"
T1 = ("examples/dataflow-conv1d-t1.yaml", "examples/dataflow-t1-arch.yaml")
STRIDED = {"family": "dataflow", "name": "conv-s2-d2", "problem": {"shape": "conv2d", "dims": {
    "C": 12, "K": 16, "R": 3, "S": 5, "P": 14, "Q": 10, "N": 2}, "stride": 2, "dilation": 2, "dtype": "fp32"}}
ONES = {"family": "dataflow", "name": "ones", "problem": {"shape": "conv2d", "dims": {"C": 1, "K": 1}}}
# three fan-outs (the outermost level's too) and unequal read and write bandwidths
FANS = {"id": "three-fanouts", "name": "three fan-outs", "kind": "spatial", "vendor": "test", "clock_ghz": 1.0,
        "source": "test instance", "macs": {"instances": 256, "energy": "1 pJ", "word_bits": 16}, "storage": [
            {"name": "DRAM", "instances": 1, "word_bits": 16, "read_bandwidth": 4, "write_bandwidth": 4,
             "access_energy": "100 pJ"},
            {"name": "GLB", "instances": 4, "words": 8192, "word_bits": 16, "read_bandwidth": 8, "write_bandwidth": 6,
             "access_energy": "5 pJ", "holds": ["inputs", "outputs"]},
            {"name": "RF", "instances": 64, "words": 256, "word_bits": 16, "read_bandwidth": 2,
             "write_bandwidth": 1.5, "access_energy": "0.5 pJ"}]}
# (workload, hardware, objective, max mappings, seed, top): the two benchmark rows first
CASES = [
    (EYE, "eyeriss-256", "energy", sdf.DEFAULT_MAPPINGS, 0, 10),
    (EYE, "eyeriss-256", "energy", 600_000, 0, 10),
    (EYE, "eyeriss-256", "latency", 30_000, 3, 3),
    (EYE, "eyeriss-168", "edp", 12_345, 2, 10),
    (GEMM, "eyeriss-168", "latency", 20_000, 0, 10),
    (GEMM, "eyeriss-168", "edp", 8_000, 1, 0),
    (GEMM, "c6678", "energy", 10_000, 0, 10),
    (*T1, "energy", sdf.DEFAULT_MAPPINGS, 0, 10),
    (*T1, "edp", 3_000, 4, 0),
    (STRIDED, "eyeriss-168", "edp", 20_000, 0, 10),
    (STRIDED, "c6678", "latency", 7_000, 5, 0),
    (EYE, FANS, "energy", 20_000, 0, 10),
    (GEMM, FANS, "edp", 9_000, 6, 0),
    (ONES, FANS, "latency", 5_000, 0, 0),
]


def _load(root, w, hw):
    spec = load_dataflow(root / w if isinstance(w, str) else w)
    return spec, load_dsp(root / hw if isinstance(hw, str) and hw.endswith(".yaml") else hw)


def _cat(trace, k):
    return np.concatenate([c[k] for c in trace])


def _rows(r) -> str:
    return json.dumps(r.rows, sort_keys=True, default=repr)


def _id(case) -> str:
    w, hw = case[:2]
    return "-".join([w if isinstance(w, str) else w["name"], hw if isinstance(hw, str) else hw["id"]]
                    + [str(x) for x in case[2:5]]).replace("examples/", "")


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_search_equals_the_reference(root, case):
    w, hw, objective, n, seed, top = case
    spec, dsp = _load(root, w, hw)
    kw = dict(objective=objective, max_mappings=n, seed=seed, top=top)
    want, got = [], []
    r0 = ref.search_mappings(spec, dsp, trace=want, **kw)
    r1 = sdf.search_mappings(spec, dsp, trace=got, **kw)
    assert (r1.n_configs, r1.notes) == (r0.n_configs, r0.notes)
    assert len(_cat(want, 0)) == len(_cat(got, 0)) == r0.n_configs
    np.testing.assert_array_equal(_cat(got, 0), _cat(want, 0))  # temporal factors of every priced mapping
    np.testing.assert_array_equal(_cat(got, 1), _cat(want, 1))  # spatial factors
    offsets = np.cumsum([0] + [len(c[0]) for c in got[:-1]])
    fit = np.concatenate([o + c[2] for o, c in zip(offsets, got)])
    np.testing.assert_array_equal(fit, np.flatnonzero(_cat(want, 3)))  # which fit
    np.testing.assert_array_equal(_cat(got, 3), _cat(want, 2)[fit])  # loop orders of those that fit
    for k in (4, 5):  # objective and tie-break of every priced mapping (inf where it does not fit)
        np.testing.assert_allclose(_cat(got, k), _cat(want, k), rtol=1e-12, atol=0)
        np.testing.assert_array_equal(_cat(got, k), _cat(want, k))  # bit for bit, in fact
    assert _rows(r1) == _rows(r0)  # the chosen mappings and every metric of theirs


def test_inductive_kernels_and_overflow_raise_as_before(root):
    spec, dsp = _load(root, "examples/cholesky-dsp.yaml", "c6678")
    for search in (ref.search_mappings, sdf.search_mappings):
        with pytest.raises(SpecError, match="inductive kernel"):
            search(spec, dsp)
    spec, dsp = _load(root, EYE, "eyeriss-256")
    msgs = []
    for search in (ref.search_mappings, sdf.search_mappings):
        with pytest.raises(SpecError) as e:
            search(spec, dsp, objective="energy", max_mappings=1)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "none of 1 mappings" in msgs[0]


def _space(spec, dsp):
    problem = spec.problem
    levels, mi, me = storage_view(dsp, problem.dtype)
    fan = fanouts(levels, mi)
    sp = tuple(l for l in range(len(levels)) if fan[l] > 1)
    dims, primes = [], []
    for d, n in enumerate(problem.sizes):
        for p in dm._primes(n):
            dims.append(d)
            primes.append(p)
    return problem, levels, mi, me, dm._Space(np.array(dims, int), np.array(primes, float), len(levels), sp,
                                               len(levels) + len(sp))


@pytest.mark.parametrize("w,hw", [(EYE, "eyeriss-256"), (GEMM, "eyeriss-168"), (STRIDED, "c6678"), T1, (EYE, FANS)])
def test_pricer_equals_the_model(root, w, hw):
    """Random (mostly overflowing) and mutated (mostly fitting) mappings: the same fit, cycles and energy as
    ``evaluate_mappings``, by the integer pricer and by its fallback (the model itself)."""
    problem, levels, mi, me, space = _space(*_load(root, w, hw))
    rng = np.random.default_rng(11)
    X = dm._sample(space, rng, 3000)
    pos = dm._places(rng.random((3000, space.L, len(DIMS))))
    F = space.factors(X)
    pricer = SearchPricer(problem, levels, mi, me, space.spatial_levels)
    ok = pricer.fit(F).ok
    cand = space.might_fit(X, pricer.bound)  # the sample's necessary condition keeps every mapping that fits
    assert cand is None or np.isin(ok, cand).all()
    keep = np.repeat(ok[:64] if len(ok) else np.arange(8), 40)
    X2, p2, F2 = X[:, keep], pos[:, :, keep], F[:, :, keep]
    dm._mutate_pool(space, X2, p2, np.argsort(p2, axis=1).astype(np.int8), F2, rng)
    np.testing.assert_array_equal(F2, space.factors(X2))  # the mutants' factors: the elites' with one prime moved
    for Fs, ps in ((F, pos), (F2, p2)):
        T, S = space.split(Fs)
        perm = FROM_ORDER[np.argsort(ps.transpose(2, 0, 1), axis=2)]
        o = evaluate_mappings(problem, levels, mi, me, T, S, perm)
        for exact in (True, False):
            pricer.exact = exact
            idx, cycles, energy = pricer(Fs, ps)
            np.testing.assert_array_equal(idx, np.flatnonzero(o["valid"]))
            np.testing.assert_array_equal(cycles, o["cycles"][idx])
            np.testing.assert_array_equal(energy, o["energy_j"][idx])


def test_huge_problems_take_the_model_path(root):
    """Where an access count could pass 2⁵³ the pricer is the model itself (and so still the reference)."""
    big = {"family": "dataflow", "name": "huge", "problem": {"shape": "conv2d", "dims": {
        "C": 1024, "K": 1024, "R": 3, "S": 3, "P": 256, "Q": 256, "N": 32}, "stride": 4, "dilation": 4}}
    spec, dsp = _load(root, big, "eyeriss-256")
    problem, levels, mi, me, space = _space(spec, dsp)
    assert not SearchPricer(problem, levels, mi, me, space.spatial_levels).exact
    kw = dict(objective="edp", max_mappings=6_000, seed=1)
    want, got = [], []
    r0, r1 = ref.search_mappings(spec, dsp, trace=want, **kw), sdf.search_mappings(spec, dsp, trace=got, **kw)
    assert _rows(r1) == _rows(r0) and len(r0.rows)
    np.testing.assert_array_equal(_cat(got, 4), _cat(want, 4))


def test_places_and_sample_equal_their_formulations(root):
    """The pool's loop places are the inverse of ``_orders`` (in the pricer's dimension order); the sample's slots,
    drawn a block at a time, equal ``_initial`` (itself pinned to the one-call formulation)."""
    space = _space(*_load(root, EYE, "eyeriss-256"))[-1]
    R = np.random.default_rng(2).random((5000, space.L, len(DIMS)))
    perm = dm._orders(R)
    pos = dm._places(R)
    np.testing.assert_array_equal(FROM_ORDER[np.argsort(pos, axis=1)].transpose(2, 0, 1), perm)
    X = dm._sample(space, np.random.default_rng(3), 9000)
    np.testing.assert_array_equal(X.T, ref._initial(space, np.random.default_rng(3), 9000))
