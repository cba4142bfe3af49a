"""Per-device durations of one DiT block under a sequence-parallel plan (vectorized over plans): the GEMMs on the
kernel layer's shape efficiency, the full non-causal attention core on the fused-attention curve, memory-bound
kernels at the measured HBM fraction, TP all-reduces, and the SP exchanges on the measured collective curves
(intra- vs inter-node: ``models/primitives/collectives.py``) — everything in seconds, numpy arrays of plans.

Geometry of a plan (``models/dit.py``): P = tp·u·r devices per replica, the sequence sharded u·r ways; Ulysses
(degree u) trades the sequence shard for heads (4 all-to-alls: Q, K, V in, O out, each of the m·h/tp·b bytes one
device holds, m = B·s/(u·r)); the ring (degree r) passes K/V blocks of 2·B·(s/r)·(H/(tp·u))·d·b bytes, r − 1 steps,
each beside one (s/r)² attention block (SEEDS.md S11 (b)).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models.hardware_context import HardwareContext, hardware_context
from parplan.models.primitives.collectives import allreduce_s, alltoall_s, hierarchical_alltoall_s
from parplan.models.primitives.kernels import attention_efficiency, gemm_efficiency

# Two-sided libraries run copy kernels on SMs while an exchange overlaps compute: DeepSeek-V3 technical report
# (arXiv 2412.19437) §3.2.2 dedicates 20 of the H800's 132 SMs to communication to saturate IB and NVLink.
SM_SHARE_TWO_SIDED = 20.0 / 132.0
# Element-wise HBM traffic of a block stream per token, in hidden-widths: two norms (read + write: 4h), modulate /
# gate / residual (2 × (2 reads + 1 write): 6h), GELU on the f/tp MLP width (2·f/tp), RoPE on Q and K (4·h/tp)
NORM_MOD_WIDTHS = 10.0
MEM_KERNELS = 8  # element-wise kernels launched per block stream (2 norms, 2 modulates, 2 gates, GELU, RoPE)


@dataclass(frozen=True)
class DiTContext:
    hw: HardwareContext
    peak: float  # GEMM dtype peak, FLOP/s
    peak16: float  # attention kernels (16-bit)
    bw: float  # sustained HBM bytes/s (streaming fraction)
    t_k: float  # kernel launch overhead, s
    b: float  # bytes per activation / weight value
    dpn: int  # devices per scale-up domain
    memory_bytes: float
    n_devices: int


def dit_context(spec, cluster) -> DiTContext:
    from parplan.errors import SpecError
    from parplan.models.efficiency import efficiency_for

    if not cluster.is_homogeneous:
        raise SpecError(f"{cluster.name} has several device groups: DiT plans run on one", key="--hw")
    g = cluster.group
    hw = hardware_context(g, spec.precision, efficiency_for(g.device))
    return DiTContext(hw, hw.peak_flops_per_s, hw.peak16_flops_per_s,
                      hw.memory_bandwidth_bytes_per_s * hw.kernels.memory_fraction, hw.kernel_overhead_s,
                      spec.value_bytes, int(hw.devices_per_node), float(hw.memory_capacity_bytes), g.n_devices)


def gemm_s(c: DiTContext, M, K, N):
    """One linear layer: max(2MKN at peak × shape efficiency, inputs + outputs + weights through HBM) + launch."""
    M = np.maximum(np.asarray(M, dtype=np.float64), 1.0)
    eff = gemm_efficiency(M, K, N, c.hw.kernels, c.hw.math_dtype)
    flops = 2.0 * M * K * N
    nbytes = (M * K + M * N + K * N) * c.b
    return np.maximum(flops / (c.peak * eff), nbytes / c.bw) + c.t_k


def stream_gemm_s(c: DiTContext, arch, M, tp, rows_mod):
    """A block stream's linear layers on M tokens: QKV (h → 3h/tp), O (h/tp → h), MLP up (h → f/tp) and down
    (f/tp → h) — Megatron column/row splits — plus the adaLN modulation GEMM of the per-sample vector (``rows_mod``
    rows, h → mod·h, replicated)."""
    h, f = float(arch.hidden), float(arch.ffn)
    t = (gemm_s(c, M, h, 3 * h / tp) + gemm_s(c, M, h / tp, h) + gemm_s(c, M, h, f / tp) + gemm_s(c, M, f / tp, h))
    return t + gemm_s(c, rows_mod[0], h, rows_mod[1] * h)


def stream_memory_s(c: DiTContext, arch, M, tp):
    h, f = float(arch.hidden), float(arch.ffn)
    nbytes = M * c.b * (NORM_MOD_WIDTHS * h + 2 * f / tp + 4 * h / tp)
    return nbytes / c.bw + MEM_KERNELS * c.t_k


def allreduce(c: DiTContext, nbytes, tp):
    """TP all-reduce inside the node on the measured scale-up curve."""
    tp = np.asarray(tp, dtype=np.float64)
    bw, lat, mr = c.hw.group_busbw(nbytes, tp, tp, tp, "allreduce")
    return allreduce_s(nbytes, tp, bw, lat, mr)


def attention_block_s(c: DiTContext, arch, batch, sq, sk, heads):
    """Fused non-causal attention forward of ``sq`` queries over ``sk`` keys for ``heads`` heads: 4·sq·sk·d FLOPs per
    head and sample at the kernel's measured e(sk) of the 16-bit peak, plus a launch."""
    d = arch.head_dim
    eff = attention_efficiency(sk, d, False, False, c.hw.attention)
    return 4.0 * batch * sq * sk * heads * d / (c.peak16 * eff) + c.t_k


def alltoall(c: DiTContext, nbytes, ranks, stride):
    """(transfer seconds of the intra share, of the inter share, latency) of an all-to-all of the ``nbytes`` one rank
    holds among ``ranks`` devices ``stride`` apart: flat on the scale-up curve inside a node, hierarchical across
    nodes (collectives.hierarchical_alltoall_s: the off-node share over the device's own NIC beside the in-node
    share over NVLink)."""
    hw = c.hw
    ranks = np.asarray(ranks, dtype=np.float64)
    ci, cx = hw.curve_intra("alltoall"), hw.curve_inter("alltoall")
    n = np.maximum(np.asarray(nbytes, dtype=np.float64), 1.0)
    intra_bw = ci.busbw(n, hw.intra_rate)
    inter_bw = cx.busbw(n, hw.inter_rate)
    per_node = np.clip(np.floor(c.dpn / np.asarray(stride, dtype=np.float64)), 1.0, ranks)
    cross = ranks * stride > c.dpn
    flat = alltoall_s(n, ranks, intra_bw, hw.intra_lat, ci.measured_ranks)
    t_in = np.where(cross, (per_node - 1) / ranks * n / intra_bw, flat)
    t_out = np.where(cross, (ranks - per_node) / ranks * n / inter_bw, 0.0)
    lat = np.where(cross, hw.intra_lat + hw.inter_lat, 0.0)
    # the hierarchical form's total, for the model: max(shares) + latencies (== hierarchical_alltoall_s)
    hier = hierarchical_alltoall_s(n, ranks, per_node, intra_bw, inter_bw, hw.intra_lat, hw.inter_lat)
    total = np.where(cross, hier, flat)
    return t_in, t_out, lat, total, cross


def p2p(c: DiTContext, nbytes, cross):
    """One ring hop of ``nbytes``: α + n/busbw on the point-to-point curve of the link it crosses (NVLink or the
    device's NIC); returns (transfer seconds, latency)."""
    hw = c.hw
    n = np.maximum(np.asarray(nbytes, dtype=np.float64), 1.0)
    bi = hw.curve_intra("p2p").busbw(n, hw.intra_rate)
    bx = hw.curve_inter("p2p").busbw(n, hw.inter_rate)
    return np.where(cross, n / bx, n / bi), np.where(cross, hw.inter_lat, hw.intra_lat)


def sync_s(c: DiTContext, cross, two_sided):
    """Per-exchange synchronisation of a two-sided library — a derived lower bound, not a measured figure: the
    receiver's clear-to-send crosses the link once more (one link latency) and the copy kernel is launched (the
    profile's kernel overhead).  One-sided puts into pre-registered buffers skip both: 0."""
    lat = np.where(cross, c.hw.inter_lat, c.hw.intra_lat)
    return np.where(two_sided, lat + c.t_k, 0.0)
