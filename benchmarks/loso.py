"""Fitting the global framework terms and the leave-one-source-out (LOSO) accuracy, shared by calibrate.py and
accuracy.py.

The terms (``FrameworkTerms``: layer overhead, overlap interference, compute derate) are the only constants fitted
on end-to-end runs.  A fit minimizes the source-balanced mean |log(predicted / measured)| over a grid, on the model
linearized around the current terms at each row's completed plan (the step is piecewise linear in the terms); every
figure reported is then recomputed with the full model.  LOSO: each source's rows are predicted — plan completion
included — with terms fitted on the other sources only.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from parplan.models.efficiency import efficiency_for
from parplan.models.estimate import estimate_plan
from parplan.models.primitives.framework_terms import FrameworkTerms
from published_runs import Run, predict

TERM_NAMES = ("layer_overhead_s", "overlap_interference", "compute_derate")
GRID = {
    "layer_overhead_s": np.linspace(0.0, 1000e-6, 51),
    "overlap_interference": np.linspace(0.0, 1.0, 21),
    "compute_derate": np.linspace(0.0, 0.5, 26),
}
STEP = {"layer_overhead_s": 50e-6, "overlap_interference": 0.2, "compute_derate": 0.1}


def _eff(run: Run, terms: FrameworkTerms):
    return efficiency_for(run.cluster.group.device).with_terms(terms)


def linearize(runs: list[Run], terms: FrameworkTerms) -> tuple[list, np.ndarray, np.ndarray]:
    """Per row: the completed plan at ``terms``, its step time and d step / d term (finite differences)."""
    plans, base, grads = [], [], []
    for run in runs:
        est = predict(run, _eff(run, terms))
        plans.append(est.plan)
        t0 = est.step_time_s
        g = []
        for name in TERM_NAMES:
            bumped = replace(terms, **{name: getattr(terms, name) + STEP[name]})
            t1 = estimate_plan(run.workload, run.cluster, est.plan, _eff(run, bumped)).step_time_s
            g.append((t1 - t0) / STEP[name])
        base.append(t0)
        grads.append(g)
    return plans, np.array(base), np.array(grads)


def fit_terms(base: np.ndarray, grads: np.ndarray, measured: np.ndarray, sources: np.ndarray,
              around: FrameworkTerms) -> FrameworkTerms:
    """Grid search of the terms minimizing the source-balanced mean |log(pred/meas)| of the linearized model."""
    th0 = np.array([getattr(around, n) for n in TERM_NAMES])
    mesh = np.stack(np.meshgrid(*[GRID[n] for n in TERM_NAMES], indexing="ij"), axis=-1).reshape(-1, len(TERM_NAMES))
    pred = base[None, :] + (mesh - th0[None, :]) @ grads.T  # (grid, rows)
    pred = np.maximum(pred, 1e-9)
    err = np.abs(np.log(pred / measured[None, :]))
    uniq = np.unique(sources)
    per_src = np.stack([err[:, sources == s].mean(axis=1) for s in uniq], axis=1)
    best = mesh[int(np.argmin(per_src.mean(axis=1)))]
    return FrameworkTerms(**{n: float(v) for n, v in zip(TERM_NAMES, best)})


def fit_all(runs: list[Run], rounds: int = 2) -> FrameworkTerms:
    """Terms fitted on every run (re-linearized ``rounds`` times so plan completion follows the terms)."""
    terms = FrameworkTerms()
    meas = np.array([r.measured_step_time_s for r in runs])
    src = np.array([r.source_id for r in runs])
    for _ in range(rounds):
        _, base, grads = linearize(runs, terms)
        terms = fit_terms(base, grads, meas, src, terms)
    return terms


def loso_table(runs: list[Run], rounds: int = 2, fit: bool = True,
               pool: list[Run] | None = None) -> tuple[pd.DataFrame, dict]:
    """Each source predicted with terms fitted without it (``fit=False``: with no fitted term at all, the
    kernel-level model alone); returns the per-row table and the terms per source.  ``pool``: the runs the terms
    are fitted on (default ``runs``) — the global terms of another family's table (MoE) come from the dense runs
    plus its own, each fold without the held-out source."""
    held = sorted({r.source_id for r in runs})
    terms = FrameworkTerms()
    if not fit:
        return _table(runs, {s: terms for s in held}), {s: terms for s in held}
    if pool is not None:
        fit_runs = list(pool) + [r for r in runs if r.row_id not in {p.row_id for p in pool}]
        meas = np.array([r.measured_step_time_s for r in fit_runs])
        src = np.array([r.source_id for r in fit_runs])
        _, base, grads = linearize(fit_runs, terms)
        if rounds > 1:
            terms = fit_terms(base, grads, meas, src, terms)
            _, base, grads = linearize(fit_runs, terms)
        fitted = {s: fit_terms(base[src != s], grads[src != s], meas[src != s], src[src != s], terms) for s in held}
        return _table(runs, fitted), fitted
    meas = np.array([r.measured_step_time_s for r in runs])
    src = np.array([r.source_id for r in runs])
    lin = [linearize(runs, terms)]
    if rounds > 1:
        terms_all = fit_terms(lin[0][1], lin[0][2], meas, src, terms)
        lin.append(linearize(runs, terms_all))
        terms = terms_all
    _, base, grads = lin[-1]
    fitted = {}
    for s in sorted(set(src)):
        keep = src != s
        fitted[s] = fit_terms(base[keep], grads[keep], meas[keep], src[keep], terms)
    return _table(runs, fitted), fitted


def _table(runs: list[Run], terms_by_source: dict) -> pd.DataFrame:
    rows = []
    for s, t_s in terms_by_source.items():
        for run in (r for r in runs if r.source_id == s):
            est = predict(run, _eff(run, t_s))
            err = (est.step_time_s - run.measured_step_time_s) / run.measured_step_time_s
            rows.append({"row_id": run.row_id, "source": s, "model": run.model, "device": run.cluster.group.device.id,
                         "n": run.cluster.n_devices, "precision": run.workload.training.precision,
                         "framework": run.framework, "plan": est.plan.to_string(),
                         "measured_s": run.measured_step_time_s, "predicted_s": est.step_time_s,
                         "error_pct": 100.0 * err, "fits": est.fits, "provenance_class": est.provenance_class})
    order = {r.row_id: i for i, r in enumerate(runs)}
    return pd.DataFrame(rows).sort_values("row_id", key=lambda c: c.map(order)).reset_index(drop=True)


def intervals(table: pd.DataFrame) -> dict:
    """80 % band of measured/predicted per provenance class (10th and 90th percentiles of the LOSO ratios); a
    class with fewer than 8 rows takes the band of all rows widened by half."""
    ratio = table.measured_s / table.predicted_s
    allq = (float(np.quantile(ratio, 0.1)), float(np.quantile(ratio, 0.9)))
    out = {}
    for cls in ("calibrated", "derived", "defaults"):
        r = ratio[table.provenance_class == cls]
        if len(r) >= 8:
            lo, hi = float(np.quantile(r, 0.1)), float(np.quantile(r, 0.9))
        else:
            lo, hi = allq[0] - 0.5 * (1 - allq[0]), allq[1] + 0.5 * (allq[1] - 1)
        out[cls] = {"low": round(min(lo, 1.0), 3), "high": round(max(hi, 1.0), 3), "rows": int(len(r))}
    return out
