"""Timeloop-style mapping model: the T1 golden case exact (ANCHORS Part B §2.2, timeloop-accelergy-exercises 00,
H: 48 MACs, 48 cycles, 102.86 pJ, 2.14 pJ/MAC), T2 (exercise 06: Timeloop's own Eyeriss mapping priced within
2 % in energy, its access counts where the model has no halo reuse), and the mapper."""
from __future__ import annotations

import pytest

from parplan.dataflow import estimate, suggest
from parplan.errors import SpecError


def test_t1_exact(root):
    e = estimate(root / "examples/dataflow-conv1d-t1.yaml", root / "examples/dataflow-t1-arch.yaml")
    assert e.macs == 48 and e.cycles == 48 and e.utilization == 1.0
    assert round(e.energy_j * 1e12, 2) == 102.86 and round(e.pj_per_mac, 2) == 2.14
    assert e.energy_parts["Buffer_j"] * 1e12 == pytest.approx(20.16 + 20.16 + 33.60)  # weights, inputs, outputs
    assert sum(e.energy_parts.values()) == pytest.approx(e.energy_j)


def test_t1_mapper_finds_the_reference(root):
    best = suggest(root / "examples/dataflow-conv1d-t1.yaml", root / "examples/dataflow-t1-arch.yaml",
                   objective="energy", max_mappings=2000).rows[0]
    assert best["cycles"] == 48 and round(best["energy_j"] * 1e12, 2) == 102.86


def test_t2_timeloop_mapping_and_mapper():
    import timeloop_cases as tc

    b = tc.t2(max_mappings=20_000)
    assert b["macs"] == tc.T2["macs"]
    assert abs(b["ref_pj"] / tc.T2["pj_per_mac"] - 1) < 0.03
    assert abs(b["ref_cycles"] / tc.T2["cycles"] - 1) < 0.10
    assert b["e_pj"] < 1.05 * tc.T2["pj_per_mac"]  # the mapper lands within 5 % of Timeloop's energy


def test_t2_access_counts_match_timeloop_where_modeled():
    import numpy as np

    import timeloop_cases as tc
    from parplan.hardware.dsp import load_dsp
    from parplan.models.dataflow_energy import evaluate_mappings, mapping_arrays, storage_view
    from parplan.workloads.dataflow import load_dataflow

    w = load_dataflow({"family": "dataflow", "name": "t2", "problem": {"shape": "conv2d", "dims": tc.T2_LAYER},
                       "mapping": tc.T2_MAPPING})
    levels, mi, me = storage_view(load_dsp("eyeriss-256"), "int16")
    o = evaluate_mappings(w.problem, levels, mi, me, *mapping_arrays(w.problem, levels, w.mapping))
    acc = o["per_tensor"]
    names = [lv.name for lv in levels]
    # (reads, fills, updates) per instance from ref-output/timeloop-mapper.stats.txt
    assert np.ravel(acc["weights"][names.index("WeightRegFile")][:2]).tolist() == [308281344, 2752512]
    assert float(np.ravel(acc["weights"][names.index("DRAM")][0])[0]) == 132120576
    assert float(np.ravel(acc["inputs"][names.index("DRAM")][0])[0]) == 79822848
    psum = [float(np.ravel(x)[0]) for x in acc["outputs"][names.index("PsumRegFile")]]
    assert psum == [307478528, 25690112, 308281344]
    assert float(np.ravel(acc["outputs"][names.index("GlobalBuffer")][2])[0]) == 822083584


def test_mapping_errors(root, tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("family: dataflow\nname: m\nproblem: {shape: conv1d, dims: {P: 16, R: 3}}\n"
                 "mapping: [{level: Nope, temporal: {P: 16}}]\n")
    with pytest.raises(SpecError, match="unknown level"):
        estimate(f, root / "examples/dataflow-t1-arch.yaml")
    f.write_text("family: dataflow\nname: m\nproblem: {shape: conv1d, dims: {P: 16, X: 3}}\n")
    with pytest.raises(SpecError, match="unknown dimension"):
        estimate(f, "eyeriss-256")
    f.write_text("family: dataflow\nname: m\nproblem: {shape: conv1d, dims: {P: 16, R: 3}}\n"
                 "mapping: [{level: Buffer, temporal: {P: 5}}]\n")
    with pytest.raises(SpecError, match="does not divide"):
        estimate(f, root / "examples/dataflow-t1-arch.yaml")
