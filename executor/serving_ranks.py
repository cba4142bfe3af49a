"""A replica of attention-DP ranks in lock-step, as SGLang's DP attention runs it (``--enable-dp-attention``):
every rank is its own scheduler (``serving_sched.Replica``) over its share of the replica's sequence cap, token
budget and KV cache — SGLang divides ``--max-running-requests`` and ``--chunked-prefill-size`` by the DP size
(python/sglang/srt/server_args.py, "DP attention is enabled. The chunked prefill size is adjusted") — and a
request lives on one rank from admission to its end (the least-loaded, lowest index on ties).  The ranks step
together, since every MoE layer's all-to-all joins them (a rank with nothing to run takes part idle): one
iteration is priced on the replica's totals and its busiest rank's prompt tokens
(``PoolCost.iteration_ranks_s``), and ends for every rank at once.

``RankGroup`` offers the loop (``serving_loop``) and the statistics (``serving_stats``) what a ``Replica`` does.
"""
from __future__ import annotations

from parplan.executor.serving_sched import Replica


class _Share:
    """One rank's view of the replica's cost: its share of the sequences, the chunk and the KV cache."""

    def __init__(self, cost, dp: int) -> None:
        self.cost = cost
        self.max_batch = max(int(cost.max_batch) // dp, 1)
        chunk = int(cost.chunk_tokens)
        self.chunk_tokens = max(chunk // dp, 1) if chunk > 0 else 0
        self.kv_capacity_tokens = int(cost.kv_capacity_tokens) // dp

    def kv_transfer_s(self, tokens: int) -> float:
        return self.cost.kv_transfer_s(tokens)


def _summed(name: str) -> property:
    return property(lambda self: sum(getattr(r, name) for r in self.ranks))


class RankGroup:
    """``dp`` ranks of one replica (see the module docstring); ``fn(prefill, decodes, kv, busiest prefill)``
    prices an iteration."""

    def __init__(self, idx: int, pool: int, role: str, cost, fn, reqs, dp: int) -> None:
        share = _Share(cost, dp)
        self._seen: list = []
        record = self._seen.append

        def rank_fn(p, d, kv):  # a rank's part of the iteration: recorded, priced by the group
            record((p, d, kv))
            return 1.0
        self.ranks = [Replica(idx, pool, role, share, rank_fn, reqs) for _ in range(dp)]
        self._idx, self.pool, self.role, self.cost, self.fn, self.R = idx, pool, role, cost, fn, reqs
        self.busy = False
        self.iterations = self.dec_total = 0
        self.busy_s = self.block_s = 0.0
        self.dec_now = 0
        self.new_dec: list = []
        self._active: list = []
        self._where: dict = {}  # rid -> its rank

    @property
    def idx(self) -> int:
        return self._idx

    @idx.setter
    def idx(self, value: int) -> None:  # the loop numbers the replicas; a request's replica is its ranks' index
        self._idx = value
        for r in self.ranks:
            r.idx = value

    # what the loop and the statistics read of a replica: the ranks' sums
    load, used, held, cap = _summed("load"), _summed("used"), _summed("held"), _summed("cap")
    max_seqs, preemptions, tokens_out = _summed("max_seqs"), _summed("preemptions"), _summed("tokens_out")

    @property
    def rank_cap(self) -> int:
        return self.ranks[0].cap

    @property
    def peak_blocks(self) -> float:  # the fullest rank's peak share, over the replica's blocks
        return max(r.peak_blocks / r.cap if r.cap else 0.0 for r in self.ranks) * self.cap

    def enqueue(self, rid: int) -> None:
        best = min(self.ranks, key=lambda r: r.load)  # min keeps the lowest index on ties
        self._where[rid] = best
        best.enqueue(rid)

    def has_waiting(self) -> bool:
        return any(r.waiting for r in self.ranks)

    def release(self, rid: int) -> None:
        self._where.pop(rid).release(rid)

    def schedule(self) -> float:
        seen = self._seen
        active = self._active = []
        P = D = KV = top = 0
        for r in self.ranks:
            seen.clear()
            if r.schedule() < 0.0:
                continue
            active.append(r)
            p, d, kv = seen[-1]
            P, D, KV, top = P + p, D + d, KV + kv, max(top, p)
        self.dec_now = sum(r.dec_now for r in active)
        self.new_dec = [x for r in active for x in r.new_dec]
        if not active:
            return -1.0
        return self.fn(P, D, KV, top)

    def finish_iteration(self, t: float, done: list, handoff: list) -> int:
        n = 0
        for r in self._active:
            before = len(done)
            n += r.finish_iteration(t, done, handoff)
            for rid in done[before:]:
                self._where.pop(rid, None)
        return n
