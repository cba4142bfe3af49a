"""A device's ports under MoE training (vectorized over plans; used by ``step_terms.assemble``): the expert
all-to-all and the per-micro-batch data-parallel collectives leave a device by a port — NVLink where the group sits
inside one scale-up domain, the NIC where it spans domains — and what one port carries bounds the step.

* One port, one budget: a steady-state slot is at least the work of its busiest port in it — the all-to-all
  volume of the stage's MoE layers (every transfer, hidden or not: an overlap hides time, not bytes; full
  recompute replays the forward's dispatch and combine) plus the DP collectives that travel on the same port
  (ZeRO-2 reduce-scatters, ZeRO-3 gathers and reduce-scatters, the ZeRO-1/2 all-gather spread over the micro-
  batches), and the port idles while the output heads compute (the exposed all-to-alls before and after them
  leave nothing to send: the executor's trace shows the link idle there).  What the overlap formulas hid beyond
  that budget is contention, charged to the all-to-all part.
* One port, two flows: where the EP group and the DP group leave by the same port and no pair overlap hides the
  all-to-all, the two share the port equally, so the exposed all-to-all takes up to its own time again
  (min(exposed all-to-all, DP work on the port) per micro-batch and stage).  Under the pair overlap the exposed
  part is the pair's excess, which a faster compute enlarges; the port budget prices that case.

Both are monotone: a faster link shrinks the work, a faster compute shrinks the slot by at least what the budget
adds (m·max(slot + steady, work) − m·slot never grows faster than the slot shrinks).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PortStage:
    """One pipeline stage (first, last or the largest middle one): its layer counts by kind, its slot and its DP
    collectives per micro-batch (seconds)."""

    counts: list
    slot: object
    rs: object
    ag: object
    ag_b: object
    idle: object = 0.0  # the output heads' compute per micro-batch (the port has nothing to carry meanwhile)


def dp_slot_work(zero, rs, ag, ag_b):
    """A stage's per-micro-batch DP collectives (seconds): ZeRO-2's reduce-scatters, ZeRO-3's forward and backward
    gathers and reduce-scatters; nothing per micro-batch otherwise."""
    return np.select([zero == 2, zero == 3], [rs, ag + ag_b + rs], 0.0)


def port_contention(stages, *, over, zero, rc, pp, m, t_max, steady_dp, gath, share, dp_on, dp_span, ep_span, dpn):
    """Seconds the ports add to the step beyond the compute slots (``m`` × the excess of the busiest port's work,
    or of the shared slot, over the slot + its steady DP exposure)."""
    x0 = lambda c_, w: np.maximum(0.0, c_ - w)  # noqa: E731
    dp_nic = (dp_span > dpn) & dp_on
    ep_nvl = ep_span <= dpn
    replay = np.where(rc == 2, 2.0, 1.0)  # full recompute sends the forward's dispatch and combine again
    z12 = (zero == 1) | (zero == 2)
    ag_mb = np.where(z12, np.maximum(stages[0].ag, stages[1].ag) / m, 0.0)  # the next step's all-gather, per slot

    def dp_work(st: PortStage):
        return np.where(dp_on, dp_slot_work(zero, st.rs, st.ag, st.ag_b) + ag_mb, 0.0)

    def work(st: PortStage):
        # NIC: the off-domain all-to-all share (dispatch + 3 combines' worth) and the DP collectives across domains
        nic = over(st.counts, lambda k: k.terms.nic_a2a) + np.where(dp_nic, dp_work(st), 0.0)
        # NVLink: the whole all-to-all of an in-domain EP group and the DP collectives inside the domain
        a2a_all = over(st.counts, lambda k: k.terms.ep_fwd * replay + k.terms.ep_bwd + k.terms.ep_hidden)
        nvl = np.where(ep_nvl, a2a_all, 0.0) + np.where(dp_on & ~dp_nic, dp_work(st), 0.0)
        # the exposed all-to-alls around the output heads drain the port: it idles while they compute
        return np.maximum(nic, nvl) + np.where(ep_span > 1, st.idle, 0.0)

    def shared(st: PortStage):
        dp_w = dp_slot_work(zero, st.rs, st.ag, st.ag_b)
        a2a_x = over(st.counts, lambda k: k.terms.ep_fwd * replay + k.terms.ep_bwd)
        # the DP flow occupies the port a share u = min(1, DP work / slot) of the slot (with its steady exposure), and the exposed all-to-all
        # meets it that share of its time (at half rate): slot + min(a2a, DP)·u never shrinks as the slot grows
        # (the slot as it stands with its steady DP exposure ``sd``: slot + sd + min(a2a, DP)·u grows with it)
        # (ZeRO-3's gathers and reduce-scatters spread over forward and backward; ZeRO-2's reduce-scatters queue
        # behind the backward's buckets, where the exposed all-to-all meets them throughout: u = 1)
        u = np.where(zero == 3, np.minimum(1.0, dp_w / np.maximum(st.slot + sd, 1e-30)), 1.0)
        return st.slot + np.where(share, np.minimum(a2a_x, dp_w) * u, 0.0)

    deep = pp > 2
    sd = np.where(dp_on, steady_dp + np.where(z12, gath / m, 0.0), 0.0)
    w = np.maximum(np.maximum(work(stages[0]), work(stages[1])), np.where(deep, work(stages[2]), 0.0))
    t_share = np.maximum(np.maximum(shared(stages[0]), shared(stages[1])), np.where(deep, shared(stages[2]), 0.0))
    return m * x0(np.maximum(w, t_share + sd), t_max + sd)


def p2p_shares(p2p_stage, slots, dp_work, on):
    """Seconds each stage's pipeline sends gain per micro-batch where they and the stage's data-parallel collectives
    leave by the same NIC (``on``: every stage boundary and the DP group cross nodes): the link is shared fairly,
    so a send takes up to twice its time while a collective runs, and the collectives run a share
    u = min(1, DP work / slot) of the slot — p2p·u per slot (to first order; the executor plays the exact shares).
    Faster compute shortens the slot by more than it raises p2p·u (p2p·DP/slot² < 1 where u < 1)."""
    return [np.where(on, p2p_stage * np.minimum(1.0, w / np.maximum(s, 1e-30)), 0.0) for s, w in zip(slots, dp_work)]


def coincident_shares(shares, p2p, v, zero, on, stages):
    """``shares`` (``p2p_shares``: the sends beside the DP flow's average share of the slot) or, where larger, the
    seconds each stage's pipeline sends gain per micro-batch from the DP collectives that leave the same NIC at the
    same instant (``on``: as for ``p2p_shares``; ``stages``: (ag, ag_b, rs, layers) per micro-batch of each
    stage).  The two gather buffers release a layer's ZeRO-3 gather when the layer two back ends, and a layer's
    ZeRO-2/3 bucket goes out after its backward, so at every chunk boundary the send of the chunk's output starts
    beside one layer's collectives: a forward send beside a gather (ZeRO-3), a backward send beside a
    reduce-scatter (+ the backward gather, ZeRO-3).  Two flows fairly sharing a link: the send takes p2p + min(p2p,
    the collective's work) (both at half rate until the shorter ends; derived).  v forward and v backward sends per
    micro-batch; RTP plans (no gathers) and ZeRO 0/1 gain nothing."""
    z3, z2 = zero == 3, zero == 2
    out = []
    for sh, (ag, ag_b, rs, layers) in zip(shares, stages):
        n = np.maximum(layers, 1.0)
        fwd = np.where(z3, ag / n, 0.0)
        bwd = np.where(z3, (ag_b + rs) / n, np.where(z2, rs / n, 0.0))
        out.append(np.maximum(sh, np.where(on, v * (np.minimum(p2p, fwd) + np.minimum(p2p, bwd)), 0.0)))
    return out


def rs_beside_a2a(rs, heads, counts, over, share, rc):
    """ZeRO-2's per-micro-batch reduce-scatters of each stage (first, last, middle) as they run where they leave by
    the all-to-all's port (``share``): beside the stage's all-to-all volume at up to half their rate — dispatch + 3
    combines' worth (``nic_a2a``) per micro-batch, half of it again where full recompute replays the forward's
    dispatch and combine.  ``heads``: each stage's output-projection bucket, sent first in the backward, which
    leaves before any of the stage's all-to-alls and is not slowed."""
    replay = np.where(rc == 2, 1.5, 1.0)
    return [r_ + np.minimum(r_ - h_, np.where(share, over(cs, lambda k: k.terms.nic_a2a), 0.0) * replay)
            for r_, h_, cs in zip(rs, heads, counts)]


def reduction_beside_a2a(coll, counts, over, same_port):
    """A once-per-step gradient reduction (ZeRO-0 all-reduce, ZeRO-1 reduce-scatter) of a stage as it runs where it
    leaves by the all-to-all's port: behind the cool-down's last backwards, beside their all-to-all at up to half
    its rate — the backward's half of the layers' port volume (dispatch + 3 combines' worth, ``nic_a2a``, fwd +
    bwd), as ``rs_beside_a2a`` prices ZeRO-2's per-micro-batch reduce-scatters."""
    return coll + np.minimum(coll, np.where(same_port, 0.5 * over(counts, lambda k: k.terms.nic_a2a), 0.0))


def port_floor(P, tp, cp, pp, v, m, dpn, dp_span, send_work, dp_total, edp=None, edp_per_node=1.0):
    """The work of a device's busiest port in one step (seconds), a floor of the step — a link's transfers all
    happen within it: the pipeline sends — at least (2v − 1)·m per stage, forward to the next stage and backward to
    the previous (``send_work`` each, the link's share without latency) — and the data-parallel collectives
    (``dp_total``), each on the NIC or on NVLink.  Sends count where every stage boundary is on one kind of link
    (tp·cp ≥ a node: all cross nodes; the whole pipeline inside a node: none do); elsewhere some boundaries cross and
    some do not, and the sends are left out.  MoE (``edp``: the experts' DP degree): where the experts' DP group
    leaves by another link than the dense group's, the DP collectives are left out (they are on two links)."""
    sends = np.where(pp > 1, (2.0 * v - 1.0) * m * send_work, 0.0)
    on_nic = tp * cp >= dpn
    on_nvl = tp * cp * pp <= dpn
    dp_nic = dp_span > dpn
    dp_on = P.dp * P.cp > 1
    if edp is not None:
        edp = np.asarray(edp, dtype=float)
        dp_on = dp_on & ((edp <= 1.0) | ((edp > np.asarray(edp_per_node, dtype=float)) == dp_nic))
    nic = np.where(on_nic, sends, 0.0) + np.where(dp_on & dp_nic, dp_total, 0.0)
    nvl = np.where(on_nvl, sends, 0.0) + np.where(dp_on & ~dp_nic, dp_total, 0.0)
    return np.maximum(nic, nvl)


def fwd_hidden_a2a(kind):
    """The overlapped all-to-all work a layer's forward puts on its port: the layer's hidden volume spread over its
    compute in proportion to time (as the executor lays it, ``executor/a2a.py``), the forward's share of it; 0 for
    a dense layer.  It shares the port with the next step's parameter all-gather behind the first forwards."""
    t = kind.terms
    cf, cb = t.fwd - t.ep_fwd, t.bwd - t.ep_bwd
    return t.ep_hidden * cf / np.maximum(cf + cb, 1e-30)


def layer_buckets(rs, rs_x, lay, n):
    """One layer's gradient bucket per micro-batch on a stage of ``n`` layers (seconds): the layers' share ``lay``
    of the stage's reduce-scatter ``rs``, whose experts' part ``rs_x`` is all the layers'."""
    return (rs - (rs - rs_x) * (1 - lay)) / np.maximum(n, 1.0)


def buckets_beside_a2a(stages, over, on):
    """Seconds each stage's pair gains per micro-batch where the gradient buckets (ZeRO-2/3, ``layer_buckets``)
    and the expert all-to-all leave by the same port under the pair overlap (``on``).  A layer's bucket goes out
    as its backward ends, just as the next layer's backward opens with its combine-gradient transfer
    (``ep_bwd_lead``); two flows that start together fairly sharing a link, that transfer ends after
    lead + min(lead, bucket) (both at half rate until the shorter ends; derived).  That is all-to-all work the pair
    must hide: it shows beyond the compute the pair leaves free (``ep_slack``), as the pair's own excess does, so
    that a faster compute never adds more than it saves.  ``stages``: (layer counts, one layer's bucket) per
    stage."""
    def meet(k, bucket):
        return np.maximum(np.minimum(k.terms.ep_bwd_lead, bucket) - k.terms.ep_slack, 0.0)

    return [np.where(on, over(cs, lambda k: meet(k, b_)), 0.0) for cs, b_ in stages]


def pair_bucket_delays(stages, over, on, zero, single, ar_rs):
    """The gradient buckets beside the pair's opening transfer (``buckets_beside_a2a``) of each stage: ((first,
    last, middle) backward windows, (first, last, middle, middle less a layer, all middles) per slot, once per
    step).  ZeRO-2/3 send a layer's bucket after every backward, so each slot gains it; ZeRO-0/1 after the last
    backward only — each stage's last backwards (its chunks'), one stage after the other in the cool-down, once
    per step (ZeRO-0's buckets are all-reduces: ``ar_rs`` = all-reduce / reduce-scatter seconds).  ``stages``:
    (layer counts, the stage's reduce-scatter, its experts' part, the layers' share, layers) for the first, last,
    a middle stage, a middle stage less a layer, all middle stages."""
    bx = buckets_beside_a2a([(cs, ar_rs * layer_buckets(r_, x_, l_, n_)) for cs, r_, x_, l_, n_ in stages], over, on)
    once = np.where(zero <= 1, bx[0] + np.where(single, 0.0, bx[1]) + bx[4], 0.0)
    return bx[:3], [np.where(zero >= 2, x_, 0.0) for x_ in bx], once
