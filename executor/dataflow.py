"""Reference executor of the dataflow family: an inductive loop nest mapped onto a DSP, played out as ops on the
shared discrete-event engine (``executor/engine.py``).

Per outer iteration k: one op per core used, whose duration is that core's own share of the iteration's vector
loops, dealt loop by loop (the loops of a group cyclically over the cores when there are at least as many loops
as cores, else each loop's elements split over the cores; with implicit masking the group's concatenated stream
dealt in equal chunks) and priced per loop (U·⌈m_i/(v·U)⌉ vector ops, reductions at max(1, L_mac/U) cycles each,
loop overhead per loop the core runs); the dependence chain as an op on its own stream — before the cores' work
on an in-order DSP, beside it on a dataflow array; the iteration's memory traffic as a transfer on a memory link;
and a hand-off op (the iteration's hand-offs × the sync mode's cycles) that waits for all of them and that the
next iteration waits on.  The closed form (``models/dataflow_terms.py``) prices the busiest core with sums in
closed form; this plays every loop, so ``agreement`` checks those sums and the overlap of chain, work and memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.executor.engine import FWD, P2P_FWD, Program, run
from parplan.models.dataflow_terms import SYNC_MODES, memory_bandwidth

MAX_OPS = 400_000


@dataclass
class DataflowRun:
    makespan_s: float
    ops: int
    iterations: int
    core_busy_s: list  # per core: seconds of vector work
    busy_fraction: float

    def to_dict(self) -> dict:
        return {"makespan_s": self.makespan_s, "ops": self.ops, "iterations": self.iterations,
                "busy_fraction": self.busy_fraction}


def _shares(m: np.ndarray, c: int) -> np.ndarray:
    """Elements of loops of lengths ``m`` on each of c cores (block split): shape (len(m), c)."""
    i = np.arange(c)[None, :]
    return (m[:, None] // c) + (i < (m[:, None] % c))


def core_cycles(g, k: int, c: int, v: float, U: int, lat_mac: float, overhead: float, masking: bool,
                vsc: bool) -> np.ndarray:
    """Cycles each of c cores spends on loop group ``g`` in iteration k."""
    cnt, hi = int(g.count[k]), int(g.hi[k])
    if cnt <= 0 or hi <= 0:
        return np.zeros(c)
    w = v * U
    tps = max(1.0, lat_mac / U) if g.carried else 1.0
    if masking:
        e = int(round(float(g.elements[k])))
        chunk = np.array([e // c + (i < e % c) for i in range(c)], float)
        slots = chunk / v
        loops = np.full(c, float(-(-cnt // c)))
    elif cnt >= c:
        owner_loops = np.array([len(range(i, cnt, c)) for i in range(c)], float)
        if g.triangular:
            lengths = hi - np.arange(cnt)
            per = U * np.ceil(lengths / w)
            slots = np.array([per[i::c].sum() for i in range(c)])
        else:
            slots = owner_loops * U * np.ceil(hi / w)
        loops = owner_loops
    else:
        lengths = (hi - np.arange(cnt)) if g.triangular else np.full(cnt, hi)
        sh = _shares(lengths.astype(np.int64), c)
        slots = (U * np.ceil(sh / w)).sum(axis=0)
        loops = np.full(c, float(cnt))
    ctrl = np.full(c, overhead) if vsc else overhead * loops
    return slots * tps + ctrl


def simulate_plan(spec, dsp, plan: dict) -> DataflowRun:
    """Play ``plan`` (cores, vector, unroll, sync) of the workload's nest on ``dsp``."""
    from parplan.models.dataflow import require_cores

    require_cores(dsp)
    nest = spec.nest()
    c, U = int(plan["cores"]), int(plan["unroll"])
    if nest.iterations * (c + 3) > MAX_OPS:
        raise SpecError(f"{nest.iterations:,} iterations × {c + 3} ops is above the executor's {MAX_OPS:,} ops",
                        key="kernel", hint="simulate a smaller size; the closed form prices any size")
    v = dsp.width(spec.dtype, plan["vector"] == "on")
    hz = dsp.clock_hz
    lat = dsp.latency
    mode = plan["sync"] if plan["sync"] in SYNC_MODES else "barrier"
    s = 0.0 if (c == 1 and mode == "barrier") else dsp.sync_cycles.get(mode, 0.0)
    bw = float(memory_bandwidth(dsp, nest.working_set_bytes, np.array([float(c)]))[0][0])
    lanes = max(c * v, 1.0)
    prog = Program()
    cores = [prog.add_stream(f"core{i}", i) for i in range(c)]
    chain_s, mem_s, sync_s = prog.add_stream("chain", c), prog.add_stream("memory", c), prog.add_stream("sync", c)
    link = prog.add_link("memory", c)
    busy = np.zeros(c)
    prev = -1
    for k in range(nest.iterations):
        cyc = np.zeros(c)
        for g in nest.groups:
            cyc += core_cycles(g, k, c, v, U, lat["mac"], dsp.loop_overhead_cycles, dsp.implicit_masking,
                               dsp.vector_stream_control)
        busy += cyc
        ldep = (nest.dep_mac[k] * lat["mac"] + nest.dep_div[k] * lat["div"] + nest.dep_sqrt[k] * lat["sqrt"]
                + nest.dep_reduce[k] * lat["add"] * np.ceil(np.log2(lanes)))
        ch = prog.add_op(FWD, chain_s, ldep / hz, mb=k)
        if prev >= 0:
            prog.dep(prev, ch)
        mem = prog.add_op(P2P_FWD, mem_s, nest.bytes[k] / bw, links=(link,), mb=k)
        if prev >= 0:
            prog.dep(prev, mem)
        work = []
        for i in range(c):
            o = prog.add_op(FWD, cores[i], cyc[i] / hz, mb=k)
            if not dsp.fine_grain_overlap:
                prog.dep(ch, o)  # in-order phases: the pivot chain, then the vector update
            elif prev >= 0:
                prog.dep(prev, o)
            work.append(o)
        hand = prog.add_op(FWD, sync_s, nest.handoffs[k] * s / hz, mb=k)
        for o in work + [ch, mem]:
            prog.dep(o, hand)
        prev = hand
    res = run(prog)
    makespan = max(res.end) if res.end else 0.0
    core_s = list(busy / hz)
    frac = float(busy.sum() / hz / (c * makespan)) if makespan > 0 else 0.0
    return DataflowRun(makespan, len(prog), nest.iterations, core_s, frac)


def agreement(model, hw, *, plans: "list[str] | None" = None) -> list[dict]:
    """Closed form vs the executor over cores × vectorized × unroll (or the given plan strings)."""
    from parplan.hardware.dsp import load_dsp
    from parplan.models.dataflow import estimate_plan, parse_plan
    from parplan.workloads.dataflow import load_dataflow

    spec, dsp = load_dataflow(model), load_dsp(hw)
    if plans is None:
        from parplan.models.dataflow import require_cores

        require_cores(dsp)
        cores = sorted({1, max(1, dsp.cores // 2), dsp.cores})
        plans = [f"cores={c},vector={vv},unroll={u}" for c in cores for vv in ("on", "off") for u in (1, 4)
                 if u <= dsp.max_unroll]
    rows = []
    for text in plans:
        plan = parse_plan(text, spec, dsp)
        e = estimate_plan(spec, dsp, plan)
        sim = simulate_plan(spec, dsp, plan)
        rows.append({"workload": spec.name, "device": dsp.id, "plan": e.plan_string(), "simulated_s": sim.makespan_s,
                     "predicted_s": e.total_s, "error": e.total_s / sim.makespan_s - 1.0})
    return rows
