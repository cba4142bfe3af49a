"""The named time terms of a task-parallel run, vectorized over configurations (numpy arrays, broadcast).

Per iteration and MPI rank (ANCHORS.md Part B §1.3's overhead-augmented work/span, S03/S08/S10/S21 ingredients):

* ``compute_s``       = W_r·((1 − f)/P_eff + f): useful work over effective cores (SMT adds ``smt_gain`` per extra
                        thread), an Amdahl serial fraction f where the workload has one;
* ``memory_s``        = max(0, bytes_r/BW − compute_s): the bandwidth roofline's excess, BW the NUMA harmonic mix;
* ``task_overhead_s`` = N_r·(create + d·dep + sched)/P_eff — a single producer's creations occupy a worker too;
* ``contention_s``    = max(0, serial − work path): serial = N_r·(s_lock(P) + d·dep_s1·(P − 1)) (+ the single
                        producer's creation, serialized on it), or N_r through the lock when every worker holds it
                        per task beside its own work (approximate MVA of the closed network, ``lock_throughput``);
* ``span_s``          = (1 − 1/P)·1.7·(T∞_r + depth·burden), burden = steal (+ remote latency, + CAS/fence per
                        level for private-deque stealing); 1 for an exact T∞ (Graham); a recursive producer's random
                        stealing needs 2·burden·ln(P − 1) to reach every worker (logistic ramp), beyond the levels';
* ``barrier_s``       = rounds·barrier(P);
* ``record_s``        = N_r·record/P_eff in the recording iteration of replay runtimes;
* ``mpi_halo_s``, ``mpi_allreduce_s`` — Hockney halo exchange (surface law) and allreduce latency.

They sum to the run time.  Replay runtimes (taskgraph, taskiter) pay the base runtime plus record in iteration 1
and ``replay`` per task (no lock, no single-producer serialization) afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from parplan.errors import SpecError
from parplan.models.primitives import workspan as ws

TIME_PARTS = ("compute_s", "memory_s", "task_overhead_s", "contention_s", "span_s", "barrier_s", "record_s",
              "mpi_halo_s", "mpi_allreduce_s")
PROFILE_KEYS = ("create", "sched", "dep", "dep_s1", "lock_s0", "lock_s1", "barrier_c", "steal", "record", "replay",
                "immediate_successor")
FLAG_KEYS = ("tree", "numa_aware", "replays", "replay_lock", "no_iteration_barrier", "sync_per_level",
             "fence_per_task")
MPI_INTRA_NODE_LATENCY_S = 0.5e-6  # assumed: shared-memory MPI small-message latency (order of 0.3-1 us)


@lru_cache(maxsize=1)
def runtime_catalog() -> tuple[dict, dict]:
    """(profiles by runtime name with base runtimes folded in, defaults) from catalogs/calibration/task_runtimes.yaml."""
    from parplan.catalogs import catalog_dir
    from parplan.spec import load_yaml_file

    doc = load_yaml_file(catalog_dir("calibration") / "task_runtimes.yaml")
    raw = doc["runtimes"]
    out = {}
    for name, e in raw.items():
        base = dict(raw[e["base"]]) if "base" in e else {}
        prof = {**base, **e}
        prof["replays"] = "replay" in e
        out[name] = prof
    return out, dict(doc["defaults"])


def runtime_names() -> list[str]:
    return list(runtime_catalog()[0])


@dataclass(frozen=True)
class Profiles:
    """Runtime profiles as arrays (one entry per runtime, in ``names`` order)."""
    names: tuple
    values: dict  # key -> float array
    flags: dict  # key -> bool array


def profiles(names: "list[str] | None" = None, socket=None) -> Profiles:
    """The profiles of ``names`` (all when None); a calibrated socket (``task_overhead``/``task_contention`` measured
    with ``task_runtime``) replaces that runtime's create+sched+s_lock(1) and contention slope with the measurement."""
    cat, _ = runtime_catalog()
    names = list(names) if names is not None else list(cat)
    for n in names:
        if n not in cat:
            from parplan.errors import did_you_mean

            raise SpecError(f"unknown runtime {n!r}", key="runtime", allowed=list(cat), hint=did_you_mean(n, list(cat)))
    vals = {k: np.array([float(cat[n].get(k, 0.0) or 0.0) for n in names]) for k in PROFILE_KEYS}
    flags = {"tree": np.array([cat[n].get("barrier") == "tree" for n in names])}
    for k in FLAG_KEYS[1:]:
        flags[k] = np.array([bool(cat[n].get(k, False)) for n in names])
    if socket is not None and socket.task_overhead_s is not None:
        measured = socket.task_runtime or "libgomp"
        for i, n in enumerate(names):
            if n == measured or cat[n].get("base") == measured:
                share = vals["create"][i] / max(vals["create"][i] + vals["sched"][i], 1e-30)
                # the one-thread per-task cost measured holds the uncontended lock too: o₁ = create + sched + s_lock(1)
                # (at most half of it under the lock: assumed where the catalog's s0 exceeds that)
                vals["lock_s0"][i] = min(vals["lock_s0"][i], 0.5 * socket.task_overhead_s)
                rest = socket.task_overhead_s - vals["lock_s0"][i]
                vals["create"][i] = rest * share
                vals["sched"][i] = rest * (1 - share)
                if socket.task_contention_s is not None and socket.cores > 1:
                    vals["lock_s1"][i] = max(0.0, socket.task_contention_s - vals["lock_s0"][i]) / (socket.cores - 1)
                if socket.task_dependence_s is not None:
                    vals["dep"][i] = socket.task_dependence_s
                    if socket.task_dependence_contention_s is not None and socket.cores > 1:
                        vals["dep_s1"][i] = max(0.0, socket.task_dependence_contention_s - socket.task_dependence_s
                                                ) / (socket.cores - 1)
    return Profiles(tuple(names), vals, flags)


def _pick(prof: Profiles, idx):
    v = {k: a[idx] for k, a in prof.values.items()}
    f = {k: a[idx] for k, a in prof.flags.items()}
    return v, f


def shared_terms(d: dict, m, v: dict, f: dict, defaults: dict) -> dict:
    """The terms of an iteration that do not depend on replaying it (both iterations of ``run_terms`` read them):
    per-rank work and compute, the memory roofline's excess, the span, MPI halo and allreduce, and the intermediates
    the per-task terms need."""
    sock = m.socket
    t, s, R, nodes = d["t"], d["s"], d["ranks"], d["nodes"]
    R_tot = R * nodes
    T = t * s / R  # threads per rank
    eff = np.minimum(t, sock.cores) + defaults["smt_gain"] * np.maximum(0.0, t - sock.cores)
    P_eff = eff * s / R
    s_r = np.maximum(1.0, s / R)  # sockets one rank spans
    W = d["work_s"] / R_tot
    fser = d["serial_fraction"]
    compute = W * ((1.0 - fser) / P_eff + fser)
    # NUMA: random-victim stealing sends a share of tasks to other sockets; NUMA-aware balancing keeps a quarter
    r = defaults["remote_steal_fraction"] * (s_r - 1.0) / s_r
    r = np.where(f["numa_aware"], r * defaults["numa_aware_remote_cut"], r)
    bw = ws.numa_bandwidth(np.minimum(t, sock.cores), s, sock.core_bytes_per_s, sock.stream_bytes_per_s,
                           m.remote_bytes_per_s, r) / R
    memory = np.maximum(0.0, d["bytes"] / R_tot / bw - compute)
    N = d["tasks"] / R_tot
    fence = sock.fence_s if sock.fence_s is not None else defaults["fence"]
    cas = sock.cas_s if sock.cas_s is not None else defaults["cas"]
    burden = v["steal"] + np.where(s_r > 1, m.remote_latency_s * r, 0.0)
    burden = burden + np.where(f["sync_per_level"], cas + fence, 0.0)
    grain = d["work_s"] / d["tasks"]
    span_r = np.maximum(np.minimum(d["span_s"], W), np.minimum(grain, W))
    # an exact longest path takes the greedy bound (1 − 1/P)·T∞ (Graham 1969); one known in order only, Cilkscale's 1.7
    coef = np.where(d.get("span_exact", False), 1.0, defaults["span_coefficient"])
    span = ws.span_term(ws.burdened_span(span_r, d["depth"], burden), T, coef)
    # random work stealing from one root: idle workers find work at the rate busy ones are hit, so the busy share
    # grows logistically, db/dt = b(1 − b)/steal (mean-field stealing, Mitzenmacher SPAA 1998): 2·steal·ln(T − 1)
    # from one busy worker to all but one (derived) — what of it the spawn levels' burden does not already hold
    ramp = np.where((v["steal"] > 0) & ~d["single"] & (T > 2), 2.0 * burden * np.log(np.maximum(T - 1.0, 1.0)), 0.0)
    burden_term = ws.span_term(d["depth"] * burden, T, coef)  # the spawn levels' burden alone
    span = span + np.maximum(ramp - burden_term, 0.0)
    one = R_tot == 1
    if d.get("levels") is not None and np.any(one):
        # a DAG of known levels (one rank): its level-by-level schedule on T workers of P_eff/T cores' speed beyond
        # the even division W/P_eff, plus the spawn levels' burden (the Cilkscale span term of the burden alone);
        # priced for the one-rank plans' worker counts only (the others keep the span above)
        lvl = ws.level_schedule(d["levels"], d["gi"], np.where(one, T, 1.0)) * T / P_eff
        span = np.where(one, np.maximum(lvl - W / P_eff, 0.0) + burden_term, span)
    # hybrid MPI: halo exchange by the surface law, allreduce latency
    multi = R_tot > 1
    dims = d["dims"]
    face = d["face_bytes"] * np.power(np.maximum(R_tot, 1.0), -(dims - 1.0) / dims)
    if m.network is not None:
        inter_bw, inter_lat = m.network.bytes_per_s, m.network.latency_s
    else:
        inter_bw, inter_lat = sock.stream_bytes_per_s, MPI_INTRA_NODE_LATENCY_S
    beta = np.where(nodes > 1, inter_bw / R, sock.stream_bytes_per_s * s / (2.0 * R))
    alpha = np.where(nodes > 1, inter_lat, MPI_INTRA_NODE_LATENCY_S)
    halo = np.where(multi, ws.halo(2.0 * dims, face, alpha, beta), 0.0)
    allred = d["n_allreduce"] * ws.allreduce_latency(R_tot, alpha)
    return {"T": T, "P_eff": P_eff, "compute": compute, "memory": memory, "N": N, "fence": fence, "span": span,
            "halo": halo, "allred": allred}


def iteration_terms(d: dict, m, v: dict, f: dict, *, replay: bool, defaults: dict,
                    shared: "dict | None" = None) -> dict:
    """Terms of one iteration for broadcast arrays ``d`` (work_s, span_s, tasks, deps, bytes, depth, rounds, single,
    t: threads per socket, s: sockets, ranks: ranks per node, nodes, serial_fraction, face_bytes, dims, n_allreduce),
    machine ``m`` (CpuMachine), runtime values ``v`` and flags ``f`` (``shared``: their ``shared_terms``)."""
    sh = shared if shared is not None else shared_terms(d, m, v, f, defaults)
    T, P_eff, compute, memory, N = sh["T"], sh["P_eff"], sh["compute"], sh["memory"], sh["N"]
    single = d["single"] & ~np.asarray(replay)
    if replay:
        per_task = v["replay"] * (1.0 - 0.5 * v["immediate_successor"])  # the bypass halves a dispatch (assumed)
        create = 0.0
        lock = np.where(f["replay_lock"], ws.lock_law(v["lock_s0"], v["lock_s1"], T), 0.0)
    else:
        create = v["create"] + d["deps"] * v["dep"] + np.where(f["fence_per_task"], sh["fence"], 0.0)
        per_task = v["sched"]
        # dependences registered under the team lock (libgomp: gomp_task_handle_depend runs with team->task_lock
        # held, gcc libgomp/task.c) grow with contenders like the lock itself: d·dep_s1·(P − 1) more serialized
        lock = ws.lock_law(v["lock_s0"], v["lock_s1"], T) + d["deps"] * v["dep_s1"] * np.maximum(T - 1.0, 0.0)
    # a single producer's tasks sit on its deque: every task another worker runs is a steal (DES: worksteal.py)
    steal_each = np.where(single, v["steal"] * (1.0 - 1.0 / np.maximum(T, 1.0)), 0.0)
    # a single producer's creations occupy it (a worker): in the work path, and serialized on it
    overhead = N * (per_task + steal_each + create) / P_eff
    serial = N * lock + np.where(single, N * create, 0.0)
    work_path = compute + memory + overhead
    # each worker's own dispatches hold the lock on its path, and wait for the others' there: N tasks through the
    # lock at the closed network's throughput (workers alternate work_path·T/N outside it and s_lock(P) inside)
    through_lock = N / np.maximum(ws.lock_throughput(lock, work_path * T / np.maximum(N, 1e-30), T), 1e-300)
    contention = np.maximum(0.0, np.maximum(serial, np.where(N > 0, through_lock, 0.0)) - work_path)
    rounds = d["rounds"] * np.where(np.asarray(replay) & f["no_iteration_barrier"], 0.0, 1.0)
    barrier = rounds * ws.barrier(f["tree"], v["barrier_c"], T)
    z = np.zeros_like(compute)
    return {"compute_s": compute + z, "memory_s": memory + z, "task_overhead_s": overhead + z,
            "contention_s": contention + z, "span_s": sh["span"] + z, "barrier_s": barrier + z, "record_s": z.copy(),
            "mpi_halo_s": sh["halo"] + z, "mpi_allreduce_s": sh["allred"] + z}


def run_terms(d: dict, m, prof: Profiles, ridx, defaults: dict) -> dict:
    """Every part over all iterations: vanilla runtimes I × one iteration; replay runtimes iteration 1 with the base
    profile + record, then (I − 1) replayed iterations."""
    v, f = _pick(prof, ridx)
    shared = shared_terms(d, m, v, f, defaults)
    first = iteration_terms(d, m, v, f, replay=False, defaults=defaults, shared=shared)
    I = d["iterations"]
    replays = f["replays"]
    R_tot = d["ranks"] * d["nodes"]
    eff = np.minimum(d["t"], m.socket.cores) * d["s"] / d["ranks"]
    record = np.where(d["single"], d["tasks"] / R_tot * v["record"], d["tasks"] / R_tot * v["record"] / eff)
    rows = _replay_rows(ridx, replays, list(d.values()) + list(shared.values()))
    if rows is None:  # runtimes mixed across axes: both iterations priced everywhere
        rep = iteration_terms(d, m, v, f, replay=True, defaults=defaults, shared=shared)
        out = {k: np.where(replays, first[k] + (I - 1) * rep[k], I * first[k]) for k in TIME_PARTS}
    else:  # the replayed iteration priced for the replay runtimes' rows alone (the same floats there)
        nd, n0 = np.ndim(ridx), np.shape(ridx)[0]

        def at(x):
            return x[rows] if isinstance(x, np.ndarray) and x.ndim == nd and x.shape[0] == n0 else x

        if rows.size:
            rep = iteration_terms({k: at(x) for k, x in d.items()}, m, {k: at(x) for k, x in v.items()},
                                  {k: at(x) for k, x in f.items()}, replay=True, defaults=defaults,
                                  shared={k: at(x) for k, x in shared.items()})
        out = {}
        for k in TIME_PARTS:
            vanilla = I * first[k]
            if not rows.size:
                out[k] = np.where(replays, 0.0, vanilla)
                continue
            lead = (n0,) + np.shape(rep[k])[1:] if np.ndim(rep[k]) == nd else np.shape(rep[k])
            o = np.empty(np.broadcast_shapes(np.shape(replays), np.shape(vanilla), lead))
            o[...] = vanilla
            o[rows] = at(first[k]) + (I - 1) * rep[k]
            out[k] = o
    out["record_s"] = np.where(replays, record, 0.0) + 0.0 * out["compute_s"]
    out["total_s"] = sum(out[k] for k in TIME_PARTS)
    return out


def _replay_rows(ridx, replays, arrays: list) -> "np.ndarray | None":
    """The replay runtimes' places along the leading axis where runtimes vary along it alone and it leads every
    array (a search's runtime axis, or a flat array of plans), else None."""
    r = np.asarray(ridx)
    if r.ndim == 0 or r.size != r.shape[0] or any(isinstance(x, np.ndarray) and x.ndim > r.ndim for x in arrays):
        return None
    return np.flatnonzero(np.asarray(replays).reshape(-1))
