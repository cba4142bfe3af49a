"""Cost model of the task-graph family: a run of a task graph on a CPU machine under a runtime, threads per socket,
sockets, grain and MPI ranks per node → named time parts (seconds, ``tasks_terms.TIME_PARTS``) summing to the run
time, on numpy arrays of configurations (``evaluate``) or one plan (``estimate_plan``).

A plan string: ``runtime=libomp,threads=48,sockets=2,grain=128,ranks=1`` — threads per socket (≤ cores × SMT),
sockets per node used, the grain knob value (one of the workload's), MPI ranks per node (threads·sockets divisible
by ranks).  Missing keys default to libgomp, every core, every socket, the workload's first grain, one rank.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, did_you_mean, short
from parplan.models.plan_pairs import plan_pairs
from parplan.models.tasks_terms import TIME_PARTS, profiles, run_terms, runtime_catalog, runtime_names

PLAN_KEYS = ("runtime", "threads", "sockets", "grain", "ranks")


def _arrays(spec, summary, m, gi, t, s, ranks) -> dict:
    """Broadcast inputs of ``tasks_terms`` for grain indices ``gi`` and the configuration arrays."""
    mpi = spec.mpi
    nodes = float(m.nodes) if mpi is not None else 1.0
    return {"work_s": summary.work_s[gi], "span_s": summary.span_s[gi], "tasks": summary.tasks[gi],
            "deps": summary.deps[gi], "bytes": summary.bytes[gi], "depth": summary.depth[gi],
            "rounds": summary.rounds[gi], "single": np.full(np.shape(gi), summary.producer == "single"),
            "gi": gi, "levels": summary.levels,
            "span_exact": summary.span_exact[gi] if summary.span_exact is not None else False,
            "iterations": float(summary.iterations), "t": np.asarray(t, float), "s": np.asarray(s, float),
            "ranks": np.asarray(ranks, float), "nodes": nodes,
            "serial_fraction": mpi.serial_fraction if mpi else 0.0, "face_bytes": mpi.face_bytes if mpi else 0.0,
            "dims": float(mpi.dims) if mpi else 3.0, "n_allreduce": float(mpi.allreduces_per_iteration) if mpi else 0.0}


def evaluate(spec, machine, ridx, t, s, gi, ranks, *, prof=None, summary=None) -> dict:
    """Parts and ``total_s`` for broadcast arrays: runtime index ``ridx`` (into ``prof.names``), threads per socket
    ``t``, sockets ``s``, grain index ``gi`` (into the summary), ranks per node."""
    prof = prof or profiles(socket=machine.socket)
    summary = summary or spec.summary()
    d = _arrays(spec, summary, machine, np.asarray(gi), t, s, ranks)
    out = run_terms(d, machine, prof, np.asarray(ridx), runtime_catalog()[1])
    serial = summary.work_s[np.asarray(gi)] * summary.iterations
    out["speedup"] = serial / out["total_s"]
    out["serial_s"] = serial + 0.0 * out["total_s"]
    return out


@dataclass(frozen=True)
class TaskEstimate:
    workload: str
    machine: str
    plan: dict
    parts: dict  # TIME_PARTS -> seconds
    total_s: float
    serial_s: float  # T1 over all iterations (the serial elision's time)
    tasks: float
    grain_s: float
    threads: int  # total threads on the node(s)
    notes: list = field(default_factory=list)

    @property
    def speedup(self) -> float:
        return self.serial_s / self.total_s

    def plan_string(self) -> str:
        p = self.plan
        return f"runtime={p['runtime']},threads={p['threads']},sockets={p['sockets']},grain={p['grain']},ranks={p['ranks']}"

    def to_dict(self) -> dict:
        return {"workload": self.workload, "machine": self.machine, "plan": self.plan_string(), **self.plan,
                "total_s": self.total_s, "serial_s": self.serial_s, "speedup": self.speedup, "tasks": self.tasks,
                "grain_s": self.grain_s, "threads_total": self.threads, "breakdown_s": dict(self.parts),
                "notes": list(self.notes)}


def parse_plan(text: "str | None", spec, machine) -> dict:
    """A validated plan mapping from ``key=value,…`` (bad keys, values and combinations are SpecErrors)."""
    sock = machine.socket
    plan = {"runtime": "libgomp", "threads": sock.cores, "sockets": machine.sockets_per_node,
            "grain": int(spec.grains[0]), "ranks": 1}
    if text:
        for k, val in plan_pairs(text, PLAN_KEYS):
            if k == "runtime":
                if val not in runtime_names():
                    raise SpecError(f"unknown runtime {short(val)}", key="--plan runtime", allowed=runtime_names(),
                                    hint=did_you_mean(val, runtime_names()))
                plan[k] = val
            else:
                try:
                    plan[k] = int(val)
                except ValueError:
                    raise SpecError(f"bad value {short(val)}: {k} is a whole number", key=f"--plan {k}") from None
    validate(spec, machine, plan)
    return plan


def validate(spec, machine, plan: dict) -> None:
    sock = machine.socket
    t, s, r = plan["threads"], plan["sockets"], plan["ranks"]
    if not 1 <= t <= sock.cores * sock.smt:
        raise SpecError(f"threads = {t} per socket: {sock.name} has {sock.cores} cores × {sock.smt} SMT",
                        key="--plan threads", hint=f"1..{sock.cores * sock.smt}")
    if not 1 <= s <= machine.sockets_per_node:
        raise SpecError(f"sockets = {s}: {machine.name} has {machine.sockets_per_node} per node", key="--plan sockets")
    if r < 1 or (t * s) % r:
        raise SpecError(f"ranks = {r} must divide threads × sockets = {t * s}", key="--plan ranks")
    if spec.dag is None and plan["grain"] not in spec.grains:
        raise SpecError(f"grain = {plan['grain']} is not one of the workload's grain values", key="--plan grain",
                        allowed=[str(g) for g in spec.grains])


def estimate_plan(spec, machine, plan: dict) -> TaskEstimate:
    prof = profiles(socket=machine.socket)
    grains = list(spec.grains)
    summary = spec.summary()
    gi = 0 if spec.dag is not None else grains.index(plan["grain"])
    ridx = prof.names.index(plan["runtime"])
    out = evaluate(spec, machine, ridx, plan["threads"], plan["sockets"], gi, plan["ranks"], prof=prof,
                   summary=summary)
    parts = {k: float(out[k]) for k in TIME_PARTS}
    if not all(math.isfinite(x) for x in (*parts.values(), float(out["total_s"]), float(out["serial_s"]))):
        bad = sorted(k for k, x in parts.items() if not math.isfinite(x))
        raise SpecError(f"the prediction for {machine.name} is not a finite time ({', '.join(bad) or 'total'}): the "
                        "machine's rates or latencies are outside what the model can price", key="--hw",
                        hint="check the socket's bandwidths, clock and latencies against its datasheet")
    notes = []
    if machine.nodes > 1 and spec.mpi is None:
        notes.append(f"the workload has no mpi block: one node of {machine.name} is used")
    nodes = machine.nodes if spec.mpi is not None else 1
    return TaskEstimate(spec.name, machine.name, dict(plan), parts, float(out["total_s"]), float(out["serial_s"]),
                        float(summary.tasks[gi] * summary.iterations), float(summary.grain_s[gi]),
                        plan["threads"] * plan["sockets"] * nodes, notes)
