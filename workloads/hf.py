"""Hugging Face ``config.json`` → :class:`TransformerSpec` / :class:`MoESpec` (local files only; nothing is ever
downloaded).

Dense ``model_type`` values and how they map (the mixture-of-experts types are in :mod:`parplan.workloads.hf_moe`):

* ``llama``, ``mistral``, ``qwen2`` — SwiGLU MLP, RMSNorm, RoPE, untied by default, GQA via
  ``num_key_value_heads``.  Qwen2 has biases on q/k/v only; :attr:`TransformerSpec.bias` means *every* linear
  bias, so it is left ``False`` and the q/k/v biases (``layers × (q_dim + 2·kv_dim)`` values, < 0.01 % of the
  model) are not counted.
* ``gpt2`` — learned positions (``n_positions`` rows), GELU MLP (``n_inner`` or 4h), LayerNorm, biases, tied.
* ``gpt_neox`` — RoPE, GELU MLP, LayerNorm, biases, untied by default.
* ``opt`` — learned positions with OPT's 2 offset rows (``max_position_embeddings + 2``), ReLU MLP counted as a
  2-matrix ``gelu``-type MLP (same shapes), LayerNorm, biases, tied by default.

Every key of the file must be either read or listed as known to be irrelevant (the common list in
:mod:`parplan.workloads.hf_config` and one per model type below, each with its reason); any other key is a
:class:`SpecError` naming it, never silently dropped.  Bad input raises a one-line :class:`SpecError`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import check_name
from parplan.workloads.hf_config import Config, read_json
from parplan.workloads.hf_moe import MOE_KNOWN, MOE_NOTES, MOE_READERS, build_moe_spec
from parplan.workloads.transformer import TransformerSpec

_Reader = Callable[[Config], dict]


def _llama_like(c: Config) -> dict:
    heads = c.pos_int("num_attention_heads")
    attention_bias, mlp_bias = c.flag("attention_bias", False), c.flag("mlp_bias", False)  # both read
    return dict(
        layers=c.pos_int("num_hidden_layers"), hidden=c.pos_int("hidden_size"), heads=heads,
        kv_heads=c.pos_int("num_key_value_heads", default=heads), ffn_hidden=c.pos_int("intermediate_size"),
        ffn="swiglu", vocab=c.pos_int("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings", False),
        head_dim=c.pos_int("head_dim") if c.has("head_dim") else None, position="rope", max_position=0,
        norm="rmsnorm",
        # Llama configs may set attention_bias / mlp_bias; the spec's flag means all linear layers have biases.
        bias=attention_bias and mlp_bias,
        dropout=c.prob("attention_dropout", 0.0) > 0,
    )


def _gpt2(c: Config) -> dict:
    hidden = c.pos_int("n_embd")
    return dict(
        layers=c.pos_int("n_layer"), hidden=hidden, heads=c.pos_int("n_head"), kv_heads=c.pos_int("n_head"),
        ffn_hidden=c.pos_int("n_inner", default=4 * hidden), ffn="gelu", vocab=c.pos_int("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", True), position="learned",
        max_position=c.pos_int("n_positions"), norm="layernorm", bias=True,
        dropout=max(c.prob(k, 0.1) for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop")) > 0,
    )


def _gpt_neox(c: Config) -> dict:
    heads = c.pos_int("num_attention_heads")
    return dict(
        layers=c.pos_int("num_hidden_layers"), hidden=c.pos_int("hidden_size"), heads=heads, kv_heads=heads,
        ffn_hidden=c.pos_int("intermediate_size"), ffn="gelu", vocab=c.pos_int("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", False), position="rope", max_position=0,
        norm="layernorm", bias=c.flag("attention_bias", True),
        dropout=max(c.prob("hidden_dropout", 0.0), c.prob("attention_dropout", 0.0)) > 0,
    )


def _opt(c: Config) -> dict:
    hidden = c.pos_int("hidden_size")
    proj = c.pos_int("word_embed_proj_dim", default=hidden)
    if proj != hidden:
        raise SpecError(f"word_embed_proj_dim={proj} differs from hidden_size={hidden}: OPT's project_in/"
                        "project_out layers are not modelled", file=c.file, key="word_embed_proj_dim",
                        hint="only OPT configs with word_embed_proj_dim == hidden_size are supported")
    heads = c.pos_int("num_attention_heads")
    return dict(
        layers=c.pos_int("num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=heads,
        ffn_hidden=c.pos_int("ffn_dim"), ffn="gelu",  # ReLU MLP: two matrices h→ffn_dim→h, same shapes as GELU
        vocab=c.pos_int("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings", True), position="learned",
        max_position=c.pos_int("max_position_embeddings") + 2,  # OPTLearnedPositionalEmbedding keeps 2 offset rows
        norm="layernorm", bias=c.flag("enable_bias", True),
        dropout=max(c.prob("dropout", 0.1), c.prob("attention_dropout", 0.0)) > 0,
    )


def _qwen2(c: Config) -> dict:
    if c.flag("use_sliding_window", False):
        raise c.error("use_sliding_window", "sliding-window attention (layers from max_window_layers on) is not "
                      "modelled for dense models", hint="only configs with use_sliding_window false are supported")
    return _llama_like(c)


_READERS: dict[str, _Reader] = {
    "llama": _llama_like,
    "mistral": _llama_like,
    "qwen2": _qwen2,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "opt": _opt,
    **MOE_READERS,
}
SUPPORTED_MODEL_TYPES = tuple(_READERS)
DENSE_MODEL_TYPES = tuple(t for t in _READERS if t not in MOE_READERS)
MOE_MODEL_TYPES = tuple(MOE_READERS)

# Keys each dense type may carry beyond what its reader reads, and why they do not matter here.
_KNOWN: dict[str, frozenset] = {
    "llama": frozenset(),
    # Mistral-7B's 4096-token sliding window on every layer: the dense family has no window (it binds only beyond
    # 4096 tokens; attention is priced as full causal attention, an overestimate for longer sequences)
    "mistral": frozenset({"sliding_window"}),
    # meaningful only with use_sliding_window, which the reader requires to be false
    "qwen2": frozenset({"sliding_window", "max_window_layers"}),
    "gpt2": frozenset({
        "activation_function",  # gelu_new: elementwise, same shapes
        "n_ctx",  # old alias of n_positions
        "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",  # numerics
        # the sequence-summary head of GPT2DoubleHeadsModel, not part of the language model
        "summary_activation", "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj",
    }),
    "gpt_neox": frozenset({
        "rotary_emb_base", "rotary_pct",  # RoPE base and the rotated share of each head: elementwise only
        "use_parallel_residual",  # attention and MLP read the same input: same weights and GEMMs
        "classifier_dropout",  # sequence-classification head only
    }),
    "opt": frozenset({
        "activation_function",  # relu: counted as a 2-matrix MLP (same shapes)
        "activation_dropout", "layerdrop",  # 0 in the released OPT configs
        "do_layer_norm_before", "layer_norm_elementwise_affine", "_remove_final_layer_norm",  # norm placement
    }),
    **MOE_KNOWN,
}

_NOTES = {
    "qwen2": "; q/k/v biases not counted",
    "opt": "; ReLU MLP counted as 2-matrix gelu-type, +2 offset position rows",
    **MOE_NOTES,
}

# unknown model types that look like mixtures of experts get MoE suggestions only (never 'mixtral' → 'mistral'),
# the others dense suggestions only (never a dense 'qwen3' → 'qwen3_moe')
_MOE_WORDS = ("moe", "mixtral", "deepseek", "llama4", "gpt_oss", "gpt-oss", "grok", "expert")


def _looks_moe(model_type: str) -> bool:
    t = model_type.lower()
    return t.endswith("_moe") or any(w in t for w in _MOE_WORDS)


def model_type_hint(model_type: str) -> str | None:
    """A 'did you mean' for an unsupported model_type, within the family it looks like: MoE-looking names
    (…_moe, *moe*, *mixtral*, *deepseek*, *llama4*, *gpt_oss*, *grok*, *expert*) only get MoE types, the others
    only dense types."""
    pool = MOE_MODEL_TYPES if _looks_moe(model_type) else DENSE_MODEL_TYPES
    return did_you_mean(model_type, pool)


def load_hf_config(path: "str | Path", name: str | None = None) -> TransformerSpec:
    """The architecture described by a local Hugging Face ``config.json`` (or a folder holding one).

    ``name`` defaults to the config's ``_name_or_path``, else the name of the folder holding the file.
    """
    p = Path(path)
    try:
        if p.is_dir() and (p / "config.json").is_file():
            p = p / "config.json"
    except (OSError, ValueError):  # a path the OS cannot look up (too long, a NUL byte): read_json says so
        pass
    file = str(p)
    data = read_json(p, file)
    if not isinstance(data, dict):
        raise SpecError(f"expected a JSON object of config keys, got {type(data).__name__}", file=file)

    model_type = data.get("model_type")
    if model_type is None:
        raise SpecError("required key is missing", file=file, key="model_type", allowed=list(SUPPORTED_MODEL_TYPES))
    if not isinstance(model_type, str) or model_type not in _READERS:
        raise SpecError(f"unsupported model_type {short(model_type)}", file=file, key="model_type",
                        allowed=list(SUPPORTED_MODEL_TYPES), hint=model_type_hint(str(model_type)))
    cfg = Config(data, file, model_type)
    cfg.type_known = _KNOWN[model_type]
    fields = _READERS[model_type](cfg)
    cfg.check_unknown()

    if name is None:
        given = data.get("_name_or_path")
        if isinstance(given, str) and given.strip():
            name = check_name(given, key="_name_or_path", file=file)
        else:
            name = check_name(p.resolve().parent.name or p.stem, file=file)
    source = f"Hugging Face config.json (model_type {model_type}{_NOTES.get(model_type, '')}): {file}"
    if model_type in MOE_READERS:
        return build_moe_spec(cfg, fields, name, source)

    heads, kv, hidden = fields["heads"], fields["kv_heads"], fields["hidden"]
    if heads % kv != 0:
        raise SpecError(f"num_key_value_heads={kv} does not divide the {heads} attention heads", file=file,
                        key="num_key_value_heads", hint="GQA needs groups of equal size")
    if fields.get("head_dim") is None and hidden % heads != 0:
        raise SpecError(f"{heads} attention heads do not divide hidden size {hidden}", file=file,
                        hint="add head_dim to the config when hidden is not heads × head_dim")
    return TransformerSpec(name=name, source=source, **fields)
