"""Public serving API: ``estimate_serving``, ``suggest_serving``, ``check_serving``.

Every argument takes an id, a file or an object: the model a catalog id, a model YAML (its ``serving:`` block is
ignored here: the serve spec comes from ``serving``), a Hugging Face config.json or a ``Workload``; the cluster an
id, a YAML, the ``DEVICE:NODESxDPN`` shorthand or a ``Cluster``; the serve spec a serve.yaml, a model file with a
``serving:`` block, a mapping or a ``ServingSpec``; the deployment a string (models/serving_plan.py grammar) or a
``Deployment``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parplan.errors import SpecError


def _workload(ref: Any):
    """A workload for serving: the loader requires a training job, which serving never reads (seq_len =
    global_batch = 1 stand in when the file has none), and the ``serving:`` block of a model file, unknown to the
    training loader, is set aside."""
    from parplan.workloads.loader import load_workload, workload_from_dict

    if isinstance(ref, (str, Path)) and str(ref).endswith((".yaml", ".yml")) and Path(str(ref)).is_file():
        from parplan.spec import load_yaml_file

        data = load_yaml_file(str(ref))
        if isinstance(data, dict) and "serving" in data:
            del data["serving"]
            return workload_from_dict(data, str(ref), Path(str(ref)).parent, seq_len=1, global_batch=1)
    if isinstance(ref, dict) and "serving" in ref:
        ref = {k: v for k, v in ref.items() if k != "serving"}
    return load_workload(ref, seq_len=1, global_batch=1)


def _inputs(model, hw, serve):
    from parplan.hardware.catalog import load_cluster
    from parplan.workloads.serving import load_serving

    s = load_serving(serve)
    w = _workload(model)
    c = load_cluster(hw)
    if not c.is_homogeneous:
        raise SpecError(f"cluster {c.name!r} has {len(c.groups)} device groups; serving plans one device group",
                        key="--hw", hint="give a cluster of one device type")
    return w, c, s


def estimate_serving(model: Any, hw: Any, serve: Any, deployment: Any):
    """One deployment's ``ServingEstimate`` (models/serving.py)."""
    from parplan.models.serving import estimate_serving as _est

    w, c, s = _inputs(model, hw, serve)
    return _est(w, c, s, deployment)


def suggest_serving(model: Any, hw: Any, serve: Any, *, top: int = 10, price_per_hour: float | None = None,
                    modes=None):
    """Ranked deployments meeting the SLOs (``ServingPlanSet``: ranked, pareto, closest, advice)."""
    from parplan.planner.serving_search import suggest_serving_plans

    w, c, s = _inputs(model, hw, serve)
    return suggest_serving_plans(w, c, s, top=top, price_per_hour=price_per_hour, modes=modes)


@dataclass(frozen=True)
class ServingCheck:
    ok: bool
    estimate: Any  # the passing (or given, or closest) deployment's ServingEstimate; None when nothing fits
    failures: tuple  # (slo key, required, actual) of each failed SLO
    searched: int
    passing: int

    def lines(self) -> list[str]:
        out = []
        if self.estimate is not None and not self.estimate.fits:  # it cannot run: its SLOs are not the reason
            return [f"FAIL fits: {r}" for r in self.estimate.reasons]
        for k, req, act in self.failures:
            op = "≥" if k == "min_tokens_per_s" else "≤"
            out.append(f"FAIL {k}: {act:.4g} (required {op} {req:g})")
        if self.estimate is not None and not self.estimate.fits:
            out.extend(f"FAIL fits: {r}" for r in self.estimate.reasons)
        return out


def check_serving(model: Any, hw: Any, serve: Any, deployment: Any = None) -> ServingCheck:
    """Whether the given deployment (or any deployment) fits and meets every SLO of the serve spec."""
    w, c, s = _inputs(model, hw, serve)
    if deployment is not None:
        from parplan.models.serving import estimate_serving as _est

        e = _est(w, c, s, deployment)
        searched, passing = 1, int(e.slo_ok)
    else:
        from parplan.planner.serving_search import suggest_serving_plans

        ps = suggest_serving_plans(w, c, s, top=1)
        e = ps.best or ps.closest
        searched, passing = ps.stats["candidates"], ps.stats["passing"]
    if e is None:
        return ServingCheck(False, None, (), searched, passing)
    slo = s.slos()
    actual = {"ttft_p50_s": e.ttft_p50_s, "ttft_p99_s": e.ttft_p99_s, "tpot_s": e.tpot_s,
              "min_tokens_per_s": e.output_tokens_per_s}
    fails = tuple((k, slo[k], actual[k]) for k in e.slo_failures)
    drop = float(e.deployment.spd_drop)
    if drop > float(s.spd_drop_budget):  # SPD may drop only the syncs the accuracy budget allows (S07)
        fails += (("spd_drop_budget", float(s.spd_drop_budget), drop),)
    return ServingCheck(bool(e.slo_ok) and not drop > float(s.spd_drop_budget), e, fails, searched, passing)


__all__ = ["estimate_serving", "suggest_serving", "check_serving", "ServingCheck"]
