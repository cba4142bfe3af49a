"""A heterogeneous plan — a data-parallel set of pipelines whose stages sit on different device groups, with
non-uniform layer counts and per-replica data shares — and the rules it must satisfy on a cluster
(``validate_hetero``).  Priced by ``models/hetero.py``; read from and written to YAML by ``models/hetero_planfile.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.plan import RECOMPUTE
from parplan.workloads.transformer import Workload


@dataclass(frozen=True)
class StageSpec:
    group: int  # index into cluster.groups
    first_layer: int  # layers [first_layer, last_layer)
    last_layer: int

    @property
    def layers(self) -> int:
        return self.last_layer - self.first_layer


@dataclass(frozen=True)
class PipelineSpec:
    stages: tuple[StageSpec, ...]
    micro_batches: int  # this replica's data share: micro-batches of ``mbs`` sequences per step


@dataclass(frozen=True)
class HeteroPlan:
    """A data-parallel set of pipelines (replicas) of possibly different shapes on a multi-group cluster."""

    pipelines: tuple[PipelineSpec, ...]
    tp: int = 1
    mbs: int = 1
    zero: int = 0  # 0 or 1: optimizer states sharded among the owners of each chunk
    recompute: str = "none"
    sp: bool = False
    label: str = ""
    source_file: "str | None" = None  # the plan file it was read from (its errors name it)

    def devices_per_group(self, n_groups: int) -> list[int]:
        used = [0] * n_groups
        for p in self.pipelines:
            for s in p.stages:
                used[s.group] += self.tp
        return used

    def describe(self, cluster: Cluster) -> str:
        parts = []
        for i, p in enumerate(self.pipelines):
            st = " | ".join(f"{cluster.groups[s.group].device.id}:{s.first_layer}-{s.last_layer - 1}" for s in p.stages)
            parts.append(f"pipeline {i}: m={p.micro_batches} [{st}]")
        return "\n".join(parts)

    def to_dict(self, cluster: Cluster) -> dict:
        return {"tp": self.tp, "mbs": self.mbs, "zero": self.zero, "recompute": self.recompute, "sp": self.sp,
                "label": self.label,
                "pipelines": [{"micro_batches": p.micro_batches,
                               "stages": [{"group": s.group, "device": cluster.groups[s.group].device.id,
                                           "layers": [s.first_layer, s.last_layer]} for s in p.stages]}
                              for p in self.pipelines]}


def validate_hetero(workload: Workload, cluster: Cluster, plan: HeteroPlan) -> None:
    """The plan's rules on this workload and cluster; an error names the plan file it came from."""
    try:
        _validate_hetero(workload, cluster, plan)
    except SpecError as err:
        from parplan.spec import locate

        raise locate(err, None, plan.source_file) from None


def _validate_hetero(workload: Workload, cluster: Cluster, plan: HeteroPlan) -> None:
    mdl, job = workload.model, workload.training
    L = mdl.layers
    if plan.recompute not in RECOMPUTE:
        raise SpecError(f"bad value {plan.recompute!r}", key="recompute", allowed=list(RECOMPUTE))
    if mdl.heads % plan.tp or mdl.kv_heads % plan.tp:
        raise SpecError(f"tp={plan.tp} must divide heads={mdl.heads} and kv_heads={mdl.kv_heads}", key="tp")
    if plan.zero not in (0, 1):
        raise SpecError(f"bad value {plan.zero!r}", key="zero", allowed=["0", "1"],
                        hint="heterogeneous plans shard optimizer states among chunk owners (zero=1) or not at all")
    if not plan.pipelines:
        raise SpecError("a heterogeneous plan needs at least one pipeline", key="pipelines")
    for k, p in enumerate(plan.pipelines):
        if p.micro_batches < 1:
            raise SpecError(f"micro_batches={p.micro_batches} must be ≥ 1", key=f"pipelines[{k}].micro_batches")
        pos = 0
        for i, s in enumerate(p.stages):
            if not 0 <= s.group < len(cluster.groups):
                raise SpecError(f"group {s.group} does not exist (cluster has {len(cluster.groups)})",
                                key=f"pipelines[{k}].stages[{i}].group")
            if s.last_layer <= s.first_layer:
                raise SpecError(f"layers [{s.first_layer}, {s.last_layer}) hold no layer: a stage needs at least one",
                                key=f"pipelines[{k}].stages[{i}].layers")
            if s.first_layer != pos:
                raise SpecError(f"layers must be contiguous: the stage starts at {s.first_layer}, the previous one "
                                f"ended at {pos}", key=f"pipelines[{k}].stages[{i}].layers")
            if plan.tp > cluster.groups[s.group].devices_per_node:
                raise SpecError(f"tp={plan.tp} exceeds the {cluster.groups[s.group].devices_per_node} devices per node "
                                f"of group {s.group}", key="tp")
            if not cluster.groups[s.group].device.supports(job.precision) and job.precision != "fp32":
                raise SpecError(f"{cluster.groups[s.group].device.id} has no {job.precision} math",
                                key="training.precision", hint="use fp16 on mixed clusters with V100")
            pos = s.last_layer
        if pos != L:
            raise SpecError(f"pipeline {k} covers layers 0–{pos - 1} of {L}", key=f"pipelines[{k}].stages")
    used = plan.devices_per_group(len(cluster.groups))
    for g, (u, grp) in enumerate(zip(used, cluster.groups)):
        if u > grp.n_devices:
            raise SpecError(f"the plan uses {u} devices of group {g} ({grp.device.id}), which has {grp.n_devices}",
                            key="pipelines")
    total = sum(p.micro_batches for p in plan.pipelines) * plan.mbs
    if total != job.global_batch:
        raise SpecError(f"Σ micro_batches × mbs = {total} but global_batch = {job.global_batch}",
                        key="pipelines", hint="data shares must add up to the global batch")
