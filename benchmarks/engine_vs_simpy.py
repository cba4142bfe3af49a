"""The executor's discrete-event engine beside SimPy on the same programs: wall time, speed-up, and makespans.

    python benchmarks/engine_vs_simpy.py [--repeat N] [--scale S]

Four patterns, each one ``executor.engine.Program`` that both simulators play out (SimPy replays it: one process
per stream, a ``simpy.Event`` per op for its dependencies, fair sharing of a link by re-timing every transfer on it
at each join and leave — the usual way to write processor sharing in SimPy, https://simpy.readthedocs.io/):

* **pure timeouts**: 64 streams of compute ops, no dependencies, no links;
* **1F1B replay**: the synthetic 1F1B pipeline of ``benchmarks/executor_speed.py`` (p = 8; compute, p2p sends);
* **one link shared by 8**: 8 streams each sending transfers of different sizes over one link (7–8 present);
* **many links**: 256 links, two streams of transfers on each.

The engine must beat SimPy by ≥ 2× on every pattern, with the same makespan (to the last few ulps: the engine's
virtual-clock re-timing and SimPy's explicit one round differently).  SimPy is an optional benchmark dependency
(``pip install simpy``); without it only the engine's side is printed.  Wall times: the best of ``--repeat`` runs
(the machine's load is printed beside them: compare tables from a quiet machine).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from parplan.executor.engine import FWD, P2P_FWD, Program, run

TARGET_SPEEDUP = 2.0


def pure_timeouts(scale: float) -> Program:
    p = Program()
    for s in range(64):
        st = p.add_stream(f"s{s}", s)
        for i in range(int(2_000 * scale)):
            p.add_op(FWD, st, 0.5 + ((s * 7919 + i * 104729) % 1000) / 1000.0)
    return p


def one_f_one_b(scale: float) -> Program:
    from parplan.executor.costs import PipelineCosts
    from parplan.executor.program import build_program
    from parplan.executor.simulate import _device_factors

    costs = PipelineCosts.uniform(8, max(8, int(2_048 * scale)), 1.0, 2.0, p2p_s=0.05)
    return build_program(costs, "1f1b", 1, _device_factors({}, 1, costs.pp, [])).prog


def shared_link(scale: float) -> Program:
    p = Program()
    lk = p.add_link("link", 0)
    for s in range(8):
        st = p.add_stream(f"tx{s}", s)
        for i in range(int(4_000 * scale)):
            p.add_op(P2P_FWD, st, 0.1 + 0.01 * ((s * 31 + i * 17) % 23), links=(lk,))
    return p


def many_links(scale: float) -> Program:
    p = Program()
    for k in range(256):
        lk = p.add_link(f"l{k}", k)
        for s in range(2):
            st = p.add_stream(f"tx{k}.{s}", k)
            for i in range(int(120 * scale)):
                p.add_op(P2P_FWD, st, 0.2 + 0.01 * ((k + s * 13 + i * 7) % 17), links=(lk,))
    return p


PATTERNS = [("pure timeouts", pure_timeouts), ("1F1B replay (p=8)", one_f_one_b),
            ("one link shared by 8", shared_link), ("many links (256)", many_links)]


def simpy_replay(prog: Program) -> float:
    """Play ``prog`` out in SimPy (single-link transfers; see the module docstring); its makespan."""
    import simpy

    env = simpy.Environment()
    n = len(prog)
    done = [env.event() for _ in range(n)]
    deps: list = [[] for _ in range(n)]
    for a, b in zip(prog.dep_from, prog.dep_to):
        deps[b].append(done[a])
    flows: list = [set() for _ in prog.link_name]
    streams, durs, lats, links = (prog.column(c) for c in ("stream", "dur", "lat", "links"))
    last = [0.0]  # the makespan: the last op's end (env.now overshoots: superseded timeouts stay on SimPy's queue)

    def changed(lk, me) -> None:
        for proc in flows[lk]:
            if proc is not me:
                proc.interrupt()

    def transfer(o):
        lk = links[o][0]
        if lats[o] > 0.0:
            yield env.timeout(lats[o])
        me = env.active_process
        flows[lk].add(me)
        changed(lk, me)
        rem = durs[o]
        while True:
            k = len(flows[lk])
            t0 = env.now
            try:
                yield env.timeout(rem * k)
                break
            except simpy.Interrupt:
                rem = max(0.0, rem - (env.now - t0) / k)
        flows[lk].discard(me)
        changed(lk, me)

    def stream(ops):
        for o in ops:
            if deps[o]:
                yield env.all_of(deps[o])
            if links[o] is None:
                yield env.timeout(durs[o])
            else:
                if len(links[o]) != 1:
                    raise ValueError("this replay handles single-link transfers only")
                yield env.process(transfer(o))
            done[o].succeed()
            last[0] = max(last[0], env.now)

    per_stream: list = [[] for _ in prog.stream_name]
    for o, s in enumerate(streams):
        per_stream[s].append(o)
    for ops in per_stream:
        env.process(stream(ops))
    env.run()
    return last[0]


def best_of(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per pattern and simulator (best shown)")
    ap.add_argument("--scale", type=float, default=1.0, help="program size factor (1 = the sizes above)")
    args = ap.parse_args(argv)
    try:
        import simpy  # noqa: F401
        have_simpy = True
    except ImportError:
        have_simpy = False
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"engine vs SimPy (Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {load:.2f}; best of {args.repeat})")
    head = f"{'pattern':<24} {'ops':>9} {'events':>9} {'engine s':>9} {'events/s':>11}"
    print(head + (f" {'SimPy s':>9} {'speed-up':>9} {'makespan engine':>16} {'SimPy':>16} {'rel diff':>9}"
                  if have_simpy else ""))
    ok = True
    for label, make in PATTERNS:
        prog = make(args.scale)
        prog.column("kind")  # (SimPy's replay reads the op columns: transposed once per program, outside the timing)
        t_e, res = best_of(lambda: run(prog), args.repeat)
        span = max(res.end) if len(prog) else 0.0
        line = f"{label:<24} {len(prog):>9,} {res.events:>9,} {t_e:>9.3f} {res.events / t_e:>11,.0f}"
        if have_simpy:
            t_s, span_s = best_of(lambda: simpy_replay(prog), max(1, args.repeat - 1))
            rel = abs(span - span_s) / max(abs(span_s), 1e-300)
            speed = t_s / t_e
            ok &= speed >= TARGET_SPEEDUP and rel < 1e-9
            line += f" {t_s:>9.3f} {speed:>8.1f}× {span:>16.6f} {span_s:>16.6f} {rel:>9.1e}"
        print(line)
    if have_simpy:
        print(f"target: ≥ {TARGET_SPEEDUP:g}× SimPy on every pattern, equal makespans: {'met' if ok else 'NOT met'}")
    else:
        print("SimPy is not installed (pip install simpy): engine only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
