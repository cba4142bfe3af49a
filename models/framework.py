"""Framework profiles (``catalogs/frameworks/<id>.yaml``): which overlaps and fusions a training framework applies,
which FP8 recipes it has, and which plans it can launch.

A profile answers two questions.  *How does it run?* — ``dp_grad_reduce`` … ``cp_comm_overlap``, the FP8 recipes
with their extra HBM traffic per GEMM input element, the gradient-reduction dtype, the attention kernel and, for
mixture-of-experts layers, the token dispatcher, fp8 dispatch and the overlap of the expert-parallel all-to-all
(``moe_dispatcher``, ``moe_dispatch_fp8``, ``ep_a2a_overlap``) — what the cost model prices; each value is cited in
its YAML file, and describes the framework run the way its own performance recipes run it.  *What can it launch?*
— the support flags, among them ``etp`` (expert tensor parallelism of its own degree) and ``ep_over`` (the plan
axes expert parallelism is folded over; the MoE search space reads them): ``plan_reasons(plan)`` lists why a plan
cannot be launched (empty = it can) and ``plan_mask(arrays)`` is the same test over a struct of numpy arrays (the
planner's space); both evaluate one list of checks, so they agree by construction.  Besides the support flags, a
profile may state ``rules`` (``when`` some plan keys match, ``require`` others, or a workload size ``divisible`` by
plan keys), each with the framework's own reason and source.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional

import numpy as np

from parplan.catalogs import entries
from parplan.errors import SpecError, did_you_mean
from parplan.models.framework_schema import (BOOL_KEYS, FP8_RECIPES, PLAN_DEFAULTS,  # noqa: F401 (re-exported)
                                            FrameworkFile, _condition)
from parplan.models.plan import CP_KINDS, RECOMPUTE, RESEARCH_CP_KINDS
from parplan.spec import load_yaml_file, validate

DEFAULT_FRAMEWORK = "megatron-core"
# the plan axes expert parallelism folds over when a profile with ep does not say (Megatron-Core parallel folding)
EP_OVER_DEFAULT = ("dp", "cp", "tp")


def _holds(op: str, operand: Any, a: np.ndarray) -> np.ndarray:
    if op == "in":
        return np.isin(a, operand)
    return {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
            ">=": np.greater_equal}[op](a, operand)


# --- the profile ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    when: tuple[tuple[str, str, Any], ...]
    require: tuple[tuple[str, str, Any], ...]
    divisible: Optional[tuple[str, tuple[Any, ...]]]
    label: str
    why: str
    source: str


Check = tuple[str, Callable[[], str], np.ndarray]  # (label, detailed text for one plan, ok)


@dataclass(frozen=True)
class FrameworkProfile:
    """One framework's overlaps, FP8 recipes, kernels and the plans it can launch (see the module docstring)."""

    id: str
    name: str
    source: str
    # overlaps (true = the framework hides this communication behind compute in its performance recipes)
    dp_grad_reduce: bool
    dp_param_gather: bool
    fsdp_prefetch: bool
    tp_comm_overlap: str  # default: none | wgrad | full
    tp_comm_overlap_options: tuple[str, ...]
    pp_p2p_overlap: bool
    fp8_param_gather: bool
    cp_comm_overlap: bool
    ep_a2a_overlap: str  # none | 1f1b | dualpipe: how the expert-parallel all-to-all hides behind compute
    # fp8
    fp8_recipes: tuple[str, ...]
    fp8_default_recipe: Optional[str]
    fp8_cast_bytes_per_element: Mapping[str, float]
    grad_reduce_dtype: str  # fp32 | bf16
    attention_kernel: str  # fa2 | fa3 | cudnn | splash | materialized
    # supports
    zero: tuple[int, ...]
    tp: bool
    tp_within_node: bool
    sp: str  # optional | always-with-tp | none
    pp: bool
    vpp: bool
    cp: bool
    ep: bool
    hsdp: bool
    hsdp_zero: tuple[int, ...]
    reshard_after_forward_optional: bool
    uneven_pp: bool
    pp_split: str  # even | any
    recompute: tuple[str, ...]
    max_mbs: Optional[int]
    rules: tuple[Rule, ...]
    file: str
    # expert parallelism
    etp: bool = False  # expert tensor parallelism of its own degree
    ep_over: tuple[str, ...] = ()  # plan axes ep·etp is folded over (its degree divides their product)
    moe_dispatcher: str = "alltoall"  # alltoall | allgather | flex (DeepEP / HybridEP)
    moe_dispatch_fp8: bool = False  # the dispatch all-to-all carries fp8 tokens
    fp8_output_layer: bool = False  # the LM head's GEMMs run in the fp8/MX recipe (else 16-bit)
    selective_recompute: str = "attention-core"  # attention-core | op-sac: what recompute=selective replays
    cp_kinds: tuple[str, ...] = ("ring",)  # context-parallel layouts it launches; the first is its default
    # memory semantics (``framework_schema.MemoryEntry``)
    tpu_compiled_buffers: bool = False
    tpu_reserved_bytes: float = 0.0
    activations_split_over_tp: bool = False
    selective_keeps: str = "korthikanti"  # korthikanti | matmul-outputs

    def fp8_cast_bytes(self, recipe: Optional[str] = None) -> float:
        """Extra HBM bytes per GEMM input element for the casts of ``recipe`` (default: the framework's)."""
        r = recipe or self.fp8_default_recipe
        if r not in self.fp8_cast_bytes_per_element:
            raise SpecError(f"{self.name} has no FP8 recipe {r!r}", key="fp8 recipe", allowed=list(self.fp8_recipes))
        return float(self.fp8_cast_bytes_per_element[r])

    # --- which plans it can launch ---------------------------------------------------------------------------
    def plan_reasons(self, plan, n_devices_per_node: Optional[int] = None, workload=None) -> list[str]:
        """Why this framework cannot launch ``plan`` (empty: it can).  ``workload`` (optional) enables the checks
        that need the model: layer splits and divisibility of sequence length or heads."""
        P = {k: np.asarray(_plan_value(plan, k)) for k in PLAN_DEFAULTS}
        return [text() for _, text, ok in self._checks(P, n_devices_per_node, workload) if not bool(ok)]

    def plan_mask(self, arrays, n_devices_per_node: Optional[int] = None, workload=None) -> np.ndarray:
        """``True`` where the framework can launch the plan: the vectorized ``plan_reasons(...) == []`` over a
        struct of arrays with ``PlanArrays`` field names (absent fields take their defaults; arrays broadcast)."""
        masks = self.plan_masks(arrays, n_devices_per_node, workload)
        P = _arrays(arrays)
        out = np.ones(np.broadcast_shapes(*(np.shape(a) for a in P.values())), dtype=bool)
        for _, ok in masks:
            out &= ok
        return out

    def plan_masks(self, arrays, n_devices_per_node: Optional[int] = None,
                   workload=None) -> list[tuple[str, np.ndarray]]:
        """``(label, ok)`` per check, in check order (the planner counts exclusions by the first check failed)."""
        return [(label, np.asarray(ok, dtype=bool)) for label, _, ok in
                self._checks(_arrays(arrays), n_devices_per_node, workload)]

    def _checks(self, P: dict, dpn: Optional[int], workload) -> list[Check]:
        n = self.name
        z, tp, sp = P["zero"], P["tp"], P["sp"]
        rs, shard, dpcp = P["reshard"], P["shard"], P["dp"] * P["cp"]
        zl = ", ".join(map(str, self.zero))
        out: list[Check] = [
            ("zero level", lambda: f"{n} has no zero={int(z)} (supports zero {zl})", np.isin(z, self.zero)),
            ("tensor parallelism", lambda: f"{n} has no tensor parallelism (tp={int(tp)})", (tp == 1) | self.tp),
        ]
        if self.tp_within_node and dpn:
            out.append(("tp beyond a node", lambda: f"{n} keeps tensor parallelism within a node "
                        f"(tp={int(tp)} > {dpn} devices per node)", tp <= dpn))
        if self.sp == "none":
            out.append(("sequence parallelism", lambda: f"{n} has no sequence parallelism (sp=true)", ~sp))
        elif self.sp == "always-with-tp":
            out.append(("sp=false with tp>1", lambda: f"{n} always shards norms and dropout over the tp ranks "
                        "(sequence parallelism); use sp=true", (tp == 1) | sp))
        degrees = (("pp", self.pp, "pipeline parallelism"), ("cp", self.cp, "context parallelism"),
                   ("vpp", self.vpp, "interleaved pipeline stages"), ("ep", self.ep, "expert parallelism"))
        for key, flag, what in degrees:
            a = P[key]
            out.append((what, lambda a=a, key=key, what=what: f"{n} has no {what} ({key}={int(a)})", (a == 1) | flag))
        rc_ok = np.isin(P["recompute"], [RECOMPUTE.index(r) for r in self.recompute])
        out.append(("recompute", lambda: f"{n} has no recompute={RECOMPUTE[int(P['recompute'])]} (supports "
                    f"{', '.join(self.recompute)})", rc_ok))
        if self.max_mbs is not None:
            out.append(("micro-batch size", lambda: f"{n} allows mbs ≤ {self.max_mbs} (mbs={int(P['mbs'])})",
                        P["mbs"] <= self.max_mbs))
        out.append(("reshard=false without zero=3", lambda: "reshard=false needs zero=3 (parameters sharded)",
                    rs | (z == 3)))
        out.append(("reshard=false", lambda: f"{n} always reshards parameters after forward (reshard=false)",
                    rs | self.reshard_after_forward_optional))
        partial = (shard > 0) & (shard != dpcp)
        out.append(("shard group", lambda: f"shard={int(shard)} does not divide dp·cp={int(dpcp)}",
                    (shard == 0) | (dpcp % np.maximum(shard, 1) == 0)))
        out.append(("hybrid sharding", lambda: f"{n} has no hybrid sharding (shard={int(shard)} of dp·cp="
                    f"{int(dpcp)})", ~partial | self.hsdp))
        if self.hsdp:
            hz = ", ".join(map(str, self.hsdp_zero))
            out.append(("hybrid sharding at this zero level", lambda: f"{n} hybrid-shards only with zero {hz} "
                        f"(zero={int(z)})", ~partial | np.isin(z, self.hsdp_zero)))
        out += self._split_checks(P, workload)
        for rule in self.rules:
            out += self._rule_check(rule, P, workload)
        kinds = ", ".join(self.cp_kinds)
        allowed = [CP_KINDS.index(k) for k in (*self.cp_kinds, *RESEARCH_CP_KINDS)]
        out.append(("context-parallel layout", lambda: f"{n} has no cp_kind={CP_KINDS[int(P['cp_kind'])]} (launches "
                    f"{kinds})", (P["cp"] == 1) | np.isin(P["cp_kind"], allowed)))
        return out

    def _split_checks(self, P: dict, workload) -> list[Check]:
        n, pp, vpp = self.name, P["pp"], P["vpp"]
        ea, la = P["embed_as_layer"], P["loss_as_layer"]
        explicit = (P["first_layers"] > 0) | (P["last_layers"] > 0) | ea | la
        out: list[Check] = [("explicit pipeline split", lambda: f"{n} has no explicit pipeline split (first_layers, "
                             "last_layers, embed_as_layer, loss_as_layer)", (pp == 1) | ~explicit | self.uneven_pp)]
        if workload is None:
            return out
        L = int(workload.model.layers)
        if self.pp_split == "even":
            out.append(("layers not divisible by pp·vpp", lambda: f"{n} needs layers={L} divisible by pp·vpp="
                        f"{int(pp * vpp)}", (pp == 1) | (L % (pp * vpp) == 0)))
        return out

    def _rule_check(self, rule: Rule, P: dict, workload) -> list[Check]:
        when = np.ones((), dtype=bool)
        for k, op, v in rule.when:
            when = when & _holds(op, v, P[k])
        ok = np.ones((), dtype=bool)
        for k, op, v in rule.require:
            ok = ok & _holds(op, v, P[k])
        if rule.divisible is not None:
            what, by = rule.divisible
            if workload is not None:
                size = int(getattr(workload.training if what == "seq_len" else workload.model, what))
                d = np.ones((), dtype=np.int64)
                for f in by:
                    d = d * (P[f] if isinstance(f, str) else f)
                ok = ok & (size % d == 0)
        return [(rule.label, lambda: f"{self.name}: {rule.why}", ~when | ok)]


def _plan_value(plan, key: str):
    v = getattr(plan, key, PLAN_DEFAULTS[key])
    if key == "recompute" and isinstance(v, str):
        return RECOMPUTE.index(v)
    if key == "cp_kind" and isinstance(v, str):
        return CP_KINDS.index(v)
    return v


def _arrays(arrays) -> dict:
    out = {}
    for k, d in PLAN_DEFAULTS.items():
        v = getattr(arrays, k, None)
        out[k] = np.asarray(d if v is None else v)
    for k in BOOL_KEYS:
        out[k] = out[k].astype(bool)
    return out


# --- catalog -------------------------------------------------------------------------------------------------------
def framework_ids() -> list[str]:
    return list(entries("frameworks"))


@lru_cache(maxsize=None)
def get_framework(ident: str) -> FrameworkProfile:
    """The profile of a catalog framework id (``catalogs/frameworks/<id>.yaml``)."""
    files = entries("frameworks")
    if ident not in files:
        raise SpecError(f"unknown framework {ident!r}", allowed=list(files),
                        hint=did_you_mean(str(ident), list(files)) or "see `parplan catalog list frameworks`")
    path = str(files[ident])
    e = validate(FrameworkFile, load_yaml_file(path), file=path)
    if e.id != ident:
        raise SpecError(f"id {e.id!r} does not match the file name", file=path, key="id")
    return profile_from_entry(e, path)


def profile_from_entry(e: FrameworkFile, file: str = "") -> FrameworkProfile:
    o, f, s = e.overlaps, e.fp8, e.supports
    rules = tuple(Rule(when=tuple((k, *_condition(k, v)) for k, v in r.when.items()),
                       require=tuple((k, *_condition(k, v)) for k, v in r.require.items()),
                       divisible=(r.divisible.what, tuple(r.divisible.by)) if r.divisible else None,
                       label=r.label or r.why, why=r.why, source=r.source) for r in e.rules)
    return FrameworkProfile(
        id=e.id, name=e.name, source=e.source, dp_grad_reduce=o.dp_grad_reduce, dp_param_gather=o.dp_param_gather,
        fsdp_prefetch=o.fsdp_prefetch, tp_comm_overlap=o.tp_comm_overlap.default,
        tp_comm_overlap_options=tuple(o.tp_comm_overlap.options), pp_p2p_overlap=o.pp_p2p_overlap,
        fp8_param_gather=o.fp8_param_gather, cp_comm_overlap=o.cp_comm_overlap, ep_a2a_overlap=o.ep_a2a_overlap,
        fp8_recipes=tuple(f.recipes),
        fp8_default_recipe=f.default_recipe,
        fp8_cast_bytes_per_element=MappingProxyType({r: float(f.cast_bytes_per_element[r]) for r in f.recipes}),
        grad_reduce_dtype=e.grad_reduce_dtype, attention_kernel=e.attention_kernel, zero=tuple(s.zero), tp=s.tp,
        tp_within_node=s.tp_within_node, sp=s.sp, pp=s.pp, vpp=s.vpp, cp=s.cp, ep=s.ep, hsdp=s.hsdp,
        hsdp_zero=tuple(s.hsdp_zero), reshard_after_forward_optional=s.reshard_after_forward_optional,
        uneven_pp=s.uneven_pp, pp_split=s.pp_split, recompute=tuple(s.recompute), max_mbs=s.max_mbs, rules=rules,
        file=file, etp=s.etp, ep_over=tuple(s.ep_over) or (EP_OVER_DEFAULT if s.ep else ()),
        moe_dispatcher=e.moe_dispatcher, moe_dispatch_fp8=e.moe_dispatch_fp8, fp8_output_layer=f.output_layer_fp8,
        selective_recompute=e.selective_recompute, cp_kinds=tuple(s.cp_kinds),
        **({} if e.memory is None else dict(
            tpu_compiled_buffers=e.memory.tpu_compiled_buffers, tpu_reserved_bytes=float(e.memory.tpu_reserved_bytes),
            activations_split_over_tp=e.memory.activations_split_over_tp, selective_keeps=e.memory.selective_keeps)))


def check_framework_id(ident: str, key: str = "training.framework", file: Optional[str] = None) -> str:
    """``ident`` if it names a catalog framework, else a one-line ``SpecError`` with the allowed ids."""
    ids = framework_ids()
    if not isinstance(ident, str) or ident not in ids:
        raise SpecError(f"bad value {ident!r}", key=key, file=file, allowed=ids,
                        hint=did_you_mean(str(ident), ids))
    return ident
