"""Search spaces per family: the module a workload family's ``FamilyInfo.space`` names.  Each provides
``build_space(workload, n_devices, devices_per_node, *, fix, allow_cross_node_tp, max_mbs, framework) -> Space``
(``planner/space.py`` holds the shared enumeration; a family adds its axes and rules to it)."""
from __future__ import annotations

import importlib
from types import ModuleType


def space_module(workload) -> ModuleType:
    from parplan.workloads.registry import family_of

    return importlib.import_module(family_of(workload.model).space)


def build_space(workload, n_devices: int, devices_per_node: int, **kw):
    """The search space of ``workload``'s family."""
    return space_module(workload).build_space(workload, n_devices, devices_per_node, **kw)


def hetero_planner(workload) -> ModuleType:
    """The family's planner over several device groups (``plan_hetero``), or a clear error."""
    from parplan.errors import SpecError
    from parplan.workloads.registry import family_of

    fam = family_of(workload.model)
    if not fam.hetero_planner:
        raise SpecError(f"{fam.name} workloads have no heterogeneous (multi-group) planner yet", key="groups",
                        hint="use a cluster with one device group")
    return importlib.import_module(fam.hetero_planner)
