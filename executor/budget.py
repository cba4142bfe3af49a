"""Work budget of the reference executor: the events of a simulation, estimated before its program is built.

**Events** = ops + transfers: every op of the program (compute passes and their per-layer parts, p2p sends, DP/ZeRO
collectives, all-to-all transfers, optimizer steps) finishes once on the engine's heap, and a transfer joins and
leaves its links.  ``estimate_events`` counts both from the ``PipelineCosts`` and the schedule alone, with the very
rules ``program.build_program`` (``a2a`` for MoE stages, ``rotation`` for RTP's shard rings) applies: the counts
are exact (tests compare them with built programs of every schedule, ZeRO level and replica count, and of dense,
MoE and rotate plans).  The engine's heap events (``totals["engine_events"]``) are the finishes plus the
re-timings of shared links: on the 83 plans of ``benchmarks/validate_matrix.py`` and ``validate_moe.py`` at most
1.18 × ops + transfers.

Memory and time: a built and played program holds ~800 bytes per op (op records, dependencies, the engine's
arrays, the analysis; a Chrome trace, streamed to its file, ~350 bytes more), and it is built and played at
~0.25 M ops a second.  ``DEFAULT_MAX_EVENTS`` = 2·10⁶ keeps one simulation below ~1.7 GB (measured: 1.67 GB and
8.8 s at the cap with pp=1, where every event is an op); with ``--trace`` the budget is ``TRACE_SHARE`` of it
(measured: 1.1 GB).  The validation matrices need at most 0.78·10⁶ events per plan.
"""
from __future__ import annotations

from dataclasses import dataclass

from parplan.errors import SpecError

DEFAULT_MAX_EVENTS = 2_000_000
TRACE_SHARE = 0.5  # --trace: the share of the budget a traced simulation may use
MAX_EVENTS_HELP = (f"work budget: the most events (ops + transfers) one simulation may play (default "
                   f"{DEFAULT_MAX_EVENTS:,}: ≤ ~1.7 GB, ≤ ~10 s; half of it with --trace), counted before the step "
                   "is built; above it the command refuses (exit 2)")


class EventBudgetError(SpecError):
    """The estimated events of a simulation are above its budget (one line, exit code 2)."""


@dataclass(frozen=True)
class EventEstimate:
    ops: int  # every op of the program
    transfers: int  # of them: p2p, DP/ZeRO collectives, all-to-all

    @property
    def events(self) -> int:
        return self.ops + self.transfers


def check_max_events(value, key: str = "--max-events") -> int:
    from parplan.planner.budget import check_number

    return check_number(value, key, lo=1, integer=True, hint="a number of events, e.g. 10000000")


def _moe_counts(costs, schedule: str, replicas: int):
    """Per virtual stage with MoE layers: (compute ops, hidden transfers, exposed transfers) of one forward and
    one backward, with one part and with one part per layer — the items ``a2a.MoEPasses`` builds."""
    from parplan.executor.a2a import MoEPasses, _merge, _Piece
    from parplan.executor.engine import Program

    p, R = costs.pp, replicas
    zb = schedule == "zb-h1"
    moe = MoEPasses(Program(), costs, [0] * (R * p), [""] * (R * p), [1.0] * (R * p), R, lambda d: 0, zb,
                    costs.moe_full_recompute)
    groups = len(moe.members)

    def count(items, n_parts):
        c = h = x = 0
        for it in _merge(items, n_parts):
            if isinstance(it, _Piece):
                c += R
                h += R * sum(1 + (moe.etp_split(code, work)[1] > 0.0) for code, work in it.hid if work > 0.0)
            else:
                x += groups * (1 + (moe.etp_split(it[1], it[0])[1] > 0.0))
        return c, h, x

    out = {}
    for k in range(costs.virtual_stages):
        if int(costs.moe_layers[k]) <= 0:
            continue
        nk = max(1, int(costs.layers[k]))
        out[k] = {(kind, n): count(getattr(moe, f"{kind}_items")(k, n), n)
                  for kind in ("forward", "backward") for n in {1, nk}}
    return out


def estimate_events(costs, schedule: str, replicas: int) -> EventEstimate:
    """Ops and transfers of the program ``build_program(costs, schedule, replicas, …)`` would build (exact)."""
    import numpy as np

    p, v, m = int(costs.pp), int(costs.vpp), int(costs.micro_batches)
    K, zero, R = p * v, int(costs.zero), int(replicas)
    zb = schedule == "zb-h1"
    dpg_s, dpa_s = costs._z("dp_grad_s"), costs._z("dp_param_s")
    dp_on = costs.dp_ranks > 1 and (any(x > 0 for x in dpg_s) or any(x > 0 for x in dpa_s))
    grad_on = dp_on and any(x > 0 for x in dpg_s)
    param_on = dp_on and zero >= 1 and any(x > 0 for x in dpa_s)
    a2a_on = costs.has_moe and sum(costs.a2a_fwd_s or ()) + sum(costs.a2a_bwd_s or ()) > 0
    nk = np.maximum(1, np.asarray(costs.layers, dtype=np.int64)).astype(object)  # Python ints: no overflow
    ones = np.ones(K, dtype=np.int64).astype(object)
    # per virtual stage, over its m micro-batches: how many passes have one part per layer ("split") — the first
    # forward of a chunk (ZeRO-1/2 parameter gather), every forward (ZeRO-3), the last backward (gradient
    # buckets behind it), every backward (ZeRO-2/3)
    if param_on and zero == 3:
        f_split = m * ones
    elif param_on and zero in (1, 2):
        f_split = ones
    else:
        f_split = 0 * ones
    if not zb and dp_on and zero in (2, 3):
        b_split = m * ones
    elif not zb and dp_on and grad_on:
        b_split = ones
    else:
        b_split = 0 * ones
    f_parts = f_split * nk + (m - f_split)  # compute ops per device (dense stages)
    b_parts = b_split * nk + (m - b_split)
    ag = (f_split * nk if param_on else 0 * ones) + (b_parts if (param_on and zero == 3) else 0 * ones)
    if grad_on and not zb:
        grad = m * nk if zero in (2, 3) else nk
    elif grad_on and zb:
        grad = nk
    else:
        grad = 0 * ones
    k = np.arange(K)
    p2p = R * m * ((k < K - 1).astype(np.int64) + (k > 0).astype(np.int64))
    compute = R * (f_parts + b_parts) + (R * m * ones if zb else 0 * ones)
    a2a = 0 * ones
    if a2a_on:
        for kk, c in _moe_counts(costs, schedule, R).items():
            n = max(1, int(costs.layers[kk]))
            fs, bs = int(f_split[kk]), int(b_split[kk])
            tot_c = tot_t = 0
            for kind, split in (("forward", fs), ("backward", bs)):
                for n_parts, times in ((n, split), (1, m - split)):
                    cc, hh, xx = c[(kind, n_parts)]
                    tot_c += times * cc
                    tot_t += times * (hh + xx)
            compute[kk] = tot_c + (R * m if zb else 0)
            a2a[kk] = tot_t
    if int(costs.rtp_shards) > 1:  # RTP (``rotation``): per layer part and ring, S sub-steps and S − 1 hops
        S, rings = int(costs.rtp_shards), 2 + int(bool(costs.rtp_replay))  # forward, (replay,) backward
        compute = R * m * nk * (2 + S * rings)  # + the part's op outside its GEMMs, forward and backward
        a2a = a2a + m * nk * (S - 1) * rings
    transfers = int(np.sum(ag) + np.sum(grad) + np.sum(p2p.astype(object)) + np.sum(a2a))
    ops = int(np.sum(compute)) + transfers + R * p  # + the optimizer steps
    return EventEstimate(ops=ops, transfers=transfers)


def over_event_budget(est: EventEstimate, limit: int, what: str, hint: str | None = None) -> EventBudgetError:
    return EventBudgetError(
        f"{what} would play {est.events:,} events, above the budget of {limit:,}", key="--max-events",
        hint=hint or "raise --max-events (~800 B, ~4 µs per event) or play fewer micro-batches or chunks")
