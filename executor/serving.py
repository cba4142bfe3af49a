"""Reference executor for serving: a request-level discrete-event simulation of a deployment.

``simulate_serving(workload, cluster, serving, deployment)`` plays ``n_requests`` seeded requests of the
``ServingSpec``'s mix through the deployment's pools, every engine iteration priced by the analytical model's
``PoolCost`` of its pool (``models/serving.py`` ``pool_cost``) and nothing else; ``simulate_pools`` does the same
for hand-made pools (``PoolSpec``: a role, a replica count and any object with the ``PoolCost`` interface —
``iteration_s(prefill_tokens, decode_seqs, kv_tokens)``, ``kv_capacity_tokens``, ``kv_transfer_s(tokens)``,
``max_batch``, ``chunk_tokens``).

What is simulated (modules): the requests (``serving_mix``: ISL/OSL laws, Poisson or closed-loop arrivals), each
replica's continuous-batching scheduler and paged KV cache with preemption by recompute (``serving_sched``, vLLM
v1's policy), routing and KV transfers (``serving_loop``), the statistics (``serving_stats``: TTFT, TPOT, ITL, E2E
percentiles, throughput, KV use, preemptions, warm-up left out).

A pool cost with ``attn_dp`` > 1 (attention-DP ranks) gets replicas of ranks in lock-step (``serving_ranks``).

Modes (from the pools' roles):

* **aggregated** — ``mixed`` pools: every replica prefills and decodes;
* **disaggregated** — ``prefill`` pools → KV transfer → ``decode`` pools;
* **af-disaggregated** (MegaScale-Infer, ``../shared/SEEDS.md`` S09) — an ``attention`` pool (it holds the KV
  cache and runs the scheduler) and an ``expert`` pool; one iteration of an attention replica's batch, split into
  ``m = micro_batches`` micro-batches, takes the ping-pong pipeline's time (``ping_pong_s``) of the attention side
  ``A`` and the expert side ``E`` of one micro-batch and their exchange ``C`` (``_PingPong``), when the attention
  cost offers its attention side alone (``attention_s``); an attention cost without it prices the pair itself
  (``iteration_s`` = the ping-pong iteration, as ``models/serving.py`` does), and the executor uses it as it is.

Work is bounded: at most ``max_requests`` requests, and ``max_events`` heap events (arrivals, iterations,
transfers, wake-ups); a lower bound of the events is checked before the run, the count itself during it, and either
refusal is one line naming the cap (``EventBudgetError``, exit 2 on the CLI).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from parplan.errors import SpecError
from parplan.executor.budget import EventBudgetError
from parplan.executor.serving_loop import ServingBudgetError, play
from parplan.executor.serving_mix import RequestMix, draw_requests, mix_from_serving
from parplan.executor.serving_ranks import RankGroup
from parplan.executor.serving_sched import BLOCK_TOKENS, Replica, Reqs
from parplan.executor.serving_stats import ServingSimulation, summarize

DEFAULT_REQUESTS = 2_000
DEFAULT_MAX_REQUESTS = 1_000_000
# measured: ~1.5 µs and ~100 B per event with a closed-form PoolCost (benchmarks/validate_serving.py); the cap keeps
# one simulation within ~10 s of the loop alone and ~1 GB
DEFAULT_MAX_EVENTS = 10_000_000
WARMUP_SHARE = 0.1  # default share of the requests left out as warm-up (ours)
ROLES = ("mixed", "prefill", "decode", "attention", "expert")
MAX_EVENTS_HELP = (f"work budget of a serving simulation: the most heap events (arrivals, iterations, transfers) "
                   f"it may play (default {DEFAULT_MAX_EVENTS:,}); above it the command refuses (exit 2)")


@dataclass(frozen=True)
class PoolSpec:
    role: str  # one of ROLES
    replicas: int
    cost: object  # a PoolCost
    devices_per_replica: int = 1


def ping_pong_s(a: float, e: float, c: float, m: int, layers: int = 0) -> float:
    """One iteration of MegaScale-Infer's ping-pong pipeline (S09 (b)): ``m`` micro-batches cycle between the
    attention and the expert pool through every layer.  Per layer a micro-batch takes ``t_a`` (attention),
    ``t_c`` (dispatch), ``t_e`` (experts), ``t_c`` (combine); the attention pool, the expert pool and the link each
    serve the ``m`` micro-batches in turn, and a micro-batch cannot start its next layer before its round trip is
    done, so a layer takes ``max(m·t_a, m·t_e, m·t_c, t_a + t_e + 2·t_c)`` — both pools busy iff
    ``m·t_f ≥ 2(t_f + t_c)`` for balanced pools, S09's condition — plus one fill/drain ``t_a + t_e + 2·t_c`` per
    iteration.  Arguments are whole-model seconds of one micro-batch (``a = L·t_a`` …); ``layers = L`` (0: the
    fill/drain, ``1/L`` of a round trip, is left out)."""
    trip = a + e + 2.0 * c
    steady = max(m * a, m * e, m * c, trip)
    return steady + (trip / layers if layers else 0.0)


class _PingPong:
    """``iteration_s`` of an attention replica in af-disaggregated mode, composed from the two pools' costs:
    the attention side of one micro-batch ``attn.attention_s(⌈p/m⌉, ⌈d/m⌉, ⌈kv/m⌉)``, the expert side ``E/m`` with
    ``E = expert.iteration_s(p, d, 0)`` (one expert replica's busy time for the ``m`` micro-batches of an attention
    replica's batch, the fan-in of ``n_a/n_e`` attention replicas included), the one-way exchange
    ``attn.m2n_s(⌈(p+d)/m⌉)`` (0 without it) and ``attn.layers`` (the MoE layers: fill/drain; 0 without it)."""

    def __init__(self, attn, expert, m: int) -> None:
        self.attn, self.expert, self.m = attn, expert, m
        self.m2n = getattr(attn, "m2n_s", None)
        self.layers = int(getattr(attn, "layers", 0) or 0)

    def __call__(self, prefill: int, decode: int, kv: int) -> float:
        m = self.m
        p, d, k = -(-prefill // m), -(-decode // m), -(-kv // m)  # the largest micro-batch
        a = self.attn.attention_s(p, d, k)
        e = self.expert.iteration_s(prefill, decode, 0) / m
        c = float(self.m2n(p + d)) if self.m2n is not None else 0.0
        # what the attention pool runs once per iteration outside the ping-pong (LM head, host, PP hand-offs)
        over = float(self.attn.overhead_s(prefill, decode, kv)) if hasattr(self.attn, "overhead_s") else 0.0
        return ping_pong_s(a, e, c, m, self.layers) + over


class _AffineKV:
    """``iteration_s`` of a cost that is affine in ``kv_tokens`` for fixed ``(prefill_tokens, decode_seqs)`` (the
    KV read of attention is proportional to the cached tokens): two calls per distinct pair, then
    ``f(kv) = f(kv₁) + s·(kv − kv₁)`` — the same value up to rounding, ~100× fewer calls of a costly model."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.memo: dict = {}

    def __call__(self, p: int, d: int, kv: int, *rest) -> float:
        key = (p, d) + rest  # rest: the busiest rank's prompt tokens (``serving_ranks``)
        m = self.memo.get(key)
        if m is None:
            f1 = float(self.fn(p, d, kv, *rest))
            k2 = 2 * kv + BLOCK_TOKENS * (d + 1)
            m = self.memo[key] = (kv, f1, (float(self.fn(p, d, k2, *rest)) - f1) / (k2 - kv))
            return f1
        k1, f1, slope = m
        return f1 + slope * (kv - k1)


AFFINE_RTOL = 1e-9  # collinearity tolerance of the affine-in-kv check (float rounding of a sum of terms; ours)


def affine_in_kv(cost) -> bool:
    """Whether ``cost.iteration_s`` is affine in ``kv_tokens``: the cost's own ``kv_affine`` when it says, else
    checked on a grid — prefill tokens {0, chunk/2, chunk}, decode sequences {0, 1, batch/2, batch}, five cached-token
    counts up to the KV capacity — each line collinear within ``AFFINE_RTOL``."""
    said = getattr(cost, "kv_affine", None)
    if said is not None:
        return bool(said)
    chunk = int(cost.chunk_tokens) or 2048
    B = int(cost.max_batch)
    cap = max(int(cost.kv_capacity_tokens), 1 << 12)
    kvs = [0, cap // 16, cap // 4, cap // 2, cap]
    for p in sorted({0, chunk // 2, chunk}):
        for d in sorted({0, 1, max(B // 2, 1), B}):
            if p == 0 and d == 0:
                continue
            f = [float(cost.iteration_s(p, d, k)) for k in kvs]
            slope = (f[-1] - f[0]) / (kvs[-1] - kvs[0])
            if any(abs(f[0] + slope * (k - kvs[0]) - v) > AFFINE_RTOL * max(abs(v), 1e-12) for k, v in zip(kvs, f)):
                return False
    return True


def _mode_of(roles: set) -> str:
    if roles == {"mixed"}:
        return "aggregated"
    if roles == {"prefill", "decode"}:
        return "disaggregated"
    if roles in ({"attention", "expert"}, {"prefill", "attention", "expert"}):
        return "af-disaggregated"
    raise SpecError(f"pools of roles {sorted(roles)} make no deployment the simulator knows", key="deployment.pools",
                    hint="mixed; prefill + decode; attention + expert (optionally with prefill)")


def _check_cost(cost, where: str) -> None:
    for name in ("iteration_s", "kv_transfer_s"):
        if not callable(getattr(cost, name, None)):
            raise SpecError(f"the pool cost has no {name}()", key=where)
    for name, lo in (("kv_capacity_tokens", 0), ("max_batch", 1), ("chunk_tokens", 0)):
        v = getattr(cost, name, None)
        if isinstance(v, bool) or not isinstance(v, int) and not (isinstance(v, float) and v.is_integer()) \
                or v < lo:
            raise SpecError(f"{name} must be an integer ≥ {lo}, not {v!r}", key=f"{where}.{name}")


# an iteration the analytical model prices in full each time (a cost not affine in the cached tokens, or an
# attention/expert ping-pong pair) takes ~0.3–1.5 ms where a heap event takes ~1.5 µs: it counts as this many events
# against --max-events (measured here; order of magnitude), so the budget bounds the run's time as its help says
PRICED_ITERATION_EVENTS = 200


def events_lower_bound(n: int, mix: RequestMix, pools, decode_reps: list, weight: int = 1) -> int:
    """A lower bound of the heap events a run plays: one arrival per request, one transfer per request when
    disaggregated, and the decode iterations the decoding replicas need even with full batches (each ``weight``
    events)."""
    seqs = sum(r.max_seqs for r in decode_reps) or 1
    iters = int(n * max(0.0, mix.osl.expected - 1.0) / seqs)
    xfer = n if any(p.role == "prefill" for p in pools) else 0
    return n + xfer + iters * weight


def simulate_pools(pools, mix: RequestMix, *, n_requests: int = DEFAULT_REQUESTS, seed: int = 0,
                   warmup: int | None = None, micro_batches: int = 1, max_events: int | None = None,
                   max_requests: int | None = None, notes=()) -> ServingSimulation:
    """Simulate ``n_requests`` of ``mix`` on ``pools`` (``PoolSpec``s; see the module docstring)."""
    mix = mix.check()
    cap_req = DEFAULT_MAX_REQUESTS if max_requests is None else int(max_requests)
    if isinstance(n_requests, bool) or int(n_requests) != n_requests or n_requests < 2:
        raise SpecError(f"a simulation needs ≥ 2 requests, not {n_requests!r}", key="--requests")
    if n_requests > cap_req:
        raise SpecError(f"{n_requests:,} requests are above the cap of {cap_req:,}", key="--requests",
                        hint="simulate fewer requests (each costs ~OSL/batch iterations)")
    n = int(n_requests)
    warm = int(n * WARMUP_SHARE) if warmup is None else int(warmup)
    if not 0 <= warm <= n - 1:
        raise SpecError(f"warm-up of {warm} requests leaves none of {n} to measure", key="--warmup")
    limit = DEFAULT_MAX_EVENTS if max_events is None else int(max_events)
    if micro_batches < 1:
        raise SpecError(f"micro_batches must be ≥ 1, not {micro_batches!r}", key="deployment.micro_batches")
    pools = list(pools)
    for i, p in enumerate(pools):
        if p.role not in ROLES:
            raise SpecError(f"unknown pool role {p.role!r}", key=f"pools[{i}].role", allowed=list(ROLES))
        if p.replicas < 1:
            raise SpecError(f"a pool needs ≥ 1 replica, not {p.replicas!r}", key=f"pools[{i}].replicas")
        _check_cost(p.cost, f"pools[{i}]")
    mode = _mode_of({p.role for p in pools})
    req = draw_requests(mix, n, seed)
    reqs = Reqs(req.isl, req.osl)
    expert = [p for p in pools if p.role == "expert"]
    entry, decode, meta = [], [], []
    weight = PRICED_ITERATION_EVENTS if expert else 1  # (a ping-pong pair is priced in full each iteration)
    has_prefill = any(p.role == "prefill" for p in pools)
    for i, p in enumerate(pools):
        if p.role == "expert":
            continue
        role = p.role
        dp = int(getattr(p.cost, "attn_dp", 1) or 1) if role in ("mixed", "prefill", "decode") else 1
        fn = p.cost.iteration_s if dp == 1 else p.cost.iteration_ranks_s
        if affine_in_kv(p.cost):
            fn = _AffineKV(fn)
        else:
            weight = PRICED_ITERATION_EVENTS
        if role == "attention":
            if callable(getattr(p.cost, "attention_s", None)):
                fn = _PingPong(p.cost, expert[0].cost, micro_batches)
            else:
                notes = tuple(notes) + ("af-disaggregated: the attention pool's cost prices the attention/expert "
                                        "ping-pong pair itself (no attention_s): its iteration is used as given",)
            role = "decode" if has_prefill else "mixed"
        reps = [Replica(0, i, role, p.cost, fn, reqs) if dp == 1 else RankGroup(0, i, role, p.cost, fn, reqs, dp)
                for _ in range(p.replicas)]
        need = int(req.isl.max()) if role == "prefill" else int((req.isl + req.osl - 1).max())
        held = (reps[0].cap if dp == 1 else reps[0].rank_cap) * BLOCK_TOKENS  # a request lives on one rank
        if need > held:
            raise SpecError(f"a request needs {need:,} KV tokens, more than one {'rank' if dp > 1 else 'replica'} of "
                            f"pool {i} ({p.role}) holds ({held:,})", key=f"pools[{i}]",
                            hint="shorter requests, more KV memory per replica (tp, precision) or fewer weights")
        (decode if role == "decode" else entry).extend(reps)
        meta.append({"role": p.role, "replicas": reps, "kv_tokens": reps[0].cap * BLOCK_TOKENS})
    if mix.saturated:
        seqs = sum(r.max_seqs for r in (decode or entry))
        mix = replace(mix, concurrency=2 * seqs)
        notes = tuple(notes) + (f"saturated load: played as a closed loop of {2 * seqs} clients (twice the sequences "
                                "the decoding replicas batch)",)
    lb = events_lower_bound(n, mix, pools, decode or entry, weight)
    heavy = (f" (this deployment's iterations are priced in full, {weight} events each)" if weight > 1 else "")
    if lb > limit:
        raise EventBudgetError(f"the serving simulation of {n:,} requests would play at least {lb:,} events{heavy}, "
                               f"above the budget of {limit:,}", key="--max-events",
                               hint="raise --max-events (~1.5 µs, ~100 B per event) or simulate fewer requests")
    try:
        log = play(reqs, req.arrival_s, mix.concurrency, entry, decode, max(limit // weight, 1))
    except ServingBudgetError as exc:
        raise EventBudgetError(f"the serving simulation reached its budget of {limit:,} events with {exc.done:,} of "
                               f"{n:,} requests finished", key="--max-events",
                               hint="raise --max-events (~1.5 µs, ~100 B per event) or simulate fewer requests") \
            from None
    devices = sum(p.replicas * p.devices_per_replica for p in pools)
    return summarize(reqs, log, entry + decode, meta, mode=mode, mix=mix.describe(), seed=seed, warmup=warm,
                     n_devices=devices, rate=mix.arrival_rate_per_s, notes=notes)


def deployment_pools(workload, cluster, serving, deployment) -> list:
    """The ``PoolSpec``s of a deployment, each with its ``PoolCost`` from the analytical model."""
    from parplan.models.serving import pool_cost

    return [PoolSpec(role=p.role, replicas=int(p.replicas), devices_per_replica=int(p.devices_per_replica),
                     cost=pool_cost(workload, cluster, serving, deployment, i))
            for i, p in enumerate(deployment.pools)]


def simulate_serving(workload, cluster, serving, deployment, *, n_requests: int = DEFAULT_REQUESTS, seed: int = 0,
                     warmup: int | None = None, max_events: int | None = None,
                     max_requests: int | None = None) -> ServingSimulation:
    """Simulate ``n_requests`` of ``serving``'s request mix on ``deployment`` (a ``models.serving_plan.Deployment``)
    of ``workload`` on ``cluster``; every iteration priced by the deployment's ``PoolCost``s."""
    pools = deployment_pools(workload, cluster, serving, deployment)
    return simulate_pools(pools, mix_from_serving(serving), n_requests=n_requests, seed=seed, warmup=warmup,
                          micro_batches=int(getattr(deployment, "micro_batches", 1) or 1), max_events=max_events,
                          max_requests=max_requests)
