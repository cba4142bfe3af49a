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


def export_serving(workload: Any, cluster: Any, serving: Any, deployment: Any, to: str) -> LaunchConfig:
    """The launch script of a serving ``deployment`` for engine ``to`` (``vllm``, ``sglang``, ``trtllm``).

    ``workload`` / ``cluster``: as ``export_plan`` takes them; ``serving``: a serve.yaml path, a mapping or a
    ``ServingSpec`` (its ``engine`` becomes ``to``); ``deployment``: a ``Deployment`` or a deployment string
    (``parplan.models.serving_plan.parse_deployment``).  Raises ``SpecError`` for a deployment the engine cannot
    launch (one line naming the knob and what would be expressible).
    """
    from parplan.hardware.catalog import load_cluster
    from parplan.launch.common import _catalog_ids
    from parplan.launch.serve_common import make_serve_job
    from parplan.models.serving_plan import Deployment, parse_deployment
    from parplan.workloads.loader import load_workload
    from parplan.workloads.serving import load_serving

    w = load_workload(workload)
    c = load_cluster(cluster)
    s = load_serving(serving)
    d = deployment if isinstance(deployment, Deployment) else parse_deployment(deployment, c.n_devices)
    from parplan.errors import SpecError
    from parplan.models.serving import estimate_serving

    e = estimate_serving(w, c, s, d)
    if not e.fits:  # a launcher for a deployment whose weights and cache exceed the devices cannot start
        raise SpecError(f"the deployment {d.to_string()} does not fit: {'; '.join(e.reasons)}", key="--deployment",
                        hint="parplan suggest --serve lists the deployments that fit")
    job = make_serve_job(to, w, c, s, d, catalog_id=_catalog_ids().get(w.name))
    return importlib.import_module(f"parplan.launch.{to}").export(job)

