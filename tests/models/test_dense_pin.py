"""The dense family's numbers do not move when its cost model is reorganized: every output of the cost model on
101 pinned plans (8 workload × cluster × framework cases, contract-v2 knobs included) equals the values written
by ``tests/models/pin_dense.py`` before the family split, to floating-point reassociation (rtol 1e-9)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pin_dense import OUT, compute  # noqa: E402

DATA = json.loads(OUT.read_text())


@pytest.mark.parametrize("entry", DATA, ids=[f"{d['case'][0]}@{d['case'][1]}" for d in DATA])
def test_dense_outputs_pinned(entry):
    got = compute(tuple(entry["case"]), entry["plans"])
    want = entry["outputs"]
    missing = sorted(set(want) - set(got))
    assert not missing, f"outputs no longer produced: {missing}"
    for k, v in want.items():
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(v), rtol=1e-9, atol=1e-30, err_msg=k)
