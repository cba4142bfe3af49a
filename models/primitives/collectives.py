"""Collectives priced from measured bus-bandwidth-vs-size curves per link class (vectorized).

nccl-tests define bus bandwidth so that a ring all-reduce of n bytes over p ranks takes 2(p−1)/p·n/busbw and an
all-gather / reduce-scatter (p−1)/p·n/busbw.  The model keeps those forms but takes busbw from measurements:
busbw(n) = link rate · fraction(class, ranks) · shape(class, n), shape interpolated on log2(n) between the
normalized measured points (``catalogs/calibration/kernels.yaml``) and falling linearly below the smallest one
(latency bound).  Rings longer than the measured rank count add 2·α per extra rank (all-reduce) or α (gather).

All-to-all (nccl-tests: busbw = algbw·(p−1)/p, since 1/p of a rank's buffer stays local) is priced the same way on
its own measured classes (``nvlink-alltoall``, ``network-alltoall``): (p−1)/p·n/busbw, n = the bytes one rank holds
for the exchange.  Across scale-up domains the exchange is hierarchical (DeepEP): the off-domain share goes over the
NICs while the in-domain share moves over the scale-up links, the two overlapping.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from parplan.models.primitives.calibration import kernels_file

# ranks the measured curves were taken at (nccl-tests on one 8-GPU node; the inter-node curve on 4 x 8 GPUs)
MEASURED_RANKS = {"network": 32}
DEFAULT_MEASURED_RANKS = 8


@dataclass(frozen=True)
class Curve:
    name: str
    fraction: float
    log2_bytes: tuple
    shape: tuple
    ranks: tuple | None  # ((ranks, fraction), ...) where the fraction depends on the rank count (NVLS)
    measured_ranks: int
    source: str

    @cached_property
    def _tables(self):
        """The curve's points as arrays, built once: log2 sizes, shapes, and for each ``searchsorted(side="right")``
        index the lower point's shape and 2^log2-size (the index less one, clipped to the points)."""
        lx, sh = np.array(self.log2_bytes), np.array(self.shape)
        lo = np.clip(np.arange(len(lx) + 1) - 1, 0, len(lx) - 1)
        rk = fr = None
        if self.ranks is not None:
            rk = np.array([r for r, _ in self.ranks], dtype=np.float64)
            fr = np.array([f for _, f in self.ranks], dtype=np.float64)
        return lx, sh, sh[lo], 2.0 ** lx[lo], rk, fr

    def busbw(self, nbytes, rate, ranks=None):
        """Bus bandwidth (bytes/s) for messages of ``nbytes`` on a link of ``rate`` bytes/s per direction."""
        n = np.maximum(np.asarray(nbytes, dtype=np.float64), 1.0)
        return self.busbw_of(n, np.log2(n), rate, ranks)

    def busbw_of(self, n, x, rate, ranks=None):
        """``busbw`` of messages of n = max(nbytes, 1) bytes, x = log2(n) (computed once for several curves)."""
        lx, sh, sh_lo, pw_lo, rk, fr = self._tables
        if len(lx) == 1:  # a flat curve (point-to-point: one message, its latency priced separately)
            shape = np.full_like(x, sh[0])
        else:
            shape = np.interp(x, lx, sh)
            # between two measured sizes the time n / busbw never falls below the lower point's: a steep rise of
            # the interpolated shape (more than ∝ n) is capped, so a larger message is never faster
            i = np.searchsorted(lx, x, side="right")
            shape = np.minimum(shape, sh_lo[i] * n / pw_lo[i])
            shape = np.where(x < lx[0], sh[0] * n / 2.0 ** lx[0], shape)
        frac = self.fraction
        if rk is not None and ranks is not None:
            frac = np.interp(np.asarray(ranks, dtype=np.float64), rk, fr)
        return rate * frac * shape


@lru_cache(maxsize=None)
def curve(name: str) -> Curve:
    c = kernels_file().collectives.classes[name]
    pts = sorted(c.points)
    measured = c.measured_ranks or MEASURED_RANKS.get(name, DEFAULT_MEASURED_RANKS)
    return Curve(name=name, fraction=c.fraction, log2_bytes=tuple(float(np.log2(b)) for b, _ in pts),
                 shape=tuple(float(s) for _, s in pts), ranks=tuple(tuple(r) for r in c.ranks) if c.ranks else None,
                 measured_ranks=measured, source=c.source)


@lru_cache(maxsize=None)
def _p2p_curve(cls: str) -> Curve:
    """One message straight to the peer: the class's large-message fraction, flat in size."""
    c = curve(cls)
    return Curve(name=f"p2p-{cls}", fraction=c.fraction, log2_bytes=(0.0,), shape=(1.0,), ranks=None,
                 measured_ranks=2, source=c.source)


def curve_for(kind: str, collective: str, nvls: bool = False) -> Curve:
    """The measured curve of a link kind for ``collective`` in (allreduce, gather, p2p, alltoall)."""
    section = kernels_file().collectives
    if collective == "alltoall":  # NVLS does not apply: all-to-all has no in-switch reduction
        return curve(section.kind_alltoall_class.get(kind, "network-alltoall"))
    cls = section.kind_class.get(kind, "network")
    if collective == "p2p":
        if kind == "nvlink":
            return curve("p2p-nvlink")
        return _p2p_curve(cls)
    if cls == "nvlink" and kind == "nvlink":
        if nvls:
            return curve("nvlink-nvls" if collective == "allreduce" else "nvlink-gather")
    return curve(cls)


def allreduce_s(nbytes, ranks, busbw, latency, measured_ranks):
    """Ring-form all-reduce on measured bus bandwidth: 2(p−1)/p·n/busbw + 2α per rank beyond the measured ring."""
    p = np.maximum(np.asarray(ranks, dtype=np.float64), 1.0)
    extra = 2.0 * np.maximum(p - measured_ranks, 0.0) * latency
    return np.where(p > 1, 2.0 * (p - 1) / p * nbytes / busbw + extra, 0.0)


def gather_s(nbytes, ranks, busbw, latency, measured_ranks):
    """All-gather or reduce-scatter of n total bytes: (p−1)/p·n/busbw + α per rank beyond the measured ring."""
    p = np.maximum(np.asarray(ranks, dtype=np.float64), 1.0)
    extra = np.maximum(p - measured_ranks, 0.0) * latency
    return np.where(p > 1, (p - 1) / p * nbytes / busbw + extra, 0.0)


def alltoall_s(nbytes, ranks, busbw, latency, measured_ranks):
    """All-to-all of the n bytes one rank holds (all destinations, itself included) on measured bus bandwidth
    (nccl-tests alltoall: busbw = algbw·(p−1)/p): (p−1)/p·n/busbw + α per rank beyond the measured rank count."""
    p = np.maximum(np.asarray(ranks, dtype=np.float64), 1.0)
    n = np.asarray(nbytes, dtype=np.float64)
    extra = np.maximum(p - measured_ranks, 0.0) * latency
    return np.where(p > 1, (p - 1) / p * n / busbw + extra, 0.0)


def hierarchical_alltoall_s(nbytes, ranks, ranks_per_domain, intra_busbw, inter_busbw, intra_lat, inter_lat):
    """Hierarchical all-to-all (DeepEP normal kernels, DeepSeek-V3 report §3.2.2: RDMA to the peer GPU with the same
    in-node index, then NVLink forwarding inside that node, both streams at once): of the n bytes one rank holds, the
    share for other scale-up domains (p−r)/p crosses the NICs and the in-domain share (r−1)/p the scale-up links,
    overlapped (max), plus one network and one forwarding latency.  r = ranks per domain (clipped to [1, p]); with
    r ≥ p it is the flat exchange (p−1)/p·n/intra_busbw, i.e. ``alltoall_s`` within its measured rank count."""
    p = np.maximum(np.asarray(ranks, dtype=np.float64), 1.0)
    r = np.clip(np.asarray(ranks_per_domain, dtype=np.float64), 1.0, p)
    n = np.asarray(nbytes, dtype=np.float64)
    t_intra = (r - 1) / p * n / intra_busbw
    t_inter = (p - r) / p * n / inter_busbw
    crosses = p > r
    t = np.maximum(t_intra, t_inter) + np.where(crosses, intra_lat + inter_lat, 0.0)
    return np.where(p > 1, t, 0.0)
