"""The search's vectorized evaluation is bit-identical to the digests ``tests/models/eval_pin.py`` wrote before the
evaluation was restructured (issue 16): every output of ``evaluate_space`` over whole spaces (the four benchmark
jobs, two MoE jobs, a long-context job with document masks and both context-parallel layouts) and the arrays the
pruned search keeps."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from eval_pin import CASES, OUT, build, compute, digests_for, moved_figures  # noqa: E402

PIN = json.loads(OUT.read_text())
DATA = PIN["cases"]
HERE = build()
# the digests are exact on the numpy build and CPU (its vendor and SIMD targets) they were written with; the figures
# hold anywhere


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_evaluate_space_bit_identical(case_id):
    want = DATA[case_id]
    got = compute(case_id)
    missing = sorted(set(want) - set(got))
    assert not missing, f"outputs no longer produced: {missing}"
    off = moved_figures(want, got)
    assert not off, f"outputs whose figures moved: {off}"
    exact = digests_for(PIN, case_id, HERE)  # the digests written on this build, where some were
    if exact is not None:
        moved = sorted(k for k in exact if got[k][0] != exact[k][0])
        assert not moved, f"outputs whose bits moved: {moved}"


def test_row_groups_equal_flat_evaluation(monkeypatch):
    """An MoE space whose rows fall in groups of different knob columns (the tp = 1 rows hold no sp=true plan):
    the grouped grid evaluation equals the flat one, unpruned and with every zero level priced on its own rows."""
    import numpy as np

    import parplan.planner.search as search
    from parplan.hardware.catalog import load_cluster
    from parplan.planner.search import KEEP, SearchOptions, evaluate_plans, evaluate_space, run_search
    from parplan.planner.search_grid import column_groups
    from parplan.workloads.loader import load_workload

    w, c = load_workload("mixtral-8x22b"), load_cluster("dgx-a100-8")
    ev = run_search(w, c, SearchOptions(prune=False))
    assert len(column_groups(ev.space.mask, search.GRID_CHUNK // 4)) > 1
    grid, priced = evaluate_space(w, ev.hw, ev.space, KEEP)
    flat = evaluate_plans(w, ev.hw, ev.space.plans, KEEP)
    assert priced.all()
    for k in KEEP:
        assert np.array_equal(grid[k], flat[k]), k
    monkeypatch.setattr(search, "SPLIT_BELOW", 1.0)
    pruned = run_search(w, c)
    assert 0 < pruned.n_evaluated < len(ev.space)
    for k in KEEP:
        assert np.array_equal(pruned.metrics[k][pruned.evaluated], flat[k][pruned.evaluated]), k
        assert np.isnan(pruned.metrics[k][~pruned.evaluated]).all(), k
