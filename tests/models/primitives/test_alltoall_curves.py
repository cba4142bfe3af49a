"""All-to-all on measured curves: the classes load with their sources, link kinds map to them, alltoall_s follows
the nccl-tests form by hand, and the hierarchical exchange reduces to the flat one inside one domain."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parplan.models.primitives.calibration import kernels_file
from parplan.models.primitives.collectives import alltoall_s, curve, curve_for, hierarchical_alltoall_s

GB = 1e9
MiB = 2 ** 20


def test_alltoall_classes_load_normalized_and_cited():
    classes = kernels_file().collectives.classes
    for name in ("nvlink-alltoall", "network-alltoall"):
        c = classes[name]
        assert 0 < c.fraction <= 1 and len(c.source) > 80
        assert max(c.points)[1] == 1.0  # shape normalized to 1.0 at the largest measured size
        assert all(0 < s <= 1 for _, s in c.points)
    assert curve("nvlink-alltoall").measured_ranks == 8
    assert curve("network-alltoall").measured_ranks == 256
    # the large-message fractions as derived in kernels.yaml: 370/450 and 51·0.875/50
    assert curve("nvlink-alltoall").fraction == pytest.approx(370 / 450, abs=1e-3)
    assert curve("network-alltoall").fraction == pytest.approx(51 * 0.875 / 50, abs=2e-3)


def test_every_link_kind_has_an_alltoall_curve():
    section = kernels_file().collectives
    assert set(section.kind_alltoall_class) == set(section.kind_class)
    for kind in ("nvlink", "pcie", "ici", "xgmi"):
        assert curve_for(kind, "alltoall").name == "nvlink-alltoall"
    for kind in ("infiniband", "roce", "ethernet", "omnipath", "dcn", "inline"):
        assert curve_for(kind, "alltoall").name == "network-alltoall"
    assert curve_for("nvlink", "alltoall", nvls=True).name == "nvlink-alltoall"  # no in-switch reduction
    assert curve_for("some-new-fabric", "alltoall").name == "network-alltoall"
    # the existing collectives are untouched
    assert curve_for("nvlink", "allreduce", nvls=True).name == "nvlink-nvls"
    assert curve_for("infiniband", "gather").name == "network"


def test_alltoall_by_hand_8_ranks_64_mib():
    n, p, bw, lat = 64 * MiB, 8, 300 * GB, 2e-6
    assert float(alltoall_s(n, p, bw, lat, 8)) == pytest.approx(7 / 8 * n / bw)
    # 16 ranks on a curve measured on 8: + 8 latencies
    assert float(alltoall_s(n, 16, bw, lat, 8)) == pytest.approx(15 / 16 * n / bw + 8 * lat)
    # on the measured NVLink curve of an H100 (450 GB/s per direction): busbw = 450·0.822·shape(64 MiB)
    c = curve("nvlink-alltoall")
    busbw = float(c.busbw(n, 450 * GB))
    assert busbw == pytest.approx(450 * GB * 0.822 * 0.718, rel=1e-9)  # 64 MiB is a measured point of the shape
    assert float(alltoall_s(n, 8, busbw, lat, c.measured_ranks)) == pytest.approx(7 / 8 * n / busbw)


def test_alltoall_is_zero_for_one_rank_and_vectorized():
    assert float(alltoall_s(1e9, 1, 1e11, 1e-6, 8)) == 0.0
    assert float(hierarchical_alltoall_s(1e9, 1, 8, 1e11, 1e10, 1e-6, 5e-6)) == 0.0
    out = alltoall_s(np.array([[1e6], [1e8]]), np.array([1, 2, 8, 64]), 1e11, 1e-6, 8)
    assert out.shape == (2, 4) and np.all(out[:, 0] == 0) and np.all(out[:, 1:] > 0)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e3, 1e10), st.floats(1.01, 4.0), st.sampled_from([2, 4, 8, 16, 64, 256]),
       st.sampled_from(["nvlink", "infiniband"]))
def test_alltoall_time_is_monotone_in_bytes(n, grow, p, kind):
    c = curve_for(kind, "alltoall")
    rate = 450 * GB if kind == "nvlink" else 50 * GB

    def t(b):
        return float(alltoall_s(b, p, c.busbw(b, rate), 2e-6, c.measured_ranks))

    # below the smallest measured size the time is flat (latency bound): equal up to rounding
    assert t(n * grow) >= t(n) * (1 - 1e-12) and t(n) > 0


@pytest.mark.parametrize("p", [2, 4, 8])
def test_hierarchical_reduces_to_flat_inside_one_domain(p):
    n = np.array([1e5, 3e7, 2e9])
    flat = alltoall_s(n, p, 3e11, 2e-6, 8)
    for r in (p, 8, 72):  # every rank in one scale-up domain
        hier = hierarchical_alltoall_s(n, p, r, 3e11, 4e10, 2e-6, 5e-6)
        np.testing.assert_allclose(hier, flat, rtol=1e-12)


def test_hierarchical_splits_the_traffic_by_destination():
    n, p, r = 1e9, 64, 8
    bi, bx, li, lx = 3.7e11, 4.5e10, 2e-6, 5e-6
    t = float(hierarchical_alltoall_s(n, p, r, bi, bx, li, lx))
    t_nic = (p - r) / p * n / bx
    t_nvl = (r - 1) / p * n / bi
    assert t == pytest.approx(max(t_nic, t_nvl) + li + lx)
    # one rank per domain: everything but the rank's own share goes over the NICs
    assert float(hierarchical_alltoall_s(n, p, 1, bi, bx, li, lx)) == pytest.approx((p - 1) / p * n / bx + li + lx)
    # more ranks per domain never makes it slower (a larger share stays on the faster link)
    ts = [float(hierarchical_alltoall_s(n, p, rr, bi, bx, li, lx)) for rr in (1, 2, 4, 8, 16, 32)]
    assert all(b <= a for a, b in zip(ts, ts[1:]))
