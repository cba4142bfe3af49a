"""Dataflow workloads (``family: dataflow``): a dense-linear-algebra or signal kernel on a DSP or spatial array —
an inductive loop nest (REVEL, SEEDS S06) and, for GEMM / FIR / convolutions, a Timeloop-style problem (loop dims
and tensors, ANCHORS Part B §2.2).

A workload file::

    family: dataflow
    name: cholesky-64
    kernel: {name: cholesky, n: 64, dtype: fp32}     # cholesky | qr | trsv | trsm (r) | fft | gemm (m, n, k)
                                                    # | fir (n, taps) | conv1d (p, r, c, k) | conv2d (…)
or a Timeloop-style problem (loop dimensions N K C P Q R S of a convolution; GEMM is a 1×1 convolution)::

    problem: {shape: conv1d, dims: {P: 16, R: 3}, dtype: int8}
    mapping:                                         # optional: a fixed mapping, one entry per storage level
      - {level: Buffer, temporal: {P: 16, R: 3}, order: RP}     # order: innermost first (Timeloop permutation)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, short
from parplan.spec import Name, validate
from parplan.workloads.dataflow_kernels import DTYPE_BYTES, Nest, build_nest
from parplan.workloads.family import FamilyInfo

KERNELS = ("cholesky", "qr", "trsv", "trsm", "fft", "gemm", "fir", "conv1d", "conv2d")
DIMS = ("N", "K", "C", "P", "Q", "R", "S")  # Timeloop's convolution dimensions (batch, out ch, in ch, out w/h, taps)
MAX_DIM = 1 << 20
MAX_MACS = 1e15
_Dtype = Literal["fp64", "fp32", "fp16", "bf16", "int32", "int16", "int8"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


_D = Field(default=None, ge=1, le=MAX_DIM)


class KernelEntry(_Strict):
    name: Literal["cholesky", "qr", "trsv", "trsm", "fft", "gemm", "fir", "conv1d", "conv2d"]
    n: Optional[int] = _D  # matrix side / FFT points / gemm N / fir samples
    dtype: _Dtype = "fp32"
    m: Optional[int] = _D  # gemm M
    k: Optional[int] = _D  # gemm K; conv output channels
    r: Optional[int] = _D  # trsm right-hand sides; conv taps (width)
    taps: Optional[int] = _D  # fir taps
    p: Optional[int] = _D  # conv output width
    q: Optional[int] = _D  # conv2d output height
    s: Optional[int] = _D  # conv2d taps (height)
    c: Optional[int] = _D  # conv input channels
    batch: Optional[int] = _D


class ProblemEntry(_Strict):
    shape: Literal["conv2d", "conv1d", "gemm"] = "conv2d"
    dims: dict[str, int]
    stride: int = Field(default=1, ge=1, le=64)
    dilation: int = Field(default=1, ge=1, le=64)
    dtype: _Dtype = "int16"


class MappingLevel(_Strict):
    level: Name
    temporal: dict[str, int] = Field(default_factory=dict)
    spatial: dict[str, int] = Field(default_factory=dict)
    order: str = Field(default="", max_length=7)  # dims innermost first, e.g. "RP"


class DataflowFile(_Strict):
    family: Literal["dataflow"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    kernel: Optional[KernelEntry] = None
    problem: Optional[ProblemEntry] = None
    mapping: Optional[list[MappingLevel]] = Field(default=None, min_length=1, max_length=8)


@dataclass(frozen=True)
class Problem:
    """A Timeloop-style convolution problem: sizes of N K C P Q R S (1 where absent)."""
    sizes: tuple  # ints in DIMS order
    stride: int
    dilation: int
    dtype: str

    @property
    def macs(self) -> float:
        out = 1.0
        for s in self.sizes:
            out *= s
        return out

    def size(self, d: str) -> int:
        return self.sizes[DIMS.index(d)]


@dataclass(frozen=True)
class DataflowSpec:
    name: str
    source: str
    kernel: Optional[KernelEntry]
    problem: Optional[Problem]
    mapping: Optional[tuple]  # MappingLevel entries, outermost first
    dtype: str
    family: str = "dataflow"
    extra: dict = field(default_factory=dict)

    def nest(self) -> Nest:
        if self.kernel is None:
            raise SpecError(f"{self.name} is a problem: workload; inductive nests come from kernel: entries",
                            key="kernel", hint="give kernel: {name: cholesky, n: 64} or map the problem")
        return build_nest(self.kernel.name, kernel_dims(self.kernel), self.dtype)

    @property
    def bytes_per_element(self) -> int:
        return DTYPE_BYTES[self.dtype]


_NEEDS = {"cholesky": ("n",), "qr": ("n",), "trsv": ("n",), "trsm": ("n",), "fft": ("n",), "gemm": ("m", "n", "k"),
          "fir": ("n", "taps"), "conv1d": ("p", "r"), "conv2d": ("p", "q", "r", "s")}
_ALLOWED = {"cholesky": ("n",), "qr": ("n",), "trsv": ("n",), "trsm": ("n", "r"), "fft": ("n",),
            "gemm": ("m", "n", "k"), "fir": ("n", "taps"), "conv1d": ("p", "r", "c", "k", "batch"),
            "conv2d": ("p", "q", "r", "s", "c", "k", "batch")}
_SIZE_KEYS = ("n", "m", "k", "r", "taps", "p", "q", "s", "c", "batch")


def kernel_dims(k: KernelEntry) -> dict:
    d = {key: getattr(k, key) for key in _SIZE_KEYS if getattr(k, key) is not None}
    if k.name == "fir":
        return {"p": d["n"], "r": d["taps"]}
    return d


def problem_of_kernel(k: KernelEntry) -> Optional[Problem]:
    """GEMM / FIR / convolutions as Timeloop problems (GEMM C[m,n] = A[m,k]·B[k,n] is a 1×1 convolution with
    N = m, C = k, K = n); None for the inductive kernels."""
    d = kernel_dims(k)
    if k.name == "gemm":
        sizes = {"N": d["m"], "C": d["k"], "K": d["n"]}
    elif k.name in ("fir", "conv1d", "conv2d"):
        sizes = {"N": d.get("batch", 1), "K": d.get("k", 1), "C": d.get("c", 1), "P": d["p"], "Q": d.get("q", 1),
                 "R": d["r"], "S": d.get("s", 1)}
    else:
        return None
    return Problem(tuple(int(sizes.get(x, 1)) for x in DIMS), 1, 1, k.dtype)


def _problem(e: ProblemEntry, file: Optional[str]) -> Problem:
    allowed = {"conv2d": DIMS, "conv1d": ("N", "K", "C", "P", "R"), "gemm": ("M", "N", "K")}[e.shape]
    for key, v in e.dims.items():
        if key not in allowed:
            raise SpecError(f"unknown dimension {short(key)} for a {e.shape} problem", file=file,
                            key="problem.dims", allowed=list(allowed))
        if not 1 <= v <= MAX_DIM:
            raise SpecError(f"bad value {v}: dimension {key} is 1..{MAX_DIM}", file=file, key=f"problem.dims.{key}")
    if e.shape == "gemm":
        sizes = {"N": e.dims.get("M", 1), "C": e.dims.get("K", 1), "K": e.dims.get("N", 1)}
    else:
        sizes = dict(e.dims)
    p = Problem(tuple(int(sizes.get(x, 1)) for x in DIMS), e.stride, e.dilation, e.dtype)
    if p.macs > MAX_MACS:
        raise SpecError(f"{p.macs:.3g} MACs is above {MAX_MACS:.0e}", file=file, key="problem.dims")
    return p


def spec_from_dict(data: Any, file: Optional[str] = None) -> DataflowSpec:
    e = validate(DataflowFile, data, file=file)
    if (e.kernel is None) == (e.problem is None):
        raise SpecError("give exactly one of kernel or problem", file=file, key="kernel",
                        hint="kernel: {name: cholesky, n: 64} or problem: {shape: conv2d, dims: {...}}")
    problem = None
    if e.kernel is not None:
        k = e.kernel
        for key in _NEEDS[k.name]:
            if getattr(k, key) is None:
                raise SpecError(f"kernel {k.name} needs {key}", file=file, key=f"kernel.{key}",
                                allowed=list(_ALLOWED[k.name]))
        for key in _SIZE_KEYS:
            if getattr(k, key) is not None and key not in _ALLOWED[k.name]:
                raise SpecError(f"{key} does not apply to the {k.name} kernel", file=file, key=f"kernel.{key}",
                                allowed=list(_ALLOWED[k.name]))
        problem = problem_of_kernel(k)
        dtype = k.dtype
    else:
        problem = _problem(e.problem, file)
        dtype = e.problem.dtype
    if e.mapping is not None:
        if problem is None:
            raise SpecError("a mapping applies to problem / gemm / fir / conv workloads", file=file, key="mapping")
        names = [lvl.level for lvl in e.mapping]
        for i, lvl in enumerate(e.mapping):
            if names.index(lvl.level) != i:  # one entry per storage level (the factors would multiply silently)
                raise SpecError(f"level {short(lvl.level)} has two mapping entries (entries {names.index(lvl.level)} "
                                f"and {i}): one entry per storage level", file=file, key=f"mapping[{i}].level")
            for part in ("temporal", "spatial"):
                for d, v in getattr(lvl, part).items():
                    if d not in DIMS:
                        raise SpecError(f"unknown dimension {short(d)}", file=file, key=f"mapping[{i}].{part}",
                                        allowed=list(DIMS))
                    if not 1 <= v <= MAX_DIM:
                        raise SpecError(f"bad factor {v}", file=file, key=f"mapping[{i}].{part}.{d}")
            bad = [c for c in lvl.order if c not in DIMS]
            if bad or len(set(lvl.order)) != len(lvl.order):
                raise SpecError(f"bad order {short(lvl.order)}: distinct letters of {''.join(DIMS)}, innermost "
                                "first", file=file, key=f"mapping[{i}].order")
    spec = DataflowSpec(e.name, e.source or (file or "inline"), e.kernel, problem,
                        tuple(e.mapping) if e.mapping else None, dtype)
    if spec.kernel is not None:
        spec.nest()  # size errors at load time
    return spec


def load_dataflow(ref: Any) -> DataflowSpec:
    """A dataflow workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, DataflowSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):  # the registry's transformer-style entry point is not used
    raise SpecError("dataflow workloads are files of their own (family: dataflow at the top level)", file=file,
                    key=f"{prefix}.family", hint="see docs/dataflow.md")


FAMILY = FamilyInfo(
    name="dataflow",
    summary="dense linear algebra and signal kernels on DSPs and spatial arrays: inductive loop nests (Cholesky, "
            "QR, TRSV, TRSM, FFT, GEMM, FIR, conv) mapped onto cores × lanes (REVEL), Timeloop-style mapping search",
    spec_type=DataflowSpec,
    architecture_schema=DataflowFile,
    build_spec=_build,
    model="parplan.models.dataflow",
    space="parplan.planner.spaces.dataflow",
    executor="parplan.executor.dataflow",
    verbs="parplan.cli.dataflow_out",
    load=load_dataflow,
)
