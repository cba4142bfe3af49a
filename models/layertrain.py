"""Cost model of the layer-training family: one training iteration of a layer chain on k GPUs of a homogeneous
group, per-layer data- or model-parallel (``method=hybrid``, SplitBrain S23), or layer-parallel ADMM with a
quantized exchange (``method=admm``, pdADMM-G S26), or layer-serial backprop on one device (``method=serial``).

A plan string: ``method=hybrid,workers=4,modes=13D3M`` — ``modes``: ``dp`` (every layer replicated), ``mp`` (every
layer sharded), ``hybrid`` (convolutions DP, fully connected / MLP layers MP: SplitBrain's plan), or one letter per
trainable layer (D/M, run lengths allowed: ``13D3M``).  ``method=admm,workers=8,bits=8``: ADMM with ``bits``-bit
exchange of the workload's ``admm.quantize`` variables (bits=32: pdADMM-G in fp32).  Times are seconds per
iteration; memory is bytes per worker.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from parplan.errors import SpecError, short
from parplan.models.plan_pairs import plan_pairs
from parplan.models.layertrain_terms import (ADMM_PARTS, COMPUTE_EFFICIENCY, HYBRID_PARTS, MEMORY_PARTS, TrainHw,
                                             admm_terms, hybrid_parts, hybrid_terms, serial_backprop_s)

PLAN_KEYS = ("method", "workers", "modes", "bits")
METHODS = ("hybrid", "admm", "serial")
MODE_WORDS = ("dp", "mp", "hybrid")
_RUN = re.compile(r"(\d*)([DMdm])")


def efficiency(spec) -> float:
    return spec.job.compute_efficiency or COMPUTE_EFFICIENCY


def trainable(spec) -> list[int]:
    return [i for i, r in enumerate(spec.rows) if r[1] != "graph"]


def modes_vector(spec, text: str) -> np.ndarray:
    """P = 1 × L boolean row (True = model-parallel) for a modes word or a D/M string over trainable layers."""
    idx = trainable(spec)
    L = len(spec.rows)
    mp = np.zeros(L, bool)
    t = text.strip()
    if t in MODE_WORDS:
        for i in idx:
            mp[i] = t == "mp" or (t == "hybrid" and spec.rows[i][1] in ("fc", "mlp"))
        return mp
    if not t or _RUN.sub("", t):
        raise SpecError(f"bad modes {short(text)}: write dp, mp, hybrid or one D/M per trainable layer "
                        f"({len(idx)}), e.g. {len(idx) - 3}D3M", key="--plan modes", allowed=list(MODE_WORDS))
    # run lengths counted before the string is built (99999999999D allocated gigabytes, then failed)
    runs = [(1 if not n else int(n) if len(n) <= 7 else 10**7, ch) for n, ch in _RUN.findall(t)]
    named = sum(r for r, _ in runs)
    if named != len(idx) or any(r == 0 for r, _ in runs):
        raise SpecError(f"modes {short(text)} names {named if named < 10**7 else 'too many'} layers (a zero-length "
                        f"run is none); the network has {len(idx)} trainable", key="--plan modes",
                        hint="one D/M per layer, run lengths like 13D3M")
    letters = "".join(ch.upper() * r for r, ch in runs)
    if len(letters) != len(idx):
        raise SpecError(f"modes {short(text)} names {len(letters)} layers; the network has {len(idx)} trainable",
                        key="--plan modes", hint="one D/M per layer, run lengths like 13D3M")
    for i, ch in zip(idx, letters):
        mp[i] = ch == "M"
    return mp


def modes_string(spec, mp) -> str:
    letters = "".join("M" if mp[i] else "D" for i in trainable(spec))
    return "".join(f"{len(m.group(0))}{m.group(0)[0]}" if len(m.group(0)) > 1 else m.group(0)[0]
                   for m in re.finditer(r"D+|M+", letters))


@dataclass(frozen=True)
class LayerEstimate:
    workload: str
    cluster: str
    plan: dict
    parts: dict  # seconds per iteration (HYBRID_PARTS or ADMM_PARTS)
    total_s: float
    memory: dict  # bytes per worker (MEMORY_PARTS)
    memory_bytes: float
    capacity_bytes: float
    samples_per_s: float
    speedup: float  # over one worker of the same per-worker batch (hybrid) / layer-serial backprop (admm)
    extra: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.memory_bytes <= self.capacity_bytes

    def plan_string(self) -> str:
        p = self.plan
        keys = {"hybrid": ("method", "workers", "modes"), "admm": ("method", "workers", "bits"),
                "serial": ("method",)}[p["method"]]
        return ",".join(f"{k}={p[k]}" for k in keys)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "cluster": self.cluster, "plan": self.plan_string(), **self.plan,
                "fits": self.fits, "iteration_s": self.total_s, "samples_per_s": self.samples_per_s,
                "speedup": self.speedup, "memory_bytes": self.memory_bytes, "capacity_bytes": self.capacity_bytes,
                "breakdown_s": dict(self.parts), "memory_breakdown_bytes": dict(self.memory), **self.extra,
                "notes": list(self.notes)}


def parse_plan(text: "str | None", spec, hw: TrainHw) -> dict:
    """A validated plan mapping (bad keys, values and combinations are SpecErrors)."""
    method = "admm" if spec.admm is not None else "hybrid"
    plan: dict = {"method": method}
    raw: dict = {}
    for k, v in plan_pairs(text, PLAN_KEYS):
        raw[k] = v
    if "method" in raw:
        if raw["method"] not in METHODS:
            raise SpecError(f"unknown method {short(raw['method'])}", key="--plan method", allowed=METHODS)
        plan["method"] = raw["method"]
    for k in ("workers", "bits"):
        if k in raw:
            try:
                raw[k] = int(raw[k])
            except ValueError:
                raise SpecError(f"bad value {short(raw[k])}: {k} is a whole number", key=f"--plan {k}") from None
    m = plan["method"]
    if m == "serial":
        for k in ("workers", "modes", "bits"):
            if k in raw:
                raise SpecError(f"{k} does not apply to method=serial (one device)", key=f"--plan {k}")
        plan["workers"] = 1
        return plan
    L = len(trainable(spec))
    default_k = min(hw.n_devices, L) if m == "admm" else hw.n_devices
    k = raw.get("workers", default_k)
    cap = min(hw.n_devices, L) if m == "admm" else hw.n_devices
    if not 1 <= k <= cap:
        why = f"{hw.name} has {hw.n_devices} devices" + (f" and the chain {L} layers" if m == "admm" else "")
        raise SpecError(f"workers = {k}: {why}", key="--plan workers", hint=f"1..{cap}")
    plan["workers"] = k
    if m == "hybrid":
        if "bits" in raw:
            raise SpecError("bits applies to method=admm", key="--plan bits")
        mp = modes_vector(spec, raw.get("modes", "hybrid"))
        plan["modes"] = modes_string(spec, mp)
    else:
        if "modes" in raw:
            raise SpecError("modes applies to method=hybrid", key="--plan modes")
        if any(r[1] == "conv" for r in spec.rows):
            raise SpecError("method=admm trains MLP / GA-MLP chains (S26), not convolutional networks",
                            key="--plan method")
        bits = raw.get("bits", spec.admm.bits if spec.admm else 8)
        if not 1 <= bits <= 32:
            raise SpecError(f"bits = {bits}: 1..32 (32 = fp32 exchange)", key="--plan bits")
        plan["bits"] = bits
    return plan


def evaluate_hybrid(spec, hw: TrainHw, mp, k) -> dict:
    """Parts, ``total_s`` and memory parts for plans ``mp`` (P × L) on ``k`` workers (P,) — the vectorized path."""
    arr = spec.arrays()
    t = hybrid_terms(arr, np.atleast_2d(mp), k, spec.batch_per_worker, hw, eff=efficiency(spec),
                     state_bpp=spec.state_bytes_per_param, grad_bpp=spec.dtype_bytes, optimizer=spec.job.optimizer)
    out = hybrid_parts(t)
    for key in MEMORY_PARTS:
        out[key] = t[key].sum(axis=1)
    out["memory_bytes"] = sum(out[key] for key in MEMORY_PARTS)
    return out


def single_worker_s(spec, hw: TrainHw) -> float:
    """One worker, no communication, the same per-worker batch (the speedup reference)."""
    L = len(spec.rows)
    return float(evaluate_hybrid(spec, hw, np.zeros((1, L), bool), 1)["total_s"][0])


def estimate_plan(spec, hw: TrainHw, plan: dict) -> LayerEstimate:
    m = plan["method"]
    if m == "admm":
        return _estimate_admm(spec, hw, plan)
    k = plan["workers"]
    mp = modes_vector(spec, plan.get("modes", "dp")) if m == "hybrid" else np.zeros(len(spec.rows), bool)
    out = evaluate_hybrid(spec, hw, mp[None, :], k)
    parts = {p: float(out[p][0]) for p in HYBRID_PARTS}
    mem = {p: float(out[p][0]) for p in MEMORY_PARTS}
    total = float(out["total_s"][0])
    dp = evaluate_hybrid(spec, hw, np.zeros((1, len(spec.rows)), bool), k)
    state_dp = float(dp["state_bytes"][0])
    t1 = single_worker_s(spec, hw)
    B = spec.batch_per_worker
    extra = {"dp_allreduce_s": float(out["dp_allreduce_s"][0]), "state_saving_vs_dp": 1.0 - mem["state_bytes"] / state_dp,
             "single_worker_s": t1, "scaling_efficiency": t1 / total, "global_batch": k * B,
             "params_mp": float(sum(r[2] for r, x in zip(spec.rows, mp) if x)), "params_total": spec.total_params}
    notes = []
    if mem["state_bytes"] + mem["activation_bytes"] + mem["gather_buffer_bytes"] > hw.memory_bytes:
        notes.append(f"does not fit: {sum(mem.values()) / 2**30:.1f} GiB per worker of {hw.memory_bytes / 2**30:.0f}"
                     " GiB — shard more layers (modes) or lower batch_per_worker")
    return LayerEstimate(spec.name, hw.name, dict(plan), parts, total, mem, sum(mem.values()), hw.memory_bytes,
                         k * B / total, k * t1 / total, extra, notes)


def _estimate_admm(spec, hw: TrainHw, plan: dict) -> LayerEstimate:
    arr = spec.arrays()
    n = float(spec.nodes or spec.batch_per_worker)
    quant = tuple(spec.admm.quantize) if spec.admm else ("p", "q")
    cost = spec.admm.update_cost if spec.admm else 6.0
    eff = efficiency(spec)
    w, bits = plan["workers"], plan["bits"]
    a = admm_terms(arr, n, w, bits, quant, hw, eff=eff, update_cost=cost, dtype_bytes=spec.dtype_bytes)
    f32 = admm_terms(arr, n, w, 32, quant, hw, eff=eff, update_cost=cost, dtype_bytes=spec.dtype_bytes)
    parts = {p: a[p] for p in ADMM_PARTS}
    total = sum(parts.values())
    bp = serial_backprop_s(arr, n, hw, eff=eff)
    from parplan.models.layertrain_terms import admm_layout

    idx, owner = admm_layout(arr, w)
    state = np.zeros(w)
    for j, i in enumerate(idx):  # W_l, b_l in fp32 plus p_l (n × d_{l−1}) and z_l, q_l, u_l (n × d_l each)
        state[owner[j]] += 4.0 * (arr.params[i] + n * (arr.in_bytes[i] + 3 * arr.out_bytes[i]) / spec.dtype_bytes)
    mem = {"state_bytes": float(state.max()), "activation_bytes": 0.0, "gather_buffer_bytes": 0.0}
    extra = {"bytes_per_iteration": a["bytes_per_iteration"], "bytes_per_iteration_fp32": f32["bytes_per_iteration"],
             "comm_reduction": 1.0 - a["bytes_per_iteration"] / f32["bytes_per_iteration"]
             if f32["bytes_per_iteration"] else 0.0,
             "exchange_fp32_s": f32["exchange_s"], "exchange_reduction": 1.0 - a["exchange_s"] / f32["exchange_s"]
             if f32["exchange_s"] else 0.0, "serial_backprop_s": bp, "quantized": list(quant),
             "compute_per_worker_s": [float(x) for x in a["compute_per_worker_s"]]}
    return LayerEstimate(spec.name, hw.name, dict(plan), parts, total, mem, mem["state_bytes"], hw.memory_bytes,
                         n / total, bp / total, extra, [])
