"""YAML schema of DSPs and spatial accelerators (device kinds ``dsp`` and ``spatial``): the pydantic entries
(unknown keys are errors, strict types) and the energy-unit reader (``units.py`` has no energy kind).

Two descriptions may appear in one file, each optional but at least one present:

* the **vector-core** view, read by inductive loop nests (REVEL's cost, SEEDS S06(b)): ``cores``,
  ``vector_width`` (elements per cycle per core by dtype), ``scalar_width``, ``latency_cycles`` (dependent-op
  latencies), ``sync`` (cycles per producer/consumer hand-off: ``barrier`` and/or ``stream``),
  ``implicit_masking``, ``fine_grain_overlap``, ``vector_stream_control``, ``loop_overhead_cycles``, ``memory``
  (on-chip levels with bytes and bandwidth), ``dram``;
* the **storage-hierarchy** view, read by Timeloop-style problems (ANCHORS Part B §2.2): ``storage`` (levels
  outermost first, as Timeloop's architecture lists them: instances, words, word bits, read/write bandwidth in
  words per cycle per instance, energy per scalar access, tensors held) and ``macs`` (instances, energy per MAC).
  A device with only the vector-core view gets a derived hierarchy (``dsp.derived_storage``).
"""
from __future__ import annotations

import re
from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, short
from parplan.spec import Name

Quantity = Union[str, float, int]
DTYPES = ("fp64", "fp32", "fp16", "bf16", "int32", "int16", "int8")
TENSORS = ("weights", "inputs", "outputs")
SYNC_MODES = ("barrier", "stream")
MAX_LEVELS = 8
MAX_CORES = 4096
# smallest rate, clock or latency accepted (per cycle; GHz): far below any real device, and it keeps the times they
# divide finite (5e-324 words/cycle priced a layer at inf s, which check then PASSed)
MIN_RATE = 1e-6
_ENERGY = {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6, "µJ": 1e-6, "nJ": 1e-9, "pJ": 1e-12, "fJ": 1e-15}
_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


def parse_energy(value: object, *, key: str, file: "str | None") -> float:
    """Joules from ``"0.42 pJ"`` (J, mJ, uJ, nJ, pJ, fJ) or a bare number in joules; finite, ≥ 0, ≤ 1 J."""
    if isinstance(value, bool):
        raise SpecError(f"expected an energy, got {value!r}", key=key, file=file, hint='write e.g. "0.42 pJ"')
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str):
        m = _NUM.match(value) if len(value) <= 100 else None
        if not m or m.group(2) not in _ENERGY and m.group(2) != "":
            raise SpecError(f"cannot read energy {short(value)}", key=key, file=file, allowed=list(_ENERGY),
                            hint='write e.g. "0.42 pJ"')
        out = float(m.group(1)) * _ENERGY.get(m.group(2), 1.0)
    else:
        raise SpecError(f"expected an energy, got {short(value)}", key=key, file=file, hint='write e.g. "0.42 pJ"')
    if not (0.0 <= out <= 1.0):
        raise SpecError(f"bad value {short(value)}: an energy per access/op is between 0 and 1 J", key=key, file=file)
    return out


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class PerDtype(_Strict):
    fp64: Optional[float] = Field(default=None, ge=MIN_RATE, le=65536, strict=False)
    fp32: Optional[float] = Field(default=None, ge=MIN_RATE, le=65536, strict=False)
    fp16: Optional[float] = Field(default=None, ge=MIN_RATE, le=65536, strict=False)
    bf16: Optional[float] = Field(default=None, ge=MIN_RATE, le=65536, strict=False)
    int32: Optional[float] = Field(default=None, ge=MIN_RATE, le=65536, strict=False)
    int16: Optional[float] = Field(default=None, ge=MIN_RATE, le=65536, strict=False)
    int8: Optional[float] = Field(default=None, ge=MIN_RATE, le=65536, strict=False)


class Latencies(_Strict):
    mac: float = Field(ge=MIN_RATE, le=1e4, strict=False)  # dependent multiply-add (cycles until its result is usable)
    div: float = Field(ge=MIN_RATE, le=1e4, strict=False)
    sqrt: float = Field(ge=MIN_RATE, le=1e4, strict=False)
    add: Optional[float] = Field(default=None, ge=MIN_RATE, le=1e4, strict=False)  # default: mac


class SyncCosts(_Strict):
    barrier: Optional[float] = Field(default=None, ge=0, le=1e7, strict=False)  # cycles per multicore barrier
    stream: Optional[float] = Field(default=None, ge=0, le=1e7, strict=False)  # cycles per stream hand-off


class MemLevel(_Strict):
    name: Name
    bytes: Quantity
    per: Literal["core", "shared"]
    bandwidth: Quantity  # per instance (per core when per: core)
    access_energy: Optional[Quantity] = None  # per byte moved


class DramEntry(_Strict):
    bandwidth: Quantity
    bytes: Optional[Quantity] = None
    access_energy: Optional[Quantity] = None  # per byte moved


class StorageLevel(_Strict):
    name: Name
    instances: int = Field(default=1, ge=1, le=1 << 20)
    words: Optional[float] = Field(default=None, ge=1, le=1e15, strict=False)  # capacity per instance; None: unbounded
    word_bits: int = Field(default=16, ge=1, le=128)
    read_bandwidth: float = Field(ge=MIN_RATE, le=1e6, strict=False)  # words per cycle per instance
    write_bandwidth: float = Field(ge=MIN_RATE, le=1e6, strict=False)
    access_energy: Quantity  # per scalar (word) access
    holds: list[Literal["weights", "inputs", "outputs"]] = Field(default_factory=lambda: list(TENSORS), min_length=1)


class MacEntry(_Strict):
    instances: int = Field(ge=1, le=1 << 24)
    energy: Quantity  # per MAC
    word_bits: int = Field(default=16, ge=1, le=128)


class DspEntry(_Strict):
    id: Name
    name: Name
    kind: Literal["dsp", "spatial"]
    vendor: Name
    clock_ghz: float = Field(ge=MIN_RATE, le=10, strict=False)
    # vector-core view (inductive loop nests)
    cores: Optional[int] = Field(default=None, ge=1, le=MAX_CORES)
    vector_width: Optional[PerDtype] = None  # elements (MACs) per cycle per core, vectorized
    scalar_width: Optional[PerDtype] = None  # elements per cycle per core, scalar code (default 1)
    latency_cycles: Optional[Latencies] = None
    sync: Optional[SyncCosts] = None
    implicit_masking: bool = False  # partial vectors cost their fraction (REVEL's inductive streams)
    fine_grain_overlap: bool = False  # the dependence chain overlaps the iteration's vector work (dataflow)
    vector_stream_control: bool = False  # one control command drives every lane (overhead / cores)
    loop_overhead_cycles: float = Field(default=0.0, ge=0, le=1e5, strict=False)  # per vector loop instance
    max_unroll: int = Field(default=8, ge=1, le=64)
    memory: Optional[list[MemLevel]] = Field(default=None, max_length=MAX_LEVELS)
    dram: Optional[DramEntry] = None
    mac_energy: Optional[dict[str, Quantity]] = None  # J per MAC by dtype (vector-core view)
    # storage-hierarchy view (Timeloop-style problems)
    storage: Optional[list[StorageLevel]] = Field(default=None, min_length=1, max_length=MAX_LEVELS)
    macs: Optional[MacEntry] = None
    # physical
    power: Optional[Quantity] = None  # typical / bound power of the part (W)
    static_power: Optional[Quantity] = None  # leakage + clock tree while running (W)
    area_mm2: Optional[float] = Field(default=None, gt=0, le=1e5, strict=False)
    process: Optional[Name] = None
    source: str = Field(min_length=8)
    notes: Optional[str] = None
