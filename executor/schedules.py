"""Pipeline schedules: the order in which one pipeline device runs the forward (F), backward (B) and, for
zero-bubble schedules, weight-gradient (W) passes of every micro-batch and model chunk.

Each generator returns, for device ``s`` of ``p``, a list of ``(pass, micro_batch, chunk)`` with pass one of
``"F"``, ``"B"`` or ``"W"`` (ZB-H1 only: the weight-gradient half of a backward, split off B).
Dependencies (a micro-batch's forward on virtual stage k needs its forward on k−1, its backward on k needs the
backward on k+1 and its own forward) are added by the executor; the order here is what each device commits to.

* ``gpipe`` (Huang et al. 2019): all forwards, then all backwards.
* ``1f1b`` (PipeDream-Flush, Narayanan et al. 2021): ``p − s − 1`` warm-up forwards, then one forward / one
  backward alternately, then the remaining backwards.
* ``interleaved`` (Narayanan et al. 2021 §2.2, Megatron-LM ``forward_backward_pipelining_with_interleaving``):
  device s holds chunks c = 0..v−1 = virtual stages c·p + s; micro-batches go in groups of p through chunk 0,
  then chunk 1, …; warm-up ``2(p − s − 1) + (v − 1)·p`` forwards (all of them when m = p, as Megatron does).
* ``zb-h1`` (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", handcrafted schedule ZB-H1): the 1F1B order of F
  and B, where B computes only the input gradient and passes it upstream at once; stage s runs the weight
  gradient W of micro-batch j − s after B of micro-batch j and the s deferred W's at the end, filling the tail
  where 1F1B idles.  Every stage then holds at most p micro-batches of activations — 1F1B's peak (stage 0's) —
  and with W = B = F the bubble shrinks from (p−1)(F+B+W) to (p−1)(F+B−W).
"""
from __future__ import annotations

from parplan.errors import SpecError

SCHEDULES = ("1f1b", "gpipe", "interleaved", "zb-h1")


def default_schedule(vpp: int) -> str:
    return "interleaved" if vpp > 1 else "1f1b"


def check_schedule(kind: str, p: int, v: int, m: int, zero: int) -> None:
    if kind not in SCHEDULES:
        from parplan.errors import did_you_mean

        raise SpecError(f"unknown schedule {kind!r}", key="--schedule", allowed=list(SCHEDULES),
                        hint=did_you_mean(kind, SCHEDULES))
    if kind != "interleaved" and v > 1:
        raise SpecError(f"schedule {kind} runs one model chunk per device but the plan has vpp={v}", key="--schedule",
                        hint="use --schedule interleaved, or vpp=1")
    if kind == "interleaved" and v > 1 and m % p:
        raise SpecError(f"the interleaved schedule needs micro-batches ({m}) divisible by pp={p}", key="--schedule")
    if kind == "zb-h1" and zero >= 2:
        raise SpecError(f"zb-h1 is simulated with zero ≤ 1 (the plan has zero={zero})", key="--schedule",
                        hint="use --schedule 1f1b for ZeRO-2/3 plans")


def order_gpipe(p: int, m: int, s: int) -> list[tuple[str, int, int]]:
    return [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]


def order_1f1b(p: int, m: int, s: int) -> list[tuple[str, int, int]]:
    warm = min(p - s - 1, m)
    out = [("F", j, 0) for j in range(warm)]
    nf, nb = warm, 0
    for _ in range(m - warm):
        out.append(("F", nf, 0))
        nf += 1
        out.append(("B", nb, 0))
        nb += 1
    out.extend(("B", j, 0) for j in range(nb, m))
    return out


def order_interleaved(p: int, v: int, m: int, s: int) -> list[tuple[str, int, int]]:
    if v == 1:
        return order_1f1b(p, m, s)
    total = m * v
    group = p * v

    def fwd(k: int) -> tuple[str, int, int]:
        return ("F", (k // group) * p + k % p, (k % group) // p)

    def bwd(k: int) -> tuple[str, int, int]:
        return ("B", (k // group) * p + k % p, v - 1 - (k % group) // p)

    warm = total if m == p else min((p - s - 1) * 2 + (v - 1) * p, total)
    out = [fwd(k) for k in range(warm)]
    for k in range(total - warm):
        out.append(fwd(warm + k))
        out.append(bwd(k))
    out.extend(bwd(k) for k in range(total - warm, total))
    return out


def order_zb_h1(p: int, m: int, s: int) -> list[tuple[str, int, int]]:
    warm = min(p - s - 1, m)
    out = [("F", j, 0) for j in range(warm)]
    nf, nw = warm, 0
    for i in range(m):
        if nf < m:
            out.append(("F", nf, 0))
            nf += 1
        out.append(("B", i, 0))
        if i - s >= 0:
            out.append(("W", i - s, 0))
            nw = i - s + 1
    out.extend(("W", j, 0) for j in range(nw, m))
    return out


def device_order(kind: str, p: int, v: int, m: int, s: int) -> list[tuple[str, int, int]]:
    if kind == "gpipe":
        return order_gpipe(p, m, s)
    if kind == "1f1b":
        return order_1f1b(p, m, s)
    if kind == "zb-h1":
        return order_zb_h1(p, m, s)
    return order_interleaved(p, v, m, s)
