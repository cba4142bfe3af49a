"""Cost terms of the context-parallel layouts (``cp_kind``) and of sequence workloads (``training.sequences``), one
layer, one micro-batch, one device, vectorized over plans.  The statistics per (cp, layout) come from
``models/longctx.py``; here they become attention FLOPs, kernel key spans and communication on the topology.

* ring: (c−1) K,V blocks of 2·T·k/t·e bytes forward, K,V,dK,dV backward, point-to-point on the CP group's link,
  behind the busiest device's attention (Liu et al. 2023; Megatron-Core context parallelism);
* ulysses: all-to-alls of Q,K,V in and O out forward (T·(2q+2k)/t·e bytes a rank holds), the same backward
  (dO in, dQ,dK,dV out), not overlapped (DeepSpeed-Ulysses, Jacobs et al. 2023 §3);
* hybrid (USP, Fang & Zhao 2024): those all-to-alls over the u Ulysses ranks inside a node, then a ring over the
  r = c/u groups with the same K,V block bytes (each rank holds u·T tokens of k/(t·u) heads);
* dcp: the K,V tokens the busiest receiver gets for its split documents (``CpStats.kv_tokens``), one round of
  point-to-point transfers behind its attention (DCP, Jiang et al. SOSP 2025).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.longctx import CP_KINDS, cp_stats, hybrid_ulysses_degree
from parplan.models.primitives.collectives import alltoall_s
from parplan.models.primitives.kernels import attention_efficiency


@dataclass
class Layout:
    """Per plan: busiest device's admitted pairs per pack, the kernel's key span, whether the kernel is causal
    (whole documents local), the layout index, Ulysses degree u, ring degree r, K,V tokens received per pack,
    transfer rounds."""

    pairs_dev: np.ndarray
    span: np.ndarray
    causal_kernel: np.ndarray
    kind: np.ndarray
    u: np.ndarray
    r: np.ndarray
    kv_tokens: np.ndarray
    rounds: np.ndarray
    tokens_max: np.ndarray
    profiles: tuple = ()  # per distinct (cp, tp, layout): the ring's (packs, device, step) pairs, or None
    which: object = None  # per plan: the index into ``profiles``


def active(job, P) -> bool:
    """The fast path (today's static ring over fixed-length causal sequences) unless a sequence workload or a
    non-ring layout is asked for."""
    return getattr(job, "sequences", None) is not None or bool(np.any(np.asarray(P.cp_kind) != 0))


def model_attention_share(job) -> float:
    """The share of a causal sample's (query, key) pairs its documents' mask admits (1 without a sequence workload):
    model FLOPs keep the Megatron convention for a causal sample (non-causal attention counted) and scale its
    attention by this share, so a sliding window or document mask does not count pairs never computed (MFU above
    100 % otherwise, derived)."""
    seqs = getattr(job, "sequences", None)
    if seqs is None:
        return 1.0
    s = float(job.seq_len)
    return min(cp_stats(seqs, int(job.seq_len), 1, "ring").pairs / (s * (s + 1.0) / 2.0), 1.0)


def check_heads(model, tp, cp, kind, dpn) -> None:
    """Ulysses splits the heads of a TP rank over the CP ranks: (kv_heads/tp) % cp == 0 (and heads/tp)."""
    kvl = np.asarray(model.kv_heads) // np.maximum(tp, 1)
    hl = np.asarray(model.heads) // np.maximum(tp, 1)
    bad = (kind == CP_KINDS.index("ulysses")) & (cp > 1) & (((kvl % cp) != 0) | ((hl % cp) != 0))
    if np.any(bad):
        i = np.flatnonzero(np.broadcast_to(bad, np.broadcast(bad, tp, cp).shape).ravel())[0]
        t_, c_ = np.broadcast_to(tp, bad.shape).ravel()[i], np.broadcast_to(cp, bad.shape).ravel()[i]
        raise SpecError(f"cp_kind=ulysses needs cp={int(c_)} to divide the kv_heads per TP rank "
                        f"({model.kv_heads}/{int(t_)})", key="plan.cp_kind", allowed=list(CP_KINDS),
                        hint="use cp_kind=hybrid (Ulysses inside, ring across) or ring")


def _unique_rows(cp, tp, kind):
    """``np.unique`` of the (cp, tp, kind) rows with ``return_inverse`` (rows in lexicographic order), by one sort of
    a packed int64 key where the values fit 20 bits each (the rows' order is the keys' order)."""
    if cp.size and min(cp.min(), tp.min(), kind.min()) >= 0 and max(cp.max(), tp.max(), kind.max()) < 1 << 20:
        keys, inv = np.unique((cp << 40) | (tp << 20) | kind, return_inverse=True)
        return np.stack([keys >> 40, (keys >> 20) & 0xFFFFF, keys & 0xFFFFF], axis=1), inv
    return np.unique(np.stack([cp, tp, kind], axis=1), axis=0, return_inverse=True)


def layout(model, job, c) -> Layout:
    """The per-plan layout statistics (cached on the step context)."""
    if getattr(c, "lc", None) is not None:
        return c.lc
    P = c.P
    shape = np.broadcast(c.cp, c.tp, P.cp_kind).shape
    cp = np.broadcast_to(P.cp, shape).astype(np.int64)
    tp = np.broadcast_to(P.tp, shape).astype(np.int64)
    kind = np.broadcast_to(P.cp_kind, shape).astype(np.int64)
    dpn = int(c.hw.devices_per_node)
    check_heads(model, tp, cp, kind, dpn)
    uniq, inv = _unique_rows(cp.ravel(), tp.ravel(), kind.ravel())
    cols = np.zeros((len(uniq), 8))
    profiles = []
    seqs, s = getattr(job, "sequences", None), int(job.seq_len)
    for j, (cp_, tp_, k_) in enumerate(uniq.tolist()):
        name = CP_KINDS[k_] if cp_ > 1 else "ring"
        u = hybrid_ulysses_degree(cp_, int(model.kv_heads) // tp_, dpn // tp_) if name == "hybrid" else 1
        u = cp_ if name == "ulysses" else u
        if seqs is None and name == "ring" and cp_ > 1:
            # fixed-length ring plans among other layouts are priced by the static ring: layer_terms.attention_block
            # and cp_exchange select its terms for them element by element (np.where on lay.kind == 0), so the
            # ring's per-device step profile (cp² entries) is never read; Ulysses' O(1) statistics of the same
            # (cp, tp) keep the discarded branch finite
            st = cp_stats(None, s, int(cp_), "ulysses")
        else:
            st = cp_stats(seqs, s, int(cp_), name, int(u) if name == "hybrid" else 1)
        # causal kernels where whole sequences are local (Ulysses; DCP without split documents), ring blocks else
        causal_k = name == "ulysses" or cp_ == 1 or (name == "hybrid" and cp_ // u == 1) or (
            name == "dcp" and st.kv_tokens == 0)
        profiles.append(st.profile)
        cols[j] = (st.dev_max, st.key_span, causal_k, u, cp_ // u, st.kv_tokens, st.steps, st.tokens_max)
    out = [cols[inv.ravel(), i].reshape(shape) for i in range(8)]
    c.lc = Layout(pairs_dev=out[0], span=out[1], causal_kernel=out[2] > 0.5, kind=kind, u=out[3], r=out[4],
                  kv_tokens=out[5], rounds=out[6], tokens_max=out[7], profiles=tuple(profiles),
                  which=inv.reshape(shape))
    return c.lc


def core_flops_fwd(model, c, lay: Layout):
    """Attention core forward FLOPs of one micro-batch on the busiest device: 2·pairs·(d_qk + d_v) per head over
    the b packs of the micro-batch, split over the TP ranks' heads."""
    qk, vd = float(getattr(model, "attn_qk_dim", model.q_dim)), float(getattr(model, "attn_v_dim", model.q_dim))
    return 2.0 * c.b * lay.pairs_dev * (qk + vd) / c.tp


def flash_times(c, hw, flops, lay: Layout, hd):
    """Fused attention at the kernel's efficiency for the layout's key span: causal kernels where whole documents
    (or whole sequences, Ulysses) are local, ring blocks otherwise; backward 2.5× forward FLOPs."""
    ac = hw.attention
    span = np.maximum(lay.span, 1.0)
    eff_f = np.where(lay.causal_kernel, attention_efficiency(span, hd, True, False, ac),
                     attention_efficiency(span, hd, False, False, ac))
    eff_b = np.where(lay.causal_kernel, attention_efficiency(span, hd, True, True, ac),
                     attention_efficiency(span, hd, False, True, ac))
    return flops / (c.peak16 * eff_f) + c.t_k, 2.5 * flops / (c.peak16 * eff_b) + 2 * c.t_k


def cp_comm(model, c, lay: Layout, attn_fwd, attn_bwd):
    """(exposed forward, exposed backward, hidden) CP communication of the layouts, and the parts by name."""
    hw, fw = c.hw, c.hw.framework
    k, q, e = float(model.kv_dim), float(model.q_dim), c.e
    ring_k, uly, hyb, dcp = (CP_KINDS.index(n) for n in ("ring", "ulysses", "hybrid", "dcp"))
    on = c.cp > 1
    # all-to-alls (Ulysses part): u ranks, extent tp·u devices
    u = np.where(lay.kind == uly, c.cp, np.where(lay.kind == hyb, lay.u, 1.0))
    n_a2a = c.T * (2.0 * q + 2.0 * k) / c.tp * e
    a_bw, a_lat, a_mr = hw.group_busbw(n_a2a, c.tp * u, 1.0, u, "alltoall")
    a2a = np.where(on & (u > 1), alltoall_s(n_a2a, u, a_bw, a_lat, a_mr), 0.0)
    # ring part: r ranks over the whole CP group extent (the hybrid's groups are strided by tp·u)
    kv_block = 2.0 * c.T * k / c.tp * e
    r_bw, r_lat, _ = hw.group_busbw(kv_block, c.tp * c.cp, 1.0, 2.0, "p2p")
    r = np.where(lay.kind == uly, 1.0, np.where(lay.kind == hyb, lay.r, c.cp))
    ring_f = np.where(on & (r > 1), (r - 1.0) * (kv_block / r_bw + r_lat), 0.0)
    ring_b = np.where(on & (r > 1), (r - 1.0) * (2 * kv_block / r_bw + r_lat), 0.0)
    # DCP: the busiest receiver's K,V tokens of split documents, one round
    dcp_bytes = c.b * lay.kv_tokens * 2.0 * k / c.tp * e
    d_f = np.where(lay.rounds > 0, dcp_bytes / r_bw + r_lat, 0.0)
    ring_f = np.where(lay.kind == dcp, d_f, ring_f)
    ring_b = np.where(lay.kind == dcp, 2.0 * d_f, ring_b)
    ov = bool(fw.cp_comm_overlap)
    ring_fx = np.maximum(0.0, ring_f - (attn_fwd if ov else 0.0))
    ring_bx = np.maximum(0.0, ring_b - (attn_bwd if ov else 0.0))
    if ov:  # a ring step hides its block only behind that step's own compute: Σ_k max(comp_k, block)
        ring_fx = _stepwise(c, lay, ring_fx, attn_fwd, ring_f, r)
        ring_bx = _stepwise(c, lay, ring_bx, attn_bwd, ring_b, r)
    f_ = ring_fx + a2a
    b_ = ring_bx + a2a
    hidden = (ring_f - ring_fx) + (ring_b - ring_bx)
    parts = {"cp_a2a_s": a2a, "cp_ring_fwd_s": ring_f, "cp_ring_bwd_s": ring_b,
             "cp_kv_bytes": np.where(lay.kind == dcp, dcp_bytes, np.where(r > 1, (r - 1.0) * kv_block, 0.0)),
             "cp_a2a_bytes": np.where(u > 1, n_a2a, 0.0)}
    return f_, b_, hidden, parts


def _stepwise(c, lay: Layout, flat, attn, ring_total, r):
    """Exposed ring time with per-step overlap: per pack, the slowest device's Σ_{k<r−1} max(comp_k, block) +
    comp_last (mean over packs), less the attention time; ``flat`` (the aggregate excess) where no profile."""
    shape = np.broadcast(flat, attn, ring_total, lay.which).shape
    out = np.array(np.broadcast_to(flat, shape), dtype=np.float64)
    attn_b, tot_b = np.broadcast_to(attn, shape), np.broadcast_to(ring_total, shape)
    r_b, pairs_b = np.broadcast_to(r, shape), np.broadcast_to(lay.pairs_dev * c.b, shape)
    which = np.broadcast_to(lay.which, shape)
    for j, prof in enumerate(lay.profiles):
        sel = (which == j) & (r_b > 1)
        if prof is None or not np.any(sel):
            continue
        rr = prof.shape[-1]
        tau = attn_b[sel] / np.maximum(pairs_b[sel], 1.0)  # seconds per pair on the busiest device
        blk = tot_b[sel] / (rr - 1)
        comp = prof[None, :, :, :] * np.broadcast_to(c.b, shape)[sel][:, None, None, None] * tau[:, None, None, None]
        body = np.maximum(comp[..., :-1], blk[:, None, None, None]).sum(axis=-1) + comp[..., -1]
        out[sel] = np.maximum(0.0, body.max(axis=-1).mean(axis=-1) - attn_b[sel])
    return out
