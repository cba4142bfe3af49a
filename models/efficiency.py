"""What prices one device's kernels: its kernel profile (measured or inherited, ``models/primitives/
calibration.py``), the global framework terms and the per-kernel launch overhead — with its provenance class
(``calibrated`` / ``derived`` / ``defaults``), which also selects the uncertainty interval of its estimates."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Union

from pydantic import BaseModel, ConfigDict

from parplan.models.primitives.calibration import KernelProfile, kernel_profile, load_calibration
from parplan.models.primitives.collectives import curve_for
from parplan.models.primitives.framework_terms import FrameworkTerms, framework_terms
from parplan.units import parse_quantity


class _EffFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kernel_overhead: Union[str, float]
    kernel_overhead_source: str


@lru_cache(maxsize=1)
def _kernel_overhead_s() -> float:
    f = load_calibration("efficiency.yaml", _EffFile)
    return parse_quantity(f.kernel_overhead, "seconds", key="kernel_overhead",
                          file="catalogs/calibration/efficiency.yaml")


@dataclass(frozen=True)
class Efficiency:
    """Everything that turns FLOPs and bytes into seconds on one device."""

    kernels: KernelProfile
    terms: FrameworkTerms = field(default_factory=FrameworkTerms)
    kernel_overhead_s: float = 1.2e-6

    @property
    def provenance(self) -> str:
        return self.kernels.provenance

    @property
    def provenance_class(self) -> str:
        return self.kernels.provenance_class

    @property
    def memory(self) -> float:
        """Fraction of HBM bandwidth reached by memory-bound kernels."""
        return self.kernels.memory_fraction

    def link(self, kind: str) -> float:
        """Large-message bus-bandwidth fraction of a link kind (the α–β view used by the heterogeneous model)."""
        return min(curve_for(kind, "allreduce").fraction, 1.0)

    def with_terms(self, terms: FrameworkTerms) -> "Efficiency":
        return replace(self, terms=terms)


def efficiency_for(device) -> Efficiency:
    """The efficiency of a ``Device`` (or a catalog device id)."""
    if isinstance(device, str):
        from parplan.hardware.catalog import get_device

        device = get_device(device)
    return Efficiency(kernels=kernel_profile(device), terms=framework_terms(), kernel_overhead_s=_kernel_overhead_s())
