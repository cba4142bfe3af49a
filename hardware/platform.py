"""Embedded multicore platforms (``kind: embedded-platform``) for the process-network family: core types with their
count, clock, speed relative to a reference core (an ODROID-XU4 Cortex-A15 at 2 GHz = 1.0) and power per core when
busy and when idle, plus the platform's memory.  ``catalogs/platforms/<id>.yaml`` or a user file::

    id: odroid-xu4
    kind: embedded-platform
    memory: "2 GiB"
    core_types:
      - {name: a15, count: 4, clock_ghz: 2.0, relative_speed: 1.0, power_active: "1.2 W", power_idle: "0.08 W"}
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import Name, load_yaml_file, validate
from parplan.units import parse_quantity

MAX_CORE_TYPES = 8


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class CoreTypeEntry(_Strict):
    name: Name
    count: int = Field(gt=0, le=4096)
    clock_ghz: float = Field(ge=1e-3, le=10, strict=False)
    relative_speed: float = Field(ge=1e-3, le=1000, strict=False)  # (5e-324: inf latency, nan energy)
    power_active: Union[str, float, int]
    power_idle: Union[str, float, int]
    source: Optional[str] = None


class PlatformEntry(_Strict):
    id: Name
    name: Name
    kind: Literal["embedded-platform"]
    memory: Union[str, float, int]
    core_types: list[CoreTypeEntry] = Field(min_length=1, max_length=MAX_CORE_TYPES)
    source: str = Field(min_length=8)
    description: Optional[str] = None


@dataclass(frozen=True)
class CoreType:
    name: str
    count: int
    clock_hz: float
    relative_speed: float
    power_active_w: float
    power_idle_w: float


@dataclass(frozen=True)
class Platform:
    id: str
    name: str
    memory_bytes: float
    core_types: tuple
    source: str

    def type_names(self) -> list[str]:
        return [c.name for c in self.core_types]


def platform_from_dict(data: Any, file: str | None = None) -> Platform:
    e = validate(PlatformEntry, data, file=file)
    types = []
    for i, c in enumerate(e.core_types):
        key = f"core_types[{i}]"
        act = parse_quantity(c.power_active, "watts", key=f"{key}.power_active", file=file)
        idle = parse_quantity(c.power_idle, "watts", key=f"{key}.power_idle", file=file, positive=False)
        if idle > act:
            raise SpecError(f"power_idle {idle} W is above power_active {act} W", file=file, key=f"{key}.power_idle")
        types.append(CoreType(c.name, c.count, c.clock_ghz * 1e9, c.relative_speed, act, idle))
    names = [t.name for t in types]
    if len(set(names)) != len(names):
        raise SpecError("core type names repeat", file=file, key="core_types", value=names)
    return Platform(e.id, e.name, parse_quantity(e.memory, "bytes", key="memory", file=file), tuple(types), e.source)


def _dir() -> Path:
    from parplan.catalogs import catalog_dir

    return catalog_dir("platforms")


def platform_ids() -> list[str]:
    return sorted(p.stem for p in _dir().glob("*.yaml"))


def load_platform(ref: "str | Path | dict | Platform") -> Platform:
    """A platform from a YAML path, a catalog id (``catalogs/platforms``) or a mapping."""
    if isinstance(ref, Platform):
        return ref
    if isinstance(ref, dict):
        return platform_from_dict(ref)
    text = str(ref)
    path = Path(text)
    if text.endswith((".yaml", ".yml")):
        if not path.is_file():
            raise SpecError(f"file not found: {short(text)}", key="--hw")
        return platform_from_dict(load_yaml_file(path), file=text)
    if text in platform_ids():
        p = _dir() / f"{text}.yaml"
        return platform_from_dict(load_yaml_file(p), file=str(p))
    raise SpecError(f"unknown platform {short(text)}", key="--hw", allowed=platform_ids(),
                    hint=did_you_mean(text, platform_ids()) or "process networks run on catalogs/platforms/")
