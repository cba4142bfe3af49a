"""The few global framework terms fitted on end-to-end runs (``catalogs/calibration/framework_terms.yaml``)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from parplan.models.primitives.calibration import load_calibration


class _TermsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    layer_overhead_s: float = Field(ge=0, le=0.1)
    layer_overhead_source: str
    overlap_interference: float = Field(ge=0, le=1)
    overlap_interference_source: str
    compute_derate: float = Field(ge=0, le=1)
    compute_derate_source: str
    source: str  # how and on what the values were fitted (written by benchmarks/calibrate.py)


@dataclass(frozen=True)
class FrameworkTerms:
    layer_overhead_s: float = 0.0  # seconds per layer per forward or backward pass
    overlap_interference: float = 0.0  # compute slowdown per second of hidden communication
    compute_derate: float = 0.0  # GPU kernels run 1/(1 + derate) of their measured speed (not TPUs)


@lru_cache(maxsize=1)
def framework_terms() -> FrameworkTerms:
    f = load_calibration("framework_terms.yaml", _TermsFile)
    return FrameworkTerms(layer_overhead_s=f.layer_overhead_s, overlap_interference=f.overlap_interference,
                          compute_derate=f.compute_derate)
