"""Dense decoder-only transformer spec, the ``dense-transformer`` family (its ``architecture:`` schema) and the
training job run on it."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError
from parplan.workloads.family import FamilyInfo

# bytes per stored value; mxfp8 / nvfp4 count the payload only (their block scales add 1/32 and 1/16 B per element)
BYTES_PER_VALUE = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "mxfp8": 1, "nvfp4": 0.5, "int8": 1}


@dataclass(frozen=True)
class TransformerSpec:
    """Architecture of a dense decoder-only transformer (GPT, Llama, …)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    ffn: str  # "gelu" (2 matrices) | "swiglu" (3 matrices)
    vocab: int
    tied_embeddings: bool = False
    head_dim: int | None = None  # default hidden // heads
    position: str = "rope"  # rope | alibi | learned
    max_position: int = 0  # rows of a learned position table
    norm: str = "layernorm"  # layernorm | rmsnorm
    bias: bool = False
    dropout: bool = False  # dropout masks stored for backward (GPT-style training); Llama-style models have none
    source: str = ""

    @property
    def family(self) -> str:
        """The model family (``architecture.family``) this spec belongs to."""
        return "dense-transformer"

    @property
    def head_dim_(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim_

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim_

    @property
    def ffn_matrices(self) -> int:
        return 3 if self.ffn == "swiglu" else 2

    # --- parameter counts (exact, weights + biases + norms) -------------------------------------------
    @property
    def attention_params(self) -> int:
        h = self.hidden
        w = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        b = (self.q_dim + 2 * self.kv_dim + h) if self.bias else 0
        return w + b

    @property
    def mlp_params(self) -> int:
        h, f = self.hidden, self.ffn_hidden
        w = self.ffn_matrices * h * f
        b = ((self.ffn_matrices - 1) * f + h) if self.bias else 0
        return w + b

    @property
    def norm_params_per_norm(self) -> int:
        return 2 * self.hidden if self.norm == "layernorm" else self.hidden

    @property
    def layer_params(self) -> int:
        return self.attention_params + self.mlp_params + 2 * self.norm_params_per_norm

    @property
    def embedding_params(self) -> int:
        """Input embedding table (+ learned position table)."""
        return self.vocab * self.hidden + (self.max_position * self.hidden if self.position == "learned" else 0)

    @property
    def output_params(self) -> int:
        """Output projection (0 when tied to the input embedding) + final norm."""
        return (0 if self.tied_embeddings else self.vocab * self.hidden) + self.norm_params_per_norm

    @property
    def total_params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params + self.output_params


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)


# Largest accepted architecture and training sizes (YAML schemas, Hugging Face configs, CLI overrides).  Each is
# far beyond any published model, so only a typo or garbage is refused, and every product the cost model forms
# (parameters × tokens × layers …) stays a finite float.
MAX_LAYERS = 4096  # 30× the deepest published LLMs (Megatron 1T: 128 layers, Llama 3 405B: 126)
MAX_HIDDEN = 262_144  # 10× the widest (Megatron 1T: 25,600)
MAX_HEADS = 65_536  # 500× the most attention heads (Llama 3 405B: 128)
MAX_HEAD_DIM = 65_536  # 250× the usual 64–256
MAX_FFN_HIDDEN = 1_048_576  # 20× the widest MLP (Llama 3 405B: 53,248)
MAX_VOCAB = 16_777_216  # 64× the largest vocabularies (~256k)
MAX_POSITION = 16_777_216  # rows of a position table / tokens of a window: 2^24
MAX_EXPERTS = 65_536  # 256× DeepSeek-V3's 256 routed experts
MAX_SHARED_EXPERTS = 1024  # always-on experts per layer (published models have 0–2)
MAX_LORA_RANK = MAX_HIDDEN  # MLA latent ranks (DeepSeek-V3: 512 / 1,536)
MAX_MTP_LAYERS = 16  # multi-token-prediction modules (DeepSeek-V3: 1)
MAX_SEQ_LEN = 16_777_216  # 2^24 tokens per sequence: 16× the longest published training contexts (1M)
MAX_GLOBAL_BATCH = 16_777_216  # 2^24 sequences per step: 10^4× the usual 10^2–10^3


class ArchitectureEntry(_Strict):
    """The ``architecture:`` mapping of the dense-transformer family."""

    family: Literal["dense-transformer"] = "dense-transformer"
    layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden: int = Field(gt=0, le=MAX_HIDDEN)
    heads: int = Field(gt=0, le=MAX_HEADS)
    kv_heads: Optional[int] = Field(default=None, gt=0, le=MAX_HEADS)
    ffn_hidden: Optional[int] = Field(default=None, gt=0, le=MAX_FFN_HIDDEN)
    ffn: Literal["gelu", "swiglu"] = "gelu"
    vocab: int = Field(gt=0, le=MAX_VOCAB)
    tied_embeddings: bool = False
    head_dim: Optional[int] = Field(default=None, gt=0, le=MAX_HEAD_DIM)
    position: Literal["rope", "alibi", "learned"] = "rope"
    max_position: Optional[int] = Field(default=None, gt=0, le=MAX_POSITION)
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    bias: bool = False
    dropout: bool = False


def check_dense_architecture(a: ArchitectureEntry, file: str | None, prefix: str, *, mla: bool = False) -> int:
    """The checks every transformer architecture shares; returns kv_heads (default: heads)."""
    kv = a.kv_heads if a.kv_heads is not None else a.heads
    if a.heads % kv != 0:
        raise SpecError(f"kv_heads={kv} does not divide heads={a.heads}", file=file, key=f"{prefix}.kv_heads",
                        hint="kv_heads must divide heads (GQA groups of equal size)")
    if not mla and a.head_dim is None and a.hidden % a.heads != 0:
        raise SpecError(f"heads={a.heads} does not divide hidden={a.hidden}", file=file, key=f"{prefix}.heads",
                        hint="give head_dim explicitly when hidden is not heads × head_dim")
    if a.position == "learned" and a.max_position is None:
        raise SpecError("position: learned needs max_position (rows of the position table)", file=file,
                        key=f"{prefix}.max_position")
    return kv


def dense_fields(a: ArchitectureEntry, kv: int) -> dict:
    """The TransformerSpec fields of a validated architecture mapping (name and source excluded)."""
    return dict(
        layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=kv,
        ffn_hidden=a.ffn_hidden if a.ffn_hidden is not None else 4 * a.hidden,
        ffn=a.ffn, vocab=a.vocab, tied_embeddings=a.tied_embeddings, head_dim=a.head_dim,
        position=a.position, max_position=a.max_position or 0, norm=a.norm, bias=a.bias, dropout=a.dropout,
    )


def spec_from_architecture(a: ArchitectureEntry, name: str, source: str, file: str | None,
                           prefix: str = "architecture") -> TransformerSpec:
    kv = check_dense_architecture(a, file, prefix)
    return TransformerSpec(name=name, source=source, **dense_fields(a, kv))


FAMILY = FamilyInfo(
    name="dense-transformer",
    summary="dense decoder-only transformer (GPT, Llama, …): every layer has attention and one dense MLP",
    spec_type=TransformerSpec,
    architecture_schema=ArchitectureEntry,
    build_spec=spec_from_architecture,
    model="parplan.models.training",
    space="parplan.planner.spaces.dense",
    executor="parplan.executor.dense",
    hetero_model="parplan.models.hetero", hetero_planner="parplan.planner.hetero",
)


MASK_KINDS = ("causal", "document", "sliding_window", "block_sparse")
SEQ_DISTS = ("lognormal", "uniform", "fixed", "empirical")
_DIST_KEYS = {"lognormal": ("median", "sigma"), "uniform": ("min", "max"), "fixed": ("length",),
              "empirical": ("lengths",)}
_DIST_OPTIONAL = {"lognormal": ("max",), "uniform": (), "fixed": (), "empirical": ("weights",)}
_MASK_RE = re.compile(r"^(causal|document)$|^sliding_window\((\d+)\)$|^block_sparse\(([0-9.eE+-]+)\)$")
MAX_SEQ_SAMPLES = 1024  # packs drawn from a distribution to measure its statistics
MAX_SEQ_TOKENS = 1 << 28  # token positions over the drawn packs (each costs per-token array work, ~0.1 µs)


class SequencesEntry(_Strict):
    """``training.sequences``: a document-length distribution (``dist`` and its keys) *or* explicit ``packs``
    (document lengths of each packed sample), and the attention ``mask``."""

    dist: Optional[Literal["lognormal", "uniform", "fixed", "empirical"]] = None
    median: Optional[float] = Field(default=None, gt=0, le=MAX_SEQ_LEN, strict=False)
    sigma: Optional[float] = Field(default=None, ge=0, le=8, strict=False)
    min: Optional[int] = Field(default=None, gt=0, le=MAX_SEQ_LEN)
    max: Optional[int] = Field(default=None, gt=0, le=MAX_SEQ_LEN)
    length: Optional[int] = Field(default=None, gt=0, le=MAX_SEQ_LEN)
    lengths: Optional[list[int]] = Field(default=None, min_length=1, max_length=65_536)
    weights: Optional[list[float]] = Field(default=None, min_length=1, max_length=65_536, strict=False)
    packs: Optional[list[list[int]]] = Field(default=None, min_length=1, max_length=MAX_SEQ_SAMPLES)
    mask: str = "causal"
    samples: int = Field(default=16, gt=0, le=MAX_SEQ_SAMPLES)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


@dataclass(frozen=True)
class SequenceSpec:
    """A validated sequence workload: ``dist`` with ``params`` (sorted (key, value) pairs) or ``packs``;
    ``mask`` one of MASK_KINDS with ``mask_param`` (the window in tokens, or the kept block fraction)."""

    dist: str | None = None
    params: tuple = ()
    packs: tuple | None = None
    mask: str = "causal"
    mask_param: float = 0.0
    samples: int = 16
    seed: int = 0


def parse_mask(text: str, key: str = "training.sequences.mask", file: str | None = None) -> tuple[str, float]:
    m = _MASK_RE.match(str(text).strip())
    if not m:
        raise SpecError(f"bad mask {text!r}", file=file, key=key,
                        allowed=["causal", "document", "sliding_window(W)", "block_sparse(DENSITY)"])
    if m.group(1):
        return m.group(1), 0.0
    if m.group(2):
        w = int(m.group(2))
        if not 0 < w <= MAX_SEQ_LEN:
            raise SpecError(f"bad window {w}: must be 1 to {MAX_SEQ_LEN:,} tokens", file=file, key=key)
        return "sliding_window", float(w)
    try:
        d = float(m.group(3))
    except ValueError:
        d = -1.0
    if not 0.0 < d <= 1.0:
        raise SpecError(f"bad density {m.group(3)!r}: must be in (0, 1]", file=file, key=key)
    return "block_sparse", d


def sequence_spec(e: SequencesEntry, seq_len: int, file: str | None = None) -> SequenceSpec:
    """The checked ``SequenceSpec`` of a ``training.sequences`` entry for samples of ``seq_len`` tokens."""
    key = "training.sequences"
    mask, mp = parse_mask(e.mask, file=file)
    given = e.model_fields_set - {"mask", "samples", "seed"}
    if (e.dist is None) == (e.packs is None):
        raise SpecError("give exactly one of 'dist' (a length distribution) or 'packs' (explicit packs)",
                        file=file, key=key, allowed=["dist", "packs"])
    if e.packs is not None:
        extra = sorted(given - {"packs"})
        if extra:
            raise SpecError(f"{extra[0]!r} applies to a distribution, not to explicit packs", file=file,
                            key=f"{key}.{extra[0]}", hint="remove the key")
        for i, pk in enumerate(e.packs):
            if not pk or any(int(x) <= 0 for x in pk):
                raise SpecError(f"pack {i} needs document lengths > 0", file=file, key=f"{key}.packs")
            if sum(pk) > seq_len:
                raise SpecError(f"pack {i} holds {sum(pk):,} tokens, more than seq_len {seq_len:,}", file=file,
                                key=f"{key}.packs", hint="each pack fills at most one sample (the rest is padding)")
        return SequenceSpec(packs=tuple(tuple(int(x) for x in pk) for pk in e.packs), mask=mask, mask_param=mp,
                            samples=e.samples, seed=e.seed)
    if e.samples * seq_len > MAX_SEQ_TOKENS:
        raise SpecError(f"samples × seq_len = {e.samples:,} × {seq_len:,} token positions is above "
                        f"{MAX_SEQ_TOKENS:,} (the drawn packs are priced token by token)", file=file,
                        key=f"{key}.samples",
                        hint=f"at most {max(MAX_SEQ_TOKENS // seq_len, 1):,} samples at this seq_len")
    need, opt = _DIST_KEYS[e.dist], _DIST_OPTIONAL[e.dist]
    for k in need:
        if getattr(e, k) is None:
            raise SpecError(f"dist {e.dist} needs {k!r}", file=file, key=f"{key}.{k}")
    extra = sorted(given - {"dist", *need, *opt})
    if extra:
        raise SpecError(f"{extra[0]!r} does not apply to dist {e.dist}", file=file, key=f"{key}.{extra[0]}",
                        allowed=list(need + opt))
    if e.dist == "uniform" and e.min > e.max:
        raise SpecError(f"min {e.min:,} > max {e.max:,}", file=file, key=f"{key}.min")
    if e.dist == "empirical":
        if e.weights is not None and (len(e.weights) != len(e.lengths) or min(e.weights) < 0 or sum(e.weights) <= 0):
            raise SpecError("weights need one value ≥ 0 per length, not all 0", file=file, key=f"{key}.weights")
        if min(e.lengths) <= 0:
            raise SpecError("lengths must be > 0", file=file, key=f"{key}.lengths")
    params = []
    for k in need + opt:
        v = getattr(e, k)
        if v is not None:
            params.append((k, tuple(v) if isinstance(v, list) else v))
    return SequenceSpec(dist=e.dist, params=tuple(params), mask=mask, mask_param=mp, samples=e.samples,
                        seed=e.seed)


@dataclass(frozen=True)
class TrainingJob:
    seq_len: int
    global_batch: int  # sequences per optimizer step
    precision: str = "bf16"  # fp32 | fp16 | bf16 | fp8 | mxfp8 | nvfp4 | int8
    optimizer: str = "adam"  # adam | adamw | sgd
    # attention kernel: "flash" (fused, scores never stored; FlashAttention, cuDNN/TE fused attention) or
    # "materialized" (QKᵀ written to memory, softmax/dropout as separate kernels; Megatron-LM before 2023)
    attention: str = "flash"
    # the training framework (a catalogs/frameworks id): which overlaps and fusions apply and which plans exist
    framework: str = "megatron-core"
    # mixture-of-experts only (None = the family's default): expert load imbalance, max/mean tokens per EP rank
    # (1.0 = forced balancing, as benchmark runs do), and the multi-token-prediction modules trained
    expert_imbalance: float | None = None
    mtp_layers: int | None = None
    # the run's own expert all-to-all overlap (none | 1f1b | dualpipe); None = the framework profile's
    ep_a2a_overlap: str | None = None
    # the sequence workload (document lengths per packed sample and the attention mask); None = every sample one
    # causal sequence of seq_len tokens
    sequences: "SequenceSpec | None" = None

    @property
    def tokens_per_step(self) -> int:
        return self.seq_len * self.global_batch


@dataclass(frozen=True)
class Workload:
    name: str
    model: TransformerSpec
    training: TrainingJob
    source_file: str | None = None

    def with_training(self, **changes: object) -> "Workload":
        return replace(self, training=replace(self.training, **changes))
