"""RTP's shard rings in the reference executor (``rotate`` plans; the cost side: ``models/rtp_terms.py``).

Every layer part of a pass plays: the layer's work outside its GEMMs (attention, memory-bound kernels, exposed TP
communication: one op), then S sub-steps on the compute stream — the layer's GEMMs on the shard it holds — and
S − 1 point-to-point hops of the next shard on the ring's link (the device's NVLink port, or its NIC where the
shard group spans nodes; one joint transfer over the simulated replicas' ports).  Two shard buffers: hop k (the
shard of sub-step k) starts when hop k − 1 is done (the ring forwards what just arrived) and, for k ≥ 2, when
sub-step k − 2 is done (its buffer is free); hop 1 starts with the layer's sub-steps.  Sub-step k waits for hop k.
The backward plays the same ring with the data- and weight-gradient GEMMs and hops carrying a weight shard and a
gradient accumulator; under full recompute the replayed forward's ring comes first.
"""
from __future__ import annotations

from parplan.executor.program import BWD, DP_GRAD, DP_PARAM, FWD


class RotationPasses:
    """Builds the layer parts of the passes of a rotate plan into ``prog`` (see the module docstring)."""

    def __init__(self, prog, costs, comp, factors, replicas: int, links) -> None:
        self.prog, self.costs, self.comp, self.factors = prog, costs, comp, factors
        self.R, self.p, self.S = replicas, costs.pp, int(costs.rtp_shards)
        self.links = links  # stage -> the links of the ring hop (one per simulated replica)
        self.stream = [prog.add_stream(f"stage {s} rtp ring", s) for s in range(costs.pp)]

    def forward(self, s: int, k: int, j: int, c: int, nk: int, act: float) -> list:
        """Per replica, the ops of the forward of virtual stage ``k`` (micro-batch j, chunk c), in order."""
        cs = self.costs
        chain = [(cs.rtp_sub_fwd_s, cs.rtp_xfer_fwd_s[k], DP_PARAM, False)]
        return self._pass(FWD, s, k, j, c, nk, cs.fwd_s[k], cs._z("tp_fwd_s")[k], 0.0, chain, act, 0.0, 0.0)

    def backward(self, s: int, k: int, j: int, c: int, nk: int, act: float, ws: float) -> list:
        cs = self.costs
        chain = [(cs.rtp_sub_fwd_s, cs.rtp_xfer_fwd_s[k], DP_PARAM, True)] if cs.rtp_replay else []
        chain.append((cs.rtp_sub_bwd_s, cs.rtp_xfer_bwd_s[k], DP_GRAD, False))
        return self._pass(BWD, s, k, j, c, nk, cs.bwd_s[k], cs._z("tp_bwd_s")[k], cs._z("recompute_s")[k], chain,
                          ws, ws + act, ws)

    def _pass(self, kind, s, k, j, c, nk, dur, tp, rc, chain, alloc_first, free_last, alloc_each) -> list:
        prog, op, S, R, p = self.prog, self.prog.add_op, self.S, self.R, self.p
        out = [[] for _ in range(R)]
        for i in range(nk):
            sub_total = sum(S * sub for sub, *_ in chain)
            rc_sub = sum(S * sub for sub, _, _, is_rc in chain if is_rc)
            rest = max(dur / nk - sub_total, 0.0)
            last_part = i == nk - 1
            rests, subs = [], [[] for _ in chain]
            for r in range(R):
                d = r * p + s
                fs = self.factors[d]
                rests.append(op(kind, self.comp[d], rest * fs, tp=tp * fs / nk, rc=max(rc / nk - rc_sub, 0.0) * fs,
                                mb=j, chunk=c, part=i, mem_alloc=alloc_first if i == 0 else alloc_each))
                out[r].append(rests[-1])
                for ci, (sub, _, _, is_rc) in enumerate(chain):
                    for q in range(S):
                        part_end = ci == len(chain) - 1 and q == S - 1  # frees what the part allocated
                        o = op(kind, self.comp[d], sub * fs, rc=sub * fs if is_rc else 0.0, mb=j, chunk=c, part=i,
                               mem_free=(free_last if last_part else alloc_each) if part_end else 0.0)
                        subs[ci].append(o)
                        out[r].append(o)
            for ci, (_, hop, code, _) in enumerate(chain):
                start = rests if ci == 0 else [subs[ci - 1][r * S + S - 1] for r in range(R)]
                for q in range(1, S):
                    x = op(code, self.stream[s], hop, links=self.links(s), mb=j, chunk=c, part=i)
                    for r in range(R):
                        prog.dep(start[r] if q == 1 else subs[ci][r * S + q - 2], x)
                        prog.dep(x, subs[ci][r * S + q])
        return out
