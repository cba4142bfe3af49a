"""The forward and backward of a virtual stage that holds MoE layers, played as compute pieces and all-to-all
transfers on the expert-parallel port.

One MoE layer, one micro-batch:

* forward: compute (attention, router, permutation: ``PRE_DISPATCH_SHARE`` of the layer's compute) → dispatch →
  compute (the experts) → combine;
* backward (mirror): combine gradient → compute (the experts' backward) → dispatch gradient → compute (attention
  backward, with selective recompute's attention core); full recompute first replays the forward (dispatch and
  combine again);
* dense-FFN layers, the embedding (first virtual stage) and the output heads (last) are compute between them.

Every all-to-all has an **exposed** part — a transfer on the EP port that the next compute piece depends on, on the
stage's all-to-all stream (one joint transfer over the ports of the EP group's members in full mode) — and a
**hidden** part, what the framework overlaps with compute: transfers on a per-device stream that start with a
compute piece and block nothing.  The model hides (total − exposed) under the compute of a forward + backward
pair (``ep_a2a_overlap``: one micro-batch's all-to-all under another's compute), so the layer's hidden volume is
spread over all its compute pieces in proportion to their length; on an otherwise idle link each hidden piece
then ends before the next exposed transfer begins and the step is the model's, while any other traffic on the
port (p2p, data-parallel collectives) shares the link with the whole all-to-all volume.

Sums: compute pieces + exposed transfers of a pass = the model's stage forward (backward); stragglers scale the
compute pieces; expert load imbalance γ is in the transfer sizes and the expert compute (the model's).  Ops are
only made for parts > 0; consecutive compute of one per-layer part is one op.
"""
from __future__ import annotations

from parplan.executor.costs import PipelineCosts
from parplan.executor.engine import EP_A2A, Program

# share of an MoE layer's compute before its dispatch (and, mirrored, after its dispatch gradient): the model
# does not expose the attention/expert split of an MoE layer; it moves the transfers inside the pass only
PRE_DISPATCH_SHARE = 0.5
A2A_PASSES = ("d", "c", "cg", "dg", "rd", "rc")  # event name codes
A2A_PASS_NAMES = ("dispatch", "combine", "combine gradient", "dispatch gradient", "recompute dispatch",
                  "recompute combine")
D, C, CG, DG, RD, RC = range(6)


def a2a_part(layer: int, which: int, hidden: bool) -> int:
    """The ``part`` field of an all-to-all op: MoE layer of the stage, which transfer, exposed or hidden."""
    return layer * 16 + which * 2 + int(hidden)


def a2a_decode(part: int) -> tuple[int, int, bool]:
    layer, rest = divmod(part, 16)
    return layer, rest // 2, bool(rest % 2)


def a2a_name(mb: int, chunk: int, part: int, v: int) -> str:
    """``a2a-d12.l3``: the dispatch of micro-batch 12 in MoE layer 3 of the stage (``.c1`` chunk, ``.h`` hidden)."""
    layer, which, hidden = a2a_decode(part)
    name = f"a2a-{A2A_PASSES[which]}{mb}"
    if v > 1 and chunk >= 0:
        name += f".c{chunk}"
    name += f".l{layer}"
    return name + ".h" if hidden else name


class _Piece:
    __slots__ = ("dur", "rc", "hid", "part")

    def __init__(self, dur, rc, hid, part):
        self.dur, self.rc, self.hid, self.part = dur, rc, hid, part


class MoEPasses:
    """Builds the passes of MoE virtual stages into ``prog`` for all simulated replicas at once."""

    def __init__(self, prog: Program, costs: PipelineCosts, comp: list, names: list, factors: list, R: int,
                 port_of, zb: bool, full_rc: bool, etp_port_of=None):
        self.prog, self.costs, self.comp, self.factors, self.R, self.zb = prog, costs, comp, factors, R, zb
        p = costs.pp
        self.p, self.K = p, costs.virtual_stages
        size = max(1, min(int(costs.ep_group_replicas), R)) if R > 1 else 1
        self.group_of = [r // size for r in range(R)]
        self.members: dict = {}
        for r in range(R):
            self.members.setdefault(self.group_of[r], []).append(r)
        several = len(self.members) > 1
        self.ep_stream = {(s, g): prog.add_stream(f"stage {s} a2a" + (f" group {g}" if several else ""), mem[0] * p + s)
                          for s in range(p) for g, mem in self.members.items()}
        self.hid_stream = [prog.add_stream(f"{names[d]} a2a hidden", d) for d in range(R * p)]
        self.port = [port_of(d) for d in range(R * p)]
        # the ETP share of every transfer travels within the expert-tensor group (NVLink) where the EP group's port
        # is another link: each transfer is then played as its EP part on the port and its ETP part on NVLink
        et = float(getattr(costs, "a2a_etp_s", 0.0) or 0.0)
        self.etp_port = [etp_port_of(d) if etp_port_of is not None else self.port[d] for d in range(R * p)]
        self.anchors: dict = {}  # compute piece -> hidden transfers that start with it
        c = costs
        a = PRE_DISPATCH_SHARE
        vf, vb = tuple(c.a2a_fwd_s) or (0.0, 0.0), tuple(c.a2a_bwd_s) or (0.0, 0.0)
        self.full = full_rc
        ef, eb, erc = c.a2a_fwd_exposed_s, c.a2a_bwd_exposed_s, (c.a2a_recompute_exposed_s if full_rc else 0.0)
        # exposed parts of the transfers, in proportion to their volumes
        self.x_f = _share(ef, vf)
        self.x_b = _share(eb, vb)
        self.x_r = _share(erc, vf)
        self.sigma = 1.0 - c.wgrad_fraction if zb else 1.0  # B's share of the pure backward compute (ZB-H1)
        self.cf = max(c.moe_fwd_s - ef, 0.0)
        self.crc = max(c.moe_recompute_s - erc, 0.0) if full_rc else 0.0
        self.sel = 0.0 if full_rc else c.moe_recompute_s
        self.cb = max(c.moe_bwd_s - eb, 0.0) * self.sigma
        hidden = max(sum(vf) - ef, 0.0) + max(sum(vb) - eb, 0.0) + (max(sum(vf) - erc, 0.0) if full_rc else 0.0)
        c_tot = self.cf + self.crc + self.sel + self.cb
        self.rho = hidden / c_tot if c_tot > 0 else 0.0
        self.a = a
        # per transfer kind (dispatch, combine; combine gradient, dispatch gradient): the ETP fraction of its volume
        phi_f = tuple(min(et / x, 1.0) if x > 0 else 0.0 for x in vf)
        phi_b = tuple(min(et / x, 1.0) if x > 0 else 0.0 for x in vb)
        self.phi = (phi_f[0], phi_f[1], phi_b[0], phi_b[1], phi_f[0], phi_f[1])  # by D, C, CG, DG, RD, RC

    def etp_split(self, code: int, work: float) -> tuple:
        """A transfer of ``work`` seconds as (EP part, ETP part); the ETP part is 0 where there is no ETP gather."""
        f = self.phi[a2a_decode(code)[1]]
        return (work, 0.0) if f <= 0.0 else (work * (1.0 - f), work * f)

    # --- the pieces of one pass (unscaled), in program order ------------------------------------------------
    def _extras(self, k: int):
        c = self.costs
        mask = c.moe_mask(k)
        nm = sum(mask)
        nd = len(mask) - nm
        rf = c.fwd_s[k] - nd * c.dense_fwd_s - nm * c.moe_fwd_s
        rb = c.bwd_s[k] - nd * (c.dense_bwd_s + c.dense_recompute_s) - nm * (c.moe_bwd_s + c.moe_recompute_s)
        last = k == self.K - 1
        head_f = min(c.head_fwd_s, max(rf, 0.0)) if last else 0.0
        head_b = min(c.head_bwd_s, max(rb, 0.0)) if last else 0.0
        return mask, max(rf - head_f, 0.0), head_f, head_b, max(rb - head_b, 0.0)

    def forward_items(self, k: int, n_parts: int) -> list:
        mask, lead, trail, _, _ = self._extras(k)
        a, rho, cf, x = self.a, self.rho, self.cf, self.x_f
        items = [_Piece(lead, 0.0, [], 0)]
        ml = 0  # MoE layer of the stage
        for i, moe in enumerate(mask):
            pi = i if n_parts > 1 else 0
            if not moe:
                items.append(_Piece(self.costs.dense_fwd_s, 0.0, [], pi))
                continue
            items += [_Piece(a * cf, 0.0, [(a2a_part(ml, D, True), rho * a * cf)], pi),
                      (x[0], a2a_part(ml, D, False), pi),
                      _Piece((1 - a) * cf, 0.0, [(a2a_part(ml, C, True), rho * (1 - a) * cf)], pi),
                      (x[1], a2a_part(ml, C, False), pi)]
            ml += 1
        items.append(_Piece(trail, 0.0, [], n_parts - 1))
        return items

    def backward_items(self, k: int, n_parts: int) -> list:
        mask, _, _, lead, trail = self._extras(k)
        c, a, rho, sg = self.costs, self.a, self.rho, self.sigma
        items = [_Piece(lead * sg, 0.0, [], 0)]
        ml = sum(mask)  # MoE layer of the stage, counted down
        n = len(mask)
        for pos, i in enumerate(range(n - 1, -1, -1)):
            pi = pos if n_parts > 1 else 0
            if not mask[i]:
                rc = c.dense_recompute_s
                items.append(_Piece(c.dense_bwd_s * sg + rc, rc, [], pi))
                continue
            ml -= 1
            if self.full:
                crc, xr = self.crc, self.x_r
                items += [_Piece(a * crc, a * crc, [(a2a_part(ml, RD, True), rho * a * crc)], pi),
                          (xr[0], a2a_part(ml, RD, False), pi),
                          _Piece((1 - a) * crc, (1 - a) * crc, [(a2a_part(ml, RC, True), rho * (1 - a) * crc)], pi),
                          (xr[1], a2a_part(ml, RC, False), pi)]
            cb, xb, sel = self.cb, self.x_b, self.sel
            items += [(xb[0], a2a_part(ml, CG, False), pi),
                      _Piece((1 - a) * cb, 0.0, [(a2a_part(ml, DG, True), rho * (1 - a) * cb)], pi),
                      (xb[1], a2a_part(ml, DG, False), pi),
                      _Piece(a * cb + sel, sel, [(a2a_part(ml, CG, True), rho * (a * cb + sel))], pi)]
        items.append(_Piece(trail * sg, 0.0, [], n_parts - 1))
        return items

    # --- ops --------------------------------------------------------------------------------------------------
    def build(self, items: list, kind: int, k: int, j: int, ch: int, n_parts: int, tp_total: float,
              mem_first: float = 0.0, ws: float = 0.0, act_free: float = 0.0):
        """Ops of one pass for every replica; returns (firsts, lasts): per replica, per part, the first and the
        last op.  Forward: ``mem_first`` allocated by the first compute op; backward: ``ws`` held by every part,
        ``act_free`` freed at the end of the last part."""
        prog, op, p, R = self.prog, self.prog.add_op, self.p, self.R
        s = k % p
        items = _merge(items, n_parts)
        comp_total = sum(it.dur for it in items if isinstance(it, _Piece))
        tp_rate = tp_total / comp_total if comp_total > 0 else 0.0
        # first / last compute piece of every part (memory effects)
        first_c, last_c = {}, {}
        for idx, it in enumerate(items):
            if isinstance(it, _Piece):
                first_c.setdefault(it.part, idx)
                last_c[it.part] = idx
        firsts = [[-1] * n_parts for _ in range(R)]
        lasts = [[-1] * n_parts for _ in range(R)]
        prev_x = [-1] * R  # exposed transfer the next compute piece waits for
        prev_c = [-1] * R  # last op of the device in program order, for the next exposed transfer
        for r in range(R):
            prev_c[r] = prog.stream_last[self.comp[r * p + s]]
        for idx, it in enumerate(items):
            if isinstance(it, _Piece):
                pi = it.part
                alloc = (mem_first if (pi == 0 and first_c[0] == idx) else 0.0) + (ws if first_c[pi] == idx else 0.0)
                free = (ws if last_c[pi] == idx else 0.0) + (act_free if (pi == n_parts - 1 and last_c[pi] == idx)
                                                             else 0.0)
                for r in range(R):
                    d = r * p + s
                    fs = self.factors[d]
                    o = op(kind, self.comp[d], it.dur * fs, tp=tp_rate * it.dur * fs, rc=it.rc * fs, mb=j, chunk=ch,
                           part=pi if n_parts > 1 else -1, mem_alloc=alloc, mem_free=free)
                    if prev_x[r] >= 0:
                        prog.dep(prev_x[r], o)
                        prev_x[r] = -1
                    for code, work in it.hid:
                        if work > 0.0:
                            # the all-to-all's part on the EP port, then its ETP gather's on the ETP group's link
                            w_ep, w_etp = self.etp_split(code, work)
                            for w_, link in ((w_ep, self.port[d]), (w_etp, self.etp_port[d])):
                                if w_ > 0.0:
                                    h = op(EP_A2A, self.hid_stream[d], w_, links=(link,), mb=j, chunk=ch, part=code)
                                    self.anchors.setdefault(o, []).append(h)
                    if firsts[r][pi] < 0:
                        firsts[r][pi] = o
                    lasts[r][pi] = o
                    prev_c[r] = o
            else:
                work, code, pi = it
                w_ep, w_etp = self.etp_split(code, work)
                for g, mem in self.members.items():
                    o = op(EP_A2A, self.ep_stream[(s, g)], w_ep, links=tuple(self.port[r * p + s] for r in mem),
                           mb=j, chunk=ch, part=code)
                    o2 = o
                    if w_etp > 0.0:  # the ETP gather of the received copies, after the all-to-all, on its own link
                        o2 = op(EP_A2A, self.ep_stream[(s, g)], w_etp,
                                links=tuple(self.etp_port[r * p + s] for r in mem), mb=j, chunk=ch, part=code)
                    for r in mem:
                        if prev_c[r] >= 0:
                            prog.dep(prev_c[r], o)
                            prev_c[r] = -1
                        prev_x[r] = o2
                        if firsts[r][pi] < 0:
                            firsts[r][pi] = o
                        lasts[r][pi] = o2
        return firsts, lasts

    def anchor_hidden(self) -> None:
        """A hidden transfer starts with its compute piece: it gets the piece's dependencies and its predecessor on
        the compute stream (call once, after every dependency of the program has been added)."""
        if not self.anchors:
            return
        prog, anchors = self.prog, self.anchors
        extra = [(a, h) for a, b in zip(prog.dep_from, prog.dep_to) if b in anchors for h in anchors[b]]
        last: dict = {}
        ops = prog.ops
        for o in range(len(ops)):
            st = ops[o][1]
            if o in anchors and st in last:
                extra.extend((last[st], h) for h in anchors[o])
            last[st] = o
        for a, h in extra:
            prog.dep(a, h)


def _share(total: float, vols: tuple) -> tuple:
    v = sum(vols)
    if v <= 0:
        return tuple(total / len(vols) for _ in vols)
    return tuple(total * x / v for x in vols)


def _merge(items: list, n_parts: int) -> list:
    """Consecutive compute of one part as one piece; transfers of no work dropped; empty compute pieces dropped
    unless they are their part's only one (memory effects); a pass ends with a compute piece (the next op on the
    compute stream then waits for the pass's last transfer)."""
    out: list = []
    for it in items:
        if isinstance(it, _Piece):
            if out and isinstance(out[-1], _Piece) and out[-1].part == it.part:
                prev = out[-1]
                out[-1] = _Piece(prev.dur + it.dur, prev.rc + it.rc, prev.hid + it.hid, it.part)
            else:
                out.append(it)
        elif it[0] > 0.0:
            out.append(it)
    pieces: dict = {}
    for it in out:
        if isinstance(it, _Piece):
            pieces[it.part] = pieces.get(it.part, 0) + 1
    kept: list = []
    for it in out:
        if isinstance(it, _Piece) and it.dur <= 0.0 and not it.hid and pieces[it.part] > 1:
            pieces[it.part] -= 1
            continue
        if kept and isinstance(it, _Piece) and isinstance(kept[-1], _Piece) and kept[-1].part == it.part:
            prev = kept[-1]
            kept[-1] = _Piece(prev.dur + it.dur, prev.rc + it.rc, prev.hid + it.hid, it.part)
            continue
        kept.append(it)
    if not isinstance(kept[-1], _Piece):
        kept.append(_Piece(0.0, 0.0, [], kept[-1][2]))
    return kept
