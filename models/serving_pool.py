"""The executor's view of one pool of a serving deployment (``PoolCost``, interface in docs/serving.md), priced by
the same iteration parts as the analytical estimate (``models/serving_terms.py``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parplan.models import serving_memory as sm
from parplan.models.primitives.kernels import attention_efficiency
from parplan.models.serving_memory import kv_bytes_per_token_layer
from parplan.models.serving_af import af_sides, expert_busy_s, m2n_s
from parplan.models.serving_terms import ATTN_SIDE, kv_loads_per_head, kv_transfer_fn, serving_context
from parplan.workloads.serving import load_serving


@dataclass
class PoolCost:
    """What the executor needs of one pool (one replica): see docs/serving.md.  ``kv_affine``: the iteration is
    affine in ``kv_tokens`` for fixed (prefill tokens, decode sequences) — the executor then interpolates."""

    role: str
    max_batch: int
    chunk_tokens: int
    kv_capacity_tokens: int
    kv_affine: bool = False
    # attention-DP ranks of a replica, each its own scheduler over 1/attn_dp of the batch, chunk and KV cache
    # (SGLang --enable-dp-attention divides them); > 1 offers iteration_ranks_s
    attn_dp: int = 1
    layers: int = 0  # af-disaggregated attention pool: MoE layers (the ping-pong's fill/drain is one layer's trip)
    _iter: object = field(repr=False, default=None)
    _kv: object = field(repr=False, default=None)
    _attn: object = field(repr=False, default=None)
    _m2n: object = field(repr=False, default=None)
    _over: object = field(repr=False, default=None)

    def iteration_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int) -> float:
        return float(self._iter(prefill_tokens, decode_seqs, kv_tokens))

    def iteration_ranks_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
                          prefill_rank_tokens: int) -> float:
        """An iteration of attention-DP ranks in lock-step: the replica's totals and the busiest rank's prompt
        tokens (``serving_terms.iteration_parts``)."""
        return float(self._iter(prefill_tokens, decode_seqs, kv_tokens, prefill_rank_tokens))

    def kv_transfer_s(self, tokens: int) -> float:
        return float(self._kv(tokens)) if self._kv is not None else 0.0

    def __getattr__(self, name):
        # the af-disaggregated attention pool alone offers attention_s, m2n_s and overhead_s (executor/serving.py
        # looks for attention_s to compose the ping-pong itself)
        fns = {"attention_s": "_attn", "m2n_s": "_m2n", "overhead_s": "_over"}
        if name in fns:
            fn = self.__dict__.get(fns[name])
            if fn is not None:
                return fn
        raise AttributeError(name)


def _read_bound(c, tp, min_ctx: float) -> bool:
    """Whether decode attention stays bound by its KV read at every context (then the iteration is affine in the
    cached tokens: read bytes ∝ tokens): the FLOPs per cached token at the lowest fused-attention efficiency take no
    longer than its bytes, over mean contexts from ``min_ctx`` tokens up (a decoding sequence holds its prompt and
    the token it decodes: the mix's 0.1 % prompt quantile + 1; rarer shorter batches are interpolated)."""
    m = c.model
    qk, vd = float(getattr(m, "attn_qk_dim", m.q_dim)), float(getattr(m, "attn_v_dim", m.q_dim))
    eff = float(np.min(attention_efficiency(np.geomspace(max(min_ctx, 2.0), 1 << 20, 24), int(m.head_dim_), False,
                                            False, c.hw.attention)))
    fl = 2.0 * (qk + vd) / tp / (c.peak16 * eff)
    rd = float(kv_bytes_per_token_layer(m, c.kvb_prec, np.array([float(tp)]))[0]
               * kv_loads_per_head(c, np.array([float(tp)]))[0]) / c.bw
    return fl <= rd


def pool_cost(workload, cluster, serving, deployment, pool_index: int) -> PoolCost:
    """The executor's view of one pool of ``deployment`` (see the interface in docs/serving.md)."""
    from parplan.models.serving import _check, _iter_fn, _Pools

    serving = load_serving(serving)
    _check(workload, cluster, deployment)
    pool = deployment.pools[pool_index]
    c = serving_context(workload, cluster, serving)
    deps = [deployment]
    P = _Pools(deps, pool.role)
    mem = sm.pool_memory(c, None, serving, P, float(c.hw.memory_capacity_bytes))
    n_dev = np.array([float(deployment.n_devices)])
    extra = {}
    if pool.role == "attention":
        E = _Pools(deps, "expert")
        mb = np.array([float(deployment.micro_batches)])
        cross = n_dev > c.hw.devices_per_node
        it = _iter_fn(c, P, deps, af=(E, mb, cross))
        per = P.R / E.R
        n_moe = float(getattr(c.model, "n_moe_layers", 0))
        one = np.array([1.0])

        def attention_s(p, d, kv):  # the attention side of one micro-batch of (p, d, kv), whole model
            Ta = af_sides(c, P.shape, E.ep, E.tp, per, one, np.array([float(p)]), np.array([float(d)]),
                          np.array([float(kv)]), cross_node=cross)[0]
            return float(Ta[0]) * c.layers

        def exchange_s(tokens):  # one-way M2N of a micro-batch of ``tokens`` tokens, every MoE layer
            return float(n_moe * m2n_s(c, P.shape, E.ep, E.tp, per, np.array([float(tokens)]), cross)[0])

        def overhead_s(p, d, kv):  # once per iteration, outside the ping-pong: LM head, host, PP hand-offs
            parts = it(np.array([float(p)]), np.array([float(d)]), np.array([float(kv)]))
            return float(sum(np.asarray(parts[k]).sum() for k in ("lm_head_s", "host_s", "pp_p2p_s")))
        extra = {"_attn": attention_s, "_m2n": exchange_s, "_over": overhead_s, "layers": int(n_moe)}
        affine = False  # the ping-pong's max() bends the cost
    elif pool.role == "expert":
        A = _Pools(deps, "attention")
        per = float(A.R[0] / P.R[0])
        mb = float(deployment.micro_batches)

        def it(p, b, kv, **kw):  # expert-side busy time for the tokens of the attention replicas it serves
            return {"expert": expert_busy_s(c, P.ep, P.tp, (np.asarray(p) + np.asarray(b)) * per / mb, mb)}
        affine = True  # no KV on the expert side: constant in kv_tokens
    else:
        it = _iter_fn(c, P, deps)
        # affine when the attention decode reads are the bound and no host time hides behind the GPU (max)
        affine = (not c.engine.overlap) and _read_bound(c, float(pool.tp), 1.0 + float(serving.isl.quantile(1e-3)))

    def iteration(p, b, kv, pr=None):
        kw = {} if pr is None else {"prefill_rank_tokens": np.array([float(pr)])}
        parts = it(np.array([float(p)]), np.array([float(b)]), np.array([float(kv)]), **kw)
        return max(float(np.sum([np.asarray(v).sum() for v in parts.values()])), 1e-9)
    kvf = kv_transfer_fn(c, serving, P, n_dev) if pool.role == "prefill" else None
    ranks = pool.attn_dp if pool.role in ("mixed", "prefill", "decode") else 1  # af: the ping-pong prices them
    return PoolCost(role=pool.role, max_batch=pool.max_batch, chunk_tokens=pool.chunk_tokens,
                    kv_capacity_tokens=int(mem[4][0]), kv_affine=bool(affine), attn_dp=int(ranks), _iter=iteration,
                    _kv=(lambda t: float(kvf(t)[0])) if kvf is not None else None, **extra)


__all__ = ["PoolCost", "pool_cost", "ATTN_SIDE"]
