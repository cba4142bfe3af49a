"""Process-network workloads (``family: process-network``, mAPN S16): a streaming pipeline of processes, each an
alternative region with algorithm alternatives (time on the reference core, optional per-core-type times and
active energies, memory, quality) and a data-parallel degree range; plus the user's constraints.

    family: process-network
    name: subtitling
    stages:
      - name: speech-to-text
        replicas: [1, 4]                     # data-parallel degree bounds (an int: fixed)
        alternatives:
          - {name: dnn, time: "400 ms", memory: "300 MB", quality: 0.92}
          - {name: hmm, time: "150 ms", times: {a7: "330 ms"}, memory: "60 MB", quality: 0.80}
    constraints: {min_throughput: 5, max_latency: "1 s", max_energy_per_item_j: 2.0, min_quality: 0.7}

``time`` is seconds per item on a core of relative speed 1.0 (catalogs/platforms: an ODROID-XU4 A15 at 2 GHz);
on another core type it is ``time / relative_speed`` unless ``times`` names that type.  ``energy_j`` (a map by core
type) overrides the platform's ``power_active × time`` for the busy part of an item.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError
from parplan.spec import Name, validate
from parplan.units import parse_quantity
from parplan.workloads.family import FamilyInfo

Quantity = Union[str, float, int]
MAX_STAGES = 32
MAX_ALTERNATIVES = 64


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class AlternativeEntry(_Strict):
    name: Name
    time: Quantity
    times: Optional[dict[str, Quantity]] = None
    energy_j: Optional[dict[str, float]] = None
    memory: Quantity = 0
    quality: float = Field(default=1.0, gt=0, le=1, strict=False)


class StageEntry(_Strict):
    name: Name
    replicas: Union[int, list[int]] = 1
    core_types: Optional[list[Name]] = None  # allowed core types (default: any)
    alternatives: list[AlternativeEntry] = Field(min_length=1, max_length=MAX_ALTERNATIVES)


class ConstraintsEntry(_Strict):
    min_throughput: Optional[float] = Field(default=None, gt=0, le=1e12, strict=False)  # items per second
    max_latency: Optional[Quantity] = None
    max_energy_per_item_j: Optional[float] = Field(default=None, gt=0, le=1e12, strict=False)
    min_quality: Optional[float] = Field(default=None, gt=0, le=1, strict=False)
    max_memory: Optional[Quantity] = None


class VariantsFile(_Strict):
    family: Literal["process-network"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    quality: Literal["product", "min"] = "product"
    stages: list[StageEntry] = Field(min_length=1, max_length=MAX_STAGES)
    constraints: ConstraintsEntry = Field(default_factory=ConstraintsEntry)


@dataclass(frozen=True)
class Alternative:
    name: str
    time_s: float  # on a core of relative speed 1.0
    times_s: dict  # core type -> seconds per item
    energy_j: dict  # core type -> joules of the busy part per item
    memory_bytes: float
    quality: float


@dataclass(frozen=True)
class Stage:
    name: str
    r_min: int
    r_max: int
    core_types: Optional[tuple]
    alternatives: tuple


@dataclass(frozen=True)
class Constraints:
    min_throughput: Optional[float] = None
    max_latency_s: Optional[float] = None
    max_energy_per_item_j: Optional[float] = None
    min_quality: Optional[float] = None
    max_memory_bytes: Optional[float] = None


@dataclass(frozen=True)
class VariantsSpec:
    name: str
    source: str
    stages: tuple
    constraints: Constraints
    quality_mode: str = "product"
    family: str = "process-network"
    extra: dict = field(default_factory=dict)



MIN_ITEM_S = 1e-9  # a stage's seconds per item: below a nanosecond is a typo (5e-324 s gave inf items/s, then NaN)


def _item_s(value, key: str, file) -> float:
    t = parse_quantity(value, "seconds", key=key, file=file)
    if t < MIN_ITEM_S:
        raise SpecError(f"bad value {value!r}: a stage takes at least {MIN_ITEM_S:g} s per item", file=file, key=key)
    return t

def spec_from_dict(data: Any, file: str | None = None) -> VariantsSpec:
    e = validate(VariantsFile, data, file=file)
    stages = []
    for i, s in enumerate(e.stages):
        key = f"stages[{i}]"
        r = [s.replicas, s.replicas] if isinstance(s.replicas, int) else list(s.replicas)
        if len(r) != 2 or not 1 <= r[0] <= r[1] <= 4096:
            raise SpecError(f"bad replicas {s.replicas!r}: an int or [min, max] with 1 ≤ min ≤ max ≤ 4096",
                            file=file, key=f"{key}.replicas")
        alts = []
        for j, a in enumerate(s.alternatives):
            ak = f"{key}.alternatives[{j}]"
            times = {c: _item_s(v, f"{ak}.times.{c}", file) for c, v in (a.times or {}).items()}
            for c, v in (a.energy_j or {}).items():
                if not v > 0:
                    raise SpecError(f"bad value {v!r}: energy is positive joules", file=file, key=f"{ak}.energy_j.{c}")
            alts.append(Alternative(a.name, _item_s(a.time, f"{ak}.time", file), times,
                                    dict(a.energy_j or {}), parse_quantity(a.memory, "bytes", key=f"{ak}.memory",
                                                                           file=file, positive=False), a.quality))
        if len({a.name for a in alts}) != len(alts):
            raise SpecError("alternative names repeat", file=file, key=f"{key}.alternatives")
        stages.append(Stage(s.name, r[0], r[1], tuple(s.core_types) if s.core_types else None, tuple(alts)))
    if len({s.name for s in stages}) != len(stages):
        raise SpecError("stage names repeat", file=file, key="stages")
    c = e.constraints
    cons = Constraints(c.min_throughput,
                       parse_quantity(c.max_latency, "seconds", key="constraints.max_latency", file=file)
                       if c.max_latency is not None else None, c.max_energy_per_item_j, c.min_quality,
                       parse_quantity(c.max_memory, "bytes", key="constraints.max_memory", file=file)
                       if c.max_memory is not None else None)
    return VariantsSpec(e.name, e.source or (file or "inline"), tuple(stages), cons, e.quality)


def load_variants(ref: Any) -> VariantsSpec:
    """A process-network workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, VariantsSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):
    raise SpecError("process-network workloads are files of their own (family: process-network at the top level)",
                    file=file, key=f"{prefix}.family", hint="see docs/variants.md")


FAMILY = FamilyInfo(
    name="process-network",
    summary="streaming process networks with algorithm and data-parallel alternatives (mAPN): enumerate the "
            "variants on an embedded multicore platform, filter by user and hardware constraints, Pareto set",
    spec_type=VariantsSpec,
    architecture_schema=VariantsFile,
    build_spec=_build,
    model="parplan.models.variants",
    space="parplan.planner.spaces.variants",
    executor="parplan.executor.process_network",
    verbs="parplan.cli.variants_out",
    load=load_variants,
)
