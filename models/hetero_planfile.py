"""Heterogeneous plan files (``parplan estimate --plan-file plan.yaml``): read and write a ``HeteroPlan``."""
from __future__ import annotations

from parplan.errors import SpecError, short
from parplan.hardware.types import MAX_DEVICES, MAX_DEVICES_PER_NODE, Cluster
from parplan.models.hetero import HeteroPlan, PipelineSpec, StageSpec


def _plan_file_models():
    from typing import Annotated, List, Literal, Optional, Union

    from pydantic import BaseModel, ConfigDict, Field

    from parplan.spec import Name
    from parplan.workloads.transformer import MAX_GLOBAL_BATCH, MAX_LAYERS

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    Layer = Annotated[int, Field(ge=0, le=MAX_LAYERS)]  # a layer index (the architecture's own maximum)

    class StageEntry(_Strict):
        group: Optional[Union[int, Name]] = None  # group index (checked against the cluster), or a device id
        device: Optional[Name] = None
        layers: List[Layer] = Field(min_length=2, max_length=2)  # [first, end) — end exclusive

    class PipelineEntry(_Strict):
        micro_batches: int = Field(gt=0, le=MAX_GLOBAL_BATCH)  # a share of the global batch
        replicas: int = Field(default=1, gt=0, le=MAX_DEVICES)  # each replica takes ≥ 1 device
        stages: List[StageEntry] = Field(min_length=1, max_length=MAX_LAYERS)  # ≥ 1 layer per stage

    class PlanFile(_Strict):
        tp: int = Field(default=1, gt=0, le=MAX_DEVICES_PER_NODE)  # tensor parallelism stays within a node
        mbs: int = Field(default=1, gt=0, le=MAX_GLOBAL_BATCH)
        zero: int = Field(default=0, ge=0, le=1)
        recompute: Literal["none", "selective", "full"] = "none"
        sp: bool = False
        label: Optional[Name] = None
        pipelines: List[PipelineEntry] = Field(min_length=1, max_length=MAX_DEVICES)

    return PlanFile


def load_plan_file(path: str, cluster: Cluster) -> HeteroPlan:
    """Read a heterogeneous plan from YAML: pipelines of stages (group index or device id, layer range
    [first, end)), each with its micro-batch share (and an optional replica count)."""
    from parplan.spec import load_yaml_file, locate, validate

    data = load_yaml_file(path)
    pf = validate(_plan_file_models(), data, file=str(path))
    total = sum(p.replicas for p in pf.pipelines)
    if total > MAX_DEVICES:  # every pipeline replica takes at least one device
        raise locate(SpecError(f"the plan has {total:,} pipelines (replicas included): at most {MAX_DEVICES:,}",
                               key="pipelines"), data, str(path))
    dev_to_group = {}
    for g, grp in enumerate(cluster.groups):
        dev_to_group.setdefault(grp.device.id, []).append(g)
    pipes = []
    for k, p in enumerate(pf.pipelines):
        stages = []
        for i, st in enumerate(p.stages):
            key = f"pipelines[{k}].stages[{i}]"
            ref = st.group if st.group is not None else st.device
            if ref is None:
                raise locate(SpecError("give 'group' (index) or 'device' (a device id of the cluster)",
                                       key=key), data, str(path))
            if isinstance(ref, int):
                g = ref
                if not 0 <= g < len(cluster.groups):
                    raise locate(SpecError(f"group {g} does not exist (cluster has {len(cluster.groups)} groups)",
                                           key=f"{key}.group"), data, str(path))
            else:
                if ref not in dev_to_group:
                    raise locate(SpecError(f"no group of device {short(ref)} in cluster {short(cluster.name)}",
                                           key=f"{key}.device", allowed=sorted(dev_to_group)), data, str(path))
                if len(dev_to_group[ref]) > 1:
                    raise locate(SpecError(f"several groups have device {short(ref)}: give 'group' by index",
                                           key=f"{key}.device"), data, str(path))
                g = dev_to_group[ref][0]
            stages.append(StageSpec(g, st.layers[0], st.layers[1]))
        pipes.extend([PipelineSpec(tuple(stages), p.micro_batches)] * p.replicas)
    return HeteroPlan(pipelines=tuple(pipes), tp=pf.tp, mbs=pf.mbs, zero=pf.zero, recompute=pf.recompute, sp=pf.sp,
                      label=pf.label or "plan file", source_file=str(path))


def plan_to_yaml(plan: HeteroPlan, cluster: Cluster) -> str:
    """The plan-file form of a plan (identical replicas folded with ``replicas``)."""
    import yaml

    folded: list[dict] = []
    for p in plan.pipelines:
        entry = {"micro_batches": p.micro_batches, "replicas": 1,
                 "stages": [{"group": s.group, "layers": [s.first_layer, s.last_layer]} for s in p.stages]}
        if folded and {**folded[-1], "replicas": 1} == entry:
            folded[-1]["replicas"] += 1
        else:
            folded.append(entry)
    doc = {"tp": plan.tp, "mbs": plan.mbs, "zero": plan.zero, "recompute": plan.recompute, "sp": plan.sp,
           "pipelines": folded}
    head = "# groups: " + ", ".join(f"{g}={grp.device.id}" for g, grp in enumerate(cluster.groups)) + "\n"
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)
