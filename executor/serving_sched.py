"""One replica's continuous-batching scheduler and paged KV cache, as vLLM's v1 scheduler runs them.

Per engine iteration (``Replica.schedule``; vLLM ``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule`` —
https://github.com/vllm-project/vllm/blob/main/vllm/v1/core/sched/scheduler.py):

1. a token budget of ``chunk_tokens`` (``max_num_batched_tokens``) is spent on the **running** requests first:
   every decoding sequence one token, then the partial prefills in admission order, each a chunk as large as the
   budget left (chunked prefill);
2. each needs KV slots for its new tokens in blocks of ``BLOCK_TOKENS``; when the free blocks do not suffice, the
   *last-admitted* running request is preempted (``self.running.pop()``), its blocks freed and its computed tokens
   dropped (preemption by recompute, v1's only mode), and it goes back to the *front* of the waiting queue
   (``prepend_request``); on resumption it prefills its prompt and the tokens it has already generated again;
3. when nothing was preempted this iteration, **waiting** requests are admitted in order while the budget, the
   sequence cap ``max_batch`` (``max_num_seqs``) and the free blocks allow (v1 admits none after a preemption).

``chunk_tokens = 0`` means no chunking: a prompt is prefilled whole in one iteration, and prompts are added while
their sum stays within 2048 tokens (one prompt always goes: vLLM's ``max_num_batched_tokens`` without chunked
prefill is ``max(max_model_len, 2048)`` — ``vllm/config`` ``SchedulerConfig``, https://docs.vllm.ai/en/latest/
api/vllm/config/scheduler.html).  With chunking, the running sequences are capped at ``min(max_batch,
chunk_tokens)`` so that every decoding sequence gets its token each iteration.

The decoding set is kept as aggregates, not per sequence, so that an iteration costs O(1) however large the batch:
a sequence that starts decoding after the replica's ``k0``-th iteration with ``c0`` tokens in its cache holds
``a + k`` tokens after the ``k``-th (``a = c0 − k0``) and finishes after iteration ``k0 + osl − g0``; the batch's
cached tokens are ``Σa + n·k``; and it needs a new KV block in iteration ``k + 1`` iff ``(a + k) mod 16 = 0``, so
the blocks the decodes need are the count of sequences with ``a ≡ −k (mod 16)`` — 16 phase counters.
Finishes come off a heap keyed by the finishing iteration (entries of preempted sequences go stale by epoch).
"""
from __future__ import annotations

import heapq
from collections import deque

# vLLM's default KV block size (--block-size 16; https://docs.vllm.ai/en/latest/configuration/engine_args.html)
BLOCK_TOKENS = 16
NO_CHUNK_BUDGET = 2048  # max_num_batched_tokens floor without chunked prefill (vLLM SchedulerConfig, see above)

WAITING, PREFILL, DECODE, HELD, DONE = range(5)


class Reqs:
    """Every request's state, one list per field (struct of arrays), indexed by request id."""

    __slots__ = ("isl", "osl", "arrival", "first", "end", "g", "c", "blk", "k0", "a", "epoch", "last", "state",
                 "replica", "preempted", "itl_extra")

    def __init__(self, isl, osl) -> None:
        n = len(isl)
        self.isl = [int(x) for x in isl]
        self.osl = [int(x) for x in osl]
        self.arrival = [0.0] * n
        self.first = [-1.0] * n  # time of the first output token
        self.end = [-1.0] * n  # time of the last output token
        self.g = [0] * n  # output tokens generated (decoding: at its join iteration k0)
        self.c = [0] * n  # tokens computed into the KV cache (not decoding)
        self.blk = [0] * n  # KV blocks held (not decoding)
        self.k0 = [0] * n
        self.a = [0] * n
        self.epoch = [0] * n
        self.last = [0.0] * n  # time of the latest output token
        self.state = [WAITING] * n
        self.replica = [-1] * n
        self.preempted = [0] * n
        self.itl_extra: list = []  # (time, gap): token gaps longer than one iteration (after a recompute, a transfer)


def _ceil_blocks(tokens: int) -> int:
    return -(-tokens // BLOCK_TOKENS)


class Replica:
    """One replica of a pool: its queues, its decode aggregates, its KV blocks and its iteration counters.

    ``role``: ``mixed`` (prefill and decode), ``prefill`` (a finished prefill leaves for the decode pool, its KV held
    until the transfer is done), ``decode`` (requests arrive with their prompt's KV; a preempted one recomputes here).
    """

    __slots__ = ("idx", "pool", "role", "cost", "cap", "max_seqs", "budget", "k", "busy", "waiting", "running",
                 "prefilling", "n_dec", "a_sum", "phase", "fin", "used", "held", "chunks", "dec_now", "new_dec",
                 "iterations", "dec_total", "busy_s", "preemptions", "block_s", "peak_blocks", "tokens_out", "iter_fn",
                 "R")

    def __init__(self, idx: int, pool: int, role: str, cost, iter_fn, reqs: Reqs) -> None:
        self.idx, self.pool, self.role, self.cost, self.R = idx, pool, role, cost, reqs
        self.iter_fn = iter_fn  # (prefill_tokens, decode_seqs, kv_tokens) -> seconds
        self.cap = int(cost.kv_capacity_tokens) // BLOCK_TOKENS
        chunk = int(cost.chunk_tokens)
        self.budget = chunk if chunk > 0 else 0
        self.max_seqs = min(int(cost.max_batch), chunk) if chunk > 0 else int(cost.max_batch)
        self.k = 0
        self.busy = False
        self.waiting: deque = deque()
        self.running: dict = {}  # rid -> None, in admission order (popitem(): the last admitted)
        self.prefilling: list = []  # running requests still prefilling, in admission order
        self.n_dec = 0
        self.a_sum = 0
        self.phase = [0] * BLOCK_TOKENS
        self.fin: list = []  # heap (finishing iteration, rid, epoch)
        self.used = 0  # blocks of running requests
        self.held = 0  # blocks of finished prefills waiting for their KV transfer (role prefill)
        self.chunks: list = []  # this iteration's prefill chunks (rid, tokens)
        self.dec_now = 0  # decoding sequences in this iteration
        self.new_dec: list = []  # of them, the ones admitted already decoding (KV transferred in)
        self.iterations = 0
        self.dec_total = 0  # decoding sequences summed over the iterations
        self.busy_s = 0.0
        self.preemptions = 0
        self.block_s = 0.0  # ∫ blocks in use dt over the iterations
        self.peak_blocks = 0
        self.tokens_out = 0

    @property
    def load(self) -> int:
        """Requests on the replica (least-loaded routing)."""
        return len(self.running) + len(self.waiting)

    def enqueue(self, rid: int) -> None:
        self.waiting.append(rid)

    def has_waiting(self) -> bool:
        return bool(self.waiting)

    def _preempt_last(self, allocated: bool = False) -> tuple[int, int]:
        """Preempt the last-admitted running request: (blocks freed, its ``a`` when it was decoding else None).
        ``allocated``: this iteration's decode blocks are already taken (a decode gives its new block back)."""
        R = self.R
        rid, _ = self.running.popitem()
        k = self.k
        a = None
        if R.state[rid] == DECODE:
            a = R.a[rid]
            freed = _ceil_blocks(a + k) + (1 if allocated and (a + k) % BLOCK_TOKENS == 0 else 0)
            R.g[rid] += k - R.k0[rid]
            self.n_dec -= 1
            self.a_sum -= a
            self.phase[a % BLOCK_TOKENS] -= 1
            R.epoch[rid] += 1
        else:
            freed = R.blk[rid]
            self.prefilling.remove(rid)
        R.c[rid] = 0
        R.blk[rid] = 0
        R.state[rid] = WAITING
        R.preempted[rid] += 1
        self.used -= freed
        self.waiting.appendleft(rid)
        self.preemptions += 1
        return freed, a

    def schedule(self) -> float:
        """Choose the next iteration's batch; its duration in seconds, or −1 when there is nothing to run."""
        R = self.R
        k = self.k
        free = self.cap - self.used - self.held
        preempted = False
        # 1. decodes: one token each; new blocks for the sequences whose cache fills a block
        need = self.phase[(-k) % BLOCK_TOKENS] if self.n_dec else 0
        while need > free:
            freed, a = self._preempt_last()
            if a is not None and (a + k) % BLOCK_TOKENS == 0:
                need -= 1
            free += freed
            preempted = True
        self.used += need
        free -= need
        n_dec = self.n_dec
        kv = self.a_sum + n_dec * (k + 1)
        budget = self.budget
        left = budget - n_dec if budget else 0
        prefill = 0
        chunks = self.chunks = []
        # 2. partial prefills, in admission order
        i = 0
        while i < len(self.prefilling) and (left > 0 or not budget):
            rid = self.prefilling[i]
            c = R.c[rid]
            target = R.isl[rid] + R.g[rid]
            n = target - c
            if budget:
                n = min(n, left)
            elif prefill and prefill + n > NO_CHUNK_BUDGET:
                break
            add = _ceil_blocks(c + n) - R.blk[rid]
            while add > free and rid in self.running:
                freed, a = self._preempt_last(allocated=True)
                free += freed
                preempted = True
                if a is not None:  # a decode of this iteration leaves it
                    n_dec -= 1
                    kv -= a + k + 1
                    if budget:
                        left += 1
            if rid not in self.running:
                break  # it was itself the last one: preempted
            R.blk[rid] += add
            self.used += add
            free -= add
            chunks.append((rid, n))
            prefill += n
            kv += c + n
            if budget:
                left -= n
            i += 1
        # 3. waiting requests, unless this iteration preempted
        new_dec = self.new_dec = []
        if not preempted:
            waiting = self.waiting
            while waiting and len(self.running) < self.max_seqs and (left > 0 or not budget):
                rid = waiting[0]
                c = R.c[rid]
                target = R.isl[rid] + R.g[rid]
                n = target - c
                if budget:
                    n = min(n, left)
                elif prefill and prefill + n > NO_CHUNK_BUDGET:
                    break
                add = _ceil_blocks(c + n)
                if add > free:
                    break
                waiting.popleft()
                self.running[rid] = None
                R.replica[rid] = self.idx
                self.used += add
                free -= add
                kv += c + n
                if budget:
                    left -= n
                if n == 1 and R.g[rid] >= 1 and c > 0:  # KV transferred in: it decodes at once
                    a = c - k
                    R.a[rid], R.k0[rid], R.state[rid] = a, k, DECODE
                    R.epoch[rid] += 1
                    # blocks: ceil((c+1)/16) now; from the next iteration on, the phase counters
                    self.n_dec += 1
                    self.a_sum += a
                    self.phase[a % BLOCK_TOKENS] += 1
                    heapq.heappush(self.fin, (k + R.osl[rid] - R.g[rid], rid, R.epoch[rid]))
                    new_dec.append(rid)
                else:
                    R.state[rid] = PREFILL
                    R.blk[rid] = add
                    self.prefilling.append(rid)
                    chunks.append((rid, n))
                    prefill += n
        dec = n_dec + len(new_dec)
        self.dec_now = dec
        if not dec and not chunks:
            if preempted and self.waiting:  # everything was preempted: admit afresh (vLLM's next step)
                return self.schedule()
            return -1.0
        if self.used + self.held > self.peak_blocks:
            self.peak_blocks = self.used + self.held
        return self.iter_fn(prefill, dec, kv)

    def finish_iteration(self, t: float, done: list, handoff: list) -> int:
        """The iteration ending at ``t``: tokens sampled, finished requests (appended to ``done``), finished
        prefills of a prefill pool (appended to ``handoff``); returns the output tokens produced."""
        R = self.R
        k = self.k = self.k + 1
        tokens = self.dec_now
        for rid in self.new_dec:
            R.itl_extra.append((t, t - R.last[rid]))
            R.last[rid] = t
        fin = self.fin
        while fin and fin[0][0] <= k:
            _, rid, ep = heapq.heappop(fin)
            if ep != R.epoch[rid] or R.state[rid] != DECODE:
                continue
            a = R.a[rid]
            self.used -= _ceil_blocks(a + k)
            self.n_dec -= 1
            self.a_sum -= a
            self.phase[a % BLOCK_TOKENS] -= 1
            del self.running[rid]
            R.g[rid] = R.osl[rid]
            R.state[rid] = DONE
            R.end[rid] = t
            R.last[rid] = t
            done.append(rid)
        for rid, n in self.chunks:
            c = R.c[rid] = R.c[rid] + n
            g = R.g[rid]
            if c < R.isl[rid] + g:
                continue
            tokens += 1  # the prefill's last chunk samples a token
            g = R.g[rid] = g + 1
            if g == 1:
                R.first[rid] = t
            else:
                R.itl_extra.append((t, t - R.last[rid]))
            R.last[rid] = t
            self.prefilling.remove(rid)
            if g >= R.osl[rid]:
                del self.running[rid]
                self.used -= R.blk[rid]
                R.blk[rid] = 0
                R.state[rid] = DONE
                R.end[rid] = t
                done.append(rid)
            elif self.role == "prefill":
                del self.running[rid]
                self.used -= R.blk[rid]
                self.held += R.blk[rid]
                R.state[rid] = HELD
                handoff.append(rid)
            else:
                a = c - k
                R.a[rid], R.k0[rid], R.state[rid] = a, k, DECODE
                R.epoch[rid] += 1
                self.n_dec += 1
                self.a_sum += a
                self.phase[a % BLOCK_TOKENS] += 1
                heapq.heappush(fin, (k + R.osl[rid] - g, rid, R.epoch[rid]))
        self.tokens_out += tokens
        return tokens

    def release(self, rid: int) -> None:
        """A handed-off request's KV has left (role prefill)."""
        self.held -= self.R.blk[rid]
        self.R.blk[rid] = 0
