"""The cost model of a workload's family: the module its ``FamilyInfo.model`` names (resolved through the
workloads registry, imported on first use).  Every family's cost-model module provides ``evaluate(model, job, hw,
plans)``, ``evaluate_workload(workload, cluster, plans, eff)``, ``validate(workload, cluster, plan)`` (the
family's own plan rules, after the common ones), ``TIME_PARTS`` and ``MEMORY_PARTS``."""
from __future__ import annotations

import importlib
from types import ModuleType


def cost_model(workload) -> ModuleType:
    """The cost-model module of ``workload`` (a ``Workload`` or a model spec)."""
    from parplan.workloads.registry import family_of

    spec = getattr(workload, "model", workload)
    return importlib.import_module(family_of(spec).model)


def family_name(workload) -> str:
    from parplan.workloads.registry import family_of

    return family_of(getattr(workload, "model", workload)).name


def hetero_model(workload) -> ModuleType:
    """The family's model of plans over several device groups (``evaluate_hetero``), or a clear error."""
    from parplan.errors import SpecError
    from parplan.workloads.registry import family_of

    fam = family_of(getattr(workload, "model", workload))
    if not fam.hetero_model:
        raise SpecError(f"{fam.name} workloads have no heterogeneous (multi-group) model yet", key="groups",
                        hint="use a cluster with one device group")
    return importlib.import_module(fam.hetero_model)
