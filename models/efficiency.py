"""Global efficiency constants per device and op class (and per link kind), with their provenance.

They live in ``catalogs/calibration/efficiency.yaml``: one value per (device, dtype) for GEMMs, one per device for
attention kernels and for memory-bound kernels, one per link kind for collectives, and one kernel overhead.  Values
marked ``calibrated`` were fitted by ``benchmarks/calibrate.py`` on the calibration rows of
``benchmarks/data/training_runs.csv``; a device without its own entry falls back to ``defaults`` and every estimate
on it says so (``provenance``).  Never tune them per test case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.catalogs import catalog_dir
from parplan.spec import load_yaml_file, validate
from parplan.units import parse_quantity

Quantity = Union[str, float, int]
Frac = Field(gt=0, le=1)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class GemmEntry(_Strict):
    fp32: Optional[float] = Field(default=None, gt=0, le=1)
    tf32: Optional[float] = Field(default=None, gt=0, le=1)
    fp16: Optional[float] = Field(default=None, gt=0, le=1)
    bf16: Optional[float] = Field(default=None, gt=0, le=1)
    fp8: Optional[float] = Field(default=None, gt=0, le=1)


class DeviceEff(_Strict):
    gemm: GemmEntry = GemmEntry()
    attention: Optional[float] = Field(default=None, gt=0, le=1)
    memory: Optional[float] = Field(default=None, gt=0, le=1)
    provenance: str = Field(min_length=4)


class EffFile(_Strict):
    kernel_overhead: Quantity
    kernel_overhead_source: str
    gemm_half_dim: float = Field(ge=0, strict=False)
    gemm_half_dim_source: str
    defaults: DeviceEff
    links: dict[str, float]
    links_source: str
    devices: dict[str, DeviceEff] = {}
    notes: Optional[str] = None


@dataclass(frozen=True)
class Efficiency:
    """Efficiencies that apply to one device (already resolved against the defaults)."""

    gemm: Mapping[str, float]  # fraction of dense peak reached by large GEMMs, per dtype
    attention: float  # fraction of 16-bit peak reached by fused (flash) attention kernels
    memory: float  # fraction of HBM bandwidth reached by memory-bound kernels
    kernel_overhead_s: float  # fixed time per GEMM/attention kernel (launch + tail), seconds
    gemm_half_dim: float = 0.0  # GEMM efficiency = η·d/(d + d½) with d the smallest GEMM dimension (tile/wave losses)
    links: Mapping[str, float] = field(default_factory=dict)  # collective bus-bandwidth fraction per link kind
    provenance: str = "defaults"

    def link(self, kind: str) -> float:
        return self.links.get(kind, self.links.get("default", 0.8))


@lru_cache(maxsize=1)
def _file() -> EffFile:
    path = catalog_dir("calibration") / "efficiency.yaml"
    return validate(EffFile, load_yaml_file(path), file=str(path))  # type: ignore[return-value]


@lru_cache(maxsize=None)
def efficiency_for(device_id: str) -> Efficiency:
    f = _file()
    d = f.defaults
    own = f.devices.get(device_id)
    gemm = {k: v for k, v in d.gemm.model_dump().items() if v is not None}
    attention, memory, prov = d.attention, d.memory, f"defaults ({d.provenance})"
    if own is not None:
        gemm.update({k: v for k, v in own.gemm.model_dump().items() if v is not None})
        attention = own.attention if own.attention is not None else attention
        memory = own.memory if own.memory is not None else memory
        prov = own.provenance
    return Efficiency(gemm=gemm, attention=float(attention), memory=float(memory),
                      kernel_overhead_s=parse_quantity(f.kernel_overhead, "seconds", key="kernel_overhead"),
                      gemm_half_dim=float(f.gemm_half_dim),
                      links=dict(f.links), provenance=prov)
