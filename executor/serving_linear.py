"""``LinearPoolCost``: a closed-form stand-in for the analytical ``PoolCost`` (tests and what-if studies).

One iteration costs ``a + b·prefill_tokens + c·decode_seqs + d·kv_tokens`` seconds — the affine form of an engine
iteration (a fixed launch/host part, a compute-bound part per prompt token, a per-sequence part, a KV-read part);
the KV transfer of a request is ``transfer_s_per_token·tokens``.  With it, the simulator's queueing results can be
checked against closed forms (M/D/1 waiting times, Little's law, saturation throughput); it is no model of any
hardware.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LinearPoolCost:
    a: float = 0.005  # s per iteration
    b: float = 0.0  # s per prefill token
    c: float = 0.0  # s per decoding sequence
    d: float = 0.0  # s per cached token attended
    kv_capacity_tokens: int = 1 << 20
    max_batch: int = 64
    chunk_tokens: int = 2048
    transfer_s_per_token: float = 0.0
    layers: int = 0  # af-disaggregated attention pool: MoE layers (the fill/drain is 1/layers of a round trip)
    m2n_s_per_token: float = 0.0  # af-disaggregated attention pool: one-way exchange s per token of a micro-batch
    kv_affine: bool | None = None  # None: let the executor check; False: call iteration_s every time

    def iteration_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int) -> float:
        return self.a + self.b * prefill_tokens + self.c * decode_seqs + self.d * kv_tokens

    def attention_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int) -> float:
        """af-disaggregated: the attention side alone (this double's whole iteration)."""
        return self.iteration_s(prefill_tokens, decode_seqs, kv_tokens)

    def kv_transfer_s(self, tokens: int) -> float:
        return self.transfer_s_per_token * tokens

    def m2n_s(self, tokens: int) -> float:
        return self.m2n_s_per_token * tokens
