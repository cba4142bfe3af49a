"""Offload workloads (``family: offload``): a chain of data-parallel kernels applied to n elements, each stage an actor
that runs on the host CPU or on one accelerator of an offload node (``hardware/offload.py``) — CAF's OpenCL actors
(SEEDS.md S13) — or the texture-vs-octree layer storage of a 3D heritage information system (S25).

A kernel-chain file::

    family: offload
    name: mandelbrot
    kernels:                                  # the chain, in order; one stage = one kernel actor
      - {name: mandelbrot, ops_per_element: 1000, bytes_in: 8, bytes_out: 4}
    sizes: [1.0e3, 1.0e4, 1.0e5, 1.0e6, 1.0e7, 1.0e8]   # n, the elements per request (the sweep)
    requests: 1                               # requests streamed through the chain (actors pipeline them)
    remote: false                             # the device actors live on another node (network both ways)
    search: {chunks: [1, 4, 16], api: [actor, native]}

``bytes_in`` / ``bytes_out`` are per element (what the stage reads and writes); a stage's input is the previous
stage's output, so a device-resident chain moves only the first input and the last output.

A heritage file::

    family: offload
    name: heritage-5m
    heritage: {triangles: 5.0e6, layers: 8, texture: 4096, data_bytes: 4, mask_bytes: 1, coverage: 0.8,
               painted_fraction: 1.0, brush_texels: [1.0e3, 1.0e5, 1.0e6], screen: [1920, 1080]}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, short
from parplan.spec import Name, validate
from parplan.workloads.family import FamilyInfo

MAX_STAGES = 16
MAX_SIZES = 64
MAX_ELEMENTS = 1e12
MAX_REQUESTS = 10_000
Number = Annotated[float, Field(strict=False)]  # YAML 1.1 reads 1.0e6 as text: accept it as a number


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class KernelEntry(_Strict):
    name: Name
    ops_per_element: float = Field(gt=0, le=1e9, strict=False)  # c: element ops (FP32 ops) per element
    bytes_in: float = Field(ge=0, le=1e6, strict=False)  # b_in per element
    bytes_out: float = Field(ge=0, le=1e6, strict=False)  # b_out per element


class SearchEntry(_Strict):
    chunks: list[int] = Field(default=[1, 4, 16], min_length=1, max_length=16)
    api: list[Literal["actor", "native"]] = Field(default=["actor"], min_length=1, max_length=2)


class HeritageEntry(_Strict):
    triangles: float = Field(gt=0, le=1e10, strict=False)
    layers: int = Field(ge=1, le=1024)
    texture: int = Field(ge=16, le=65536)  # side of each square layer texture, texels
    data_bytes: float = Field(default=4, gt=0, le=64, strict=False)  # RGBA8 data texel
    mask_bytes: float = Field(default=1, ge=0, le=64, strict=False)  # R8 mask texel
    coverage: float = Field(default=0.8, gt=0, le=1, strict=False)  # share of texels mapped onto the surface (atlas)
    painted_fraction: float = Field(default=1.0, gt=0, le=1, strict=False)  # surface points the octree stores
    leaf_overhead_bytes: float = Field(default=16, ge=0, le=1024, strict=False)  # key/position + pointer per leaf
    node_bytes: float = Field(default=72, gt=0, le=4096, strict=False)  # internal node: 8 child pointers + header
    brush_texels: list[Number] = Field(default=[1e3, 1e5, 1e6], min_length=1, max_length=MAX_SIZES)
    screen: list[Annotated[int, Field(ge=1, le=1 << 16)]] = Field(default=[1920, 1080], min_length=2, max_length=2)
    octree_threads: int = Field(default=1, ge=1, le=1024)  # CPU threads editing/querying the octree


class OffloadFile(_Strict):
    family: Literal["offload"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    kernels: Optional[list[KernelEntry]] = Field(default=None, min_length=1, max_length=MAX_STAGES)
    sizes: Optional[list[Number]] = Field(default=None, min_length=1, max_length=MAX_SIZES)
    requests: int = Field(default=1, ge=1, le=MAX_REQUESTS)
    remote: bool = False
    search: SearchEntry = SearchEntry()
    heritage: Optional[HeritageEntry] = None


@dataclass(frozen=True)
class Kernel:
    name: str
    ops_per_element: float
    bytes_in: float
    bytes_out: float


@dataclass(frozen=True)
class OffloadSpec:
    name: str
    source: str
    kernels: tuple  # Kernel, the chain ( () for a heritage workload )
    sizes: tuple
    requests: int
    remote: bool
    chunks: tuple
    apis: tuple
    heritage: Optional[HeritageEntry]
    family: str = "offload"

    @property
    def is_heritage(self) -> bool:
        return self.heritage is not None


def spec_from_dict(data: Any, file: "str | None" = None) -> OffloadSpec:
    e = validate(OffloadFile, data, file=file)
    if (e.kernels is None) == (e.heritage is None):
        raise SpecError("give exactly one of kernels or heritage", file=file, key="kernels")
    if e.heritage is not None:
        if e.sizes is not None or e.remote or e.requests != 1:
            raise SpecError("sizes, requests and remote apply to kernel chains, not heritage", file=file, key="heritage")
        h = e.heritage
        if any(not 1 <= k <= h.texture ** 2 for k in h.brush_texels):
            raise SpecError(f"brush_texels must lie in 1..texture² = {h.texture ** 2:,}", file=file,
                            key="heritage.brush_texels")
        return OffloadSpec(e.name, e.source or (file or "inline"), (), (), 1, False, (1,), ("native",), h)
    sizes = e.sizes or [1e3, 1e4, 1e5, 1e6, 1e7, 1e8]
    bad = [s for s in sizes if not 1 <= s <= MAX_ELEMENTS]
    if bad:
        raise SpecError(f"bad value {short(bad[0])}: sizes are element counts 1..{MAX_ELEMENTS:g}", file=file,
                        key="sizes")
    if any(c < 1 or c > 4096 for c in e.search.chunks):
        raise SpecError("chunks are whole numbers 1..4096", file=file, key="search.chunks")
    kernels = tuple(Kernel(k.name, k.ops_per_element, k.bytes_in, k.bytes_out) for k in e.kernels)
    return OffloadSpec(e.name, e.source or (file or "inline"), kernels, tuple(sorted(set(float(s) for s in sizes))),
                       e.requests, e.remote, tuple(sorted(set(e.search.chunks))), tuple(dict.fromkeys(e.search.api)),
                       None)


def load_offload(ref: Any) -> OffloadSpec:
    """An offload workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, OffloadSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):  # the registry's transformer-style entry point is not used
    raise SpecError("offload workloads are files of their own (family: offload at the top level)", file=file,
                    key=f"{prefix}.family", hint="see docs/offload.md")


FAMILY = FamilyInfo(
    name="offload",
    summary="offload from actors: kernel chains on a host + GPU/coprocessor/integrated GPU (transfer, launch, "
            "device residency, break-even size) and texture-vs-octree layer storage on one GPU",
    spec_type=OffloadSpec,
    architecture_schema=OffloadFile,
    build_spec=_build,
    model="parplan.models.offload",
    space="parplan.planner.spaces.offload",
    executor="parplan.executor.offload",
    verbs="parplan.cli.offload_out",
    load=load_offload,
)
