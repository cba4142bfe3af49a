"""Cost model of the offload family's kernel chains: where each stage runs (the host CPU or an accelerator), whether
data stays resident on the device between stages, chunked transfer/compute overlap, actor vs native API, remote
actors — one request's time as named parts on numpy arrays of sizes n, requests streamed through the chain, and
the break-even size n* (SEEDS.md S13(b)).

One stage on a device, one chunk of n/k elements (the SEEDS.md S13(b) terms):
  enqueue  t_enqueue                          (host side, per kernel and chunk)
  h2d      lat_H2D + (n/k)·b_in/BW_H2D        (skipped when the input is resident, or the device shares host memory)
  device   t_launch + (n/k)·c/X_dev            (per kernel; a resident segment runs its kernels back to back)
  d2h      lat_D2H + (n/k)·b_out/BW_D2H       (skipped when the next stage reads it on the same device)
plus t_msg per stage for actors (CAF: each stage is an actor receiving a message), n·c/X_cpu for a CPU stage, and for
remote actors α_net + n·b/BW_net each way around a device segment.  A segment of k identical chunks through the
enqueue → h2d → device → d2h flow shop takes Σ a_s + (k − 1)·max a_s (exact for identical jobs); its parts are the
first chunk's trip plus (k − 1) chunks of the bottleneck stage, so they sum to the time.  R requests pipeline through
the actors: T_R = T_1 + (R − 1)·max_resource(busy time per request).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, did_you_mean, short
from parplan.models.plan_pairs import plan_pairs

TIME_PARTS = ("message_s", "enqueue_s", "h2d_s", "launch_s", "device_s", "d2h_s", "cpu_s", "network_s")
PLAN_KEYS = ("place", "resident", "chunks", "api", "n")
APIS = ("actor", "native")


def segments(place: tuple, resident: bool) -> list[tuple[str, list[int]]]:
    """Consecutive stages grouped into (where, [stage indices]): a resident chain keeps consecutive stages on one
    device in one segment; otherwise every stage is its own segment."""
    out: list = []
    for i, p in enumerate(place):
        if out and resident and p != "cpu" and out[-1][0] == p:
            out[-1][1].append(i)
        else:
            out.append((p, [i]))
    return out


def segment_terms(spec, node, where: str, idx: list, k, actor, n, z) -> tuple:
    """One segment's share of a request: (part → its addends, in the order they are added; the busy seconds it adds,
    [(resource, seconds, shared)] in insertion order — ``shared`` marks the resources other segments add to too:
    the host, a device's links and compute, the network)."""
    host = node.host
    ks = [spec.kernels[i] for i in idx]
    add = {"message_s": [np.where(actor, node.message_s * len(idx), 0.0)]}  # t_msg: one message per stage actor
    busy = [(f"actor:{i}", z + np.where(actor, node.message_s, 0.0), False) for i in idx]
    if where == "cpu":
        t = n * sum(kk.ops_per_element for kk in ks) / host.ops_per_s  # T_cpu = n·c/X_cpu
        add["cpu_s"] = [t]
        busy.append(("host", t, True))
        return add, busy
    a = node.accelerator(where)
    m = n / k
    b_in, b_out = ks[0].bytes_in, ks[-1].bytes_out
    a_enq = len(ks) * a.enqueue_s + z  # host-side enqueue per kernel and chunk
    a_h2d = z if a.shared_memory else a.h2d_latency_s + m * b_in / a.h2d_bytes_per_s  # n·b_in/BW_H2D
    a_launch = len(ks) * a.launch_s + z  # t_launch per kernel
    a_comp = m * sum(kk.ops_per_element for kk in ks) / a.ops_per_s  # n·c/X_dev
    a_dev = a_launch + a_comp
    a_d2h = z if a.shared_memory else a.d2h_latency_s + m * b_out / a.d2h_bytes_per_s  # n·b_out/BW_D2H
    stages = np.stack(np.broadcast_arrays(a_enq, a_h2d, a_dev, a_d2h))
    worst = stages.argmax(axis=0)
    extra = (k - 1) * stages.max(axis=0)  # flow shop of k identical chunks: Σ a + (k−1)·max a
    share = np.where(a_dev > 0, a_launch / np.where(a_dev > 0, a_dev, 1.0), 0.0)
    add["enqueue_s"] = [a_enq, np.where(worst == 0, extra, 0.0)]
    add["h2d_s"] = [a_h2d, np.where(worst == 1, extra, 0.0)]
    add["launch_s"] = [a_launch, np.where(worst == 2, extra * share, 0.0)]
    add["device_s"] = [a_comp, np.where(worst == 2, extra * (1 - share), 0.0)]
    add["d2h_s"] = [a_d2h, np.where(worst == 3, extra, 0.0)]
    # busy time per request: the segment's own queues (latency included: a queue waits it out) and the device's
    # shared resources (the links and the device itself; a latency does not occupy them)
    q = idx[0]
    busy += [(f"actor:{q}", k * a_enq, False), (f"h2d-queue:{q}", k * a_h2d, False),
             (f"dev-queue:{q}", k * a_dev, False), (f"d2h-queue:{q}", k * a_d2h, False)]
    if not a.shared_memory:
        busy += [(f"h2d:{where}", k * (a_h2d - a.h2d_latency_s), True),
                 (f"d2h:{where}", k * (a_d2h - a.d2h_latency_s), True)]
    busy.append((f"dev:{where}", k * a_comp, True))
    if spec.remote:
        if node.net_bytes_per_s is None:
            raise SpecError(f"the workload's actors are remote but {node.name} has no network", key="remote")
        add["network_s"] = [2 * node.net_latency_s + n * (b_in + b_out) / node.net_bytes_per_s]  # α + n·b/BW each way
        t_in, t_out = n * b_in / node.net_bytes_per_s, n * b_out / node.net_bytes_per_s  # full duplex
        busy += [(f"net-in-queue:{q}", node.net_latency_s + t_in, False),
                 (f"net-out-queue:{q}", node.net_latency_s + t_out, False), ("net-in", t_in, True),
                 ("net-out", t_out, True)]
    return add, busy


def chain_terms(spec, node, plan: dict, n) -> dict:
    """Parts (TIME_PARTS), ``total_s`` and per-resource busy seconds (``busy``: name → array) of one request of
    ``n`` elements (array) under ``plan``.  ``plan["chunks"]`` and ``plan["api"]`` may be arrays broadcasting with
    ``n`` (same formula): the segments' terms (``segment_terms``) added in chain order."""
    n = np.asarray(n, dtype=float)
    z = 0.0 * n
    parts = {k: z.copy() for k in TIME_PARTS}
    busy: dict = {}
    actor = np.asarray(plan["api"]) == "actor"
    k = np.asarray(plan["chunks"], dtype=float)
    for where, idx in segments(tuple(plan["place"]), plan["resident"]):
        add, seg_busy = segment_terms(spec, node, where, idx, k, actor, n, z)
        for part, terms in add.items():
            for t in terms:
                parts[part] = parts[part] + t
        for key, v, _ in seg_busy:
            busy[key] = busy.get(key, z) + v
    total = sum(parts[p] for p in TIME_PARTS)
    return {**parts, "total_s": total, "busy": busy}


def segment_bytes(spec, idx: list, n, k):
    """Device memory of one device segment: its input and every stage's output for the chunks in flight
    (double-buffered: min(k, 2) chunks of n/k)."""
    per = spec.kernels[idx[0]].bytes_in + sum(spec.kernels[i].bytes_out for i in idx)
    return n / k * np.minimum(k, 2.0) * per


def device_bytes(spec, plan: dict, n) -> dict:
    """Device memory per accelerator: the largest of its segments' ``segment_bytes``."""
    n = np.asarray(n, dtype=float)
    k = np.asarray(plan["chunks"], dtype=float)  # an array broadcasting with n in the search
    out: dict = {}
    for where, idx in segments(tuple(plan["place"]), plan["resident"]):
        if where == "cpu":
            continue
        v = segment_bytes(spec, idx, n, k)
        out[where] = np.maximum(out.get(where, 0.0 * n), v)
    return out


@dataclass(frozen=True)
class OffloadEstimate:
    workload: str
    node: str
    plan: dict
    n: float
    parts: dict  # TIME_PARTS → seconds, one request
    total_s: float
    cpu_s: float  # every stage on the host CPU, same API
    requests: int
    requests_s: float  # R requests pipelined through the actors
    bottleneck: str
    fits: bool
    reasons: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def speedup(self) -> float:
        return self.cpu_s / self.total_s

    def plan_string(self) -> str:
        p = self.plan
        return (f"place={'+'.join(p['place'])},resident={str(p['resident']).lower()},chunks={p['chunks']},"
                f"api={p['api']},n={p['n']:g}")

    def to_dict(self) -> dict:
        return {"workload": self.workload, "node": self.node, "plan": self.plan_string(), "n": self.n,
                "place": list(self.plan["place"]), "resident": self.plan["resident"], "chunks": self.plan["chunks"],
                "api": self.plan["api"], "fits": self.fits, "total_s": self.total_s, "cpu_s": self.cpu_s,
                "speedup": self.speedup, "requests": self.requests, "requests_s": self.requests_s,
                "bottleneck": self.bottleneck, "breakdown_s": dict(self.parts), "reasons": list(self.reasons),
                "notes": list(self.notes)}


def requests_time(one: dict, R: int) -> tuple:
    """(T_R, bottleneck) for R requests: T_1 + (R − 1)·max resource busy time."""
    if not one["busy"]:
        return one["total_s"], "-"
    names = list(one["busy"])
    b = np.stack(np.broadcast_arrays(*[one["busy"][k] for k in names]))
    return one["total_s"] + (R - 1) * b.max(axis=0), np.array(names)[b.argmax(axis=0)]


def fit_reasons(spec, node, plan: dict, n: float) -> list[str]:
    out = []
    for where, need in device_bytes(spec, plan, n).items():
        a = node.accelerator(where)
        if float(need) > a.memory_bytes:
            per = float(need) / n
            out.append(f"needs {float(need) / 1e9:.2f} GB on {a.id} ({a.memory_bytes / 1e9:.1f} GB): fits with "
                       f"n ≤ {a.memory_bytes / per:.3g} or more chunks")
    return out


def parse_plan(text: "str | None", spec, node) -> dict:
    """``place=tesla-k40+tesla-k40+cpu,resident=true,chunks=1,api=actor,n=1e6``; ``place`` with one value puts every
    stage there.  Defaults: every stage on the first accelerator, resident, one chunk, the first API, the largest n."""
    L = len(spec.kernels)
    plan = {"place": tuple([node.accelerators[0].id] * L), "resident": True,
            "chunks": 1 if 1 in spec.chunks else int(spec.chunks[0]),  # (a default the file's search holds)
            "api": spec.apis[0], "n": float(max(spec.sizes))}
    ids = ["cpu"] + [a.id for a in node.accelerators]
    for key, val in plan_pairs(text, PLAN_KEYS):
        if key == "place":
            where = tuple(v.strip() for v in val.split("+"))
            if len(where) == 1:
                where = where * L
            if len(where) != L:
                raise SpecError(f"place names {len(where)} stages, the chain has {L}", key="--plan place")
            for w in where:
                if w not in ids:
                    raise SpecError(f"unknown place {short(w)}", key="--plan place", allowed=ids,
                                    hint=did_you_mean(w, ids))
            plan["place"] = where
        elif key == "resident":
            if val.lower() not in ("true", "false"):
                raise SpecError(f"bad value {short(val)}", key="--plan resident", allowed=["true", "false"])
            plan["resident"] = val.lower() == "true"
        elif key == "api":
            if val not in APIS:
                raise SpecError(f"unknown api {short(val)}", key="--plan api", allowed=APIS)
            plan["api"] = val
        else:
            try:
                v = float(val)
            except ValueError:
                raise SpecError(f"bad value {short(val)}: {key} is a number", key=f"--plan {key}") from None
            if key == "chunks" and not (v.is_integer() and 1 <= v <= 4096):
                raise SpecError(f"chunks = {short(val)} is not a whole number 1..4096", key="--plan chunks")
            if key == "n" and not 1 <= v <= 1e12:
                raise SpecError(f"n = {short(val)} is outside 1..1e12", key="--plan n")
            plan[key] = int(v) if key == "chunks" else v
    return plan


def estimate_plan(spec, node, plan: dict) -> OffloadEstimate:
    if spec.is_heritage:
        raise SpecError("a heritage workload has no kernel chain plan: use the heritage report", key="heritage")
    one = chain_terms(spec, node, plan, plan["n"])
    cpu = chain_terms(spec, node, {**plan, "place": ("cpu",) * len(spec.kernels)}, plan["n"])
    t_r, neck = requests_time(one, spec.requests)
    reasons = fit_reasons(spec, node, plan, plan["n"])
    parts = {k: float(one[k]) for k in TIME_PARTS}
    return OffloadEstimate(spec.name, node.name, dict(plan), float(plan["n"]), parts, float(one["total_s"]),
                           float(cpu["total_s"]), spec.requests, float(t_r), str(neck), not reasons, reasons)


def break_even(spec, node, plan: dict) -> float:
    """n* where ``plan`` (at one chunk) starts beating the all-CPU chain: both are a + b·n, so
    n* = (a_off − a_cpu)/(b_cpu − b_off) (SEEDS.md S13(b)); inf when the offload is never faster."""
    p = {**plan, "chunks": 1}
    cpu = {**p, "place": ("cpu",) * len(spec.kernels)}
    t0, t1 = (float(chain_terms(spec, node, p, x)["total_s"]) for x in (0.0, 1e6))
    c0, c1 = (float(chain_terms(spec, node, cpu, x)["total_s"]) for x in (0.0, 1e6))
    b_off, b_cpu = (t1 - t0) / 1e6, (c1 - c0) / 1e6
    if b_cpu <= b_off:
        return float("inf")
    return max(0.0, (t0 - c0) / (b_cpu - b_off))
