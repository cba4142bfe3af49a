"""Mixture-of-experts routing statistics and routing-kernel byte counts (vectorized over numpy arrays of plans).

Data: ``catalogs/calibration/moe.yaml`` (every value cited or marked derived there), loaded through
``load_calibration`` against a strict schema.

* ``imbalance_factor``: max / mean routed tokens per EP rank, 1 + a·sqrt(2 ln ep) anchored at a measured point of an
  actively balanced router; a user-set override wins (benchmark runs with forced balancing use 1.0).
* ``router_bytes_per_token`` / ``permute_bytes_per_token``: HBM bytes of the router's softmax/top-k and of the token
  permute / unpermute kernels (memory bound).
* ``dispatch_buffer_bytes``: bytes per device of the dispatch / combine receive buffers of a dispatcher.
All sizes in bytes.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from parplan.models.primitives.calibration import load_calibration


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class _Anchor(_Strict):
    ep: int = Field(gt=1)
    max_over_mean: float = Field(ge=1.0)


class _Measured(_Strict):
    label: str = Field(min_length=3)
    ep: int = Field(ge=1)
    experts: int = Field(ge=1)
    top_k: int = Field(ge=1)
    max_over_mean: float = Field(ge=1.0)
    source: str = Field(min_length=8)


class _Imbalance(_Strict):
    law: str
    law_source: str = Field(min_length=8)
    anchor: _Anchor
    anchor_source: str = Field(min_length=8)
    measured: list[_Measured] = Field(default_factory=list)
    forced_balance: float = Field(ge=1.0, le=1.0)
    forced_balance_source: str = Field(min_length=8)
    caveat: str = ""


class _Routing(_Strict):
    router_bytes_per_token_per_expert: float = Field(gt=0)
    router_bytes_per_copy: float = Field(ge=0)
    router_source: str = Field(min_length=8)
    permute_elements_per_copy: float = Field(gt=0)
    permute_index_bytes_per_copy: float = Field(ge=0)
    routing_map_bytes_per_token_per_expert: float = Field(ge=0)
    permute_source: str = Field(min_length=8)


class _DeepEP(_Strict):
    num_sms: int = Field(gt=0)
    nvl_recv_tokens: list[tuple[int, int]] = Field(min_length=1)  # (up to this many ranks, tokens)
    rdma_recv_tokens: int = Field(gt=0)
    nvl_peers: int = Field(gt=0)
    max_topk: int = Field(gt=0)
    max_scales: int = Field(ge=0)
    topk_idx_bytes: int = Field(gt=0)
    source: str = Field(min_length=8)

    @model_validator(mode="after")
    def _sorted(self):
        r = [a for a, _ in self.nvl_recv_tokens]
        if any(b <= a for a, b in zip(r, r[1:])):
            raise ValueError("nvl_recv_tokens must be sorted by increasing rank count")
        return self


class _Buffers(_Strict):
    alltoall_source: str = Field(min_length=8)
    deepep: _DeepEP


class MoEFile(_Strict):
    imbalance: _Imbalance
    routing: _Routing
    buffers: _Buffers


@lru_cache(maxsize=1)
def moe_file() -> MoEFile:
    return load_calibration("moe.yaml", MoEFile)


def imbalance_spread() -> float:
    """Relative spread a of the rank loads implied by the anchor: (max/mean − 1) / sqrt(2 ln ep_anchor)."""
    a = moe_file().imbalance.anchor
    return (a.max_over_mean - 1.0) / float(np.sqrt(2.0 * np.log(a.ep)))


def imbalance_factor(ep, experts, top_k, override=None):
    """Max / mean routed tokens per EP rank: ``override`` (a user-set factor ≥ 1) when given, else
    1 + a·sqrt(2 ln ep) (Gaussian order statistic of ep rank loads, anchored at TensorRT-LLM's measured balanced
    DeepSeek-R1 routing, moe.yaml) — ≥ 1, = 1 at ep = 1, non-decreasing in ep.  ``experts`` and ``top_k`` are
    checked but do not change the default (no public data resolve them); ep beyond the expert count is capped."""
    ep = np.maximum(np.asarray(ep, dtype=np.float64), 1.0)
    experts_a = np.asarray(experts, dtype=np.float64)
    top_k_a = np.asarray(top_k, dtype=np.float64)
    if np.any(experts_a < 1) or np.any(top_k_a < 1) or np.any(top_k_a > experts_a):
        raise ValueError(f"imbalance_factor needs experts >= top_k >= 1 (experts={experts}, top_k={top_k})")
    if override is not None:
        o = np.asarray(override, dtype=np.float64)
        if np.any(~np.isfinite(o)) or np.any(o < 1.0):
            raise ValueError(f"an expert imbalance override is a factor >= 1 (max/mean tokens per rank), "
                             f"got {override}")
        return np.broadcast_to(o, np.broadcast_shapes(o.shape, ep.shape)).astype(np.float64)
    p = np.minimum(ep, np.maximum(experts_a, 1.0))
    return 1.0 + imbalance_spread() * np.sqrt(2.0 * np.log(p))


def router_bytes_per_token(experts, top_k):
    """HBM bytes of the router's softmax/sigmoid + top-k per token (derived, moe.yaml): a fp32 read + write + read
    pass over the E logits, and the probability + index of each of the k routed copies."""
    r = moe_file().routing
    return r.router_bytes_per_token_per_expert * np.asarray(experts, dtype=np.float64) + \
        r.router_bytes_per_copy * np.asarray(top_k, dtype=np.float64)


def permute_bytes_per_token(hidden, top_k, bytes_per_element, experts):
    """HBM bytes of one permute (or one unpermute) pass per token (derived, moe.yaml): read + write h elements per
    routed copy, the int64 gather index of each copy, and the token's row of the bool routing map (E bytes)."""
    r = moe_file().routing
    k = np.asarray(top_k, dtype=np.float64)
    per_copy = r.permute_elements_per_copy * np.asarray(hidden, dtype=np.float64) * \
        np.asarray(bytes_per_element, dtype=np.float64) + r.permute_index_bytes_per_copy
    return k * per_copy + r.routing_map_bytes_per_token_per_expert * np.asarray(experts, dtype=np.float64)


def _deepep_nvl_recv_tokens(ranks):
    table = moe_file().buffers.deepep.nvl_recv_tokens
    r = np.asarray(ranks, dtype=np.float64)
    out = np.full(r.shape, float(table[-1][1]))
    for limit, tokens in reversed(table):
        out = np.where(r <= limit, float(tokens), out)
    return out


def deepep_buffer_bytes(hidden, ep, bytes_per_element=2.0):
    """Bytes per device of DeepEP's normal-mode NVLink + RDMA buffers for an EP group of ``ep`` ranks (DeepEP
    csrc/config.hpp get_nvl_buffer_size_hint + get_rdma_buffer_size_hint with deep_ep/buffer.py's default configs;
    hidden_bytes = h·max(element size, 2) as Megatron-Core fused_a2a.get_buffer).  Independent of the token count:
    the kernels stream tokens through fixed per-channel ring buffers.  The source-meta bytes per token (a few bytes
    in internode mode) are left out."""
    d = moe_file().buffers.deepep
    p = np.maximum(np.asarray(ep, dtype=np.float64), 1.0)
    hb = np.asarray(hidden, dtype=np.float64) * np.maximum(np.asarray(bytes_per_element, dtype=np.float64), 2.0)
    channels = d.num_sms // 2
    meta = d.max_topk * (d.topk_idx_bytes + 4) + d.max_scales * 4  # top-k indices + weights + scales per token
    nvl_ranks = np.minimum(p, d.nvl_peers)
    rdma_ranks = np.maximum(np.floor(p / d.nvl_peers), 1.0)
    nvl = channels * nvl_ranks * ((2 * rdma_ranks + 3) * 4 + _deepep_nvl_recv_tokens(p) * (hb + meta))
    rdma = np.where(p > d.nvl_peers,
                    channels * rdma_ranks * ((d.nvl_peers * 2 + 2) * 2 * 4
                                             + d.rdma_recv_tokens * 2 * (hb + meta + 16)), 0.0)
    return nvl + rdma


def dispatch_buffer_bytes(dispatcher: Literal["alltoall", "allgather", "flex"], tokens, hidden, top_k, ep,
                          bytes_per_element=2.0, imbalance=1.0):
    """Bytes per device of the dispatch / combine receive buffers (moe.yaml ``buffers``):
    alltoall — the copies routed to the local experts, tokens·k·h·bytes·imbalance (Megatron-Core all-to-all
    dispatcher, sized at run time; combine reuses the same amount); allgather — the EP group's gathered hidden
    states, tokens·ep·h·bytes; flex (DeepEP) — the fixed NVLink + RDMA buffers of ``deepep_buffer_bytes``.
    ``tokens`` = tokens one device routes per micro-batch."""
    n = np.asarray(tokens, dtype=np.float64)
    h = np.asarray(hidden, dtype=np.float64)
    b = np.asarray(bytes_per_element, dtype=np.float64)
    ep_a = np.maximum(np.asarray(ep, dtype=np.float64), 1.0)
    if dispatcher == "alltoall":
        return np.where(ep_a > 1, n * np.asarray(top_k, dtype=np.float64) * h * b *
                        np.asarray(imbalance, dtype=np.float64), 0.0)
    if dispatcher == "allgather":
        return np.where(ep_a > 1, n * ep_a * h * b, 0.0)
    if dispatcher == "flex":
        return np.where(ep_a > 1, deepep_buffer_bytes(h, ep_a, b), 0.0)
    raise ValueError(f"unknown MoE dispatcher {dispatcher!r} (allowed: alltoall, allgather, flex)")
