"""Diffusion-transformer inference workloads (``family: dit-inference``): one request is ``steps`` denoising steps of a
DiT over ``tokens`` latent tokens per sample (full, non-causal attention; no KV cache, no decode) — the sequence-
parallel (Ulysses / ring / hybrid / topology-aware) planning problem of SEEDS.md S11 (SwiftFusion).

A workload file::

    family: dit-inference
    name: flux-64k
    model: flux1-dev                  # a catalog id (catalogs/workloads/dit/) or an inline ``architecture:`` mapping
    tokens: 65536                     # latent (image/video) tokens per sample, or latent: {frames, height, width}
    batch: 1
    steps: 50
    precision: bf16
    search: {sp: [ulysses, ring, usp, torus], tp: [1, 2], comm: [two-sided, one-sided], chunks: [1, 2, 4]}

An architecture (catalog entry or inline)::

    {hidden: 3072, heads: 24, double_blocks: 19, single_blocks: 38, mlp_ratio: 4, text_tokens: 512,
     attention: joint, source: "…"}

``double_blocks`` are MM-DiT blocks with separate image and text weights (FLUX, SD3, HunyuanVideo), ``single_blocks``
one shared set of weights; ``attention: joint`` concatenates the text tokens to the sequence, ``cross`` attends to them
in a cross-attention (Wan2.1) instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import Name, validate
from parplan.workloads.family import FamilyInfo

SP_KINDS = ("ulysses", "ring", "usp", "torus")
COMMS = ("two-sided", "one-sided")
MAX_TOKENS = 4 * 2 ** 20  # 4M tokens per sample (a minute of 720p video is ~0.5M latent tokens)
VALUE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class ArchEntry(_Strict):
    hidden: int = Field(ge=64, le=65536)
    heads: int = Field(ge=1, le=1024)
    head_dim: Optional[int] = Field(default=None, ge=8, le=1024)
    double_blocks: int = Field(default=0, ge=0, le=1024)
    single_blocks: int = Field(default=0, ge=0, le=1024)
    mlp_ratio: float = Field(default=4.0, gt=0, le=64, strict=False)
    text_tokens: int = Field(default=0, ge=0, le=65536)
    attention: Literal["joint", "cross"] = "joint"
    params: Optional[float] = Field(default=None, gt=0, le=1e13, strict=False)  # stated total (else counted)
    source: str = Field(min_length=1)


class LatentEntry(_Strict):
    frames: int = Field(default=1, ge=1, le=100_000)  # latent frames (after the VAE's temporal stride)
    height: int = Field(ge=1, le=65536)  # latent height / width (after the VAE's spatial stride)
    width: int = Field(ge=1, le=65536)
    patch: list[int] = Field(default=[1, 2, 2], min_length=3, max_length=3)  # (t, h, w) patch of the DiT


class SearchEntry(_Strict):
    sp: list[Literal["ulysses", "ring", "usp", "torus"]] = Field(default=list(SP_KINDS), min_length=1, max_length=4)
    tp: list[int] = Field(default=[1, 2, 4, 8], min_length=1, max_length=8)
    comm: list[Literal["two-sided", "one-sided"]] = Field(default=list(COMMS), min_length=1, max_length=2)
    chunks: list[int] = Field(default=[1, 2, 4], min_length=1, max_length=8)
    dp: bool = True  # also search data-parallel replicas of whole requests


class DiTFile(_Strict):
    family: Literal["dit-inference"]
    name: Name
    source: Optional[str] = None
    description: Optional[str] = None
    model: Optional[str] = None
    architecture: Optional[ArchEntry] = None
    tokens: Optional[int] = Field(default=None, ge=1, le=MAX_TOKENS)
    latent: Optional[LatentEntry] = None
    batch: int = Field(default=1, ge=1, le=4096)
    steps: int = Field(default=50, ge=1, le=10_000)
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    search: SearchEntry = SearchEntry()


@dataclass(frozen=True)
class DiTArch:
    name: str
    hidden: int
    heads: int
    head_dim: int
    double_blocks: int
    single_blocks: int
    mlp_ratio: float
    text_tokens: int
    attention: str
    params: float
    source: str

    @property
    def layers(self) -> int:
        return self.double_blocks + self.single_blocks

    @property
    def ffn(self) -> float:
        return self.mlp_ratio * self.hidden


@dataclass(frozen=True)
class DiTSpec:
    name: str
    source: str
    arch: DiTArch
    image_tokens: int  # latent tokens per sample
    batch: int
    steps: int
    precision: str
    sp: tuple
    tp: tuple
    comm: tuple
    chunks: tuple
    search_dp: bool
    family: str = "dit-inference"

    @property
    def tokens(self) -> int:
        """Tokens in the attention sequence: the latent tokens, plus the text tokens under joint attention."""
        a = self.arch
        return self.image_tokens + (a.text_tokens if a.attention == "joint" else 0)

    @property
    def value_bytes(self) -> float:
        return VALUE_BYTES[self.precision]


def counted_params(hidden: int, ffn: float, double: int, single: int, cross: bool) -> float:
    """Block weights: a single block 4h² (QKV, O) + 2·h·f (MLP) + 3h² adaLN modulation (shift/scale/gate); a double
    block two such streams with 6h² modulation each (FLUX ``DoubleStreamBlock``: ``Modulation(double=True)``); a
    cross-attention block (Wan2.1) 4h² more for its Q/K/V/O."""
    h = float(hidden)
    one = 4 * h * h + 2 * h * ffn
    return single * (one + 3 * h * h) + double * 2 * (one + 6 * h * h) + (single * 4 * h * h if cross else 0.0)


def arch_from_entry(e: ArchEntry, name: str, file: "str | None", prefix: str) -> DiTArch:
    hd = e.head_dim or e.hidden // e.heads
    if e.head_dim is None and e.hidden % e.heads:
        raise SpecError(f"hidden {e.hidden} is not a multiple of heads {e.heads}: give head_dim", file=file,
                        key=f"{prefix}head_dim")
    if e.double_blocks + e.single_blocks == 0:
        raise SpecError("a DiT needs at least one block: double_blocks + single_blocks ≥ 1", file=file,
                        key=f"{prefix}single_blocks")
    if e.attention == "cross" and e.double_blocks:
        raise SpecError("cross-attention DiTs have single-stream blocks only (double_blocks: 0)", file=file,
                        key=f"{prefix}double_blocks")
    params = e.params or counted_params(e.hidden, e.mlp_ratio * e.hidden, e.double_blocks, e.single_blocks,
                                        e.attention == "cross")
    return DiTArch(name, e.hidden, e.heads, hd, e.double_blocks, e.single_blocks, float(e.mlp_ratio), e.text_tokens,
                   e.attention, float(params), e.source)


def catalog_ids() -> list[str]:
    from parplan.catalogs import catalog_dir

    return sorted(p.stem for p in catalog_dir("workloads", "dit").glob("*.yaml"))


def catalog_arch(ident: str, file: "str | None" = None) -> DiTArch:
    from parplan.catalogs import catalog_dir
    from parplan.spec import load_yaml_file

    ids = catalog_ids()
    if ident not in ids:
        raise SpecError(f"unknown DiT model {short(ident)}", file=file, key="model", allowed=ids,
                        hint=did_you_mean(ident, ids))
    path = catalog_dir("workloads", "dit") / f"{ident}.yaml"
    data = load_yaml_file(path)
    return arch_from_entry(validate(ArchEntry, data, file=str(path)), ident, str(path), "")


def spec_from_dict(data: Any, file: "str | None" = None) -> DiTSpec:
    e = validate(DiTFile, data, file=file)
    if (e.model is None) == (e.architecture is None):
        raise SpecError("give exactly one of model (a catalog id) or architecture", file=file, key="model",
                        allowed=catalog_ids())
    arch = catalog_arch(e.model, file) if e.model else arch_from_entry(e.architecture, e.name, file, "architecture.")
    if (e.tokens is None) == (e.latent is None):
        raise SpecError("give exactly one of tokens or latent", file=file, key="tokens")
    if e.latent is not None:
        lt = e.latent
        if any(p < 1 or p > 64 for p in lt.patch):
            raise SpecError("patch entries are whole numbers 1..64", file=file, key="latent.patch")
        tokens = math.ceil(lt.frames / lt.patch[0]) * math.ceil(lt.height / lt.patch[1]) * math.ceil(
            lt.width / lt.patch[2])
        if tokens > MAX_TOKENS:
            raise SpecError(f"latent makes {tokens:,} tokens, above {MAX_TOKENS:,}", file=file, key="latent")
    else:
        tokens = e.tokens
    s = e.search
    for key, vals, hi in (("tp", s.tp, 64), ("chunks", s.chunks, 64)):
        if any(v < 1 or v > hi for v in vals):
            raise SpecError(f"{key} values are whole numbers 1..{hi}", file=file, key=f"search.{key}")
    return DiTSpec(e.name, e.source or (file or "inline"), arch, int(tokens), e.batch, e.steps, e.precision,
                   tuple(dict.fromkeys(s.sp)), tuple(sorted(set(s.tp))), tuple(dict.fromkeys(s.comm)),
                   tuple(sorted(set(s.chunks))), s.dp)


def load_dit(ref: Any) -> DiTSpec:
    """A DiT workload from a YAML path, a mapping or a spec."""
    if isinstance(ref, DiTSpec):
        return ref
    if isinstance(ref, dict):
        return spec_from_dict(ref)
    from parplan.spec import load_yaml_file

    return spec_from_dict(load_yaml_file(str(ref)), file=str(ref))


def _build(entry, name, source, file, prefix):  # the registry's transformer-style entry point is not used
    raise SpecError("DiT inference workloads are files of their own (family: dit-inference at the top level)",
                    file=file, key=f"{prefix}.family", hint="see docs/dit.md")


FAMILY = FamilyInfo(
    name="dit-inference",
    summary="diffusion-transformer inference: denoising steps under Ulysses / ring / USP / topology-aware "
            "overlapped sequence parallelism (+ TP, replicas), one- vs two-sided communication",
    spec_type=DiTSpec,
    architecture_schema=DiTFile,
    build_spec=_build,
    model="parplan.models.dit",
    space="parplan.planner.spaces.dit",
    executor="parplan.executor.dit",
    verbs="parplan.cli.dit_out",
    load=load_dit,
)
