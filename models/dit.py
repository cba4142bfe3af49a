"""Cost model of DiT inference under sequence parallelism: one denoising step's time per device as named parts, on
numpy arrays of plans (the search prices thousands at once with the same formula ``estimate`` prints).

A plan: ``sp`` (ulysses | ring | usp | torus), the Ulysses degree u, the ring degree r, tensor parallelism tp, data-
parallel replicas dp of whole requests, ``comm`` (two-sided | one-sided) and, for torus, ``chunks`` k.  Devices of a
replica are laid out tp innermost; ``usp`` puts Ulysses inside a node and the ring across (USP / xDiT), ``torus``
puts the ring inside a node (NVLink) and Ulysses across nodes with its inter-node all-to-all cut into k head chunks
pipelined with the attention of the previous chunk (SwiftFusion's Torus Attention, SEEDS.md S11 (a)).

Every scheme is one schedule of three queues per device — the exchange queue (all-to-alls), the ring queue (K/V
hops) and the compute queue — with dependencies:  in(i) = the Q, K, V all-to-alls of chunk i (one after another);
ring hop (i, j) after in(i) and hop (i, j−1); attention block (i, j) after hop (i, j) (block (i, 0) after in(i));
out(i) after block (i, r−1) and, on the exchange queue, after in(k).  ``section_s`` plays that recurrence in closed
form (exact: identical ops on FIFO queues), so the share of the exchanges hidden behind attention is derived from
the schedule — no overlap constant is an input.  ulysses: r = 1, k = 1; ring: u = 1; usp: k = 1.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, short
from parplan.models import dit_terms as T
from parplan.models.plan_pairs import plan_pairs
from parplan.workloads.dit import COMMS, SP_KINDS

PARTS = ("gemm_s", "memory_s", "attention_s", "sm_share_s", "tp_comm_s", "sp_comm_s")
PLAN_KEYS = ("sp", "u", "r", "tp", "dp", "comm", "chunks")


def plan_arrays(plans: list) -> dict:
    """A list of plan dicts as arrays (sp and comm as codes)."""
    out = {k: np.array([p[k] for p in plans], dtype=np.float64) for k in ("u", "r", "tp", "dp", "chunks")}
    out["sp"] = np.array([SP_KINDS.index(p["sp"]) for p in plans])
    out["two_sided"] = np.array([p["comm"] == "two-sided" for p in plans])
    return out


def strides(c, P: dict) -> tuple:
    """(Ulysses stride, ring stride, ring crosses nodes, Ulysses group crosses nodes) per plan."""
    sp, u, r, tp = P["sp"], P["u"], P["r"], P["tp"]
    torus = sp == SP_KINDS.index("torus")
    su = np.where(torus, tp * r, tp)
    sr = np.where(sp == SP_KINDS.index("usp"), tp * u, tp)
    return su, sr, r * sr > c.dpn, u * su > c.dpn


def section_s(a3, o, x, cb, k, r, cb_last=None):
    """End of the attention section of one block: the three-queue recurrence of the module docstring, for ``k``
    chunks × ``r`` ring blocks (arrays; chunks and blocks past a plan's own k, r are masked out).  ``cb_last``: the
    section's last block, which no exchange runs beside (default ``cb``)."""
    cb_last = cb if cb_last is None else cb_last
    K, R = int(np.max(k)), int(np.max(r))
    z = np.zeros(np.broadcast(a3, o, x, cb, k, r).shape)
    ins, t = [], z
    for i in range(K):
        t = t + np.where(i < k, a3, 0.0)
        ins.append(t)
    comp, ring, out = z, z, z
    for i in range(K):
        on = i < k
        cend = np.maximum(comp, ins[i]) + np.where((i == k - 1) & (r == 1), cb_last, cb)
        xend = np.maximum(ring, ins[i])
        for j in range(1, R):
            step = on & (j < r)
            xend = np.where(step, xend + x, xend)
            cj = np.where((i == k - 1) & (j == r - 1), cb_last, cb)
            cend = np.where(step, np.maximum(cend, xend) + cj, cend)
        out = np.where(on, np.maximum(np.maximum(out, cend), t) + o, out)
        ring = np.where(on & (r > 1), xend, ring)
        comp = np.where(on, cend, comp)
    return out


def layer_terms(spec, c, P: dict) -> dict:
    """Per-block durations of every plan: the exchange, hop and block times the schedule plays, the section's end,
    and the step's parts (PARTS, seconds, every block of the model)."""
    a, b = spec.arch, c.b
    u, r, tp, k, two = P["u"], P["r"], P["tp"], P["chunks"], P["two_sided"]
    B = np.ceil(spec.batch / P["dp"])
    s, h, d = float(spec.tokens), float(a.hidden), float(a.head_dim)
    m = B * s / (u * r)
    hd = a.heads / (tp * u)  # heads per device in attention
    su, sr, ring_x, uly_x = strides(c, P)
    # Ulysses: one all-to-all per tensor of the m·h/tp·b bytes a device holds (per chunk: 1/k of them)
    t_in, t_out, lat_a, a_total, _ = T.alltoall(c, m * (h / tp) * b / k, u, su)
    sync_a = np.where(u > 1, T.sync_s(c, uly_x, two), 0.0)
    a1 = np.where(u > 1, a_total + sync_a, 0.0)
    # ring hop: K and V of s/r tokens × hd heads (per chunk: hd/k)
    hop_bytes = 2.0 * B * (s / r) * hd / k * d * b
    x_t, x_lat = T.p2p(c, hop_bytes, ring_x)
    sync_x = T.sync_s(c, ring_x, two)
    x = np.where(r > 1, x_t + x_lat + sync_x, 0.0)
    cb_nom = T.attention_block_s(c, a, B, s / r, s / r, hd / k)
    # two-sided copy kernels hold SMs beside every block an exchange runs next to (all but the section's last)
    slow = np.where(two & ((r > 1) | (k > 1)), 1.0 / (1.0 - T.SM_SHARE_TWO_SIDED), 1.0)
    cb = cb_nom * slow
    sec = section_s(3.0 * a1, a1, x, cb, k, r, cb_nom)
    blocks = k * r
    comp = (blocks - 1) * cb + cb_nom
    # outside the section: the block streams' GEMMs, element-wise kernels and TP all-reduces
    L2, L1 = float(a.double_blocks), float(a.single_blocks)
    t_txt = float(a.text_tokens) if a.attention == "joint" else 0.0
    m_img, m_txt = B * spec.image_tokens / (u * r), B * t_txt / (u * r)
    ar = np.where(tp > 1, 1.0, 0.0)
    single_g = T.stream_gemm_s(c, a, m, tp, (B, 3.0))
    double_g = T.stream_gemm_s(c, a, m_img, tp, (B, 6.0)) + T.stream_gemm_s(c, a, m_txt, tp, (B, 6.0))
    gemm = L1 * single_g + L2 * double_g
    mem = L1 * T.stream_memory_s(c, a, m, tp) + L2 * (T.stream_memory_s(c, a, m_img, tp) +
                                                     T.stream_memory_s(c, a, m_txt, tp))
    tpc = ar * (L1 * 2 * T.allreduce(c, m * h * b, tp) + L2 * 2 * (T.allreduce(c, m_img * h * b, tp) +
                                                                  T.allreduce(c, m_txt * h * b, tp)))
    attn = (L1 + L2) * blocks * cb_nom
    if a.attention == "cross":  # Q and O of the cross-attention, K/V of the text (every device), the core over t
        tt = float(a.text_tokens)
        gemm = gemm + L1 * (T.gemm_s(c, m, h, h / tp) + T.gemm_s(c, m, h / tp, h) + T.gemm_s(c, B * tt, h, 2 * h / tp))
        attn = attn + L1 * T.attention_block_s(c, a, B, m, tt, a.heads / tp)
        tpc = tpc + ar * L1 * T.allreduce(c, m * h * b, tp)
    nl = L1 + L2
    busy = nl * k * (4.0 * a1 + (r - 1) * x)
    parts = {"gemm_s": gemm, "memory_s": mem, "attention_s": attn, "sm_share_s": nl * (blocks - 1) * (cb - cb_nom),
             "tp_comm_s": tpc, "sp_comm_s": nl * (sec - comp)}
    pre1 = single_g + T.stream_memory_s(c, a, m, tp) + (gemm - L1 * single_g - L2 * double_g) / max(L1, 1.0) + (
        (attn - (L1 + L2) * blocks * cb_nom) / max(L1, 1.0))
    pre2 = double_g + T.stream_memory_s(c, a, m_img, tp) + T.stream_memory_s(c, a, m_txt, tp)
    tp2 = ar * 2 * (T.allreduce(c, m_img * h * b, tp) + T.allreduce(c, m_txt * h * b, tp))
    tp1 = (tpc - L2 * tp2) / max(L1, 1.0)
    return {"pre": (pre1, pre2), "tp": (tp1, tp2), "cb_nom": cb_nom, "a1": a1, "a_in_s": t_in, "a_out_s": t_out, "a_lat_s": lat_a + sync_a, "x": x, "x_t": x_t,
            "x_lat": x_lat + sync_x, "cb": cb, "section_s": sec, "parts": parts,
            "total_s": sum(parts[p] for p in PARTS), "sp_busy_s": busy,
            "sync_busy_s": nl * k * (4.0 * sync_a + (r - 1) * sync_x), "batch": B, "m": m, "heads": hd,
            "ring_cross": ring_x, "uly_cross": uly_x}


def memory_bytes(spec, c, P: dict):
    """Per device: weights (replicated across SP and replicas, split by TP) + live activations of one block (the
    residual stream, QKV and MLP hidden of m tokens; the gathered Q, K, V of s/r tokens × the device's heads; two
    K/V ring buffers)."""
    a, b = spec.arch, c.b
    u, r, tp = P["u"], P["r"], P["tp"]
    B = np.ceil(spec.batch / P["dp"])
    h, s = float(a.hidden), float(spec.tokens)
    m = B * s / (u * r)
    heads_w = a.heads / (tp * u) * a.head_dim
    act = m * b * (2 * h + 3 * h / tp + a.ffn / tp) + B * (s / r) * heads_w * b * (3 + 4 * (r > 1))
    return a.params * b / tp + act


def latency_s(spec, terms) -> np.ndarray:
    return spec.steps * terms["total_s"]


def problems(spec, c, p: dict) -> list:
    """Why a plan cannot run (empty: it can)."""
    a = spec.arch
    u, r, tp, dp, k, sp = p["u"], p["r"], p["tp"], p["dp"], p["chunks"], p["sp"]
    out = []
    if tp > c.dpn or c.dpn % tp:
        out.append(f"tp = {tp} must divide the {c.dpn} devices of a node (TP stays inside one)")
    if a.heads % (tp * u):
        out.append(f"tp·u = {tp * u} must divide the {a.heads} heads (Ulysses and TP split heads)")
    if dp * tp * u * r > c.n_devices:
        out.append(f"dp·tp·u·r = {dp * tp * u * r} devices, the cluster has {c.n_devices}")
    if sp == "ulysses" and r != 1:
        out.append("ulysses has no ring: r = 1")
    if sp == "ring" and u != 1:
        out.append("ring has no Ulysses group: u = 1")
    if sp == "usp" and (tp * u > c.dpn or c.dpn % (tp * u)):
        out.append(f"usp keeps Ulysses inside a node: tp·u = {tp * u} must divide {c.dpn}")
    if sp == "torus" and (tp * r > c.dpn or c.dpn % (tp * r)):
        out.append(f"torus keeps the ring inside a node: tp·r = {tp * r} must divide {c.dpn}")
    if k != 1 and sp != "torus":
        out.append("chunks > 1 apply to torus only")
    if sp == "torus" and (a.heads // max(tp * u, 1)) % k:
        out.append(f"chunks = {k} must divide the {a.heads // max(tp * u, 1)} heads per device")
    if dp > spec.batch:
        out.append(f"dp = {dp} replicas for a batch of {spec.batch}")
    return out


def parse_plan(text: "str | None", spec, c) -> dict:
    """``sp=usp,u=8,r=2,tp=1,dp=1,comm=two-sided,chunks=1``; defaults: usp over the whole cluster (u = a node,
    r = the nodes), tp 1, dp 1, two-sided, 1 chunk."""
    def first(default, values):  # a default the workload's search lists hold (its first value otherwise)
        values = list(values or ())
        return default if not values or default in values else values[0]

    plan = {"sp": first("usp", spec.sp), "u": 0, "r": 0, "tp": first(1, spec.tp), "dp": 1,
            "comm": first("two-sided", spec.comm), "chunks": first(1, spec.chunks)}
    for key, val in plan_pairs(text, PLAN_KEYS):
        if key in ("sp", "comm"):
            allowed = SP_KINDS if key == "sp" else COMMS
            if val not in allowed:
                raise SpecError(f"unknown {key} {short(val)}", key=f"--plan {key}", allowed=allowed)
            plan[key] = val
            continue
        try:
            v = float(val)
        except ValueError:
            raise SpecError(f"bad value {short(val)}: {key} is a whole number", key=f"--plan {key}") from None
        if not (v.is_integer() and 1 <= v <= 4096):
            raise SpecError(f"{key} = {short(val)} is not a whole number 1..4096", key=f"--plan {key}")
        plan[key] = int(v)
    sp = plan["sp"]
    if plan["u"] == 0:
        plan["u"] = 1 if sp == "ring" else (c.dpn // plan["tp"] if sp == "usp" else
                                            max(1, c.n_devices // c.dpn) if sp == "torus" else c.dpn // plan["tp"])
    if plan["r"] == 0:
        plan["r"] = 1 if sp == "ulysses" else (c.n_devices // (plan["tp"] * plan["u"]) if sp in ("usp", "ring")
                                              else c.dpn // plan["tp"])
    plan["r"] = max(plan["r"], 1)
    bad = problems(spec, c, plan)
    if bad and not (text or "").strip():  # no --plan was given: the default does not apply to this model
        raise SpecError(f"the default plan {plan_string(plan)} does not apply: {bad[0]}", key="--plan",
                        hint="give --plan (parplan suggest lists the valid plans)")
    if bad:
        raise SpecError(f"plan {plan_string(plan)}: {bad[0]}", key="--plan")
    return plan


def plan_string(p: dict) -> str:
    return (f"sp={p['sp']},u={p['u']},r={p['r']},tp={p['tp']},dp={p['dp']},comm={p['comm']},"
            f"chunks={p['chunks']}")


@dataclass(frozen=True)
class DiTEstimate:
    workload: str
    cluster: str
    plan: dict
    devices: int
    parts: dict  # PARTS → seconds per denoising step
    step_s: float
    latency_s: float  # steps × step
    samples_per_s_per_gpu: float
    sp_comm_busy_s: float  # every SP exchange's seconds per step (hidden or not)
    hidden_fraction: float  # share of them hidden behind attention (derived from the schedule)
    sync_busy_s: float
    memory_bytes: float
    fits: bool
    reasons: list = field(default_factory=list)

    def plan_string(self) -> str:
        return plan_string(self.plan)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "cluster": self.cluster, "plan": self.plan_string(), **self.plan,
                "devices": self.devices, "step_s": self.step_s, "latency_s": self.latency_s,
                "samples_per_s_per_gpu": self.samples_per_s_per_gpu, "sp_comm_busy_s": self.sp_comm_busy_s,
                "hidden_fraction": self.hidden_fraction, "sync_busy_s": self.sync_busy_s,
                "memory_bytes": self.memory_bytes, "fits": self.fits, "breakdown_s": dict(self.parts),
                "reasons": list(self.reasons)}


def hidden_fraction(terms, i=slice(None)):
    busy = np.asarray(terms["sp_busy_s"])[i]
    exposed = np.asarray(terms["parts"]["sp_comm_s"])[i]
    return np.where(busy > 0, 1.0 - exposed / np.where(busy > 0, busy, 1.0), 0.0)


def estimate_plan(spec, cluster, plan: dict, c=None) -> DiTEstimate:
    c = c or T.dit_context(spec, cluster)
    P = plan_arrays([plan])
    t = layer_terms(spec, c, P)
    mem = float(memory_bytes(spec, c, P)[0])
    reasons = [] if mem <= c.memory_bytes else [
        f"needs {mem / 1e9:.1f} GB per device ({c.memory_bytes / 1e9:.1f} GB): more tp or SP degree"]
    devices = plan["dp"] * plan["tp"] * plan["u"] * plan["r"]
    step = float(t["total_s"][0])
    lat = spec.steps * step
    done = min(spec.batch, plan["dp"] * int(t["batch"][0]))
    return DiTEstimate(spec.name, cluster.name, dict(plan), devices, {k: float(v[0]) for k, v in t["parts"].items()},
                       step, lat, done / lat / devices, float(t["sp_busy_s"][0]), float(hidden_fraction(t)[0]),
                       float(t["sync_busy_s"][0]), mem, not reasons, reasons)
