"""Explanations: why the best plan beats the runner-up, and why the other plans were excluded or do not fit.

"need" conditions are derived from the data, not from rules of thumb: for the plans that fit, the Pareto-minimal
settings of the knobs that relieve the dominant memory part are collected (e.g. every fitting plan has pp ≥ 4 or
zero = 3); each alternative is a condition that the fitting plans satisfy and some failing plans do not.
"""
from __future__ import annotations

import numpy as np

from parplan.models.estimate import Estimate
from parplan.models.plan import PLAN_KEYS
from parplan.models.training import TIME_PARTS
from parplan.planner.search import Evaluated

GiB = float(2**30)

# knobs that relieve each kind of memory pressure: (axis, direction) — +1: larger helps, −1: smaller helps
STATE_KNOBS = (("pp", 1), ("tp", 1), ("zero", 1), ("cp", 1))
ACTIVATION_KNOBS = (("recompute", 1), ("pp", 1), ("tp", 1), ("cp", 1), ("sp", 1), ("mbs", -1))
MAX_ALTERNATIVES = 3


def _fmt_s(x: float) -> str:
    ax = abs(x)
    if ax >= 1.0:
        return f"{x:+.3f} s"
    if ax >= 1e-3:
        return f"{x * 1e3:+.1f} ms"
    return f"{x * 1e6:+.0f} µs"


def compare(best: Estimate, runner: Estimate, objective: str = "throughput") -> str:
    """One paragraph: the metric gap, the differing knobs and the largest differing time (or memory) parts."""
    pb, pr = best.plan.as_dict(), runner.plan.as_dict()
    diff = [f"{k} {pr[k] if k != 'sp' else str(pr[k]).lower()}→{pb[k] if k != 'sp' else str(pb[k]).lower()}"
            for k in PLAN_KEYS if pb[k] != pr[k]]
    if objective == "memory":
        head = (f"best uses {best.memory_peak_bytes / GiB:.2f} GiB/device vs {runner.memory_peak_bytes / GiB:.2f} GiB "
                f"for the runner-up")
        parts = {k: best.breakdown.memory_bytes[k] - runner.breakdown.memory_bytes[k] for k in best.breakdown.memory_bytes}
        top = sorted(parts.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:3]
        detail = ", ".join(f"{k.removesuffix('_bytes')} {v / GiB:+.2f} GiB" for k, v in top if v != 0.0)
    else:
        gain = best.tokens_per_s / runner.tokens_per_s - 1.0
        if abs(gain) < 1e-9:
            why = (f"less memory ({best.memory_peak_bytes / GiB:.2f} vs {runner.memory_peak_bytes / GiB:.2f} GiB)"
                   if best.memory_peak_bytes < runner.memory_peak_bytes else "the plan-axis order")
            head = f"best ties with the runner-up (step {best.step_time_s:.6g} s) and ranks first by {why}"
        else:
            head = (f"best is {100 * gain:.3g} % faster than the runner-up (step {best.step_time_s:.6g} s vs "
                    f"{runner.step_time_s:.6g} s)")
        parts = {k: best.breakdown.time_s[k] - runner.breakdown.time_s[k] for k in TIME_PARTS}
        top = sorted(parts.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:3]
        detail = ", ".join(f"{k.removesuffix('_s')} {_fmt_s(v)}" for k, v in top if v != 0.0)
    text = f"{head}; changes from the runner-up: {', '.join(diff) or 'none'}"
    if detail:
        text += f"; largest differences (best − runner-up): {detail}"
    return text


def _axis(ev: Evaluated, name: str) -> np.ndarray:
    return getattr(ev.space.plans, name).astype(np.int64)


def _pareto_min(vectors: np.ndarray) -> np.ndarray:
    """Rows of ``vectors`` not dominated (componentwise ≥ another, distinct row)."""
    u = np.unique(vectors, axis=0)  # lexicographic: a dominating (smaller) row always comes first
    kept: list[np.ndarray] = []
    for row in u:
        if kept:
            K = np.asarray(kept)
            if np.any(np.all(K <= row, axis=1)):
                continue
        kept.append(row)
    return np.asarray(kept)


def _cond(name: str, value: int, direction: int, domain_max: int) -> str:
    if name == "recompute":
        return "recompute=full" if value == 2 else "recompute≠none"
    if name == "sp":
        return "sp=true"
    if direction < 0:
        return f"{name} ≤ {value}"
    if name == "zero" and value == 3:
        return "zero = 3"
    return f"{name} ≥ {value}" if value < domain_max else f"{name} = {value}"


def need_text(ev: Evaluated, failing: np.ndarray, knobs) -> str:
    """Alternatives that every fitting plan satisfies (Pareto-minimal knob settings among fitting plans)."""
    fit = np.flatnonzero(ev.fits)
    if fit.size == 0:
        return ""
    cols = [_axis(ev, k) * d for k, d in knobs]
    V = np.stack([c[fit] for c in cols], axis=1)
    Fv = np.stack([c[failing] for c in cols], axis=1)
    base = np.stack(cols, axis=1).min(axis=0)  # the least helpful value of each knob among valid plans
    dmax = np.stack(cols, axis=1).max(axis=0)
    alts = []
    for row in _pareto_min(V):
        comps = [(i, int(row[i])) for i in range(len(knobs)) if row[i] > base[i]]
        if not comps:
            return ""  # some fitting plan needs none of these knobs: no condition to state
        if Fv.size and np.all(np.all(Fv >= row, axis=1)):
            continue  # every failing plan already meets it: not what they lack
        alts.append(comps)
    if not alts:
        return ""
    alts.sort(key=lambda c: (len(c), [(i, v) for i, v in c]))
    out = []
    for comps in alts[:MAX_ALTERNATIVES]:
        conds = [_cond(knobs[i][0], v * knobs[i][1], knobs[i][1], int(dmax[i] * knobs[i][1])) for i, v in comps]
        out.append(conds[0] if len(conds) == 1 else "(" + " and ".join(conds) + ")")
    more = len(alts) - MAX_ALTERNATIVES
    return "need " + " or ".join(out) + (f" (or one of {more} other combinations)" if more > 0 else "")


def infeasibility(ev: Evaluated) -> list[str]:
    """Counts of excluded and non-fitting plans by reason, most frequent first."""
    sp = ev.space
    lines = []
    excl_f = {k: v for k, v in sp.excluded_factorizations.items() if v}
    if excl_f:
        total = sum(excl_f.values())
        lines.append(f"{total:,} of {sp.factorizations:,} (dp, tp, pp, cp) factorizations of {sp.n_devices:,} devices "
                     "are excluded: " + "; ".join(f"{sp.rule_text[k]} ({v:,})" for k, v in
                                                   sorted(excl_f.items(), key=lambda kv: -kv[1])))
    excl_p = {k: v for k, v in sp.excluded_plans.items() if v}
    if excl_p:
        lines.append("candidates excluded as the search expands (mbs, then vpp, then zero × recompute × sp): " + "; ".join(f"{sp.rule_text[k]} ({v:,})" for k, v in
                                                                sorted(excl_p.items(), key=lambda kv: -kv[1])))
    n = len(sp)
    fail = ~ev.fits
    if n == 0:
        return lines + ["no valid plan"]
    limit_txt = f"{ev.limit_bytes / GiB:.1f} GiB"
    m = ev.metrics
    state = m["params_bytes"] + m["grads_bytes"] + m["optimizer_bytes"]
    act_dom = ev.evaluated & ~ev.state_alone_over & (m["activations_bytes"] > state)
    last = ev.evaluated & (m["heaviest_memory_stage"] > 0)
    pruned = fail & ev.state_alone_over
    groups = [
        (fail & ~last & ~act_dom, "exceed memory at the first stage (model state dominates", STATE_KNOBS, pruned),
        (fail & ev.evaluated & ~last & act_dom, "exceed memory at the first stage (activations dominate",
         ACTIVATION_KNOBS, None),
        (fail & last & ~act_dom, "exceed memory at the last stage (model state dominates", STATE_KNOBS, None),
        (fail & last & act_dom, "exceed memory at the last stage (activations dominate", ACTIVATION_KNOBS, None),
    ]
    lines.append(f"{int(ev.fits.sum()):,} of {n:,} valid plans fit in {limit_txt} per device")
    for mask, text, knobs, sub in sorted(groups, key=lambda g: -int(g[0].sum())):
        cnt = int(mask.sum())
        if not cnt:
            continue
        n_sub = int((mask & sub).sum()) if sub is not None else 0
        text += f"; {n_sub:,} on model state alone)" if n_sub else ")"
        need = need_text(ev, np.flatnonzero(mask), knobs)
        verb = "plans exceed" if cnt != 1 else "plan exceeds"
        lines.append(f"{cnt:,} {verb} {text.removeprefix('exceed ')}" + (f": {need}" if need else ""))
    return lines
