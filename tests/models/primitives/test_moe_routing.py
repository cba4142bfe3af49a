"""MoE routing statistics (catalogs/calibration/moe.yaml): the strict schema, the imbalance factor's properties, the
routing-kernel byte counts and the dispatch buffer rules."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parplan.errors import SpecError
from parplan.models.primitives.calibration import load_calibration
from parplan.models.primitives.moe_routing import (MoEFile, deepep_buffer_bytes, dispatch_buffer_bytes,
                                                   imbalance_factor, imbalance_spread, moe_file,
                                                   permute_bytes_per_token, router_bytes_per_token)


def test_moe_file_loads_cited():
    f = moe_file()
    assert "TensorRT-LLM" in f.imbalance.anchor_source and f.imbalance.anchor.max_over_mean == pytest.approx(1.109)
    assert f.imbalance.forced_balance == 1.0 and "force" in f.imbalance.forced_balance_source
    assert {m.max_over_mean for m in f.imbalance.measured} >= {2.564, 11.948}
    assert all(len(m.source) > 20 for m in f.imbalance.measured)
    assert "derived" in f.routing.router_source and "derived" in f.routing.permute_source
    assert "config.hpp" in f.buffers.deepep.source


def test_schema_is_strict(tmp_path, monkeypatch):
    import parplan.models.primitives.calibration as cal
    text = (cal.catalog_dir("calibration") / "moe.yaml").read_text(encoding="utf-8")
    (tmp_path / "moe.yaml").write_text(text.replace("  law: ", "  lawx: "), encoding="utf-8")
    monkeypatch.setattr(cal, "catalog_dir", lambda sub: tmp_path)
    with pytest.raises(SpecError, match="lawx"):
        load_calibration("moe.yaml", MoEFile)


def test_imbalance_is_one_at_ep_1_and_reproduces_the_anchor():
    assert float(imbalance_factor(1, 256, 8)) == 1.0
    assert float(imbalance_factor(32, 256, 8)) == pytest.approx(1.109)
    assert imbalance_spread() == pytest.approx(0.109 / np.sqrt(2 * np.log(32)))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 1024), st.integers(1, 1024), st.integers(1, 8))
def test_imbalance_at_least_one_and_non_decreasing_in_ep(ep, d, k):
    experts = max(ep, 8)
    a = float(imbalance_factor(ep, experts, k))
    b = float(imbalance_factor(ep + d, max(experts, ep + d), k))
    assert a >= 1.0 and b >= a


def test_override_wins_and_forced_balance_is_one():
    ep = np.array([1, 8, 64])
    np.testing.assert_array_equal(imbalance_factor(ep, 64, 8, override=1.0), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(imbalance_factor(ep, 64, 8, override=1.7), [1.7, 1.7, 1.7])
    with pytest.raises(ValueError, match=">= 1"):
        imbalance_factor(8, 64, 8, override=0.9)
    with pytest.raises(ValueError, match="experts >= top_k"):
        imbalance_factor(8, 4, 8)


def test_imbalance_is_vectorized_and_capped_at_the_expert_count():
    out = imbalance_factor(np.array([[1, 4], [8, 64]]), 8, 2)
    assert out.shape == (2, 2)
    assert out[1, 1] == out[1, 0]  # 64 ranks for 8 experts: priced as 8


def test_router_and_permute_bytes_by_hand():
    # DeepSeek-V3-like: E = 256, k = 8, h = 7168, bf16
    assert float(router_bytes_per_token(256, 8)) == 12 * 256 + 12 * 8
    assert float(permute_bytes_per_token(7168, 8, 2, 256)) == 8 * (2 * 7168 * 2 + 8) + 256
    v = permute_bytes_per_token(np.array([1024, 4096]), 2, 2, 8)
    assert v.shape == (2,) and v[1] > v[0]


def test_dispatch_buffers():
    # all-to-all: the copies routed to the local experts on the busiest rank
    a2a = float(dispatch_buffer_bytes("alltoall", 4096, 7168, 8, 64, 2, 1.1))
    assert a2a == pytest.approx(4096 * 8 * 7168 * 2 * 1.1)
    assert float(dispatch_buffer_bytes("allgather", 4096, 7168, 8, 8, 2)) == 4096 * 8 * 7168 * 2
    assert float(dispatch_buffer_bytes("alltoall", 4096, 7168, 8, 1)) == 0.0
    # DeepEP, 8 ranks: no RDMA buffer; 10 channels x 8 ranks x 256 tokens x (h·2 + 128·12 + 128·4) + headers
    intra = float(deepep_buffer_bytes(7168, 8))
    assert intra == pytest.approx(10 * 8 * (5 * 4 + 256 * (7168 * 2 + 128 * 12 + 128 * 4)))
    inter = float(deepep_buffer_bytes(7168, 64))
    assert inter > intra  # an RDMA buffer appears beyond one NVLink domain
    assert float(dispatch_buffer_bytes("flex", 1, 7168, 8, 64)) == inter  # independent of the token count
    with pytest.raises(ValueError, match="unknown MoE dispatcher"):
        dispatch_buffer_bytes("deepep", 1, 7168, 8, 8)
