"""The executor module of a workload's family: the module its ``FamilyInfo.executor`` names (resolved through the
workloads registry, imported on first use).  Every family's executor module provides ``model_costs(workload,
cluster, plan, eff) -> (PipelineCosts, dict)``; heterogeneous (multi-group) plans are played out for families
the registry gives a ``hetero_model``.  Nothing here names a family."""
from __future__ import annotations

import importlib
from types import ModuleType

from parplan.errors import SpecError


def executor_module(workload) -> ModuleType:
    """The executor module of ``workload`` (a ``Workload`` or a model spec)."""
    from parplan.workloads.registry import family_of

    spec = getattr(workload, "model", workload)
    return importlib.import_module(family_of(spec).executor)


def model_costs(workload, cluster, plan, eff=None):
    """Per-op costs of ``plan`` (validated) from the family's executor module, and the model's scalars."""
    return executor_module(workload).model_costs(workload, cluster, plan, eff)


def check_hetero(workload) -> None:
    """A ``SpecError`` unless the workload's family has a heterogeneous (multi-group) model to play out
    (``FamilyInfo.hetero_model``, the registry's capability)."""
    from parplan.workloads.registry import family_info, family_names, family_of

    fam = family_of(getattr(workload, "model", workload))
    if not fam.hetero_model:
        able = [f for f in family_names() if family_info(f).hetero_model]
        raise SpecError(f"heterogeneous plans are simulated for {' and '.join(able) or 'no'} workloads; "
                        f"{getattr(workload, 'name', fam.name)} is a {fam.name} workload", key="groups",
                        hint="simulate it on a single-group cluster with a plan string")
