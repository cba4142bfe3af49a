"""Uncertainty of a step-time estimate: the 80 % interval of measured / predicted in its provenance class, from
the leave-one-source-out residuals (``catalogs/calibration/intervals.yaml``, written by benchmarks/calibrate.py)."""
from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from parplan.models.primitives.calibration import load_calibration


class _Band(BaseModel):
    model_config = ConfigDict(extra="forbid")
    low: float = Field(gt=0, le=1)
    high: float = Field(ge=1)
    rows: int = Field(ge=0)


class _IntervalsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    calibrated: _Band
    derived: _Band
    defaults: _Band
    # a family whose published rows give their own band (its residuals differ from the dense rows')
    families: dict[str, _Band] = Field(default_factory=dict)
    source: str


@lru_cache(maxsize=1)
def _intervals() -> _IntervalsFile:
    return load_calibration("intervals.yaml", _IntervalsFile)


def interval_factors(provenance_class: str, family: str | None = None) -> tuple[float, float]:
    """(low, high) multipliers of the predicted step time covering 80 % of cross-validated outcomes: the family's
    own band where its rows gave one, else the provenance class's."""
    f = _intervals().families.get(family) if family else None
    band = f or getattr(_intervals(), provenance_class, _intervals().defaults)
    return band.low, band.high
