"""The calibration layer: kernel- and link-level efficiencies from public measurements, per device.

Data: ``catalogs/calibration/kernels.yaml`` (every point cited there).  A device with its own measurement is
``calibrated``; one without inherits the measurement of a device of its architecture generation (``derived``, the
donor is named in ``provenance``); a generation with none falls back to ``defaults``.  Nothing here is fitted on
end-to-end runs: those only fit the few global framework terms (``models/primitives/framework_terms.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from parplan.catalogs import catalog_dir
from parplan.spec import load_yaml_file, validate

PROVENANCE_CLASSES = ("calibrated", "derived", "defaults")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, defer_build=True)


class TileEntry(_Strict):
    rows: int = Field(gt=0)
    cols: int = Field(gt=0)
    relative: float = Field(gt=0, le=1)


class GemmPoint(_Strict):
    fraction: float = Field(gt=0, le=1)
    shape: tuple[int, int, int]
    source: str = Field(min_length=8)


class GemmSection(_Strict):
    tiles: list[TileEntry] = Field(min_length=1)
    k_half: float = Field(ge=0)
    k_half_source: str
    measured: dict[str, dict[str, GemmPoint]]
    dtype_ratio: dict[str, float]
    dtype_ratio_source: str
    default_fraction: float = Field(default=0.78, gt=0, le=1)
    default_source: str = "median of the bf16 MAMF fractions of the measured table (0.78)"


class AttnKernel(_Strict):
    device: str  # the device the points were measured on (fractions of its 16-bit peak)
    fwd: list[tuple[float, float]] = Field(min_length=1)
    fwd_causal: list[tuple[float, float]] = Field(min_length=1)
    bwd: list[tuple[float, float]] = Field(min_length=1)
    hd64_ratio: float = Field(gt=0, le=1.5)
    source: str = Field(min_length=8)
    shape_from: Optional[str] = None  # a single-point kernel borrows this kernel's s½


class AttnSection(_Strict):
    kernels: dict[str, AttnKernel]
    select: dict[str, dict[str, str]]
    fallback: str


class MemorySection(_Strict):
    measured: dict[str, dict] = {}
    default: float = Field(gt=0, le=1)
    default_source: str


class CollClass(_Strict):
    fraction: float = Field(gt=0, le=2)
    points: list[tuple[float, float]] = Field(min_length=1)
    source: str = Field(min_length=8)
    ranks: Optional[list[tuple[int, float]]] = None
    measured_ranks: Optional[int] = Field(default=None, gt=0)  # ranks the curve was measured on (default: 8)


class CollSection(_Strict):
    classes: dict[str, CollClass]
    kind_class: dict[str, str]
    kind_class_source: str
    kind_alltoall_class: dict[str, str] = Field(default_factory=dict)  # link kind -> all-to-all class
    kind_alltoall_class_source: str = ""

    @model_validator(mode="after")
    def _known_classes(self):
        for table in (self.kind_class, self.kind_alltoall_class):
            for kind, cls in table.items():
                if cls not in self.classes:
                    raise ValueError(f"link kind {kind!r} maps to unknown class {cls!r} (classes: "
                                     f"{', '.join(self.classes)})")
        if self.kind_alltoall_class and len(self.kind_alltoall_class_source) < 8:
            raise ValueError("kind_alltoall_class needs kind_alltoall_class_source")
        return self


class GroupedGemmSection(_Strict):
    """Grouped-vs-dense factor by tokens per group: (M per group, factor), M increasing, factor non-decreasing."""

    points: list[tuple[float, float]] = Field(min_length=1)
    source: str = Field(min_length=8)

    @model_validator(mode="after")
    def _monotone(self):
        ms = [m for m, _ in self.points]
        fs = [f for _, f in self.points]
        if any(m <= 0 for m in ms) or any(not (0 < f <= 1) for f in fs):
            raise ValueError("grouped_gemm points need M > 0 and 0 < factor <= 1")
        if any(b <= a for a, b in zip(ms, ms[1:])):
            raise ValueError("grouped_gemm points must be sorted by strictly increasing M")
        if any(b < a for a, b in zip(fs, fs[1:])):
            raise ValueError("grouped_gemm factors must be non-decreasing in M")
        return self


class KernelsFile(_Strict):
    gemm: GemmSection
    attention: AttnSection
    memory: MemorySection
    collectives: CollSection
    grouped_gemm: GroupedGemmSection


def load_calibration(name: str, schema):
    """``catalogs/calibration/<name>`` validated against ``schema`` (errors name the file, key and value)."""
    path = catalog_dir("calibration") / name
    return validate(schema, load_yaml_file(path), file=str(path))


@lru_cache(maxsize=1)
def kernels_file() -> KernelsFile:
    return load_calibration("kernels.yaml", KernelsFile)


def fit_saturation(points) -> tuple[float, float]:
    """Least-squares fit of e(s) = e_max·s/(s + s½) to (s, e) points: 1/e = 1/e_max + (s½/e_max)·(1/s) is linear."""
    s = np.array([p[0] for p in points], dtype=float)
    e = np.array([p[1] for p in points], dtype=float)
    if len(s) == 1:
        return float(e[0]), 0.0
    A = np.vstack([np.ones_like(s), 1.0 / s]).T
    (a, b), *_ = np.linalg.lstsq(A, 1.0 / e, rcond=None)
    e_max = 1.0 / a
    return float(e_max), float(max(b * e_max, 0.0))


@dataclass(frozen=True)
class AttnCurves:
    """One fused-attention kernel: (e_max, s½) for forward, causal forward and backward; head_dim 64 ratio."""

    name: str
    fwd: tuple
    fwd_causal: tuple
    bwd: tuple
    hd64_ratio: float
    derived: bool  # not measured on this generation (fallback kernel)


def _curves(name: str, derived: bool) -> AttnCurves:
    ks = kernels_file().attention.kernels
    k = ks[name]

    def fit(points, ref):
        if len(points) > 1 or k.shape_from is None:
            return fit_saturation(points)
        _, s_half = fit_saturation(ref)
        s0, e0 = points[0]
        return e0 * (s0 + s_half) / s0, s_half

    ref = ks[k.shape_from] if k.shape_from else k
    return AttnCurves(name=name, fwd=fit(k.fwd, ref.fwd), fwd_causal=fit(k.fwd_causal, ref.fwd_causal),
                      bwd=fit(k.bwd, ref.bwd), hd64_ratio=k.hd64_ratio, derived=derived)


@dataclass(frozen=True)
class KernelProfile:
    """Kernel-level efficiencies that apply to one device, resolved against its generation and the defaults."""

    device_id: str
    generation: str
    compute_units: int | None
    gemm_fraction: dict  # dtype -> fraction of dense peak at the best measured shape
    gemm_shape: dict  # dtype -> (M, N, K) of that measurement
    tiles: tuple  # ((rows, cols, relative), ...)
    k_half: float
    attention: dict  # kernel family (fa2, fa3, cudnn) -> AttnCurves
    memory_fraction: float
    provenance_class: str  # calibrated | derived | defaults
    provenance: str

    def gemm_for(self, dtype: str) -> tuple[float, tuple[int, int, int]]:
        if dtype in self.gemm_fraction:
            return self.gemm_fraction[dtype], self.gemm_shape[dtype]
        base = self.gemm_fraction.get("bf16", self.gemm_fraction.get("fp16", 0.78))
        ratio = kernels_file().gemm.dtype_ratio.get(dtype, 1.0)
        return base * ratio, self.gemm_shape.get("bf16", (4096, 4096, 4096))

    def attention_for(self, family: str) -> AttnCurves:
        """The kernel a framework asking for ``family`` runs on this generation (or the fallback, flagged)."""
        return self.attention.get(family) or self.attention["fallback"]


def _donor(device_id: str, generation: str) -> str | None:
    """A measured device of the same generation (the first in catalog order) for a device without its own."""
    from parplan.hardware.catalog import device_ids, get_device

    measured = kernels_file().gemm.measured
    if device_id in measured:
        return device_id
    if not generation:
        return None
    for other in device_ids():
        if other in measured and getattr(get_device(other), "generation", "") == generation:
            return other
    return None


_PROFILES: dict = {}


def kernel_profile(device) -> KernelProfile:
    """The kernel profile of a ``Device`` (cached by id, generation and compute units)."""
    key = (device.id, getattr(device, "generation", ""), getattr(device, "compute_units", None))
    if key not in _PROFILES:
        _PROFILES[key] = _kernel_profile(device)
    return _PROFILES[key]


def _kernel_profile(device) -> KernelProfile:
    f = kernels_file()
    gen = getattr(device, "generation", "") or ""
    donor = _donor(device.id, gen)
    if donor == device.id:
        cls, prov = "calibrated", f"kernel measurements of {device.id} (catalogs/calibration/kernels.yaml)"
    elif donor is not None:
        cls, prov = "derived", f"derived: no kernel measurements of {device.id}; inherits {donor} ({gen} generation)"
    else:
        cls, prov = "defaults", (f"defaults: no kernel measurements of {device.id} or its generation "
                                 f"({gen or 'unknown'}); GEMM at the median measured fraction")
    meas = f.gemm.measured.get(donor, {}) if donor else {}
    frac = {dt: p.fraction for dt, p in meas.items()}
    shape = {dt: tuple(p.shape) for dt, p in meas.items()}
    if not frac:
        frac, shape = {"bf16": f.gemm.default_fraction}, {"bf16": (4096, 4096, 4096)}
    sel = f.attention.select.get(gen, {})
    attn = {fam: _curves(name, False) for fam, name in sel.items()}
    attn["fallback"] = _curves(f.attention.fallback, True)
    mem = f.memory.measured.get(device.id) or (f.memory.measured.get(donor) if donor else None)
    mem_frac = float(mem["fraction"]) if mem else f.memory.default
    return KernelProfile(
        device_id=device.id, generation=gen, compute_units=getattr(device, "compute_units", None),
        gemm_fraction=frac, gemm_shape=shape,
        tiles=tuple((t.rows, t.cols, t.relative) for t in f.gemm.tiles), k_half=f.gemm.k_half,
        attention=attn, memory_fraction=mem_frac,
        provenance_class=cls, provenance=prov,
    )
