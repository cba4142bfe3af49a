"""The schema of a framework profile file (``catalogs/frameworks/<id>.yaml``) and of its plan conditions: what
``models/framework.py`` validates before it builds a ``FrameworkProfile``.  Unknown keys are errors."""
from __future__ import annotations

import re
from typing import Any, Literal, Optional, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from parplan.models.plan import RECOMPUTE

FP8_RECIPES = ("delayed", "tensorwise", "rowwise", "blockwise", "mxfp8", "nvfp4")
# plan keys a profile may test, with the default a plan or a PlanArrays gets when the key is absent
PLAN_DEFAULTS = {"dp": 1, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "mbs": 1, "vpp": 1, "zero": 0, "recompute": 0,
                 "sp": False, "reshard": True, "shard": 0, "first_layers": 0, "last_layers": 0,
                 "embed_as_layer": False, "loss_as_layer": False, "cp_kind": 0}  # cp_kind: index into CP_KINDS
BOOL_KEYS = ("sp", "reshard", "embed_as_layer", "loss_as_layer")
_OP = re.compile(r"^\s*(<=|>=|!=|==|<|>)\s*(-?\d+)\s*$")

ZeroLevel = Literal[0, 1, 2, 3]
Recompute = Literal["none", "selective", "full", "modules"]
CpKind = Literal["ring", "ulysses", "hybrid", "dcp"]  # models.plan.CP_KINDS
Recipe = Literal["delayed", "tensorwise", "rowwise", "blockwise", "mxfp8", "nvfp4"]
TpOverlap = Literal["none", "wgrad", "full"]
EpA2aOverlap = Literal["none", "1f1b", "dualpipe"]  # none | batch-level 1F1B (Megatron-Core) | DualPipe (DeepSeek-V3)
EP_A2A_OVERLAPS = get_args(EpA2aOverlap)  # the values, for a training job's own setting (models/moe_terms.py)
MoeDispatcher = Literal["alltoall", "allgather", "flex"]  # flex = Megatron-Core's DeepEP / HybridEP dispatcher
EpFoldAxis = Literal["dp", "cp", "tp"]  # plan axes expert parallelism may be folded over


# --- the file schema ----------------------------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TpOverlapEntry(_Strict):
    default: TpOverlap
    options: list[TpOverlap] = Field(min_length=1)

    @model_validator(mode="after")
    def _default_is_an_option(self):
        if self.default not in self.options:
            raise ValueError(f"default {self.default!r} is not among options {self.options}")
        return self


class OverlapsEntry(_Strict):
    dp_grad_reduce: bool
    dp_param_gather: bool
    fsdp_prefetch: bool
    tp_comm_overlap: TpOverlapEntry
    pp_p2p_overlap: bool
    fp8_param_gather: bool
    cp_comm_overlap: bool
    # how the expert-parallel all-to-all hides behind compute (default none: exposed)
    ep_a2a_overlap: EpA2aOverlap = "none"


class Fp8Entry(_Strict):
    recipes: list[Recipe]
    default_recipe: Optional[Recipe] = None
    cast_bytes_per_element: dict[str, float] = Field(strict=False)
    # the output layer (LM head) GEMMs run in the low-precision recipe too (false: they stay 16-bit)
    output_layer_fp8: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        if (self.default_recipe is None) != (not self.recipes):
            raise ValueError("default_recipe must name one of recipes (null only when recipes is empty)")
        if self.default_recipe is not None and self.default_recipe not in self.recipes:
            raise ValueError(f"default_recipe {self.default_recipe!r} is not among recipes {self.recipes}")
        if set(self.cast_bytes_per_element) != set(self.recipes):
            raise ValueError(f"cast_bytes_per_element must give exactly the recipes {self.recipes}")
        if any(not (0.0 < v < 16.0) for v in self.cast_bytes_per_element.values()):
            raise ValueError("cast_bytes_per_element values must be between 0 and 16 bytes")
        return self


class SupportsEntry(_Strict):
    zero: list[ZeroLevel] = Field(min_length=1)
    tp: bool
    tp_within_node: bool = False
    sp: Literal["optional", "always-with-tp", "none"]
    pp: bool
    vpp: bool
    cp: bool
    ep: bool
    hsdp: bool
    hsdp_zero: list[Literal[1, 2, 3]] = Field(default_factory=list)
    reshard_after_forward_optional: bool
    uneven_pp: bool
    pp_split: Literal["even", "any"]  # even: layers must divide by pp·vpp; any: uneven stage sizes launch
    recompute: list[Recompute] = Field(min_length=1)
    max_mbs: Optional[int] = Field(default=None, gt=0)
    # expert layers may run a tensor-parallel degree of their own (ETP, Megatron-Core --expert-tensor-parallel-size)
    etp: bool = False
    # plan axes expert parallelism is folded over: ep·etp must divide their product (Megatron-Core parallel folding:
    # dp, cp, tp; the default when a file with ep omits it); empty when the framework has no expert parallelism
    ep_over: list[EpFoldAxis] = Field(default_factory=list)
    # context-parallel layouts it launches (cp > 1), the first being what a plan without cp_kind means (its default)
    cp_kinds: list[CpKind] = Field(default_factory=lambda: ["ring"], min_length=1)

    @model_validator(mode="after")
    def _consistent(self):
        if len(set(self.cp_kinds)) != len(self.cp_kinds):
            raise ValueError(f"cp_kinds lists a layout twice: {self.cp_kinds}")
        if len(set(self.ep_over)) != len(self.ep_over):
            raise ValueError(f"ep_over lists an axis twice: {self.ep_over}")
        if self.ep_over and not self.ep:
            raise ValueError("ep_over names the plan axes expert parallelism folds over: empty when ep is false")
        if self.etp and not self.ep:
            raise ValueError("etp (expert tensor parallelism) needs ep (expert parallelism)")
        if self.hsdp != bool(self.hsdp_zero):
            raise ValueError("hsdp_zero lists the zero levels usable with hybrid sharding: give it iff hsdp is true")
        if not set(self.hsdp_zero) <= set(self.zero):
            raise ValueError(f"hsdp_zero {self.hsdp_zero} must be among the supported zero levels {self.zero}")
        return self


class DivisibleEntry(_Strict):
    what: Literal["seq_len", "heads", "kv_heads", "layers"]
    by: list[Any] = Field(min_length=1)

    @field_validator("by")
    @classmethod
    def _factors(cls, v):
        for f in v:
            if not ((isinstance(f, int) and not isinstance(f, bool) and f > 0) or f in PLAN_DEFAULTS):
                raise ValueError(f"factor {f!r} is neither a positive whole number nor a plan key "
                                 f"(allowed: {', '.join(PLAN_DEFAULTS)})")
        return v


class RuleEntry(_Strict):
    when: dict[str, Any] = Field(default_factory=dict)
    require: dict[str, Any] = Field(default_factory=dict)
    divisible: Optional[DivisibleEntry] = None
    label: Optional[str] = Field(default=None, min_length=3)  # short name for exclusion counts (default: why)
    why: str = Field(min_length=8)
    source: str = Field(min_length=8)

    @model_validator(mode="after")
    def _parse(self):
        for part in (self.when, self.require):
            for k, v in part.items():
                _condition(k, v)
        if not self.require and self.divisible is None:
            raise ValueError("a rule needs require or divisible")
        return self


class MemoryEntry(_Strict):
    """How the framework's runtime holds activations and buffers (``models/training_memory.py``)."""

    # XLA:TPU assigns every buffer of the step at compile time: no caching allocator, so no fragmentation allowance,
    # and the runtime keeps ``tpu_reserved_bytes`` of HBM out of the program's reach
    tpu_compiled_buffers: bool = False
    tpu_reserved_bytes: float = Field(default=0.0, ge=0.0, le=1e12)
    # every saved activation is split over the tensor-parallel group (its embed axis is sharded), with or without SP
    activations_split_over_tp: bool = False
    # what recompute=selective keeps per layer: Korthikanti et al.'s set without the attention core, or only the
    # layer input and the weight matmuls' outputs the backward needs (JAX checkpoint_dots_with_no_batch_dims)
    selective_keeps: Literal["korthikanti", "matmul-outputs"] = "korthikanti"
    source: str = Field(min_length=8)


class FrameworkFile(_Strict):
    id: str
    name: str
    source: str = Field(min_length=8)
    overlaps: OverlapsEntry
    fp8: Fp8Entry
    grad_reduce_dtype: Literal["fp32", "bf16"]
    attention_kernel: Literal["fa2", "fa3", "cudnn", "splash", "materialized"]
    # the token dispatcher MoE layers run by default, and whether it dispatches the tokens in fp8
    moe_dispatcher: MoeDispatcher = "alltoall"
    moe_dispatch_fp8: bool = False
    # what recompute=selective replays in the backward: the attention core (Megatron-Core) or, op-level selective
    # checkpointing, every second matmul's forward and the memory-bound ops (torchtitan's "op" policy)
    selective_recompute: Literal["attention-core", "op-sac"] = "attention-core"
    memory: Optional[MemoryEntry] = None  # absent: a caching allocator, Korthikanti's activation set
    supports: SupportsEntry
    rules: list[RuleEntry] = Field(default_factory=list)
    notes: Optional[str] = None


def _condition(key: str, value: Any) -> tuple[str, Any]:
    """A YAML condition on one plan key → (op, operand); recompute names become their index."""
    if key not in PLAN_DEFAULTS:
        raise ValueError(f"unknown plan key {key!r} (allowed: {', '.join(PLAN_DEFAULTS)})")
    if key in BOOL_KEYS:
        if not isinstance(value, bool):
            raise ValueError(f"{key}: expected true or false, got {value!r}")
        return "==", value
    if key == "recompute":
        names = value if isinstance(value, list) else [value]
        if any(n not in RECOMPUTE for n in names):
            raise ValueError(f"recompute: expected names among {', '.join(RECOMPUTE)}, got {value!r}")
        return "in", [RECOMPUTE.index(n) for n in names]
    if isinstance(value, bool):
        raise ValueError(f"{key}: expected a whole number, a comparison like '>1' or a list, got {value!r}")
    if isinstance(value, int):
        return "==", value
    if isinstance(value, list) and value and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return "in", list(value)
    m = _OP.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"{key}: expected a whole number, a comparison like '>1' or a list, got {value!r}")
    return m.group(1), int(m.group(2))
