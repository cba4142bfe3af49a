"""Layer-training workloads (``family: layer-training``): a network as a chain of layers (conv / fc / mlp /
graph-propagation), each with its parameter count, forward FLOPs per sample and activation sizes, plus a training
job — for SplitBrain's per-layer data/model-parallel choice (S23) and pdADMM-G's layer-parallel ADMM (S26).

A workload file::

    family: layer-training
    name: vgg16-imagenet
    network: {arch: vgg16, dataset: imagenet}          # vgg16 (imagenet | cifar10, fc_hidden), resnet50, gamlp
    job: {batch_per_worker: 64, dtype: fp32, optimizer: sgd-momentum, iterations: 100}

or ``layers: [{name, kind, params, flops_per_sample, in_elems, out_elems, act_elems}, …]`` instead of ``network``;
a GA-MLP (``network: {arch: gamlp, layers, hidden, features, classes, hops, nodes, nnz}``) trains full-batch on its
``nodes`` and may carry ``admm: {bits, quantize, update_cost}`` for the ADMM method.  The generators are in
``layertrain_nets.py``; ``LayerTrainSpec.arrays()`` gives the layer columns as numpy arrays with the job's dtype
applied (bytes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError
from parplan.spec import Name, validate
from parplan.workloads.family import FamilyInfo
from parplan.workloads.layertrain_nets import gamlp, resnet50, vgg16

MAX_LAYERS = 4096
DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0}
# bytes of training state per parameter: weights + gradients + optimizer (fp16/bf16: mixed precision with an fp32
# master copy) — the standard accounting of ZeRO (Rajbhandari et al. 2020, §3.1: 2 + 2 + 12 B for Adam in mixed
# precision); momentum SGD keeps one fp32 buffer, plain SGD none
OPT_BYTES = {"sgd": 0.0, "sgd-momentum": 4.0, "adam": 8.0}
MASTER_BYTES = {"fp32": 0.0, "fp16": 4.0, "bf16": 4.0}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class NetworkEntry(_Strict):
    arch: Literal["vgg16", "resnet50", "gamlp"]
    dataset: Optional[Literal["imagenet", "cifar10"]] = None  # vgg16
    fc_hidden: Optional[list[int]] = Field(default=None, min_length=0, max_length=16)  # vgg16 head widths
    classes: Optional[int] = Field(default=None, gt=0, le=10**6)
    layers: Optional[int] = Field(default=None, ge=1, le=256)  # gamlp
    hidden: Optional[int] = Field(default=None, gt=0, le=10**6)
    features: Optional[int] = Field(default=None, gt=0, le=10**6)
    hops: Optional[int] = Field(default=None, ge=0, le=64)
    nodes: Optional[int] = Field(default=None, gt=0, le=10**10)
    nnz: Optional[float] = Field(default=None, gt=0, le=1e13, strict=False)


class LayerEntry(_Strict):
    name: Name
    kind: Literal["conv", "fc", "mlp", "graph"]
    params: float = Field(ge=0, le=1e13, strict=False)
    flops_per_sample: float = Field(ge=0, le=1e16, strict=False)
    in_elems: float = Field(gt=0, le=1e12, strict=False)
    out_elems: float = Field(gt=0, le=1e12, strict=False)
    act_elems: Optional[float] = Field(default=None, ge=0, le=1e12, strict=False)


class JobEntry(_Strict):
    batch_per_worker: Optional[int] = Field(default=None, gt=0, le=10**9)  # default: gamlp nodes, else 32
    dtype: Literal["fp32", "fp16", "bf16"] = "fp32"
    optimizer: Literal["sgd", "sgd-momentum", "adam"] = "sgd-momentum"
    iterations: int = Field(default=1, ge=1, le=10**9)
    compute_efficiency: Optional[float] = Field(default=None, gt=0, le=1, strict=False)


class AdmmEntry(_Strict):
    bits: int = Field(default=8, ge=1, le=32)  # width of the quantized exchange (pdADMM-G-Q); 32 = pdADMM-G
    quantize: list[Literal["p", "q", "u"]] = Field(default_factory=lambda: ["p", "q"], max_length=3)
    update_cost: float = Field(default=6.0, gt=0, le=100, strict=False)


class LayerTrainFile(_Strict):
    family: Literal["layer-training"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    network: Optional[NetworkEntry] = None
    layers: Optional[list[LayerEntry]] = Field(default=None, min_length=1, max_length=MAX_LAYERS)
    job: JobEntry = Field(default_factory=JobEntry)
    admm: Optional[AdmmEntry] = None


@dataclass(frozen=True)
class LayerArrays:
    """Per-layer columns (numpy, one entry per layer, graph-propagation layers included)."""
    names: tuple
    kinds: tuple
    params: Any  # parameters
    flops: Any  # forward FLOPs per sample (graph: the one-off total)
    in_bytes: Any  # one sample's input activation, bytes
    out_bytes: Any
    act_bytes: Any  # kept for the backward pass, per sample


@dataclass(frozen=True)
class LayerTrainSpec:
    name: str
    source: str
    rows: tuple  # (name, kind, params, flops_per_sample, in_elems, out_elems, act_elems)
    job: JobEntry
    admm: Optional[AdmmEntry]
    nodes: Optional[int] = None  # gamlp: graph nodes (full-batch samples)
    arch: str = "layers"
    family: str = "layer-training"
    extra: dict = field(default_factory=dict)

    @property
    def dtype_bytes(self) -> float:
        return DTYPE_BYTES[self.job.dtype]

    @property
    def state_bytes_per_param(self) -> float:
        """Weights + gradients + master copy + optimizer buffers, bytes per parameter."""
        return 2 * self.dtype_bytes + MASTER_BYTES[self.job.dtype] + OPT_BYTES[self.job.optimizer]

    @property
    def batch_per_worker(self) -> int:
        return self.job.batch_per_worker or self.nodes or 32

    @property
    def total_params(self) -> float:
        return float(sum(r[2] for r in self.rows))

    def params_of(self, kind: str) -> float:
        return float(sum(r[2] for r in self.rows if r[1] == kind))

    def arrays(self) -> LayerArrays:
        import numpy as np

        b = self.dtype_bytes
        col = list(zip(*self.rows))
        return LayerArrays(tuple(col[0]), tuple(col[1]), np.array(col[2], float), np.array(col[3], float),
                           np.array(col[4], float) * b, np.array(col[5], float) * b, np.array(col[6], float) * b)


def _need(net: NetworkEntry, keys: tuple, file) -> None:
    for k in keys:
        if getattr(net, k) is None:
            raise SpecError(f"required key is missing for arch {net.arch}", file=file, key=f"network.{k}")


def _rows_of(net: NetworkEntry, file) -> list:
    used = {k for k, v in net.model_dump().items() if v is not None and k != "arch"}
    allowed = {"vgg16": {"dataset", "fc_hidden", "classes"}, "resnet50": {"classes"},
               "gamlp": {"layers", "hidden", "features", "classes", "hops", "nodes", "nnz"}}[net.arch]
    for k in sorted(used - allowed):
        raise SpecError(f"{k} does not apply to arch {net.arch}", file=file, key=f"network.{k}",
                        allowed=sorted(allowed))
    if net.arch == "vgg16":
        return vgg16(net.dataset or "imagenet", net.fc_hidden, net.classes)
    if net.arch == "resnet50":
        return resnet50(net.classes or 1000)
    _need(net, ("layers", "hidden", "features", "classes", "nodes"), file)
    nnz = net.nnz if net.nnz is not None else 10.0 * net.nodes
    return gamlp(net.layers, net.hidden, net.features, net.classes, net.hops if net.hops is not None else 3, nnz)


def spec_from_dict(data: Any, file: str | None = None) -> LayerTrainSpec:
    e = validate(LayerTrainFile, data, file=file)
    if (e.network is None) == (e.layers is None):
        raise SpecError("give exactly one of network or layers", file=file, key="network",
                        hint="network: {arch: vgg16} or layers: [{name, kind, params, flops_per_sample, ...}]")
    if e.network is not None:
        rows = _rows_of(e.network, file)
        nodes = e.network.nodes if e.network.arch == "gamlp" else None
        arch = e.network.arch
    else:
        rows = [(x.name, x.kind, x.params, x.flops_per_sample, x.in_elems, x.out_elems,
                 x.act_elems if x.act_elems is not None else x.out_elems) for x in e.layers]
        nodes, arch = None, "layers"
    if not any(r[1] != "graph" for r in rows):
        raise SpecError("the network has no trainable layer (only graph propagation)", file=file, key="layers")
    for what, col in (("parameters", 2), ("FLOPs", 3)):  # a network without either trains in no time (a division)
        if not sum(float(r[col]) for r in rows) > 0:
            raise SpecError(f"every layer has 0 {what}: there is nothing to train", file=file, key="layers")
    if e.admm is not None and any(r[1] in ("conv",) for r in rows):
        raise SpecError("admm applies to MLP / GA-MLP chains (S26), not to convolutional networks", file=file,
                        key="admm")
    return LayerTrainSpec(e.name, e.source or (file or "inline"), tuple(tuple(r) for r in rows), e.job, e.admm,
                          nodes, arch)


def load_layertrain(ref: Any) -> LayerTrainSpec:
    """A layer-training workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, LayerTrainSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):
    raise SpecError("layer-training workloads are files of their own (family: layer-training at the top level)",
                    file=file, key=f"{prefix}.family", hint="see docs/layertrain.md")


FAMILY = FamilyInfo(
    name="layer-training",
    summary="CNN / MLP training with a per-layer data- or model-parallel choice (SplitBrain) and layer-parallel "
            "quantized ADMM for GA-MLPs (pdADMM-G): VGG-16, ResNet-50, GA-MLP generators or explicit layer tables",
    spec_type=LayerTrainSpec,
    architecture_schema=LayerTrainFile,
    build_spec=_build,
    model="parplan.models.layertrain",
    space="parplan.planner.spaces.layertrain",
    executor="parplan.executor.layertrain",
    verbs="parplan.cli.layertrain_out",
    load=load_layertrain,
)
