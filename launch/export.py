"""``export_plan``: load the workload and cluster, validate the plan for the target framework, render it."""
from __future__ import annotations

import importlib
from typing import Any

from parplan.launch.common import TARGETS, LaunchConfig, check_target, make_job


def export_plan(workload: Any, cluster: Any, plan: Any, to: str) -> LaunchConfig:
    """The launch arguments / config of ``plan`` for framework ``to`` (``megatron``, ``nemo``, ``torchtitan``,
    ``deepspeed``, ``maxtext``).

    ``workload`` / ``cluster``: a YAML path, a catalog id, a parsed mapping or the loaded object (as
    ``parplan.estimate`` takes them); the workload's ``training.framework`` becomes the target's catalog profile,
    whose launchability rules apply.  ``plan``: a ``Plan``, a plan string or a mapping, taken as a complete plan
    (knobs left out take the ``Plan`` defaults; ``parplan export`` completes partial plans the way ``estimate``
    does before it calls this).  Raises ``SpecError`` for a plan the framework cannot launch or express.
    """
    from parplan.hardware.catalog import load_cluster
    from parplan.models.plan import Plan, make_plan, parse_plan
    from parplan.workloads.loader import load_workload

    check_target(to)
    w = load_workload(workload, framework=TARGETS[to])
    c = load_cluster(cluster)
    if isinstance(plan, Plan):
        p = plan
    elif isinstance(plan, dict):
        p = make_plan(plan, c.n_devices)
    else:
        p = parse_plan(plan, c.n_devices)
    job = make_job(to, w, c, p)
    return importlib.import_module(f"parplan.launch.{to}").export(job)
