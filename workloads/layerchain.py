"""Layer-chain workloads (``family: layer-chain``): a DNN as a chain of layers (forward FLOPs, parameters, output
elements per sample, optional measured memory) with optional measured per-device times, or a module DAG (CEC-PA's
prior → {classifiers} → fusion), and a job: inference of a request stream or collaborative training.

A workload file::

    family: layer-chain
    name: vit-edge
    dnn: {arch: vit-base, image: 224, classes: 1000}   # generated (workloads/layerchain_nets.py), or
    chain: pipeedge-vit-base                           # a catalogs/layerchains id (its layers and profiles), or
    layers: [{name: conv1, flops: 1.8e9, params: 1792, out_elements: 3.2e6}, ...]   # explicit
    input_elements: 150528                             # per sample (generated chains know theirs)
    profiles:                                          # optional measured times (PipeEdge device_types.yml form)
      - {device: rcc-ve-c2558, batch: 8, dtype: fp32, time_s: [0.37, 0.065, ...]}
    inference: {microbatch: 8, dtype: fp32, requests: 1000, source: pi-0}
    # or training: {batch: 16, dtype: fp32, batches: 50, mode: pipar, rounds: 1}

or ``modules: [{name: prior, flops: …, out_elements: …, after: []}, …]`` (a DAG; ``time_s: {device: s}`` per module
optional) instead of layers.  Element counts are per sample; bytes = elements × dtype size × microbatch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import Name, validate
from parplan.workloads.family import FamilyInfo
from parplan.workloads.layerchain_nets import Layer, generate

Quantity = Union[str, float, int]
MAX_LAYERS = 2048
MAX_MODULES = 32
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class DnnEntry(_Strict):
    arch: Literal["vit-base", "vit-large", "vit-huge", "vgg16", "resnet18", "mobilenetv2"]
    image: int = Field(default=224, ge=16, le=4096)
    classes: int = Field(default=1000, ge=1, le=100_000)


class LayerEntry(_Strict):
    name: Name
    flops: float = Field(ge=0, le=1e18, strict=False)
    params: float = Field(default=0.0, ge=0, le=1e13, strict=False)
    out_elements: float = Field(gt=0, le=1e12, strict=False)
    mem_bytes: Optional[float] = Field(default=None, gt=0, le=1e14, strict=False)


class PipeEdgeEntry(_Strict):  # PipeEdge models.yml per-layer lists (mem_MB in MiB, parameters_out per sample)
    mem_mib: list[float] = Field(min_length=1, max_length=MAX_LAYERS)
    out_elements: list[float] = Field(min_length=1, max_length=MAX_LAYERS)


class ProfileEntry(_Strict):
    device: Name
    batch: int = Field(ge=1, le=1 << 20)
    dtype: Literal["fp32", "fp16", "bf16", "int8"] = "fp32"
    time_s: list[float] = Field(min_length=1, max_length=MAX_LAYERS)


class ModuleEntry(_Strict):
    name: Name
    flops: float = Field(ge=0, le=1e18, strict=False)
    params: float = Field(default=0.0, ge=0, le=1e13, strict=False)
    out_elements: float = Field(gt=0, le=1e12, strict=False)
    after: list[Name] = Field(default_factory=list, max_length=MAX_MODULES)
    time_s: dict[Name, float] = Field(default_factory=dict)  # device id -> measured seconds per request


class InferenceEntry(_Strict):
    microbatch: int = Field(default=1, ge=1, le=4096)
    dtype: Literal["fp32", "fp16", "bf16", "int8"] = "fp32"
    requests: int = Field(default=100, ge=1, le=10**9)  # microbatches (requests) in the stream
    source: Optional[Name] = None  # device id where inputs arrive and results return (None: PipeEdge's convention)


class TrainingEntry(_Strict):
    batch: int = Field(default=16, ge=1, le=65536)
    dtype: Literal["fp32", "fp16", "bf16"] = "fp32"
    batches: int = Field(default=50, ge=1, le=10**7)  # batches per device per round (epoch share)
    rounds: int = Field(default=1, ge=1, le=10**5)  # FL aggregation rounds (model exchange once per round)
    mode: Literal["pipar", "split", "fl"] = "pipar"


class CoordinatorEntry(_Strict):  # CEC-PA availability: the coordinator node's failures and the election
    mtbf: Quantity  # mean time between coordinator failures
    election: Quantity  # election timeout until a new coordinator is chosen (T_elect)
    sync: Quantity = 0.0  # state hand-over to the new coordinator (T_sync)
    repair: Quantity  # repair/restart time of a standalone node without election (T_repair)


class LayerChainFile(_Strict):
    family: Literal["layer-chain"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    dnn: Optional[DnnEntry] = None
    chain: Optional[Name] = None
    layers: Optional[list[LayerEntry]] = Field(default=None, min_length=1, max_length=MAX_LAYERS)
    modules: Optional[list[ModuleEntry]] = Field(default=None, min_length=1, max_length=MAX_MODULES)
    input_elements: Optional[float] = Field(default=None, gt=0, le=1e12, strict=False)
    dtype: Optional[Literal["fp32", "fp16", "bf16", "int8"]] = None  # the chain's profiled dtype (catalog files)
    pipeedge: Optional[PipeEdgeEntry] = None
    profiles: list[ProfileEntry] = Field(default_factory=list, max_length=64)
    inference: Optional[InferenceEntry] = None
    training: Optional[TrainingEntry] = None
    coordinator: Optional[CoordinatorEntry] = None


@dataclass(frozen=True)
class Coordinator:
    mtbf_s: float
    election_s: float
    sync_s: float
    repair_s: float


@dataclass(frozen=True)
class Module:
    name: str
    flops: float
    params: float
    out_elements: float
    after: tuple
    time_s: dict


@dataclass(frozen=True)
class LayerChainSpec:
    name: str
    source: str
    layers: tuple  # Layer per layer (empty for a module DAG)
    input_elements: float
    profiles: dict  # device id -> (batch, dtype, np.ndarray of seconds per layer)
    modules: tuple = ()  # Module per module, in topological order (a DAG workload)
    inference: Optional[InferenceEntry] = None
    training: Optional[TrainingEntry] = None
    coordinator: Optional[Coordinator] = None
    family: str = "layer-chain"
    extra: dict = field(default_factory=dict)

    @property
    def is_dag(self) -> bool:
        return bool(self.modules)

    @property
    def dtype(self) -> str:
        job = self.inference or self.training
        return job.dtype

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    def arrays(self) -> dict:
        """Per-layer numpy arrays: flops, params, out_elements, mem_bytes (measured, else params × dtype bytes)."""
        ls = self.layers
        mem = [l.mem_bytes if l.mem_bytes is not None else l.params * self.dtype_bytes for l in ls]
        return {"flops": np.array([l.flops for l in ls]), "params": np.array([l.params for l in ls]),
                "out_elements": np.array([l.out_elements for l in ls]), "mem_bytes": np.array(mem, dtype=float)}


def _topo(mods: list[ModuleEntry], file: str | None) -> tuple:
    names = [m.name for m in mods]
    if len(set(names)) != len(names):
        raise SpecError("module names are not unique", file=file, key="modules")
    done, order = set(), []
    for i, m in enumerate(mods):  # measured times as the profiles' (a negative one PASSed check at −903 s)
        bad = [k for k, t in m.time_s.items() if not (0 <= t < 1e6)]
        if bad:
            raise SpecError(f"time_s[{short(bad[0])}] = {m.time_s[bad[0]]!r}: times are seconds in [0, 1e6)", file=file,
                            key=f"modules[{i}].time_s")
    for _ in range(len(mods)):
        for i, m in enumerate(mods):
            if m.name in done:
                continue
            for a in m.after:
                if a not in names:
                    raise SpecError(f"unknown module {short(a)} in after", file=file, key=f"modules[{i}].after",
                                    allowed=names, hint=did_you_mean(a, names))
            if all(a in done for a in m.after):
                done.add(m.name)
                order.append(Module(m.name, m.flops, m.params, m.out_elements, tuple(m.after), dict(m.time_s)))
    if len(order) != len(mods):
        raise SpecError("the modules' after: lists form a cycle", file=file, key="modules")
    for dev in dict.fromkeys(k for m in mods for k in m.time_s):  # as a profile: some module must take time
        if not sum(m.time_s.get(dev, 0.0) for m in mods) > 0:
            raise SpecError(f"every module's measured time on {short(dev)} is 0 s: some module must take time",
                            file=file, key="modules[].time_s")
    return tuple(order)


def _chain_file(ident: str) -> tuple[dict, str]:
    from parplan.catalogs import catalog_dir
    from parplan.spec import load_yaml_file

    folder = catalog_dir("layerchains")
    ids = sorted(p.stem for p in folder.glob("*.yaml"))
    if ident not in ids:
        raise SpecError(f"unknown layer chain {short(ident)}", key="chain", allowed=ids, hint=did_you_mean(ident, ids))
    path = folder / f"{ident}.yaml"
    return load_yaml_file(path), str(path)


def chain_ids() -> list[str]:
    from parplan.catalogs import catalog_dir

    return sorted(p.stem for p in catalog_dir("layerchains").glob("*.yaml"))


def spec_from_dict(data: Any, file: str | None = None, _depth: int = 0) -> LayerChainSpec:
    e = validate(LayerChainFile, data, file=file)
    sources = [k for k in ("dnn", "chain", "layers", "modules") if getattr(e, k) is not None]
    if len(sources) != 1:
        raise SpecError(f"give exactly one of dnn, chain, layers or modules (got {', '.join(sources) or 'none'})",
                        file=file, key="layers")
    if e.chain is not None:
        if _depth:
            raise SpecError("a catalog chain may not name another chain", file=file, key="chain")
        base_data, base_file = _chain_file(e.chain)
        base = spec_from_dict({**base_data, "inference": {"dtype": base_data.get("dtype", "fp32")}}, base_file, 1)
        layers, inp, profiles = base.layers, base.input_elements, dict(base.profiles)
    else:
        profiles = {}
        if e.dnn is not None:
            gen, inp = generate(e.dnn.arch, e.dnn.image, e.dnn.classes)
            layers = tuple(gen)
        elif e.layers is not None:
            layers = tuple(Layer(l.name, l.flops, l.params, l.out_elements, l.mem_bytes) for l in e.layers)
            inp = None
        else:
            layers, inp = (), None
        if e.input_elements is not None:
            inp = e.input_elements
        if inp is None:
            raise SpecError("input_elements is required for explicit layers or modules", file=file,
                            key="input_elements", hint="elements of one input sample, e.g. 150528 for 3×224×224")
        if e.pipeedge is not None:
            pe = e.pipeedge
            if not (len(pe.mem_mib) == len(pe.out_elements) == len(layers)):
                raise SpecError(f"pipeedge lists have {len(pe.mem_mib)}/{len(pe.out_elements)} entries for "
                                f"{len(layers)} layers", file=file, key="pipeedge")
            layers = tuple(Layer(l.name, l.flops, l.params, float(o), float(m) * 2.0**20)  # PipeEdge MB = MiB
                           for l, m, o in zip(layers, pe.mem_mib, pe.out_elements))
    for i, p in enumerate(e.profiles):
        if e.modules is not None:
            raise SpecError("a module DAG gives measured times per module (modules[].time_s)", file=file,
                            key=f"profiles[{i}]")
        if len(p.time_s) != len(layers):
            raise SpecError(f"{len(p.time_s)} times for {len(layers)} layers", file=file, key=f"profiles[{i}].time_s")
        if any(not (0 <= t < 1e6) for t in p.time_s):
            raise SpecError("times are seconds in [0, 1e6)", file=file, key=f"profiles[{i}].time_s")
        if not sum(p.time_s) > 0:  # a chain that takes no time has no throughput (it was a ZeroDivisionError)
            raise SpecError("every layer's measured time is 0 s: a profile needs some layer to take time", file=file,
                            key=f"profiles[{i}].time_s")
        if p.device in profiles and _depth == 0 and e.chain is None:
            raise SpecError(f"two profiles for {p.device!r}", file=file, key=f"profiles[{i}].device")
        profiles[p.device] = (p.batch, p.dtype, np.asarray(p.time_s, dtype=float))
    modules = _topo(e.modules, file) if e.modules is not None else ()
    timed = bool(e.profiles) or any(sum(m.time_s.values()) > 0 for m in modules)
    if (layers or modules) and not timed and not sum(x.flops for x in (*layers, *modules)) > 0:
        raise SpecError("every layer has 0 FLOPs and no profile measures it: the chain would take no time (an "
                        "infinite throughput)", file=file, key="modules" if modules else "layers",
                        hint="give the layers' FLOPs or a measured profile")
    if (e.inference is None) == (e.training is None) and _depth == 0:
        raise SpecError("give exactly one job: inference or training", file=file, key="inference")
    if modules and e.training is not None:
        raise SpecError("a module DAG is an inference workload (CEC-PA)", file=file, key="training")
    inference = e.inference if (e.inference or e.training) else InferenceEntry()
    coord = None
    if e.coordinator is not None:
        from parplan.units import parse_quantity

        c = e.coordinator
        try:
            coord = Coordinator(parse_quantity(c.mtbf, "seconds", key="coordinator.mtbf", file=file),
                                parse_quantity(c.election, "seconds", key="coordinator.election", file=file,
                                               positive=False),
                                parse_quantity(c.sync, "seconds", key="coordinator.sync", file=file, positive=False),
                                parse_quantity(c.repair, "seconds", key="coordinator.repair", file=file))
        except SpecError as err:
            from parplan.spec import locate

            raise locate(err, data, file) from None
    return LayerChainSpec(e.name, e.source or (file or "inline"), tuple(layers), float(inp), profiles, modules,
                          inference if e.training is None else None, e.training, coord)


def load_layerchain(ref: Any) -> LayerChainSpec:
    """A layer-chain workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, LayerChainSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):  # the transformer-style entry point is not used
    raise SpecError("layer-chain workloads are files of their own (family: layer-chain at the top level)", file=file,
                    key=f"{prefix}.family", hint="see docs/edge.md")


FAMILY = FamilyInfo(
    name="layer-chain",
    summary="DNNs as layer chains or module DAGs on edge boards + servers: Neurosurgeon split, PipeEdge pipeline DP, "
            "PiPar collaborative training, CEC-PA placement with coordinator election",
    spec_type=LayerChainSpec,
    architecture_schema=LayerChainFile,
    build_spec=_build,
    model="parplan.models.edge",
    space="parplan.planner.spaces.layerchain",
    executor="parplan.executor.edge_pipeline",
    verbs="parplan.cli.layerchain_out",
    load=load_layerchain,
)
