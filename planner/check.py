"""Capacity checks for CI: does a plan (the given one, or any plan of the search) meet every requirement?

Requirements: ``min_tokens_per_s``, ``max_step_time_s``, ``max_memory_fraction`` (peak memory / device memory;
1.0 — "fits" — when not given) and ``min_mfu``.  Without a plan, the best plan (throughput order) among those that
meet every requirement is reported; when none does, the *closest* plan is reported: the one with the smallest sum of
relative shortfalls, ties broken by the throughput order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.estimate import Estimate, estimate_from_arrays, estimate_plan
from parplan.models.plan import Plan
from parplan.planner.budget import check_number
from parplan.planner.search import SearchOptions, evaluate_plans, rank, run_search
from parplan.workloads.transformer import Workload

# name → (metric, sense): sense +1 "at least", −1 "at most"
REQUIREMENTS = {
    "min_tokens_per_s": ("tokens_per_s", 1),
    "max_step_time_s": ("step_time_s", -1),
    "max_memory_fraction": ("memory_fraction", -1),
    "min_mfu": ("mfu", 1),
}


def _fmt(metric: str, x: float) -> str:
    if metric == "tokens_per_s":
        return f"{x:,.0f}"
    if metric == "step_time_s":
        return f"{x:.4g} s"
    return f"{x:.3f}"


@dataclass(frozen=True)
class RequirementResult:
    name: str  # e.g. "min_tokens_per_s"
    metric: str  # e.g. "tokens_per_s"
    required: float
    actual: float
    ok: bool

    @property
    def sense(self) -> int:
        return REQUIREMENTS[self.name][1]

    @property
    def shortfall(self) -> float:
        """How far the actual value is on the wrong side (0 when met), in the metric's unit."""
        return max(0.0, (self.required - self.actual) * self.sense)

    @property
    def shortfall_fraction(self) -> float:
        return self.shortfall / abs(self.required) if self.required else float("inf") * (self.shortfall > 0)

    @property
    def message(self) -> str:
        op = ("≥" if self.sense > 0 else "≤") if self.ok else ("<" if self.sense > 0 else ">")
        text = f"{self.metric} {_fmt(self.metric, self.actual)} {op} {_fmt(self.metric, self.required)}"
        if not self.ok:
            word = "short by" if self.sense > 0 else "over by"
            text += f" ({word} {_fmt(self.metric, self.shortfall)}, {100 * self.shortfall_fraction:.1f} %)"
        return text

    def line(self) -> str:
        return ("ok    " if self.ok else "FAIL  ") + self.message

    def to_dict(self) -> dict:
        return {"name": self.name, "metric": self.metric, "required": self.required, "actual": self.actual,
                "ok": self.ok, "shortfall": self.shortfall, "message": self.message}


@dataclass
class CheckResult:
    ok: bool
    plan: Optional[Plan]  # the plan reported: the passing one, or the closest
    failures: list[RequirementResult]
    results: list[RequirementResult] = field(default_factory=list)  # every requirement, in REQUIREMENTS order
    estimate: Optional[Estimate] = None
    searched: int = 0  # plans searched (1 when a plan was given)
    passing: int = 0  # how many of them meet every requirement

    def __bool__(self) -> bool:
        return self.ok

    def to_dict(self) -> dict:
        return {"ok": self.ok, "plan": self.plan.to_string() if self.plan else None,
                "requirements": [r.to_dict() for r in self.results], "plans_searched": self.searched,
                "plans_passing": self.passing,
                "estimate": self.estimate.to_dict() if self.estimate else None}


def requirements(min_tokens_per_s=None, max_step_time_s=None, max_memory_fraction=None, min_mfu=None) -> dict:
    """The requirements given, checked: finite and > 0; ``min_mfu`` and ``max_memory_fraction`` at most 1 (a
    memory fraction above 1 is an error: such a plan does not fit, and ``check`` never passes a plan that does not
    fit)."""
    req = {"min_tokens_per_s": min_tokens_per_s, "max_step_time_s": max_step_time_s,
           "max_memory_fraction": 1.0 if max_memory_fraction is None else max_memory_fraction, "min_mfu": min_mfu}
    out = {}
    for k, v in req.items():
        if v is None:
            continue
        key = "--" + k.replace("_", "-")
        v = check_number(v, key)
        if not v > 0:
            raise SpecError(f"bad value {v:g}: must be > 0", key=key)
        if k == "min_mfu" and v > 1:
            raise SpecError(f"bad value {v:g}: a fraction of peak, at most 1", key=key)
        if k == "max_memory_fraction" and v > 1:
            raise SpecError(f"bad value {v:g}: must be in (0, 1] (peak memory / device memory; above 1 the plan does "
                            "not fit, and check never passes a plan that does not fit)", key=key)
        out[k] = float(v)
    return out


def _results(req: dict, values: dict, i: int, fits: bool = True) -> list[RequirementResult]:
    """Each requirement met or not; the memory requirement also needs the plan to fit (``fits``: peak ≤ device
    memory, the estimate's own verdict), whatever the fraction's rounding."""
    out = []
    for name, required in req.items():
        metric, sense = REQUIREMENTS[name]
        actual = float(values[metric][i])
        ok = actual >= required if sense > 0 else actual <= required
        if name == "max_memory_fraction":
            ok = ok and bool(fits)
        out.append(RequirementResult(name, metric, required, actual, bool(ok)))
    return out


def check_plans(workload: Workload, cluster: Cluster, plan: Plan | None = None, *,
                options: SearchOptions | None = None, progress=None, **reqs) -> CheckResult:
    req = requirements(**reqs)
    if plan is not None:
        est = estimate_plan(workload, cluster, plan)
        vals = {"tokens_per_s": [est.tokens_per_s], "step_time_s": [est.step_time_s], "mfu": [est.mfu],
                "memory_fraction": [est.memory_peak_bytes / est.memory_capacity_bytes]}
        res = _results(req, vals, 0, fits=est.fits)
        fails = [r for r in res if not r.ok]
        return CheckResult(ok=not fails and est.fits, plan=plan, failures=fails, results=res, estimate=est,
                           searched=1, passing=int(not fails))
    options = options or SearchOptions()
    # without pruning: the closest plan may be one whose memory alone is over the limit; no headroom: "fits" is
    # peak ≤ device memory here (a tighter bound is --max-memory-fraction)
    opts = SearchOptions(**{**options.__dict__, "prune": False, "memory_headroom": 0.0})
    ev = run_search(workload, cluster, opts,
                    progress=None if progress is None else (lambda d, t: progress(d, t, None)))
    n = len(ev.space)
    if n == 0:
        from parplan.planner.advice import no_valid_plan_message

        raise SpecError(no_valid_plan_message(ev), key="plan")
    m = ev.metrics
    vals = {"tokens_per_s": m["tokens_per_s"], "step_time_s": m["step_time_s"], "mfu": m["mfu"],
            "memory_fraction": m["memory_peak_bytes"] / ev.hw.memory_capacity_bytes}
    short = np.zeros(n)
    with np.errstate(invalid="ignore"):
        for name, required in req.items():
            metric, sense = REQUIREMENTS[name]
            short += np.maximum(0.0, (required - vals[metric]) * sense) / required
    short = np.where(np.isnan(short), np.inf, short)  # a metric the model could not price never passes
    # a plan passes only if it fits (the memory requirement is at most 1: the fraction, and the estimate's verdict)
    passing = np.flatnonzero((short == 0.0) & ev.fits)  # headroom 0: peak ≤ device memory
    everything = np.arange(n)
    if passing.size:
        i = int(rank(ev, "throughput", candidates=passing)[0])
    else:
        best = short.min()
        near = everything[short <= best * (1 + 1e-12)] if np.isfinite(best) else everything
        i = int(rank(ev, "throughput", candidates=near)[0])
    P = ev.space.plans.subset(np.array([i]))
    res = evaluate_plans(workload, ev.hw, P)
    est = estimate_from_arrays(workload, cluster, P.plan(0), res, 0, ev.eff.provenance,
                               ev.eff.provenance_class)
    vals1 = {"tokens_per_s": [est.tokens_per_s], "step_time_s": [est.step_time_s], "mfu": [est.mfu],
             "memory_fraction": [est.memory_peak_bytes / est.memory_capacity_bytes]}
    results = _results(req, vals1, 0, fits=est.fits)
    fails = [r for r in results if not r.ok]
    return CheckResult(ok=not fails and est.fits, plan=est.plan, failures=fails, results=results, estimate=est,
                       searched=n, passing=int(passing.size))


def hetero_check_refusal(cluster: Cluster) -> SpecError:
    """Why ``check`` does not run on a multi-group cluster, and what to run instead."""
    groups = ", ".join(f"{g.n_devices}× {g.device.id}" for g in cluster.groups)
    return SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups ({groups}): check searches "
                     "and gates homogeneous plans; heterogeneous plans come from the ILP planner, whose candidates "
                     "are not enumerated for requirements", key="--hw",
                     hint="run `parplan suggest` on it (heterogeneous plans with step time, tokens/s, MFU, memory), "
                          "gate one plan with `parplan estimate --plan-file`, or check each group as a single-group "
                          "cluster")


def _classname(workload: str, cluster: str) -> str:
    def clean(x: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", x).strip("_")

    return f"parplan.check.{clean(workload)}.{clean(cluster)}"


def junit_xml(result: CheckResult, workload: str, cluster: str) -> str:
    """JUnit XML: one testsuite, one testcase per requirement (failure element with the shortfall)."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="parplan check", tests=str(len(result.results)),
                       failures=str(len(result.failures)), errors="0", skipped="0")
    props = ET.SubElement(suite, "properties")
    for k, v in (("workload", workload), ("cluster", cluster),
                 ("plan", result.plan.to_string() if result.plan else ""),
                 ("plans_searched", str(result.searched)), ("plans_passing", str(result.passing))):
        ET.SubElement(props, "property", name=k, value=v)
    for r in result.results:
        case = ET.SubElement(suite, "testcase", classname=_classname(workload, cluster), name=r.name)
        if not r.ok:
            f = ET.SubElement(case, "failure", message=r.message, type="RequirementNotMet")
            f.text = r.message
        else:
            out = ET.SubElement(case, "system-out")
            out.text = r.message
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
