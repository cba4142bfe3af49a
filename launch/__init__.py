"""Launch export: a parplan plan written as a training framework's own arguments or config.

``export_plan(workload, cluster, plan, to)`` → ``LaunchConfig`` for ``to`` in ``TARGETS`` (megatron, nemo,
torchtitan, deepspeed, maxtext).  One module per framework; the shared plan arithmetic and refusal rules live in
``common``.  A plan the framework's catalog profile cannot launch, or that its launch arguments cannot express,
is refused with a one-line ``SpecError`` naming the knob and what would be expressible.
"""
from parplan.launch.common import TARGETS, LaunchConfig
from parplan.launch.export import export_plan

__all__ = ["TARGETS", "LaunchConfig", "export_plan"]
