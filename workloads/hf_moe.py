"""Hugging Face ``config.json`` readers of mixture-of-experts models → :class:`MoESpec`.

* ``mixtral`` — every layer MoE: ``num_local_experts`` SwiGLU experts of ``intermediate_size``, top
  ``num_experts_per_tok``; GQA attention (HF ``MixtralSparseMoeBlock``).
* ``qwen2_moe`` / ``qwen3_moe`` — ``num_experts`` experts of ``moe_intermediate_size``; layer i is MoE when
  ``i ∉ mlp_only_layers and (i + 1) % decoder_sparse_step == 0`` (HF ``Qwen2MoeDecoderLayer``), dense layers use
  ``intermediate_size``; Qwen2-MoE adds one shared expert of ``shared_expert_intermediate_size``.
* ``deepseek_v2`` / ``deepseek_v3`` — MLA (``q_lora_rank`` null = plain q projection, ``kv_lora_rank``,
  ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``); ``n_routed_experts`` + ``n_shared_experts`` of
  ``moe_intermediate_size``; layer i is MoE when ``i >= first_k_dense_replace and i % moe_layer_freq == 0``;
  ``num_nextn_predict_layers`` MTP modules; ``topk_method: noaux_tc`` carries the E-value
  ``e_score_correction_bias`` (DeepSeek-V3 §2.1.2).
* ``gpt_oss`` — ``num_local_experts`` experts of ``intermediate_size`` with biases, router with bias, biased
  attention, ``layer_types`` alternating ``sliding_window`` / full attention (HF ``GptOssConfig``).
* ``llama4`` (nested ``text_config`` or flat) / ``llama4_text`` — ``num_local_experts`` routed experts of
  ``intermediate_size`` plus one shared expert, dense layers of ``intermediate_size_mlp``; MoE layers
  ``moe_layers`` or range(step − 1, L, step) with ``interleave_moe_layer_step``; chunked attention of
  ``attention_chunk_size`` on the RoPE layers, full attention where ``no_rope_layers`` is 0 (every
  ``no_rope_layer_interval``-th layer) (HF ``Llama4TextConfig.__post_init__``).

A layer pattern, window or bias that :class:`MoESpec` cannot express is a :class:`SpecError`, never dropped.
"""
from __future__ import annotations

from typing import Callable

from parplan.errors import SpecError, short
from parplan.workloads.hf_config import MOE_ROUTING_KNOWN, Config
from parplan.workloads.moe import MoESpec, moe_problem


def fit_moe_mask(mask: list[bool]) -> tuple[int, int] | None:
    """(first_dense_layers, moe_every) reproducing a per-layer MoE mask, or None when none does."""
    idx = [i for i, m in enumerate(mask) if m]
    if not idx:
        return None
    for every in range(1, len(mask) + 1):
        first = idx[0] - (every - 1)
        if first >= 0 and all(m == (i >= first and (i - first) % every == every - 1) for i, m in enumerate(mask)):
            return first, every
    return None


def fit_full_every(full: list[bool]) -> int | None:
    """n such that layer i has full attention exactly when i % n == n − 1 (1: every layer full), or None."""
    for n in range(1, len(full) + 1):
        if all(f == (i % n == n - 1) for i, f in enumerate(full)):
            return n
    return None


def _gqa(c: Config) -> dict:
    """The dense (Llama-style) fields shared by the GQA MoE models."""
    heads = c.pos_int("num_attention_heads")
    c.keymap.update(kv_heads=c.key("num_key_value_heads"), heads=c.key("num_attention_heads"))
    return dict(
        layers=c.pos_int("num_hidden_layers"), hidden=c.pos_int("hidden_size"), heads=heads,
        kv_heads=c.pos_int("num_key_value_heads", default=heads), ffn="swiglu", vocab=c.pos_int("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", False),
        head_dim=c.pos_int("head_dim") if c.has("head_dim") else None, position="rope", max_position=0,
        norm="rmsnorm", bias=False, dropout=c.prob("attention_dropout", 0.0) > 0,
    )


def _no_bias(c: Config, key: str, what: str) -> None:
    if c.flag(key, False):
        raise c.error(key, f"{what} biases without MLP biases are not expressible (bias means every linear layer)",
                      hint="only configs with it false are supported")


def _moe_layers(c: Config, mask: list[bool], key: str) -> dict:
    fit = fit_moe_mask(mask)
    layers = [i for i, m in enumerate(mask) if m]
    if not layers:
        raise c.error(key, "leaves no MoE layer: not a mixture-of-experts model as configured")
    if fit is None:
        raise c.error(key, f"MoE layers {layers} are not expressible as first_dense_layers + every moe_every-th "
                      "layer", hint="file an issue with the config")
    c.keymap.update(first_dense_layers=c.key(key), moe_every=c.key(key))
    return dict(first_dense_layers=fit[0], moe_every=fit[1])


def _window(c: Config, full: list[bool], window: int, key: str) -> dict:
    every = fit_full_every(full)
    if every is None:
        raise c.error(key, "the full-attention layers are not every n-th layer (i % n == n - 1)",
                      hint="MoESpec windows all layers but every full_attention_every-th one")
    if every == 1 or window == 0:
        if every > 1:
            raise c.error(key, "layers with a local window but no window size is given")
        return dict(sliding_window=0, full_attention_every=1)
    c.keymap.update(full_attention_every=c.key(key))
    return dict(sliding_window=window, full_attention_every=every)


def _mixtral(c: Config) -> dict:
    f = _gqa(c)
    window = c.raw("sliding_window")  # null in the released Mixtral configs
    if window is not None:
        limit = c.raw("max_position_embeddings")
        if not (isinstance(window, int) and isinstance(limit, int) and window >= limit):
            raise c.error("sliding_window", f"a {short(window)}-token window on every layer is not expressible",
                          hint="MoESpec keeps every full_attention_every-th layer full; set it to null")
    inter = c.pos_int("intermediate_size")
    c.keymap.update(experts=c.key("num_local_experts"), top_k=c.key("num_experts_per_tok"))
    return dict(f, ffn_hidden=inter, moe_ffn_hidden=inter, experts=c.pos_int("num_local_experts"),
                top_k=c.pos_int("num_experts_per_tok"))


def _qwen_moe(c: Config, shared: bool) -> dict:
    f = _gqa(c)
    L = f["layers"]
    if c.flag("use_sliding_window", False):
        raise c.error("use_sliding_window", "windows on the layers from max_window_layers on are not expressible",
                      hint="only configs with use_sliding_window false are supported")
    if not shared:
        _no_bias(c, "attention_bias", "q/k/v/o")  # Qwen3: attention_bias sets biases on q, k, v and o
    step = c.pos_int("decoder_sparse_step", 1)
    only = c.list_of("mlp_only_layers", int) or []
    bad = [i for i in only if not 0 <= i < L]
    if bad:
        raise c.error("mlp_only_layers", f"layers {bad} do not exist (num_hidden_layers={L})")
    mask = [i not in only and (i + 1) % step == 0 for i in range(L)]
    f.update(_moe_layers(c, mask, "mlp_only_layers" if only else "decoder_sparse_step"))
    c.keymap.update(experts=c.key("num_experts"), top_k=c.key("num_experts_per_tok"))
    f.update(ffn_hidden=c.pos_int("intermediate_size"), moe_ffn_hidden=c.pos_int("moe_intermediate_size"),
             experts=c.pos_int("num_experts"), top_k=c.pos_int("num_experts_per_tok"))
    if shared:
        sf = c.nonneg_int("shared_expert_intermediate_size", 0)
        f.update(shared_experts=1 if sf else 0, shared_ffn_hidden=sf)
    return f


def _deepseek(c: Config) -> dict:
    heads = c.pos_int("num_attention_heads")
    L = c.pos_int("num_hidden_layers")
    _no_bias(c, "attention_bias", "attention")
    k, freq = c.nonneg_int("first_k_dense_replace", 0), c.pos_int("moe_layer_freq", 1)
    f = dict(layers=L, hidden=c.pos_int("hidden_size"), heads=heads,
             kv_heads=c.pos_int("num_key_value_heads", default=heads), ffn="swiglu", vocab=c.pos_int("vocab_size"),
             tied_embeddings=c.flag("tie_word_embeddings", False), head_dim=None, position="rope", max_position=0,
             norm="rmsnorm", bias=False, dropout=c.prob("attention_dropout", 0.0) > 0)
    f.update(_moe_layers(c, [i >= k and i % freq == 0 for i in range(L)],
                         "first_k_dense_replace" if k >= L else "moe_layer_freq"))
    q_lora = 0 if c.raw("q_lora_rank") is None else c.pos_int("q_lora_rank")
    c.keymap.update(experts=c.key("n_routed_experts"), top_k=c.key("num_experts_per_tok"),
                    kv_heads=c.key("num_key_value_heads"), first_dense_layers=c.key("first_k_dense_replace"))
    f.update(ffn_hidden=c.pos_int("intermediate_size"), moe_ffn_hidden=c.pos_int("moe_intermediate_size"),
             experts=c.pos_int("n_routed_experts"), top_k=c.pos_int("num_experts_per_tok"),
             shared_experts=c.nonneg_int("n_shared_experts", 0), q_lora_rank=q_lora,
             kv_lora_rank=c.pos_int("kv_lora_rank"), qk_nope_head_dim=c.pos_int("qk_nope_head_dim"),
             qk_rope_head_dim=c.pos_int("qk_rope_head_dim"), v_head_dim=c.pos_int("v_head_dim"),
             mtp_layers=c.nonneg_int("num_nextn_predict_layers", 0),
             router_bias=c.string("topk_method", "greedy") == "noaux_tc")
    return f


def _gpt_oss(c: Config) -> dict:
    f = _gqa(c)
    L = f["layers"]
    f["bias"] = c.flag("attention_bias", True)  # q, k, v and o biases; the experts' and router's are below
    top = c.pos_int("num_experts_per_tok")
    if c.has("experts_per_token") and c.pos_int("experts_per_token") != top:
        raise c.error("experts_per_token", f"differs from num_experts_per_tok={top}")
    types = c.list_of("layer_types", str, length=L)
    if types is None:  # GptOssConfig default: sliding at even layers, full at odd ones
        types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(L)]
    odd = sorted({t for t in types if t not in ("sliding_attention", "full_attention")})
    if odd:
        raise c.error("layer_types", f"unknown layer types {odd}", hint="allowed: sliding_attention, full_attention")
    window = c.pos_int("sliding_window") if c.has("sliding_window") else 0
    f.update(_window(c, [t == "full_attention" for t in types], window, "layer_types"))
    inter = c.pos_int("intermediate_size")
    c.keymap.update(experts=c.key("num_local_experts"), top_k=c.key("num_experts_per_tok"))
    return dict(f, ffn_hidden=inter, moe_ffn_hidden=inter, experts=c.pos_int("num_local_experts"), top_k=top,
                expert_bias=True, router_bias=True)


# the multimodal wrapper's keys around text_config (Llama4Config); the vision tower is not modelled
_LLAMA4_TOP = frozenset({"vision_config", "boi_token_index", "eoi_token_index", "image_token_index",
                         "tie_word_embeddings"})
_LLAMA4_TEXT = MOE_ROUTING_KNOWN | frozenset({
    "attn_temperature_tuning", "floor_scale", "attn_scale",  # query temperature at long positions: elementwise
    "use_qk_norm",  # Llama4TextL2Norm has no weights
    "for_llm_compressor",
    # superseded when the explicit lists are given, as in Llama4TextConfig.__post_init__
    "interleave_moe_layer_step", "no_rope_layers", "no_rope_layer_interval",
})


def _llama4(c: Config) -> dict:
    if "text_config" in c.data:
        t = c.sub("text_config", _LLAMA4_TEXT)
    else:  # a flat text config (model_type llama4 without the multimodal wrapper, or llama4_text)
        t = c
        c.known |= _LLAMA4_TEXT
    f = _gqa(t)
    L = f["layers"]
    _no_bias(t, "attention_bias", "attention")
    moe_layers = t.list_of("moe_layers", int)
    key = "moe_layers"
    if moe_layers is None:
        step, key = t.pos_int("interleave_moe_layer_step", 1), "interleave_moe_layer_step"
        moe_layers = list(range(step - 1, L, step))
    elif any(not 0 <= i < L for i in moe_layers):
        raise t.error("moe_layers", f"layers {sorted(i for i in moe_layers if not 0 <= i < L)} do not exist "
                      f"(num_hidden_layers={L})")
    f.update(_moe_layers(t, [i in set(moe_layers) for i in range(L)], key))
    chunk = 0 if t.raw("attention_chunk_size") is None else t.pos_int("attention_chunk_size")
    types = t.list_of("layer_types", str, length=L)
    no_rope = t.list_of("no_rope_layers", int)
    if types is not None:
        full, key = [x == "full_attention" for x in types], "layer_types"
        odd = sorted({x for x in types if x not in ("chunked_attention", "full_attention")})
        if odd:
            raise t.error("layer_types", f"unknown layer types {odd}", hint="allowed: chunked_attention, full_attention")
    elif no_rope:  # 1 = RoPE layer with chunked attention, 0 = NoPE layer with full attention
        if len(no_rope) != L or any(x not in (0, 1) for x in no_rope):
            raise t.error("no_rope_layers", f"must hold one 0 or 1 per layer ({L}), got {len(no_rope)} entries")
        full, key = [x == 0 for x in no_rope], "no_rope_layers"
    else:
        n = t.pos_int("no_rope_layer_interval", 4)
        full, key = [(i + 1) % n == 0 for i in range(L)], "no_rope_layer_interval"
    f.update(_window(t, full, chunk, key) if chunk else dict(sliding_window=0, full_attention_every=1))
    inter = t.pos_int("intermediate_size")
    t.keymap.update(experts=t.key("num_local_experts"), top_k=t.key("num_experts_per_tok"),
                    ffn_hidden=t.key("intermediate_size_mlp"))
    c.keymap.update(t.keymap)
    return dict(f, ffn_hidden=t.pos_int("intermediate_size_mlp"), moe_ffn_hidden=inter, shared_experts=1,
                experts=t.pos_int("num_local_experts"), top_k=t.pos_int("num_experts_per_tok"))


MOE_READERS: dict[str, Callable[[Config], dict]] = {
    "mixtral": _mixtral,
    "qwen2_moe": lambda c: _qwen_moe(c, shared=True),
    "qwen3_moe": lambda c: _qwen_moe(c, shared=False),
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gpt_oss": _gpt_oss,
    "llama4": _llama4,
    "llama4_text": _llama4,
}

# keys each MoE type may carry beyond what its reader reads (besides hf_config.COMMON_KNOWN), and why
MOE_KNOWN: dict[str, frozenset] = {
    "mixtral": MOE_ROUTING_KNOWN,
    # sliding_window / max_window_layers only act with use_sliding_window, which must be false
    "qwen2_moe": MOE_ROUTING_KNOWN | {"sliding_window", "max_window_layers"},
    "qwen3_moe": MOE_ROUTING_KNOWN | {"sliding_window", "max_window_layers"},
    "deepseek_v2": MOE_ROUTING_KNOWN | {
        "head_dim",  # recent transformers write head_dim = qk_rope_head_dim (the rotary width); MLA dims are above
        "rope_interleave",  # RoPE layout
    },
    "gpt_oss": MOE_ROUTING_KNOWN | {
        "swiglu_limit",  # clamp inside the gated activation: elementwise
        "initial_context_length",  # YaRN's original context: RoPE detail
    },
    "llama4": _LLAMA4_TOP,
    "llama4_text": frozenset(),
}
MOE_KNOWN["deepseek_v3"] = MOE_KNOWN["deepseek_v2"]

MOE_NOTES = {
    "qwen2_moe": "; q/k/v biases and the shared-expert gate (hidden values per layer) not counted",
    "qwen3_moe": "; q/k RMSNorm weights (2 x head_dim per layer) not counted",
    "gpt_oss": "; attention sinks (one value per head and layer) not counted",
    "llama4": "; text decoder only (vision encoder not modelled); chunked attention priced as a window of "
              "attention_chunk_size",
}
MOE_NOTES["llama4_text"] = MOE_NOTES["llama4"]


def build_moe_spec(c: Config, fields: dict, name: str, source: str) -> MoESpec:
    """The MoESpec of a reader's fields, with the family's consistency checks reported at the config's keys."""
    spec = MoESpec(name=name, source=source, **fields)
    if spec.heads % spec.kv_heads != 0:
        raise SpecError(f"num_key_value_heads={spec.kv_heads} does not divide the {spec.heads} attention heads",
                        file=c.file, key=c.keymap.get("kv_heads"), hint="GQA needs groups of equal size")
    if not spec.is_mla and spec.head_dim is None and spec.hidden % spec.heads != 0:
        raise SpecError(f"{spec.heads} attention heads do not divide hidden size {spec.hidden}", file=c.file,
                        hint="add head_dim to the config when hidden is not heads × head_dim")
    problem = moe_problem(spec)
    if problem is not None:
        field, message, hint = problem
        raise SpecError(message, file=c.file, key=c.keymap.get(field, field), hint=hint)
    return spec
