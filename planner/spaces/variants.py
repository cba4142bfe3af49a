"""Search space of the process-network family (mAPN, S16): every variant Π_i |A_i|·R_i·|C_i| — an algorithm
alternative, a data-parallel degree and a core type per stage — each stage's options on one axis of a broadcast
grid, priced in one call of ``models.variants.evaluate``, filtered by the platform's cores and memory and the
user's constraints, and reduced to the Pareto set over (throughput ↑, energy per item ↓, quality ↑).  Bounded: above ``MAX_VARIANTS`` the search stops
at the door with the count and how to shrink it.
"""
from __future__ import annotations

from dataclasses import dataclass

import re

import numpy as np

from parplan.errors import NothingFits, SpecError, did_you_mean
from parplan.models.variants import CONSTRAINTS, evaluate, option_table, pareto

MAX_VARIANTS = 2_000_000
OBJECTIVES = ("pareto", "throughput", "energy", "quality", "latency")


@dataclass
class VariantSet:
    workload: str
    platform: str
    objective: str
    rows: list  # dicts, best first
    n_variants: int
    n_feasible: int
    pareto_size: int
    rejected: dict  # constraint -> variants it rejects (first violated)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "platform": self.platform, "objective": self.objective,
                "variants": self.n_variants, "feasible": self.n_feasible, "pareto": self.pareto_size,
                "rejected_by": self.rejected, "plans": self.rows}


def enumerate_variants(spec, platform, fix: "dict | None" = None) -> tuple:
    """(per-stage option tables, options per stage, stage columns for ``evaluate``): stage i's columns lie along
    axis i of the Cartesian grid (variant v = the grid's C-order index, the last stage fastest), so ``evaluate``
    prices the whole product by broadcasting without building an index matrix."""
    fix = fix or {}
    stages = [s.name for s in spec.stages]
    unknown = [k for k in fix if k not in stages]
    if unknown:  # a typo pinned nothing, and the result looked pinned (check PASSed)
        raise SpecError(f"unknown stage {unknown[0]!r}", key="--fix", allowed=stages,
                        hint=did_you_mean(unknown[0], stages))
    tables = []
    for s in spec.stages:
        rows = option_table(spec, platform, s)
        if s.name in fix:
            alt = fix[s.name]
            names = [a.name for a in s.alternatives]
            if alt not in names:
                raise SpecError(f"stage {s.name} has no alternative {alt!r}", key="--fix", allowed=names)
            rows = [r for r in rows if s.alternatives[r[0]].name == alt]
        if not rows:
            raise SpecError(f"stage {s.name} can run on none of {platform.id}'s core types",
                            key=f"stages.{s.name}.core_types", allowed=platform.type_names())
        tables.append(np.array(rows, dtype=float))
    sizes = tuple(len(t) for t in tables)
    n = int(np.prod(sizes, dtype=float))
    if n > MAX_VARIANTS:
        raise SpecError(f"{n:,} variants ({' × '.join(map(str, sizes))} options per stage) is above {MAX_VARIANTS:,}",
                        key="stages", hint="narrow replicas ranges or core_types, or --fix STAGE=ALTERNATIVE")
    cols = []
    for i, tb in enumerate(tables):
        shape = [1] * len(tables)
        shape[i] = len(tb)
        cols.append(_columns(tb, tuple(shape)))
    return tables, sizes, cols


def _columns(tb: np.ndarray, shape: tuple) -> dict:
    return {"alt": tb[:, 0].astype(int).reshape(shape), "r": tb[:, 1].reshape(shape),
            "ctype": tb[:, 2].astype(int).reshape(shape), "t": tb[:, 3].reshape(shape),
            "e": tb[:, 4].reshape(shape), "mem": tb[:, 5].reshape(shape), "q": tb[:, 6].reshape(shape)}


def _flat(m: dict) -> dict:
    """``evaluate``'s grid-shaped metrics as flat arrays over variants (views where possible)."""
    out = {}
    for k, v in m.items():
        if k == "checks":
            out[k] = {c: a.reshape(-1) for c, a in v.items()}
        elif k in ("cores_used", "stage_time_s"):
            out[k] = v.reshape(v.shape[0], -1)
        else:
            out[k] = v.reshape(-1)
    return out


def describe(spec, platform, cols, v: int) -> str:
    """The variant string ``stage=alternative×r@core, …``."""
    parts = []
    for s, c in zip(spec.stages, cols):
        parts.append(f"{s.name}={s.alternatives[int(c['alt'][v])].name}x{int(c['r'][v])}"
                     f"@{platform.core_types[int(c['ctype'][v])].name}")
    return ",".join(parts)


def row_of(spec, platform, cols, m, v: int) -> dict:
    return {"plan": describe(spec, platform, cols, v), "throughput_per_s": float(m["throughput_per_s"][v]),
            "latency_s": float(m["latency_s"][v]), "energy_per_item_j": float(m["energy_per_item_j"][v]),
            "active_energy_j": float(m["active_energy_j"][v]), "idle_energy_j": float(m["idle_energy_j"][v]),
            "quality": float(m["quality"][v]), "memory_bytes": float(m["memory_bytes"][v]),
            "cores": {c.name: int(m["cores_used"][j][v]) for j, c in enumerate(platform.core_types)},
            "feasible": bool(m["feasible"][v])}


def search(spec, platform, *, objective: str = "pareto", fix: "dict | None" = None, top: int = 10) -> VariantSet:
    if objective not in OBJECTIVES:
        raise SpecError(f"bad value {objective!r}", key="--objective", allowed=list(OBJECTIVES))
    tables, sizes, grid = enumerate_variants(spec, platform, fix)
    m = _flat(evaluate(spec, platform, grid))
    n_var = int(np.prod(sizes, dtype=np.int64))
    ok = m["feasible"]
    rejected, left = {}, np.ones_like(ok)
    for c in CONSTRAINTS:
        bad = left & ~m["checks"][c]
        rejected[c] = int(bad.sum())
        left &= m["checks"][c]
    feas = np.flatnonzero(ok)
    if feas.size == 0:
        best = int(np.argmax(m["throughput_per_s"] * m["checks"]["cores"]))
        why = ", ".join(f"{c}: {n:,}" for c, n in rejected.items() if n)
        raise NothingFits(f"no variant of {n_var:,} meets the constraints (rejected first by {why})",
                          key="constraints", hint=f"the fastest variant within the cores reaches "
                          f"{m['throughput_per_s'][best]:.3g} items/s, {m['energy_per_item_j'][best]:.3g} J/item, "
                          f"quality {m['quality'][best]:.3g}: relax the constraint that rejects most")
    front = feas[pareto(m["throughput_per_s"][feas], m["energy_per_item_j"][feas], m["quality"][feas])]
    if objective == "pareto":
        chosen = front
    else:
        key = {"throughput": -m["throughput_per_s"], "energy": m["energy_per_item_j"], "quality": -m["quality"],
               "latency": m["latency_s"]}[objective]
        chosen = feas[np.lexsort((-m["throughput_per_s"][feas], key[feas]))]
    out = chosen if top == 0 else chosen[:top]
    # result rows only for the variants returned: their stage columns and metrics
    opt = np.unravel_index(out, sizes) if len(sizes) else ()
    cols = [_columns(tb[o], (len(out),)) for tb, o in zip(tables, opt)]
    sub = {k: (v[..., out] if k in ("cores_used", "stage_time_s") else v[out]) for k, v in m.items() if k != "checks"}
    on_front = set(front.tolist())
    rows = [{"rank": i, **row_of(spec, platform, cols, sub, j), "pareto": int(v) in on_front}
            for i, (j, v) in enumerate(zip(range(len(out)), out), 1)]
    return VariantSet(spec.name, platform.id, objective, rows, n_var, int(feas.size), int(front.size), rejected)


def parse_variant(text: str, spec, platform) -> list:
    """``stage=alternative x r @ core, …`` → per-stage (alternative index, r, core index); missing stages error."""
    items = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise SpecError(f"bad variant item {part!r}: write stage=alternativexR@core", key="--plan")
        k, v = (x.strip() for x in part.split("=", 1))
        items[k] = v
    names = [s.name for s in spec.stages]
    unknown = sorted(set(items) - set(names))
    if unknown:
        raise SpecError(f"unknown stage {unknown[0]!r}", key="--plan", allowed=names)
    out = []
    types = platform.type_names()
    for s in spec.stages:
        usable = [t for t in (s.core_types or types) if t in types]
        if s.core_types and not usable:  # the file's core_types, not a --plan (it blamed --plan, "allowed: gpu")
            raise SpecError(f"stage {s.name} can run on none of {platform.name}'s core types",
                            key=f"stages.{s.name}.core_types", allowed=types)
        v = items.get(s.name, f"{s.alternatives[0].name}x{s.r_min}@{usable[0]}")
        m = re.match(r"^(.+)x(\d+)(?:@(.+))?$", v)
        if m is None:
            raise SpecError(f"stage {s.name}: bad variant {v!r} (write ALTERNATIVExR@CORE, e.g. "
                            f"{s.alternatives[0].name}x2@{platform.type_names()[0]})", key="--plan")
        alt, r, core = m.group(1), m.group(2), m.group(3) or ""
        alts = [a.name for a in s.alternatives]
        if alt not in alts:
            raise SpecError(f"stage {s.name}: unknown alternative {alt!r}", key="--plan", allowed=alts)
        try:
            r = int(r)
        except ValueError:
            raise SpecError(f"stage {s.name}: bad replicas {r!r} (write {alt}x2@core)", key="--plan") from None
        if not s.r_min <= r <= s.r_max:
            raise SpecError(f"stage {s.name}: replicas {r} outside [{s.r_min}, {s.r_max}]", key="--plan")
        core = core or platform.type_names()[0]
        if core not in platform.type_names() or (s.core_types and core not in s.core_types):
            raise SpecError(f"stage {s.name}: core type {core!r} not allowed", key="--plan", allowed=usable)
        out.append((alts.index(alt), r, platform.type_names().index(core)))
    return out


def single(spec, platform, choice: list) -> tuple:
    """Stage columns of one variant (V = 1) and its metrics."""
    cols = []
    for s, (ai, r, ci) in zip(spec.stages, choice):
        rows = [x for x in option_table(spec, platform, s) if x[0] == ai and x[1] == r and x[2] == ci]
        a = np.array(rows[:1], dtype=float)
        cols.append({"alt": a[:, 0].astype(int), "r": a[:, 1], "ctype": a[:, 2].astype(int), "t": a[:, 3],
                     "e": a[:, 4], "mem": a[:, 5], "q": a[:, 6]})
    return cols, evaluate(spec, platform, cols)
