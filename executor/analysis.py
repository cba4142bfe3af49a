"""Analysis of a played-out program: the event timeline, where every device's step went, link use, memory.

Per device, the compute stream's ops in execution order; a gap before an op is attributed to what the op waited
for last: a data-parallel collective (``dp_comm_exposed_s``), an exposed all-to-all (``ep_a2a_s``, at most the
transfer's own duration), otherwise the pipeline (``bubble_s``).  The parts sum to the step time.
"""
from __future__ import annotations

import numpy as np

from parplan.executor.a2a import RD, a2a_decode, a2a_name
from parplan.executor.costs import PipelineCosts
from parplan.executor.engine import (BWD, DP_GRAD, DP_KINDS, DP_PARAM, EP_A2A, FWD, KIND_NAMES, OPTIMIZER, P2P_BWD,
                                     P2P_FWD, WGRAD, Program, RunResult)
from parplan.executor.program import _Built
from parplan.executor.results import DeviceStats, Event, LinkStats, Schedule


def _op_name(kind: int, mb: int, chunk: int, part: int, v: int) -> str:
    if kind == EP_A2A:
        return a2a_name(mb, chunk, part, v)
    base = {FWD: "F", BWD: "B", WGRAD: "W", OPTIMIZER: "optimizer", P2P_FWD: "p2p F", P2P_BWD: "p2p B",
            DP_GRAD: "grad", DP_PARAM: "ag"}[kind]
    if kind == OPTIMIZER:
        return base
    name = f"{base}{mb}" if mb >= 0 else base
    if v > 1 and chunk >= 0:
        name += f".c{chunk}"
    if part >= 0:
        name += f".p{part}"
    return name


def _interval_union(starts: np.ndarray, ends: np.ndarray) -> float:
    if len(starts) == 0:
        return 0.0
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    block_end = np.append(run_end[idx[1:] - 1], run_end[-1])
    return float(np.sum(block_end - s[idx]))


def _max_concurrency(starts: np.ndarray, ends: np.ndarray) -> int:
    if len(starts) == 0:
        return 0
    t = np.concatenate([starts, ends])
    d = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    o = np.lexsort((d, t))  # at equal times, leaves (−1) before joins
    return int(np.max(np.cumsum(d[o])))


def build_events(prog: Program, res: RunResult, comp: list, names: list, v: int) -> list:
    kinds, streams, mbs, chunks, parts, links = (prog.column(c) for c in ("kind", "stream", "mb", "chunk", "part",
                                                                          "links"))
    comp_set = set(comp)
    sdev, sname, lname, ldev = prog.stream_device, prog.stream_name, prog.link_name, prog.link_device
    start, end, join = res.start, res.end, res.join
    evs = []
    add = evs.append
    for o in range(len(kinds)):
        kd, st, ls = kinds[o], streams[o], links[o]
        nm = _op_name(kd, mbs[o], chunks[o], parts[o], v)
        dv = sdev[st]
        if ls is None:
            add(Event(sname[st], nm, KIND_NAMES[kd], dv, mbs[o], chunks[o], parts[o], start[o], end[o]))
            continue
        if st in comp_set:  # a blocking send occupies its device too
            add(Event(names[dv], nm, KIND_NAMES[kd], dv, mbs[o], chunks[o], parts[o], start[o], end[o]))
        elif kd == EP_A2A and not a2a_decode(parts[o])[2]:  # an exposed all-to-all blocks its members' compute
            for lk in ls:
                dm = ldev[lk]
                add(Event(names[dm], nm, KIND_NAMES[kd], dm, mbs[o], chunks[o], parts[o], start[o], end[o]))
        for lk in ls:
            add(Event(lname[lk], nm, KIND_NAMES[kd], dv, mbs[o], chunks[o], parts[o], join[o], end[o]))
    evs.sort(key=lambda e: (e.start_s, e.track, e.end_s, e.name))
    return evs


def analyze(built: _Built, res: RunResult, costs: PipelineCosts, schedule: str, mode: str, replicas: int,
            factors: list[float], notes: list) -> Schedule:
    prog = built.prog
    p, v = costs.pp, costs.vpp
    n = len(prog)
    kind = np.fromiter(prog.column("kind"), dtype=np.int64, count=n)
    stream = np.fromiter(prog.column("stream"), dtype=np.int64, count=n)
    start = np.fromiter(res.start, dtype=np.float64, count=n)
    end = np.fromiter(res.end, dtype=np.float64, count=n)
    join = np.fromiter(res.join, dtype=np.float64, count=n)
    unblk = np.fromiter(res.unblocker, dtype=np.int64, count=n)
    tp_part = np.fromiter(prog.column("tp"), dtype=np.float64, count=n)
    rc_part = np.fromiter(prog.column("rc"), dtype=np.float64, count=n)
    mem_alloc = np.fromiter(prog.column("mem_alloc"), dtype=np.float64, count=n)
    mem_free = np.fromiter(prog.column("mem_free"), dtype=np.float64, count=n)
    work = np.fromiter(prog.column("dur"), dtype=np.float64, count=n)
    step = float(end.max()) if n else 0.0
    D = len(built.comp)
    dev_of_stream = np.asarray(prog.stream_device, dtype=np.int64)
    comp_dev = np.full(len(prog.stream_name), -1, dtype=np.int64)
    comp_dev[np.asarray(built.comp, dtype=np.int64)] = np.arange(D)
    is_dp = np.isin(kind, DP_KINDS)
    unblk_dp = np.where(unblk >= 0, is_dp[np.maximum(unblk, 0)], False)
    compute = np.isin(kind, (FWD, BWD, WGRAD))
    p2p_k = np.isin(kind, (P2P_FWD, P2P_BWD))
    durs = end - start

    # compute streams: ops in execution order, gaps attributed to what the op waited for last
    cdev = comp_dev[stream]
    on_comp = np.flatnonzero(cdev >= 0)
    order = on_comp[np.lexsort((on_comp, start[on_comp], cdev[on_comp]))]
    od = cdev[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = od[1:] != od[:-1]
    prev_end = np.concatenate([[0.0], end[order][:-1]])
    prev_end[first] = 0.0
    gap = np.maximum(start[order] - prev_end, 0.0)
    gap_dp = np.bincount(od, weights=np.where(unblk_dp[order], gap, 0.0), minlength=D)
    gap_all = np.bincount(od, weights=gap, minlength=D)
    is_ep = kind == EP_A2A
    has_ep = bool(is_ep.any())
    if has_ep:
        part = np.fromiter(prog.column("part"), dtype=np.int64, count=n)
        hidden = is_ep & (part % 2 == 1)  # a2a.a2a_part: the low bit marks a hidden part
        replay = is_ep & ~hidden & (part % 16 // 2 >= RD)  # the exposed all-to-all of full recompute
        # waiting for an exposed all-to-all: at most the chain of back-to-back exposed transfers it closes (since
        # the device's previous op ended), the rest is the pipeline
        xo = np.flatnonzero(is_ep & ~hidden)
        xo = xo[np.lexsort((start[xo], stream[xo]))]
        new = np.ones(len(xo), dtype=bool)
        new[1:] = (stream[xo][1:] != stream[xo][:-1]) | (start[xo][1:] > end[xo][:-1])
        chain_start = np.zeros(n)
        chain_start[xo] = start[xo][new][np.cumsum(new) - 1]
        ub = np.maximum(unblk[order], 0)
        by_x = (unblk[order] >= 0) & is_ep[ub] & ~hidden[ub]
        wait_ep = np.where(by_x, np.clip(np.minimum(gap, end[ub] - np.maximum(chain_start[ub], prev_end)), 0.0, None),
                           0.0)
        gap_ep = np.bincount(od, weights=wait_ep, minlength=D)
        xdev = dev_of_stream[stream[replay]]
        replay_s = np.bincount(xdev, weights=durs[replay], minlength=D)[:D]
    else:
        gap_ep = np.zeros(D)
    last_end = np.zeros(D)
    np.maximum.at(last_end, od, end[order])

    def per_dev(mask):
        sel = on_comp[mask[on_comp]]
        return np.bincount(cdev[sel], weights=durs[sel], minlength=D)

    def per_dev_w(mask, w):
        sel = on_comp[mask[on_comp]]
        return np.bincount(cdev[sel], weights=w[sel], minlength=D)

    busy_compute = per_dev(compute)
    tp_s = per_dev_w(compute, tp_part)
    rc_s = per_dev_w(compute, rc_part)
    p2p_s = per_dev(p2p_k)
    opt_s = per_dev(kind == OPTIMIZER)

    # activation memory: allocated when a forward starts, freed when its backward (ZB: W) ends
    mdev = dev_of_stream[stream]
    ma = np.flatnonzero(mem_alloc > 0)
    mf = np.flatnonzero(mem_free > 0)
    t_m = np.concatenate([start[ma], end[mf]])
    d_m = np.concatenate([mem_alloc[ma], -mem_free[mf]])
    dv_m = np.concatenate([mdev[ma], mdev[mf]])
    mo = np.lexsort((d_m, t_m, dv_m))  # per device, by time, frees before allocations at equal times
    t_m, d_m, dv_m = t_m[mo], d_m[mo], dv_m[mo]
    csum = np.cumsum(d_m)
    timelines = []
    peaks = np.zeros(D)
    bounds = np.searchsorted(dv_m, np.arange(D + 1))
    for d in range(D):
        lo, hi = bounds[d], bounds[d + 1]
        base = csum[lo - 1] if lo > 0 else 0.0
        level = csum[lo:hi] - base
        timelines.append((t_m[lo:hi], level))
        peaks[d] = max(float(level.max()), 0.0) if hi > lo else 0.0

    devices = []
    for d in range(D):
        r, s = divmod(d, p)
        tail = step - last_end[d]
        bubble = float(gap_all[d] - gap_dp[d] - gap_ep[d] + tail) if has_ep else float(gap_all[d] - gap_dp[d] + tail)
        devices.append(DeviceStats(
            name=built.names[d], replica=r, stage=s, compute_s=float(busy_compute[d] - tp_s[d] - rc_s[d]),
            recompute_s=float(rc_s[d]), tp_comm_s=float(tp_s[d]), pp_p2p_s=float(p2p_s[d]),
            bubble_s=bubble, dp_comm_exposed_s=float(gap_dp[d]),
            optimizer_s=float(opt_s[d]), peak_activation_bytes=float(peaks[d]), slowdown=factors[d],
            ep_a2a_s=float(gap_ep[d])))
    # the critical device: the pipeline's bottleneck, i.e. the busiest device (lowest index on ties)
    busy = np.array([d.busy_s for d in devices])
    crit = int(np.flatnonzero(busy >= busy.max() * (1 - 1e-12))[0]) if D else 0

    # links
    olinks = prog.column("links")
    lo_ops, lo_links = [], []
    for o, ls in enumerate(olinks):
        if ls is not None:
            for lk in ls:
                lo_ops.append(o)
                lo_links.append(lk)
    lo_ops_a = np.asarray(lo_ops, dtype=np.int64)
    lo_links_a = np.asarray(lo_links, dtype=np.int64)
    links = []
    lorder = np.argsort(lo_links_a, kind="stable")
    lb = np.searchsorted(lo_links_a[lorder], np.arange(len(prog.link_name) + 1))
    for lk, name in enumerate(prog.link_name):
        ids = lo_ops_a[lorder[lb[lk]:lb[lk + 1]]]
        js, es = join[ids], end[ids]
        links.append(LinkStats(name=name, transfers=len(ids), busy_s=_interval_union(js, es),
                               work_s=float(np.sum(work[ids])), max_concurrent=_max_concurrency(js, es),
                               a2a_work_s=float(np.sum(work[ids][is_ep[ids]])) if has_ep else 0.0))

    cd = devices[crit]
    exposed = {"tp": cd.tp_comm_s, "pp_p2p": cd.pp_p2p_s, "dp": cd.dp_comm_exposed_s}
    if has_ep:
        exposed["ep"] = cd.ep_a2a_s
    totals = {
        "step_time_s": step, "ops": n, "engine_events": res.events,
        "critical_device": cd.name, "bubble_s": cd.bubble_s, "compute_s": cd.compute_s,
        "recompute_s": cd.recompute_s, "tp_comm_s": cd.tp_comm_s, "pp_p2p_s": cd.pp_p2p_s,
        "dp_comm_exposed_s": cd.dp_comm_exposed_s, "optimizer_s": cd.optimizer_s,
        "peak_activation_bytes": float(peaks.max()) if D else 0.0,
        "busy_fraction": float(busy.mean() / step) if step > 0 else 0.0,
    }
    if has_ep:
        totals.update({"ep_a2a_s": cd.ep_a2a_s, "ep_a2a_recompute_s": float(replay_s[crit]), "a2a_ops": int(is_ep.sum()),
                       "a2a_exposed_work_s": float(work[is_ep & ~hidden].sum()),
                       "a2a_hidden_work_s": float(work[is_ep & hidden].sum()),
                       "expert_imbalance": float(costs.expert_imbalance)})
    return Schedule(schedule=schedule, mode=mode, pp=p, vpp=v, micro_batches=costs.micro_batches, replicas=replicas,
                    step_time_s=step, devices=devices, links=links, memory_timeline=timelines,
                    critical_device=crit, exposed_comm_s=exposed, totals=totals, notes=notes,
                    _event_source=(prog, res, built.comp, built.names, v))


