"""Long-context sequence workloads: packs of documents, attention masks, and what each context-parallel layout
(``cp_kind``) makes one device compute and receive.

A *pack* is one training sample of ``seq_len`` tokens holding documents back to back (the rest, if any, one
padding document).  A mask admits the (query i, key j) pairs of the attention core:

* ``causal``: j ≤ i over the whole pack (documents ignored);
* ``document``: j ≤ i inside i's document (varlen / document-masked causal attention);
* ``sliding_window(w)``: document-causal with i − j < w;
* ``block_sparse(ρ)``: document-causal with a fraction ρ of the blocks kept (expected value).

Attention FLOPs are 2·pairs·(d_qk + d_v) per head forward, so a pack costs Σ_docs l²/2 under the document mask,
not S²/2.  Context-parallel layouts over c devices (SEEDS S24 (b), S14 (b)):

* ``ring``: the pack in 2c chunks, device d holds chunks d and 2c−1−d (zig-zag load balancing, Megatron-Core /
  Zhu et al. zigzag ring attention); c−1 ring steps of a K,V block; per-device load the pairs of its chunks;
* ``ulysses``: all-to-all of Q,K,V (and O back) so each device holds every token for heads/c (DeepSpeed-Ulysses,
  Jacobs et al. 2023): perfectly balanced, no ring;
* ``hybrid``: USP (Fang & Zhao 2024): Ulysses over u devices inside a node × zig-zag ring over r = c/u groups;
* ``dcp``: per-batch placement of documents (DCP, Jiang et al. SOSP 2025): whole documents on one device while
  they fit (longest first on the least-loaded device with room: LPT), longer ones split over the devices with most
  room; only split documents exchange K,V (a window mask needs only the w keys before a piece).

Statistics are means over ``samples`` packs (drawn with a fixed seed, or the explicit packs), cached per layout.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from parplan.errors import SpecError
from parplan.workloads.transformer import SequenceSpec

CP_KINDS = ("ring", "ulysses", "hybrid", "dcp")
DCP_TOKEN_SLACK = 0.1  # DCP's memory-balance tolerance ε on tokens per device (ours; the paper balances both)


def build_packs(spec: SequenceSpec | None, seq_len: int) -> list[np.ndarray]:
    """Document lengths of each pack (int64 arrays summing to seq_len)."""
    S = int(seq_len)
    if spec is None:
        return [np.array([S], dtype=np.int64)]
    if spec.packs is not None:
        out = []
        for pk in spec.packs:
            if sum(pk) > S:
                raise SpecError(f"a pack holds {sum(pk):,} tokens, more than seq_len {S:,}",
                                key="training.sequences.packs")
            docs = list(pk) + ([S - sum(pk)] if sum(pk) < S else [])
            out.append(np.array(docs, dtype=np.int64))
        return out
    rng = np.random.default_rng(spec.seed)
    p = dict(spec.params)
    if spec.dist == "fixed":  # every pack the same (the stream is not drawn from): built once
        return [_pack(spec.dist, p, rng, S)] * spec.samples
    return [_pack(spec.dist, p, rng, S) for _ in range(spec.samples)]


DRAW = 64  # lengths drawn per call of the document stream (the unit the seeded stream advances by)


def _pack(dist: str, p: dict, rng, S: int) -> np.ndarray:
    """One pack: documents drawn DRAW at a time until they fill S tokens, the last cut to fit, the rest of its draw
    discarded.  Drawn in growing blocks of DRAW-sized draws at once (the generators fill arrays element by element,
    so a block holds the same lengths as its draws one by one), then the stream is set back and advanced by the
    draws used alone, so the packs and the stream are those of drawing DRAW at a time, at numpy speed (one-token
    documents filled a 16M-token pack one Python step each)."""
    docs, left, k = [], S, 1
    while left > 0:
        state = rng.bit_generator.state
        lens = np.floor(np.maximum(_draw(dist, p, rng, DRAW * k), 1.0)).astype(np.int64)
        filled = np.cumsum(lens)
        cut = int(np.searchsorted(filled, left))  # the first document that reaches ``left``
        if cut < len(lens):
            rng.bit_generator.state = state
            _draw(dist, p, rng, DRAW * (cut // DRAW + 1))
            lens = lens[:cut + 1]
            lens[-1] -= int(filled[cut]) - left
        docs.append(lens)
        left -= int(lens.sum())
        k = min(2 * k, 1 << 16)
    return np.concatenate(docs)


def _draw(dist: str, p: dict, rng, n: int) -> np.ndarray:
    if dist == "fixed":
        return np.full(n, float(p["length"]))
    if dist == "uniform":
        return rng.integers(int(p["min"]), int(p["max"]) + 1, size=n).astype(float)
    if dist == "lognormal":
        x = np.exp(np.log(float(p["median"])) + float(p["sigma"]) * rng.standard_normal(n))
        return np.minimum(np.rint(x), float(p.get("max", np.inf)))
    lengths = np.asarray(p["lengths"], dtype=float)
    w = np.asarray(p.get("weights", np.ones(len(lengths))), dtype=float)
    return rng.choice(lengths, size=n, p=w / w.sum())


def _lo(docs: np.ndarray, mask: str, w: float) -> np.ndarray:
    """First admitted key of each query token."""
    S = int(docs.sum())
    i = np.arange(S, dtype=np.int64)
    if mask == "causal":
        lo = np.zeros(S, dtype=np.int64)
    else:
        starts = np.repeat(np.cumsum(docs) - docs, docs)
        lo = starts
    if mask == "sliding_window":
        lo = np.maximum(lo, i - int(w) + 1)
    return lo


def chunk_pairs(docs: np.ndarray, mask: str, param: float, n_chunks: int) -> np.ndarray:
    """M[a, b] = admitted (query in chunk a, key in chunk b) pairs for the pack cut in ``n_chunks`` equal chunks."""
    S = int(docs.sum())
    lo = _lo(docs, mask, param)
    i = np.arange(S, dtype=np.int64)
    edges = np.linspace(0, S, n_chunks + 1).round().astype(np.int64)
    M = np.zeros((n_chunks, n_chunks))
    for b in range(n_chunks):
        c0, c1 = edges[b], edges[b + 1]
        q = slice(c0, S)  # keys of chunk b are only seen by queries at or after c0
        n = np.clip(np.minimum(c1, i[q] + 1) - np.maximum(c0, lo[q]), 0, None).astype(np.float64)
        cs = np.concatenate([[0.0], np.cumsum(n)])  # per query chunk: differences of the cumulative sum
        lo_e, hi_e = (edges[:-1].clip(c0, S) - c0), (edges[1:].clip(c0, S) - c0)
        M[:, b] = cs[hi_e] - cs[lo_e]
    if mask == "block_sparse":
        M *= param
    return M


def zigzag_owner(c: int) -> np.ndarray:
    """Device of each of the 2c chunks under zig-zag chunking: chunk k → min(k, 2c−1−k)."""
    k = np.arange(2 * c)
    return np.minimum(k, 2 * c - 1 - k)


@dataclass(frozen=True)
class CpStats:
    """Per pack (means over the packs): admitted pairs, the busiest device's pairs, the per-step busiest device's
    pairs summed over ring steps (lockstep), K,V tokens the busiest receiver gets per layer forward, tokens held by
    the busiest device, the pair-weighted key span of a kernel call, and ring steps."""

    pairs: float
    dev_max: float
    dev_mean: float
    lockstep: float
    kv_tokens: float
    tokens_max: float
    key_span: float
    steps: float
    profile: object = None  # ring layouts: (packs, device, step) pairs each device computes at each ring step


    @property
    def imbalance(self) -> float:
        return self.dev_max / self.dev_mean if self.dev_mean > 0 else 1.0


def _ring(docs, mask, param, c):
    """(per-device pairs, per-step per-device pairs (c × c), received K,V tokens) of a zig-zag ring over c."""
    S = int(docs.sum())
    M = chunk_pairs(docs, mask, param, 2 * c)
    own = zigzag_owner(c)
    D = np.zeros((c, c))  # D[d, d'] = pairs of d's queries against d''s keys
    np.add.at(D, (own[:, None].repeat(2 * c, 1), own[None, :].repeat(2 * c, 0)), M)
    steps = np.array([[D[d, (d - k) % c] for k in range(c)] for d in range(c)])  # (device, step)
    return D.sum(axis=1), steps, (c - 1) * S / c


def _dcp(docs, mask, param, c):
    """Greedy DCP placement: (per-device pairs, per-device received K,V tokens, per-device tokens).  Documents in
    descending pairs; one goes whole to the least-loaded device with room if that keeps it within (1+ε) of the
    mean load, else it is split into the fewest k ≥ max(2, ⌈l / room⌉) equal pieces that keep the k least-loaded
    devices within (1+ε) of the mean (the computation blocks of a document can go anywhere; their K,V travel)."""
    S = int(docs.sum())
    cap = (1.0 + DCP_TOKEN_SLACK) * S / c
    w = float(param) if mask == "sliding_window" else np.inf
    pairs = np.array([_doc_pairs(int(ln), mask, param) for ln in docs.tolist()])
    target = pairs.sum() / c
    load, tok, recv = np.zeros(c), np.zeros(c), np.zeros(c)
    for j in np.argsort(-pairs, kind="stable"):
        ln, pr = float(docs[j]), float(pairs[j])
        fits = np.flatnonzero(tok + ln <= cap)
        if fits.size:
            d = fits[np.argmin(load[fits])]
            if load[d] + pr <= (1.0 + DCP_TOKEN_SLACK) * target:
                load[d] += pr
                tok[d] += ln
                continue
        order = np.argsort(load, kind="stable")
        k0 = int(min(c, max(2, np.ceil(ln / cap))))
        k = next((k for k in range(k0, c + 1)
                  if load[order[k - 1]] + pr / k <= (1.0 + DCP_TOKEN_SLACK) * target), c)
        devs = order[:k]
        load[devs] += pr / k
        tok[devs] += ln / k
        # causal pieces (zig-zag inside the document) need the other pieces' K,V; a window piece the w keys before
        recv[devs] += (ln - ln / k) if not np.isfinite(w) else min(w, ln - ln / k)
    return load, recv, tok


def _doc_pairs(ln: int, mask: str, param: float) -> float:
    if mask == "sliding_window":
        wv = min(float(param), ln)
        return wv * (wv + 1) / 2 + (ln - wv) * wv
    p = ln * (ln + 1) / 2.0
    return p * param if mask == "block_sparse" else p


def _key_span(docs, mask, param) -> float:
    """Pair-weighted mean keys a query block sees (the kernel's sequence length): Σl³/Σl² per document mask."""
    S = float(docs.sum())
    if mask == "causal":
        return S
    d = docs.astype(float)
    if mask == "sliding_window":
        d = np.minimum(d, float(param))
    return float((d ** 3).sum() / max((d ** 2).sum(), 1.0))


@lru_cache(maxsize=256)
def cp_stats(spec: SequenceSpec | None, seq_len: int, c: int, kind: str, u: int = 1) -> CpStats:
    """Mean per-pack statistics of layout ``kind`` over ``c`` devices (``u``: the Ulysses degree of ``hybrid``)."""
    packs = build_packs(spec, seq_len)
    mask, param = ("causal", 0.0) if spec is None else (spec.mask, spec.mask_param)
    acc = np.zeros(8)
    prof = []
    seen: dict = {}  # a pack drawn again (a fixed length, σ = 0) is priced once: the same values, added again
    for docs in packs:
        key = docs.tobytes()
        if key not in seen:
            seen[key] = _pack_stats(docs, mask, param, c, kind, u)
        row, pr_ = seen[key]
        acc += row
        if pr_ is not None:
            prof.append(pr_)
    return CpStats(*(acc / len(packs)).tolist(), profile=np.stack(prof) if prof else None)


def _pack_stats(docs, mask, param, c: int, kind: str, u: int) -> tuple:
    """One pack's statistics (the 8 values ``cp_stats`` sums) and its ring profile (None for other layouts)."""
    S = float(docs.sum())
    span = _key_span(docs, mask, param)
    r = c // u if kind == "hybrid" else c
    if c <= 1 or kind == "ulysses" or (kind in ("ring", "hybrid") and r <= 1):
        pr = float(chunk_pairs(docs, mask, param, 1).sum())
        if c <= 1:
            return (pr, pr, pr, pr, 0.0, S, span, 0.0), None
        return (pr, pr / c, pr / c, pr / c, 0.0, S, span, 0.0), None
    if kind in ("ring", "hybrid"):
        dev, steps, kv = _ring(docs, mask, param, r)
        dv = u if kind == "hybrid" else 1
        return (dev.sum(), dev.max() / dv, dev.mean() / dv, steps.max(axis=0).sum() / dv, kv, S / r,
                min(span, S / r), r - 1), steps / dv
    if kind == "dcp":  # a causal mask over the pack makes it one sequence
        load, recv, tok = _dcp(np.array([int(S)]) if mask == "causal" else docs, mask, param, c)
        return (load.sum(), load.max(), load.mean(), load.max(), recv.max(), tok.max(), min(span, S / c),
                1.0 if recv.max() > 0 else 0.0), None
    raise SpecError(f"unknown cp_kind {kind!r}", key="plan.cp_kind", allowed=list(CP_KINDS))


def hybrid_ulysses_degree(cp: int, kv_heads_local: int, cp_per_node: int) -> int:
    """USP's Ulysses degree: the largest divisor of cp that divides the local K,V heads and stays in one node."""
    best = 1
    for u in range(1, cp + 1):
        if cp % u == 0 and kv_heads_local % u == 0 and u <= max(cp_per_node, 1):
            best = u
    return best
