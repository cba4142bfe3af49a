"""Mixture-of-experts decoder-only transformers (family ``moe-transformer``): Mixtral, DeepSeek-V2/V3 (MLA, shared
experts, MTP), Qwen2/3-MoE, gpt-oss, Llama 4, Grok-1.

:class:`MoESpec` extends :class:`TransformerSpec`; every inherited field keeps its meaning (``ffn_hidden`` is the
FFN of the *dense* layers). Counting conventions, used by every property below:

* a layer is attention + FFN block + 2 norms; an MoE FFN block is ``experts`` routed experts (each an MLP of
  ``moe_ffn_hidden``), ``shared_experts`` always-on experts and a router (Shazeer et al. 2017; Fedus et al. 2022);
* ``total_params`` is the main model as published totals count it: the multi-token-prediction modules
  (DeepSeek-V3 §2.2) are excluded (``total_params_with_mtp`` adds them);
* ``active_params`` counts the whole input embedding table and the output head with the top-k routed experts of
  every MoE layer (the convention of Mistral's "12.9B active", Qwen's "A3B"/"A22B" and Meta's "17B active");
  ``active_params_no_embedding`` drops the input embedding table (the convention that reproduces DeepSeek's
  "activated" counts, V2-Lite 2.4B and V3 37B, and the gpt-oss model card's 5.13B / 3.61B "active", Table 1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from pydantic import Field

from parplan.errors import SpecError
from parplan.workloads.family import FamilyInfo
from parplan.workloads.transformer import (MAX_EXPERTS, MAX_FFN_HIDDEN, MAX_HEAD_DIM, MAX_LAYERS, MAX_LORA_RANK,
                                           MAX_MTP_LAYERS, MAX_POSITION, MAX_SHARED_EXPERTS, ArchitectureEntry,
                                           TransformerSpec, check_dense_architecture, dense_fields)


@dataclass(frozen=True, kw_only=True)
class MoESpec(TransformerSpec):
    """Architecture of a mixture-of-experts decoder-only transformer."""

    experts: int  # routed experts per MoE layer
    top_k: int  # routed experts per token
    moe_ffn_hidden: int  # FFN hidden size of one routed expert
    shared_experts: int = 0  # always-active experts per MoE layer
    shared_ffn_hidden: int = 0  # FFN hidden size of one shared expert; 0 ⇒ moe_ffn_hidden
    first_dense_layers: int = 0  # leading layers with a dense FFN (DeepSeek first_k_dense_replace)
    moe_every: int = 1  # after them, layer i is MoE when (i - first_dense_layers) % moe_every == moe_every - 1
    # multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank > 0 ⇒ MLA
    q_lora_rank: int = 0  # 0 = plain q projection
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    mtp_layers: int = 0  # DeepSeek-V3 multi-token-prediction modules
    sliding_window: int = 0  # tokens of a local / chunked attention window; 0 = none
    full_attention_every: int = 1  # every n-th layer (i % n == n - 1) has full attention, the others the window
    expert_bias: bool = False  # expert MLPs carry biases (gpt-oss)
    router_bias: bool = False  # E router bias values (gpt-oss router bias, DeepSeek-V3 e_score_correction_bias)

    @property
    def family(self) -> str:
        return "moe-transformer"

    # --- structure ------------------------------------------------------------------------------------------
    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def head_dim_(self) -> int:
        """Per-head q/k dimension; for MLA qk_nope + qk_rope (the head dim the attention kernel sees)."""
        if self.is_mla and self.head_dim is None:
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return super().head_dim_

    @property
    def shared_ffn_hidden_(self) -> int:
        return self.shared_ffn_hidden or self.moe_ffn_hidden

    @property
    def moe_layer_mask(self) -> tuple[bool, ...]:
        """Per layer: True for an MoE layer.  Matches HF ``Llama4TextConfig.moe_layers`` = range(step-1, L, step)
        (first_dense_layers 0) and DeepSeek's dense first ``first_k_dense_replace`` layers (moe_every 1)."""
        k, n = self.first_dense_layers, self.moe_every
        return tuple(i >= k and (i - k) % n == n - 1 for i in range(self.layers))

    @property
    def n_moe_layers(self) -> int:
        return sum(self.moe_layer_mask)

    @property
    def n_dense_layers(self) -> int:
        return self.layers - self.n_moe_layers

    @property
    def full_attention_mask(self) -> tuple[bool, ...]:
        """Per layer: True for full attention.  gpt-oss ``layer_types`` alternate sliding/full from layer 0
        (full at odd i, n = 2); Llama 4 ``no_rope_layers`` put full attention at (i + 1) % 4 == 0 (n = 4)."""
        n = self.full_attention_every
        return tuple(self.sliding_window == 0 or i % n == n - 1 for i in range(self.layers))

    @property
    def n_full_attention_layers(self) -> int:
        return sum(self.full_attention_mask)

    @property
    def attention_projections(self) -> tuple[tuple[int, int, str], ...]:
        """(K, N, split) of every attention GEMM of one token, split = how tensor parallelism cuts it:
        GQA: fused QKV column-parallel, output row-parallel (Shoeybi et al. 2019 §3);
        MLA: the q/kv down-projections are duplicated on every TP rank ("none"), the up-projections column- and
        the output row-parallel (Megatron-Core megatron/core/transformer/multi_latent_attention.py,
        MLASelfAttention: linear_q_down_proj / linear_kv_down_proj built with parallel_mode='duplicated')."""
        h = self.hidden
        if not self.is_mla:
            return ((h, self.q_dim + 2 * self.kv_dim, "col"), (self.q_dim, h, "row"))
        H, nope, rope, v = self.heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        qk = H * (nope + rope)
        q = ((h, self.q_lora_rank, "none"), (self.q_lora_rank, qk, "col")) if self.q_lora_rank else ((h, qk, "col"),)
        return q + ((h, self.kv_lora_rank + rope, "none"), (self.kv_lora_rank, H * (nope + v), "col"),
                    (H * v, h, "row"))

    @property
    def attn_qk_dim(self) -> int:
        """Width of Q (and K) entering QKᵀ: heads·(nope + rope) for MLA (DeepSeek-V2 §2.1.3), else q_dim."""
        return self.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim) if self.is_mla else self.q_dim

    @property
    def attn_v_dim(self) -> int:
        """Width of V entering AV: heads·v_head_dim for MLA (DeepSeek-V2 §2.1.3), else q_dim."""
        return self.heads * self.v_head_dim if self.is_mla else self.q_dim

    # --- parameter counts (exact integers) --------------------------------------------------------------------
    def _norm(self, width: int) -> int:
        return 2 * width if self.norm == "layernorm" else width

    @property
    def attention_params(self) -> int:
        # MLA: the projections of attention_projections + RMSNorms on the q and kv latents (DeepSeek-V2 §2.1.2;
        # HF DeepseekV3Attention q_a_layernorm, kv_a_layernorm); GQA: TransformerSpec's count
        if not self.is_mla:
            return super().attention_params
        w = sum(K * N for K, N, _ in self.attention_projections)
        return w + (self._norm(self.q_lora_rank) if self.q_lora_rank else 0) + self._norm(self.kv_lora_rank)

    @property
    def expert_params(self) -> int:
        # one routed expert: ffn_matrices·h·f (+ (ffn_matrices−1)·f + h biases: gpt-oss gate_up_proj_bias, down_proj_bias)
        h, f, m = self.hidden, self.moe_ffn_hidden, self.ffn_matrices
        return m * h * f + (((m - 1) * f + h) if self.expert_bias else 0)

    @property
    def shared_expert_params(self) -> int:
        # all shared experts of one layer, each an MLP of shared_ffn_hidden (DeepSeekMoE, Dai et al. 2024 §3.2)
        h, f, m = self.hidden, self.shared_ffn_hidden_, self.ffn_matrices
        return self.shared_experts * (m * h * f + (((m - 1) * f + h) if self.expert_bias else 0))

    @property
    def router_params(self) -> int:
        # gate h→E (Shazeer et al. 2017) + E bias values (gpt-oss router bias; DeepSeek-V3 §2.1.2 bias b_i)
        return self.hidden * self.experts + (self.experts if self.router_bias else 0)

    @property
    def dense_layer_params(self) -> int:
        # attention + dense MLP of ffn_hidden + 2 norms, as TransformerSpec.layer_params
        return self.attention_params + self.mlp_params + 2 * self.norm_params_per_norm

    @property
    def moe_layer_params(self) -> int:
        # attention + every routed expert + shared experts + router + 2 norms
        return (self.attention_params + self.experts * self.expert_params + self.shared_expert_params
                + self.router_params + 2 * self.norm_params_per_norm)

    @property
    def moe_layer_active_params(self) -> int:
        # what one token uses: attention + top_k routed experts + shared experts + router + 2 norms
        return (self.attention_params + self.top_k * self.expert_params + self.shared_expert_params
                + self.router_params + 2 * self.norm_params_per_norm)

    @property
    def expert_layer_params_total(self) -> int:
        """Routed-expert parameters of the model (what expert parallelism shards): n_moe_layers·E·expert_params."""
        return self.n_moe_layers * self.experts * self.expert_params

    @property
    def layers_params_total(self) -> int:
        """All decoder layers, exactly: n_dense·dense_layer_params + n_moe·moe_layer_params."""
        return self.n_dense_layers * self.dense_layer_params + self.n_moe_layers * self.moe_layer_params

    @property
    def layer_params(self) -> int:
        """Mean parameters per layer, layers_params_total // layers, so generic per-layer code (memory per pipeline
        stage, ZeRO shards) keeps working; layers·layer_params is below the exact total by less than ``layers``.
        Code that needs the MoE/dense split uses dense_layer_params, moe_layer_params and moe_layer_mask."""
        return self.layers_params_total // self.layers

    @property
    def mtp_params(self) -> int:
        # DeepSeek-V3 §2.2: per MTP module 2 RMSNorms, the projection M_k (2h→h) and one transformer block (an MoE
        # layer in DeepSeek-V3); embedding and output head are shared with the main model, so not counted
        block = self.moe_layer_params if self.n_moe_layers else self.dense_layer_params
        return self.mtp_layers * (2 * self.norm_params_per_norm + 2 * self.hidden * self.hidden + block)

    @property
    def total_params(self) -> int:
        # main model as published totals count it (MTP modules excluded: DeepSeek-V3 "671B" vs 685B on the Hub)
        return self.layers_params_total + self.embedding_params + self.output_params

    @property
    def total_params_with_mtp(self) -> int:
        return self.total_params + self.mtp_params

    @property
    def active_params(self) -> int:
        # per token, input embedding table and output head counted (Mixtral 12.9B, Qwen3 A3B/A22B, Llama 4 17B)
        return (self.n_dense_layers * self.dense_layer_params + self.n_moe_layers * self.moe_layer_active_params
                + self.embedding_params + self.output_params)

    @property
    def active_params_no_embedding(self) -> int:
        # per token without the input embedding table (reproduces DeepSeek's "activated", gpt-oss card's "active")
        return self.active_params - self.embedding_params


def moe_problem(s: MoESpec) -> tuple[str, str, str | None] | None:
    """The first inconsistency of an MoE spec as (field, message, hint), or None.  Shared by the YAML schema and
    the Hugging Face readers, which map the field to their own key."""
    if s.experts < 2:
        return "experts", f"experts={s.experts}: a mixture needs at least 2 routed experts", None
    if not 0 < s.top_k <= s.experts:
        return "top_k", f"top_k={s.top_k} must be between 1 and experts={s.experts}", None
    if s.first_dense_layers >= s.layers:
        return ("first_dense_layers", f"first_dense_layers={s.first_dense_layers} must be below layers={s.layers}",
                "an MoE model needs at least one MoE layer")
    if s.n_moe_layers == 0:
        return "moe_every", f"moe_every={s.moe_every} leaves no MoE layer in {s.layers} layers", None
    if s.shared_ffn_hidden and not s.shared_experts:
        return "shared_ffn_hidden", "shared_ffn_hidden is given but shared_experts is 0", None
    mla = {"kv_lora_rank": s.kv_lora_rank, "qk_nope_head_dim": s.qk_nope_head_dim,
           "qk_rope_head_dim": s.qk_rope_head_dim, "v_head_dim": s.v_head_dim}
    given = [k for k, v in mla.items() if v]
    if given and len(given) < len(mla) or s.q_lora_rank and not given:
        missing = [k for k, v in mla.items() if not v]
        return (missing[0], "MLA needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim together "
                f"(missing: {', '.join(missing)})", "give all four for multi-head latent attention, or none")
    if s.is_mla:
        if s.kv_heads != s.heads:
            return "kv_heads", f"kv_heads={s.kv_heads}: MLA up-projects K/V for every head (kv_heads = heads)", None
        if s.head_dim is not None and s.head_dim != s.qk_nope_head_dim + s.qk_rope_head_dim:
            return "head_dim", "with MLA the head dim is qk_nope_head_dim + qk_rope_head_dim", "leave head_dim out"
        if s.bias:
            return "bias", "linear biases are not supported with MLA (DeepSeek's MLA has none)", None
    if s.sliding_window and s.full_attention_every == 1:
        return "full_attention_every", "sliding_window is set but full_attention_every=1 leaves no windowed layer", \
            "give full_attention_every > 1 (every n-th layer full, the others windowed)"
    if s.full_attention_every > 1 and not s.sliding_window:
        return "full_attention_every", f"full_attention_every={s.full_attention_every} needs sliding_window", None
    return None


class MoEArchitecture(ArchitectureEntry):
    """The ``architecture:`` mapping of the moe-transformer family: the dense keys plus the MoE keys."""

    family: Literal["moe-transformer"]
    ffn: Literal["gelu", "swiglu"]  # no default: every expert MLP type must be stated
    # maxima: see the MAX_* constants of parplan.workloads.transformer
    experts: int = Field(ge=2, le=MAX_EXPERTS)
    top_k: int = Field(gt=0, le=MAX_EXPERTS)
    moe_ffn_hidden: int = Field(gt=0, le=MAX_FFN_HIDDEN)
    shared_experts: int = Field(default=0, ge=0, le=MAX_SHARED_EXPERTS)
    shared_ffn_hidden: Optional[int] = Field(default=None, gt=0, le=MAX_FFN_HIDDEN)
    first_dense_layers: int = Field(default=0, ge=0, le=MAX_LAYERS)
    moe_every: int = Field(default=1, gt=0, le=MAX_LAYERS)
    q_lora_rank: Optional[int] = Field(default=None, gt=0, le=MAX_LORA_RANK)
    kv_lora_rank: Optional[int] = Field(default=None, gt=0, le=MAX_LORA_RANK)
    qk_nope_head_dim: Optional[int] = Field(default=None, gt=0, le=MAX_HEAD_DIM)
    qk_rope_head_dim: Optional[int] = Field(default=None, gt=0, le=MAX_HEAD_DIM)
    v_head_dim: Optional[int] = Field(default=None, gt=0, le=MAX_HEAD_DIM)
    mtp_layers: int = Field(default=0, ge=0, le=MAX_MTP_LAYERS)
    sliding_window: Optional[int] = Field(default=None, gt=0, le=MAX_POSITION)
    full_attention_every: int = Field(default=1, gt=0, le=MAX_LAYERS)
    expert_bias: bool = False
    router_bias: bool = False


_MOE_KEYS = ("experts", "top_k", "moe_ffn_hidden", "shared_experts", "shared_ffn_hidden", "first_dense_layers",
             "moe_every", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
             "mtp_layers", "sliding_window", "full_attention_every", "expert_bias", "router_bias")


def spec_from_moe_architecture(a: MoEArchitecture, name: str, source: str, file: str | None,
                               prefix: str = "architecture") -> MoESpec:
    kv = check_dense_architecture(a, file, prefix, mla=a.kv_lora_rank is not None)
    fields = dense_fields(a, kv)
    for k in _MOE_KEYS:  # absent optional sizes (None) mean 0 in the spec
        value = getattr(a, k)
        fields[k] = value if isinstance(value, bool) else (value or 0)
    has_dense = a.first_dense_layers > 0 or a.moe_every > 1
    if a.ffn_hidden is None:
        if has_dense:
            raise SpecError("required key is missing: the dense layers' FFN size", file=file,
                            key=f"{prefix}.ffn_hidden",
                            hint="first_dense_layers / moe_every leave dense layers; give their ffn_hidden")
        fields["ffn_hidden"] = a.moe_ffn_hidden  # no dense layer: the dense FFN size is unused
    spec = MoESpec(name=name, source=source, **fields)
    problem = moe_problem(spec)
    if problem is not None:
        field, message, hint = problem
        raise SpecError(message, file=file, key=f"{prefix}.{field}", hint=hint)
    return spec


FAMILY = FamilyInfo(
    name="moe-transformer",
    summary="mixture-of-experts decoder-only transformer (Mixtral, DeepSeek-V3, Qwen3-MoE, gpt-oss, Llama 4): "
            "routed + shared experts, MLA, MTP, local attention windows",
    spec_type=MoESpec,
    architecture_schema=MoEArchitecture,
    build_spec=spec_from_moe_architecture,
    model="parplan.models.moe",
    space="parplan.planner.spaces.moe",
    executor="parplan.executor.moe",
    training_keys=("expert_imbalance", "mtp_layers", "ep_a2a_overlap"),
)
