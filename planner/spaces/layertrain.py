"""Search space of the layer-training family.

``method=hybrid``: an exact dynamic program over the layer chain choosing data- or model-parallel per layer (S23),
for each worker count.  It sweeps the layers backward carrying labels (t, C, memory): the compute stream's time,
the communication stream's time (queued all-reduces) and the bytes per worker — the state of the flow-shop
recurrence of ``models.layertrain_terms.hybrid_time``, which is translation-equivariant, so forward-pass and
optimizer times add to both clocks wherever they are met.  A label is dropped when another of the same layer mode
is no later on both clocks and no larger in memory (every later step is monotone in both clocks), or when its memory
exceeds the cap: what is left is exact.  Should a frontier exceed ``MAX_LABELS``, the fastest labels are kept and
the result says ``exact: false``.  Min time under the memory cap, or min memory.  The pure-DP plan and SplitBrain's
"convolutions DP + FC MP" plan are priced beside it for comparison.

``method=admm``: workers (1..layers) × exchange width (32, 16, 8, 4 bits), and layer-serial backprop on one device.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import NothingFits, SpecError
from parplan.models.layertrain import (efficiency, estimate_plan, evaluate_hybrid, modes_string, modes_vector,
                                       trainable)
from parplan.models.layertrain_terms import blocking_exchange, hybrid_terms

MAX_LABELS = 4000
ADMM_BITS = (32, 16, 8, 4)


@dataclass
class LayerPlans:
    workload: str
    cluster: str
    objective: str
    rows: list  # dicts, best first
    n_configs: int
    exact: bool = True

    def to_dict(self) -> dict:
        return {"workload": self.workload, "cluster": self.cluster, "objective": self.objective,
                "configurations": self.n_configs, "exact": self.exact, "plans": self.rows}


def _prune(t, c, m, masks):
    """Indices of the labels no other label dominates on (t, C, memory) (ties: the first kept)."""
    n = len(t)
    if n <= 1:
        return list(range(n))
    order = np.lexsort((m, c, t))
    t, c, m = t[order], c[order], m[order]
    keep = []
    kt, kc, km = np.empty(0), np.empty(0), np.empty(0)
    for i in range(n):
        if kt.size and np.any((kt <= t[i]) & (kc <= c[i]) & (km <= m[i])):
            continue
        keep.append(i)
        kt, kc, km = np.append(kt, t[i]), np.append(kc, c[i]), np.append(km, m[i])
    return [int(order[i]) for i in keep]


def exact_dp(spec, hw, k: int, memory_cap: float = np.inf) -> tuple:
    """Final labels (time_s, memory_bytes, mp vector) of every non-dominated DP/MP assignment on ``k`` workers."""
    arr = spec.arrays()
    L = len(spec.rows)
    kw = dict(eff=efficiency(spec), state_bpp=spec.state_bytes_per_param, grad_bpp=spec.dtype_bytes,
              optimizer=spec.job.optimizer)
    B = spec.batch_per_worker
    tD = hybrid_terms(arr, np.zeros((1, L), bool), k, B, hw, **kw)
    tM = hybrid_terms(arr, np.ones((1, L), bool), k, B, hw, **kw)
    train = [kd != "graph" for kd in arr.kinds]
    first = tD["first"]

    def layer(mode):
        src = tM if mode else tD
        return lambda key, i: float(src[key][0, i])

    def mem_of(mode, i):
        g = layer(mode)
        return g("state_bytes", i) + g("activation_bytes", i) + g("gather_buffer_bytes", i)

    # labels per mode of the current layer: arrays t, C, mem and the chosen modes as bit masks
    labels = {}
    exact = True
    for mode in (False, True):
        if mode and not train[L - 1]:
            continue
        end = float(tM["end"][0]) if mode else 0.0
        t = 2.0 * end
        g = layer(mode)
        t = t + g("fwd", L - 1) + g("opt", L - 1)
        c = t
        t = t + g("bwd", L - 1)
        if not mode and g("ar", L - 1) > 0:
            c = max(c, t) + g("ar", L - 1)
        mem = mem_of(mode, L - 1)
        if mem <= memory_cap:
            labels[mode] = (np.array([t]), np.array([c]), np.array([mem]), [int(mode) << (L - 1)])
    for i in range(L - 2, -1, -1):
        new = {}
        for mode in (False, True):
            if mode and not train[i]:
                continue
            g = layer(mode)
            parts_t, parts_c, parts_m, parts_k = [], [], [], []
            for nxt, (t, c, m, masks) in labels.items():
                # the boundary into layer i+1 (mode nxt) from layer i (mode): forward additive, backward blocking
                fwd_b = float(tM["ag"][0, i + 1]) if nxt else (float(tM["a2a"][0, i + 1]) if mode else 0.0)
                bwd_b = 0.0 if i + 1 == first else fwd_b
                t2, c2 = t + fwd_b, c + fwd_b
                if bwd_b > 0:
                    t2, c2 = blocking_exchange(t2, c2, np.full_like(t2, bwd_b))
                t2, c2 = t2 + g("fwd", i) + g("opt", i), c2 + g("fwd", i) + g("opt", i)
                t2 = t2 + g("bwd", i)
                if not mode and g("ar", i) > 0:
                    c2 = np.maximum(c2, t2) + g("ar", i)
                m2 = m + mem_of(mode, i)
                ok = m2 <= memory_cap
                parts_t.append(t2[ok])
                parts_c.append(c2[ok])
                parts_m.append(m2[ok])
                parts_k.extend(mk | (int(mode) << i) for mk, o in zip(masks, ok) if o)
            if not parts_k:
                continue
            T, C, M = np.concatenate(parts_t), np.concatenate(parts_c), np.concatenate(parts_m)
            keep = _prune(T, C, M, parts_k)
            if len(keep) > MAX_LABELS:
                exact = False
                keep = sorted(keep, key=lambda j: max(T[j], C[j]))[:MAX_LABELS]
            new[mode] = (T[keep], C[keep], M[keep], [parts_k[j] for j in keep])
        labels = new
        if not labels:
            break
    out = []
    for mode, (t, c, m, masks) in labels.items():
        # boundary into the first layer from the input (DP): forward only
        fwd_b = float(tM["ag"][0, 0]) if mode else 0.0
        for j in range(len(t)):
            mp = np.array([(masks[j] >> i) & 1 == 1 for i in range(L)])
            out.append((float(max(t[j], c[j]) + fwd_b), float(m[j]), mp))
    return out, exact


def _worker_counts(n: int) -> list[int]:
    ks, p = [], 1
    while p < n:
        ks.append(p)
        p *= 2
    ks.append(n)
    return ks


def _row(spec, hw, plan, label: str) -> dict:
    e = estimate_plan(spec, hw, plan)
    return {"plan": e.plan_string(), "label": label, **e.plan, "iteration_s": e.total_s,
            "samples_per_s": e.samples_per_s, "speedup": e.speedup, "memory_bytes": e.memory_bytes, "fits": e.fits,
            **e.parts, **{k: v for k, v in e.extra.items() if isinstance(v, (int, float))}}


def check_fix(spec, hw, fix: dict) -> None:
    """Pinned knobs in the ranges a plan accepts: workers 1..the devices (ADMM: also ≤ the trainable layers), bits
    1..32 (``parse_plan``'s rules for a ``--plan``)."""
    admm = fix.get("method", "admm" if spec.admm is not None else "hybrid") == "admm"
    caps = {"workers": min(hw.n_devices, len(trainable(spec))) if admm else hw.n_devices, "bits": 32}
    for k, cap in caps.items():
        if k in fix:
            v = fix[k]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= cap:
                why = f" ({hw.name} has {hw.n_devices} devices)" if k == "workers" else " (32 = fp32 exchange)"
                raise SpecError(f"bad value {v!r}: {k} is a whole number in 1..{cap}{why}", key=f"--fix {k}")


def search(spec, hw, *, objective: str = "time", fix: "dict | None" = None, top: int = 10,
           memory_cap: "float | None" = None) -> LayerPlans:
    """Ranked plans: per worker count the DP's optimum, pure DP and SplitBrain's hybrid (method hybrid), or the ADMM
    grid and serial backprop (a workload with an ``admm`` block).  Pinned values out of range are refused first."""
    fix = dict(fix or {})
    check_fix(spec, hw, fix)
    if objective not in ("time", "memory"):
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=["time", "memory"])
    method = fix.pop("method", "admm" if spec.admm is not None else "hybrid")
    bad = set(fix) - {"workers", "bits"}
    if bad:
        raise SpecError(f"cannot fix {sorted(bad)}", key="--fix", allowed=["method", "workers", "bits"])
    if method == "admm" and any(r[1] == "conv" for r in spec.rows):  # the estimate refuses these plans
        raise SpecError("method=admm trains MLP / GA-MLP chains (S26), not convolutional networks",
                        key="--fix method", allowed=["hybrid"])
    if method != "admm" and "bits" in fix:  # a hybrid search has no bits: the pin held nothing
        raise SpecError("bits applies to method=admm", key="--fix bits")
    cap = hw.memory_bytes if memory_cap is None else memory_cap
    ks = [int(fix["workers"])] if "workers" in fix else None
    rows, n, exact = [], 0, True
    if method == "admm":
        L = len(trainable(spec))
        for w in ks or range(1, min(L, hw.n_devices) + 1):
            for b in [int(fix["bits"])] if "bits" in fix else ADMM_BITS:
                rows.append(_row(spec, hw, {"method": "admm", "workers": w, "bits": b}, f"admm {b}-bit"))
                n += 1
        rows.append(_row(spec, hw, {"method": "serial", "workers": 1}, "serial backprop"))
        n += 1
    elif method == "hybrid":
        for k in ks or _worker_counts(hw.n_devices):  # in 1..devices (check_fix)
            labels, ex = exact_dp(spec, hw, k, memory_cap=cap)
            exact &= ex
            n += len(labels)
            if labels:
                best = min(labels, key=(lambda x: (x[0], x[1])) if objective == "time" else (lambda x: (x[1], x[0])))
                rows.append(_row(spec, hw, {"method": "hybrid", "workers": k, "modes": modes_string(spec, best[2])},
                                 "optimal (DP)"))
            for word, label in (("dp", "pure DP"), ("hybrid", "conv DP + FC MP")):
                mp = modes_vector(spec, word)
                rows.append(_row(spec, hw, {"method": "hybrid", "workers": k, "modes": modes_string(spec, mp)}, label))
    else:
        raise SpecError(f"method {method!r} has no search", key="--fix method", allowed=["hybrid", "admm"])
    seen, uniq = set(), []
    for r in rows:
        if r["plan"] in seen:
            continue
        seen.add(r["plan"])
        uniq.append(r)
    if objective == "time":
        uniq.sort(key=lambda r: (not r["fits"], -r["samples_per_s"] if method == "hybrid" else r["iteration_s"]))
    else:
        uniq.sort(key=lambda r: (r["memory_bytes"], r["iteration_s"]))
    if not any(r["fits"] for r in uniq):
        low = min(r["memory_bytes"] for r in uniq)
        raise NothingFits(f"no plan fits {cap / 2**30:.1f} GiB per worker (the smallest needs {low / 2**30:.1f} GiB)",
                        key="job.batch_per_worker", hint="lower batch_per_worker, use more workers or fp16")
    out = uniq if top == 0 else uniq[:top]
    for i, r in enumerate(out, 1):
        r["rank"] = i
    return LayerPlans(spec.name, hw.name, objective, out, n, exact)


def evaluate_all(spec, hw, k: int) -> tuple:
    """Every 2^L assignment priced at once (for tests on small chains): (mp matrix, total_s, memory_bytes)."""
    L = len(spec.rows)
    if L > 16:
        raise SpecError(f"{L} layers: brute force is bounded at 16", key="layers")
    mp = ((np.arange(2 ** L)[:, None] >> np.arange(L)[None, :]) & 1).astype(bool)
    train = np.array([r[1] != "graph" for r in spec.rows])
    mp = np.unique(mp & train, axis=0)
    out = evaluate_hybrid(spec, hw, mp, np.full(len(mp), float(k)))
    return mp, out["total_s"], out["memory_bytes"]
