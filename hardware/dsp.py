"""DSPs and spatial accelerators (device kinds ``dsp`` and ``spatial``) for the dataflow family: loaded from the
catalog (``catalogs/hardware/dsps/<id>.yaml``) by id, from a user file path, or from an inline mapping.

A device file (schema: ``dsp_schema.DspEntry``)::

    id: c6678
    kind: dsp
    clock_ghz: 1.0
    cores: 8
    vector_width: {fp32: 8, fp64: 2, int16: 32}     # MACs per cycle per core, vectorized code
    latency_cycles: {mac: 4, div: 20, sqrt: 25}      # dependent-op latencies
    sync: {barrier: 300}                             # cycles per hand-off (barrier and/or stream)
    implicit_masking: false
    loop_overhead_cycles: 20
    memory: [{name: L2, bytes: "512 KiB", per: core, bandwidth: "16 GB/s"}, …]
    dram: {bandwidth: "12.8 GB/s"}
    power: "10 W"

or a Timeloop-style ``storage:`` hierarchy (outermost first) with ``macs:``.  Every quantity is SI once loaded
(seconds, bytes, bytes/s, joules, watts); bandwidths of ``storage`` stay in words per cycle (Timeloop's unit).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from parplan.errors import SpecError, did_you_mean, short
from parplan.hardware.dsp_schema import DTYPES, SYNC_MODES, DspEntry, parse_energy
from parplan.spec import load_yaml_file, locate, validate
from parplan.units import parse_quantity


@dataclass(frozen=True)
class MemoryLevel:
    name: str
    bytes: float  # per instance
    per_core: bool
    bytes_per_s: float  # per instance
    energy_per_byte_j: float | None


@dataclass(frozen=True)
class Storage:
    """One level of a Timeloop-style hierarchy (``levels`` are stored innermost first)."""
    name: str
    instances: int
    words: float | None  # capacity per instance (None: unbounded, e.g. DRAM)
    word_bits: int
    read_bw: float  # words / cycle / instance
    write_bw: float
    access_energy_j: float  # per scalar access
    holds: tuple  # tensor names


@dataclass(frozen=True)
class Dsp:
    id: str
    name: str
    kind: str
    vendor: str
    clock_hz: float
    cores: int | None
    vector_width: dict  # dtype -> elements per cycle per core
    scalar_width: dict
    latency: dict  # mac, div, sqrt, add -> cycles
    sync_cycles: dict  # mode -> cycles per hand-off (only the modes the device has)
    implicit_masking: bool
    fine_grain_overlap: bool
    vector_stream_control: bool
    loop_overhead_cycles: float
    max_unroll: int
    memory: tuple  # MemoryLevel, innermost first
    dram_bytes_per_s: float | None
    dram_energy_per_byte_j: float | None
    mac_energy_j: dict  # dtype -> J per MAC
    storage: tuple  # Storage, innermost first (explicit or derived)
    mac_instances: int
    mac_energy_storage_j: float | None  # the storage view's energy per MAC
    power_w: float | None
    static_power_w: float | None
    area_mm2: float | None
    source: str
    derived_storage: bool = False

    @property
    def has_cores(self) -> bool:
        return self.cores is not None and bool(self.vector_width) and bool(self.latency)

    def width(self, dtype: str, vectorized: bool = True) -> float:
        """Elements per cycle per core of ``dtype`` (``SpecError`` when the device has no such datapath)."""
        table = self.vector_width if vectorized else self.scalar_width
        if dtype not in self.vector_width:
            raise SpecError(f"{self.name} has no {dtype} datapath", key="kernel.dtype",
                            allowed=sorted(self.vector_width), hint="pick a dtype the device computes in")
        return float(table.get(dtype, 1.0))

    def sync_modes(self) -> list[str]:
        return [m for m in SYNC_MODES if m in self.sync_cycles]

    def peak_macs_per_s(self, dtype: str) -> float:
        return (self.cores or 1) * self.width(dtype) * self.clock_hz


def _q(v: Any, kind: str, key: str, file: str | None) -> float:
    return parse_quantity(v, kind, key=key, file=file)


def _derive_storage(cores: int, width: float, memory: tuple, dram_bw: float | None, clock: float) -> tuple:
    """A Timeloop-style hierarchy for a vector-core device: its memory levels (per core or shared) and DRAM, every
    level holding every tensor, MAC instances = cores × vector width; bandwidths in 4-byte words per cycle."""
    levels = []
    for m in memory:
        inst = cores if m.per_core else 1
        bw = m.bytes_per_s / clock / 4.0
        levels.append(Storage(m.name, inst, m.bytes / 4.0, 32, bw, bw, 0.0, ("weights", "inputs", "outputs")))
    bw = (dram_bw or 1e9) / clock / 4.0
    levels.append(Storage("DRAM", 1, None, 32, bw, bw, 0.0, ("weights", "inputs", "outputs")))
    return tuple(levels)


def dsp_from_dict(data: Any, file: str | None = None, prefix: str = "") -> Dsp:
    """A validated device; bad or unknown keys are ``SpecError`` naming the key."""
    e = validate(DspEntry, data, file=file, prefix=prefix)
    p = f"{prefix}." if prefix else ""
    for part in ("storage", "memory"):  # levels are named in breakdowns and mappings: a repeated name would merge two
        names = [lv.name for lv in getattr(e, part) or ()]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise SpecError(f"level name {short(twice[0])} is used {names.count(twice[0])} times: each level needs "
                            "its own name", file=file, key=f"{p}{part}", hint="rename one of them")
    try:
        vw = {d: float(getattr(e.vector_width, d)) for d in DTYPES
              if e.vector_width is not None and getattr(e.vector_width, d) is not None}
        sw = {d: float(getattr(e.scalar_width, d)) for d in DTYPES
              if e.scalar_width is not None and getattr(e.scalar_width, d) is not None}
        lat = {}
        if e.latency_cycles is not None:
            lc = e.latency_cycles
            lat = {"mac": lc.mac, "div": lc.div, "sqrt": lc.sqrt, "add": lc.add or lc.mac}
        sync = {}
        if e.sync is not None:
            sync = {m: float(getattr(e.sync, m)) for m in SYNC_MODES if getattr(e.sync, m) is not None}
        view_cores = [e.cores is not None, bool(vw), bool(lat)]
        if any(view_cores) and not all(view_cores):
            raise SpecError("the vector-core view needs cores, vector_width and latency_cycles together",
                            file=file, key=p + ("cores" if e.cores is None else "vector_width" if not vw
                                                else "latency_cycles"))
        if e.cores is not None and e.cores > 1 and not sync:
            raise SpecError(f"{e.cores} cores need a sync cost per hand-off", file=file, key=p + "sync",
                            hint="e.g. sync: {barrier: 300} (cycles) or {stream: 4}")
        mem = tuple(MemoryLevel(m.name, _q(m.bytes, "bytes", f"{p}memory[{i}].bytes", file), m.per == "core",
                                _q(m.bandwidth, "bytes_per_s", f"{p}memory[{i}].bandwidth", file),
                                None if m.access_energy is None else
                                parse_energy(m.access_energy, key=f"{p}memory[{i}].access_energy", file=file))
                    for i, m in enumerate(e.memory or []))
        dram_bw = None if e.dram is None else _q(e.dram.bandwidth, "bytes_per_s", p + "dram.bandwidth", file)
        dram_e = None if e.dram is None or e.dram.access_energy is None else \
            parse_energy(e.dram.access_energy, key=p + "dram.access_energy", file=file)
        mac_e = {k: parse_energy(v, key=f"{p}mac_energy.{k}", file=file) for k, v in (e.mac_energy or {}).items()}
        for k in mac_e:
            if k not in DTYPES:
                raise SpecError(f"unknown dtype {short(k)}", file=file, key=p + "mac_energy", allowed=list(DTYPES))
        clock = e.clock_ghz * 1e9
        derived = False
        if e.storage is not None:
            if e.macs is None:
                raise SpecError("a storage hierarchy needs macs: {instances, energy}", file=file, key=p + "macs")
            levels = tuple(reversed([
                Storage(s.name, s.instances, s.words, s.word_bits, s.read_bandwidth, s.write_bandwidth,
                        parse_energy(s.access_energy, key=f"{p}storage[{i}].access_energy", file=file),
                        tuple(s.holds)) for i, s in enumerate(e.storage)]))
            mac_inst, mac_es = e.macs.instances, parse_energy(e.macs.energy, key=p + "macs.energy", file=file)
            for inner, outer in zip(levels, levels[1:]):
                if inner.instances % outer.instances:
                    raise SpecError(f"storage level {inner.name} has {inner.instances} instances, not a multiple of "
                                    f"{outer.name}'s {outer.instances}", file=file, key=p + "storage")
            if mac_inst % levels[0].instances:
                raise SpecError(f"macs.instances {mac_inst} is not a multiple of {levels[0].name}'s instances",
                                file=file, key=p + "macs.instances")
            for t in ("weights", "inputs", "outputs"):
                if t not in levels[-1].holds:
                    raise SpecError(f"the outermost level {levels[-1].name} must hold {t}", file=file,
                                    key=p + "storage[0].holds")
        elif e.cores is not None:
            width = max(vw.values())
            levels, mac_inst, mac_es = _derive_storage(e.cores, width, mem, dram_bw, clock), int(e.cores * width), None
            derived = True
        else:
            raise SpecError("a device needs the vector-core view (cores, vector_width, latency_cycles) or a storage "
                            "hierarchy (storage, macs)", file=file, key=p + "cores")
        return Dsp(
            id=e.id, name=e.name, kind=e.kind, vendor=e.vendor, clock_hz=clock, cores=e.cores, vector_width=vw,
            scalar_width=sw, latency=lat, sync_cycles=sync, implicit_masking=e.implicit_masking,
            fine_grain_overlap=e.fine_grain_overlap, vector_stream_control=e.vector_stream_control,
            loop_overhead_cycles=float(e.loop_overhead_cycles), max_unroll=e.max_unroll, memory=mem,
            dram_bytes_per_s=dram_bw, dram_energy_per_byte_j=dram_e, mac_energy_j=mac_e, storage=levels,
            mac_instances=int(mac_inst), mac_energy_storage_j=mac_es,
            power_w=None if e.power is None else _q(e.power, "watts", p + "power", file),
            static_power_w=None if e.static_power is None else _q(e.static_power, "watts", p + "static_power", file),
            area_mm2=e.area_mm2, source=e.source, derived_storage=derived)
    except SpecError as err:
        raise locate(err, data, file) from None


def _catalog_dir() -> Path:
    from parplan.catalogs import catalog_dir

    return catalog_dir("hardware", "dsps")


def dsp_ids() -> list[str]:
    return sorted(p.stem for p in _catalog_dir().glob("*.yaml"))


@lru_cache(maxsize=64)
def get_dsp(ident: str) -> Dsp:
    path = _catalog_dir() / f"{ident}.yaml"
    if not path.is_file():
        raise SpecError(f"unknown DSP / spatial device {short(ident)}", key="--hw", allowed=dsp_ids(),
                        hint=did_you_mean(ident, dsp_ids()))
    return dsp_from_dict(load_yaml_file(path), file=str(path))


def is_dsp_file(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") in ("dsp", "spatial")


def load_dsp(ref: "str | Path | dict | Dsp") -> Dsp:
    """A device from a catalog id, a YAML path (kind: dsp | spatial) or an inline mapping."""
    if isinstance(ref, Dsp):
        return ref
    if isinstance(ref, dict):
        return dsp_from_dict(ref)
    text = str(ref)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or (len(text) < 4096 and path.is_file()):
        if not path.is_file():
            raise SpecError(f"file not found: {short(text)}", key="--hw")
        data = load_yaml_file(path)
        if not is_dsp_file(data):
            raise SpecError("not a DSP or spatial-accelerator file (kind: dsp | spatial)", file=text, key="kind",
                            hint="dataflow workloads run on DSPs and spatial arrays: see catalogs/hardware/dsps/")
        return dsp_from_dict(data, file=text)
    return get_dsp(text)
