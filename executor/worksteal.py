"""Work-stealing discrete-event simulation of a task graph on one MPI rank's threads — the reference the closed form
(``models/tasks.py``) is validated against (``validate``, ``benchmarks/validate_tasks.py``).

Its own heap loop in the style of ``executor/engine.py`` (events ``(time, sequence, worker)``; a global counter
breaks ties, so two runs with one seed are identical):

* **Workers** (threads per socket × sockets / ranks) each own a deque: the owner pushes and pops at the bottom (LIFO),
  a thief takes the top (FIFO) of a random victim, paying ``steal`` plus, across sockets, the remote latency; a
  failed steal costs the same and is retried; a worker with nothing anywhere parks until a task is pushed.
* **Shared-queue runtimes** (libgomp: no stealing, a team-wide lock) keep one FIFO queue; every dispatch (pop or
  steal, in any runtime) holds the team-wide lock for s_lock(P) — the serialization law is played, not assumed.
* **Producers**: a single producer (worker 0) creates the tasks of an iteration one by one (create + deps·dep each);
  recursive tasks push their children when they finish (the spawning worker pays create per child).
* **Dependences** are released when a task finishes: successors whose predecessors are all done are pushed to the
  finishing worker's deque.  Iterations end with a barrier (its cost from the runtime's barrier law); replay
  runtimes (taskgraph, taskiter) release the recorded roots without creation from the second iteration on.
* **Tasks** run for max(work/speed, bytes/bandwidth share) + sched; SMT threads share a core's speed.

The graph (``executor/worksteal_graphs.py``) comes from the workload's DAG summary at the plan's grain: fib's real
call tree, n-queens' and mergesort's trees, the Gauss-Seidel wavefront and sparse LU's task graph; otherwise a
layered DAG (``layers`` = span/grain, each task depending on up to ``deps`` tasks of the previous layer) for single
producers, a balanced binary spawn tree for recursive ones. Graphs above ``max_tasks``
are refused (a coarser grain or a smaller n simulates); iterations beyond ``SIM_ITERATIONS`` are extrapolated from
the simulated replayed ones.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

from parplan.errors import SpecError
from parplan.executor.worksteal_graphs import build_graph
from parplan.models.primitives import workspan as ws
from parplan.models.tasks_terms import profiles, runtime_catalog

SIM_ITERATIONS = 3


@dataclass(frozen=True)
class SimResult:
    makespan_s: float
    tasks: int
    steals: int
    failed_steals: int
    busy_fraction: float
    scale: float  # iterations represented by the simulated ones (1 when all were simulated)


def simulate_plan(spec, machine, plan: dict, *, seed: int = 0, max_tasks: int = 200_000) -> SimResult:
    prof = profiles([plan["runtime"]], socket=machine.socket)
    v = {k: float(a[0]) for k, a in prof.values.items()}
    f = {k: bool(a[0]) for k, a in prof.flags.items()}
    defaults = runtime_catalog()[1]
    sock = machine.socket
    t, S, R = plan["threads"], plan["sockets"], plan["ranks"]
    nodes = machine.nodes if spec.mpi is not None else 1
    W = t * S // R
    grains = list(spec.grains)
    gi = 0 if spec.dag is not None else grains.index(plan["grain"])
    kind, work, links, bytes_, joins = build_graph(spec, gi, R * nodes, max_tasks)
    summary = spec.summary()
    eff = min(t, sock.cores) + defaults["smt_gain"] * max(0, t - sock.cores)
    speed = eff / t
    s_r = max(1.0, S / R)
    r = defaults["remote_steal_fraction"] * (s_r - 1) / s_r * (defaults["numa_aware_remote_cut"] if f["numa_aware"] else 1)
    bw = float(ws.numa_bandwidth(min(t, sock.cores), S, sock.core_bytes_per_s, sock.stream_bytes_per_s,
                                 machine.remote_bytes_per_s, r)) / R  # the rank's bandwidth, shared by the
    core_bw = sock.core_bytes_per_s  # tasks running at once, each at most one core's (the roofline's saturation)
    running = [0]
    lock = float(ws.lock_law(v["lock_s0"], v["lock_s1"], W)) + float(summary.deps[gi]) * v["dep_s1"] * max(W - 1, 0)
    barrier = float(ws.barrier(f["tree"], v["barrier_c"], W))
    fence = sock.fence_s if sock.fence_s is not None else defaults["fence"]
    shared = v["steal"] == 0.0
    single = summary.producer == "single"
    iters = min(summary.iterations, SIM_ITERATIONS)
    rng = random.Random(seed)
    socket_of = [min(S - 1, w * S // W) for w in range(W)] if s_r > 1 else [0] * W
    n = len(work)
    if kind == "layers":
        succ = [[] for _ in range(n)]
        for i, ps in enumerate(links):
            for p in ps:
                succ[p].append(i)
        npred0 = [len(ps) for ps in links]
    parent = [-1] * n
    if joins is not None:
        for i, ks in enumerate(links):
            for c in ks:
                parent[c] = i
    clock = 0.0
    steals = failed = 0
    busy = 0.0
    ends = []
    for it in range(iters):
        replay = f["replays"] and it > 0
        create = 0.0 if replay else v["create"] + summary.deps[gi] * v["dep"] + (fence if f["fence_per_task"] else 0.0)
        if f["replays"] and it == 0:
            create += v["record"]  # the recording iteration stores each task (S08: T_rec = T_norm + N o_rec)
        sched = v["replay"] * (1 - 0.5 * v["immediate_successor"]) if replay else v["sched"]
        tlock = lock if (not replay or f["replay_lock"]) else 0.0  # held by each dequeue (pops run in time order)
        deques = [[] for _ in range(W)]
        queue: list = []
        qhead = [0]
        lock_free = [clock]
        idle: list = []
        heap: list = []
        seq = 0
        done = 0
        npred = list(npred0) if kind == "layers" else None
        ready_count = [0]

        def push(w, task, now):
            nonlocal seq
            if shared:
                queue.append(task)
            else:
                deques[w].append(task)
            at = now
            ready_count[0] += 1
            if idle:
                x = idle.pop()
                seq += 1
                heapq.heappush(heap, (max(at, now), seq, x, -1))
            return at

        start = clock
        # producer: creates every task of the iteration (single) or the root (recursive); replay releases roots
        if kind == "layers":
            roots = [i for i in range(n) if npred[i] == 0]
            tcur = start
            if single and not replay:
                # worker 0 creates all tasks; each is ready when created and its predecessors are done
                created = [0.0] * n
                for i in range(n):
                    tcur += create + tlock * 0  # creation is serialized on the producer
                    created[i] = tcur
                for i in roots:  # released at its creation time (an event), on the producer's deque
                    seq += 1
                    heapq.heappush(heap, (created[i], seq, 0, -2 - i))
            else:
                created = [start] * n
                for j, i in enumerate(roots):
                    push(j % W, i, start)
            prod_free = tcur if (single and not replay) else start
        else:
            created = None
            push(0, 0, start)
            prod_free = start
        for w in range(W):
            seq += 1
            heapq.heappush(heap, (prod_free if (w == 0 and kind == "layers") else start, seq, w, -1))
        total = n + (sum(1 for k in links if k) if joins is not None else 0)
        pending = [len(k) for k in links] if joins is not None else None
        last = start
        while heap:
            now, _, w, fin = heapq.heappop(heap)
            if fin <= -2:  # the single producer has created task -fin-2
                push(w, -fin - 2, now)
                continue
            if fin >= 0:  # task fin finished on w: release successors / spawn children
                done += 1
                if fin < n:
                    running[0] -= 1
                last = max(last, now)
                t0 = now
                if kind == "layers":
                    for sidx in succ[fin]:
                        npred[sidx] -= 1
                        if npred[sidx] == 0:
                            if created[sidx] > t0:  # not created yet: ready when the producer creates it
                                seq += 1
                                heapq.heappush(heap, (created[sidx], seq, 0, -2 - sidx))
                            else:
                                push(w, sidx, t0)
                else:
                    if fin < n:
                        for c in links[fin]:
                            t0 += create
                            push(w, c, t0)
                    if joins is not None and (fin >= n or not links[fin]):
                        p = parent[fin - n if fin >= n else fin]
                        if p >= 0:
                            pending[p] -= 1
                            if pending[p] == 0:  # the last half done: this worker merges (the sync continuation)
                                dur = max(joins[0][p] / speed, joins[1][p] / min(core_bw, bw / (running[0] + 1)))
                                busy += dur
                                seq += 1
                                heapq.heappush(heap, (t0 + dur, seq, w, n + p))
                                continue
                seq += 1
                heapq.heappush(heap, (t0, seq, w, -1))
                continue
            if done >= total:
                continue
            task = None
            if shared:
                if qhead[0] < len(queue):
                    at = max(now, lock_free[0]) + tlock
                    lock_free[0] = at
                    task = queue[qhead[0]]
                    qhead[0] += 1
                    now = at
            elif deques[w]:
                task = deques[w].pop()
                at = max(now, lock_free[0]) + tlock  # the team-wide serialized part of a dispatch, s_lock(P)
                lock_free[0] = at
                now = at
            elif ready_count[0] > 0:
                victim = rng.randrange(W - 1) if W > 1 else 0
                victim += victim >= w
                cost = v["steal"] + (machine.remote_latency_s if socket_of[victim] != socket_of[w] else 0.0)
                now += cost
                if W > 1 and deques[victim]:
                    task = deques[victim].pop(0)
                    steals += 1
                    now = max(now, lock_free[0]) + tlock
                    lock_free[0] = now
                else:
                    failed += 1
                    seq += 1
                    heapq.heappush(heap, (now, seq, w, -1))
                    continue
            if task is None:
                idle.append(w)
                continue
            ready_count[0] -= 1
            running[0] += 1
            dur = max(work[task] / speed, bytes_[task] / min(core_bw, bw / running[0])) + sched
            busy += dur
            seq += 1
            heapq.heappush(heap, (now + dur, seq, w, task))
        clock = last + (0.0 if (replay and f["no_iteration_barrier"]) else barrier * summary.rounds[gi])
        ends.append(clock)
    its = summary.iterations
    if its > iters:
        per = (ends[-1] - ends[0]) / (iters - 1) if iters > 1 else ends[0]
        makespan = ends[0] + (its - 1) * per if iters > 1 else its * ends[0]
    else:
        makespan = clock
    return SimResult(makespan, n * its, steals, failed, min(1.0, busy / max(W * clock, 1e-30)), its / iters)


def agreement(model, hw, *, threads: "list[int] | None" = None, runtimes: "list[str] | None" = None) -> list[dict]:
    """Closed form vs simulation for runtimes × threads × grains of one workload on one machine."""
    from parplan.hardware.cpu import load_cpu_machine
    from parplan.models.tasks import estimate_plan
    from parplan.workloads.taskgraph import load_taskgraph

    spec, m = load_taskgraph(model), load_cpu_machine(hw)
    cores = m.socket.cores
    threads = threads or sorted({1, max(1, cores // 4), cores})
    runtimes = runtimes or ["libgomp", "libomp", "taskgraph", "lowsync-ws"]
    rows, skipped = [], None
    for rt in runtimes:
        for t in threads:
            for g in (spec.grains if spec.dag is None else (0,)):
                plan = {"runtime": rt, "threads": t, "sockets": 1, "grain": int(g), "ranks": 1}
                try:
                    sim = simulate_plan(spec, m, plan)
                except SpecError as err:  # over the simulation budget: that case is left out
                    skipped = err
                    continue
                e = estimate_plan(spec, m, plan)
                mpi = e.parts["mpi_halo_s"] + e.parts["mpi_allreduce_s"]
                pred = e.total_s - mpi
                rows.append({"runtime": rt, "threads": t, "grain": int(g), "simulated_s": sim.makespan_s,
                             "predicted_s": pred, "error": pred / sim.makespan_s - 1.0})
    if not rows and skipped is not None:  # nothing compared is not an agreement (it printed "0/0 within", exit 0)
        raise SpecError(f"no case could be simulated: {skipped.message}", key=skipped.key, hint=skipped.hint)
    return rows
