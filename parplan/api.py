"""The public API: ``estimate`` (one plan).  ``suggest`` and ``check`` are added by the planner."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from parplan.hardware.catalog import load_cluster
from parplan.hardware.types import Cluster
from parplan.models.estimate import Estimate, estimate_plan
from parplan.models.plan import Plan, make_plan, parse_plan
from parplan.workloads.loader import load_workload
from parplan.workloads.transformer import Workload

WorkloadRef = Union[str, Path, dict, Workload]
ClusterRef = Union[str, Path, dict, Cluster]
PlanRef = Union[str, dict, Plan]


def _plan(plan: PlanRef, n_devices: int) -> Plan:
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, dict):
        return make_plan(plan, n_devices)
    return parse_plan(plan, n_devices)


def estimate(workload: WorkloadRef, cluster: ClusterRef, plan: PlanRef, **training_overrides: Any) -> Estimate:
    """Predict step time, throughput, MFU and memory of ``plan`` for ``workload`` on ``cluster``.

    ``workload``/``cluster``: a YAML path, a catalog id, a parsed mapping or the loaded object.
    ``plan``: ``"tp=8,pp=4,mbs=1,zero=1,recompute=selective,sp=true"`` (dp derived), a dict, or a ``Plan``.
    ``training_overrides``: ``seq_len``, ``global_batch``, ``precision``, ``optimizer``.
    """
    w = load_workload(workload, **training_overrides)
    c = load_cluster(cluster)
    return estimate_plan(w, c, _plan(plan, c.n_devices))
