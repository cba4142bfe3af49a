"""Hugging Face ``config.json`` → :class:`TransformerSpec` (local files only; nothing is ever downloaded).

Supported ``model_type`` values and how they map:

* ``llama``, ``mistral``, ``qwen2`` — SwiGLU MLP, RMSNorm, RoPE, untied by default, GQA via
  ``num_key_value_heads``.  Qwen2 has biases on q/k/v only; :attr:`TransformerSpec.bias` means *every* linear
  bias, so it is left ``False`` and the q/k/v biases (``layers × (q_dim + 2·kv_dim)`` values, < 0.01 % of the
  model) are not counted.
* ``gpt2`` — learned positions (``n_positions`` rows), GELU MLP (``n_inner`` or 4h), LayerNorm, biases, tied.
* ``gpt_neox`` — RoPE, GELU MLP, LayerNorm, biases, untied by default.
* ``opt`` — learned positions with OPT's 2 offset rows (``max_position_embeddings + 2``), ReLU MLP counted as a
  2-matrix ``gelu``-type MLP (same shapes), LayerNorm, biases, tied by default.

Extra keys are ignored (real configs carry dozens).  Bad input raises a one-line :class:`SpecError`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from parplan.errors import SpecError, did_you_mean
from parplan.workloads.transformer import TransformerSpec

_Reader = Callable[["_Config"], dict]


class _Config:
    """A parsed config.json with typed, error-reporting accessors."""

    def __init__(self, data: dict, file: str, model_type: str) -> None:
        self.data = data
        self.file = file
        self.model_type = model_type

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def pos_int(self, key: str, default: int | None = None) -> int:
        value = self.data.get(key)
        if value is None:
            if default is not None:
                return default
            raise SpecError(f"required key is missing for model_type {self.model_type!r}", file=self.file, key=key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SpecError(f"must be a positive integer, got {value!r}", file=self.file, key=key)
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise SpecError(f"must be true or false, got {value!r}", file=self.file, key=key)
        return value

    def prob(self, key: str, default: float) -> float:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise SpecError(f"must be a probability in [0, 1], got {value!r}", file=self.file, key=key)
        return float(value)


def _llama_like(c: _Config) -> dict:
    heads = c.pos_int("num_attention_heads")
    return dict(
        layers=c.pos_int("num_hidden_layers"), hidden=c.pos_int("hidden_size"), heads=heads,
        kv_heads=c.pos_int("num_key_value_heads", default=heads), ffn_hidden=c.pos_int("intermediate_size"),
        ffn="swiglu", vocab=c.pos_int("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings", False),
        head_dim=c.pos_int("head_dim") if c.has("head_dim") else None, position="rope", max_position=0,
        norm="rmsnorm",
        # Llama configs may set attention_bias / mlp_bias; the spec's flag means all linear layers have biases.
        bias=c.flag("attention_bias", False) and c.flag("mlp_bias", False),
        dropout=c.prob("attention_dropout", 0.0) > 0,
    )


def _gpt2(c: _Config) -> dict:
    hidden = c.pos_int("n_embd")
    return dict(
        layers=c.pos_int("n_layer"), hidden=hidden, heads=c.pos_int("n_head"), kv_heads=c.pos_int("n_head"),
        ffn_hidden=c.pos_int("n_inner", default=4 * hidden), ffn="gelu", vocab=c.pos_int("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", True), position="learned",
        max_position=c.pos_int("n_positions"), norm="layernorm", bias=True,
        dropout=max(c.prob(k, 0.1) for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop")) > 0,
    )


def _gpt_neox(c: _Config) -> dict:
    heads = c.pos_int("num_attention_heads")
    return dict(
        layers=c.pos_int("num_hidden_layers"), hidden=c.pos_int("hidden_size"), heads=heads, kv_heads=heads,
        ffn_hidden=c.pos_int("intermediate_size"), ffn="gelu", vocab=c.pos_int("vocab_size"),
        tied_embeddings=c.flag("tie_word_embeddings", False), position="rope", max_position=0,
        norm="layernorm", bias=c.flag("attention_bias", True),
        dropout=max(c.prob("hidden_dropout", 0.0), c.prob("attention_dropout", 0.0)) > 0,
    )


def _opt(c: _Config) -> dict:
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


_READERS: dict[str, _Reader] = {
    "llama": _llama_like,
    "mistral": _llama_like,
    "qwen2": _llama_like,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "opt": _opt,
}
SUPPORTED_MODEL_TYPES = tuple(_READERS)

_NOTES = {
    "qwen2": "; q/k/v biases not counted",
    "opt": "; ReLU MLP counted as 2-matrix gelu-type, +2 offset position rows",
}


def _read_json(path: Path, file: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("file not found", file=file) from None
    except IsADirectoryError:
        raise SpecError("is a directory without a config.json", file=file) from None
    except UnicodeDecodeError:
        raise SpecError("not a UTF-8 text file", file=file) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"malformed JSON: {err.msg}", file=file, line=err.lineno, col=err.colno) from None


def load_hf_config(path: "str | Path", name: str | None = None) -> TransformerSpec:
    """The architecture described by a local Hugging Face ``config.json`` (or a folder holding one).

    ``name`` defaults to the config's ``_name_or_path``, else the name of the folder holding the file.
    """
    p = Path(path)
    if p.is_dir() and (p / "config.json").is_file():
        p = p / "config.json"
    file = str(p)
    data = _read_json(p, file)
    if not isinstance(data, dict):
        raise SpecError(f"expected a JSON object of config keys, got {type(data).__name__}", file=file)

    model_type = data.get("model_type")
    if model_type is None:
        raise SpecError("required key is missing", file=file, key="model_type", allowed=list(SUPPORTED_MODEL_TYPES))
    if not isinstance(model_type, str) or model_type not in _READERS:
        raise SpecError(f"unsupported model_type {model_type!r}", file=file, key="model_type",
                        allowed=list(SUPPORTED_MODEL_TYPES),
                        hint=did_you_mean(str(model_type), SUPPORTED_MODEL_TYPES))
    cfg = _Config(data, file, model_type)
    fields = _READERS[model_type](cfg)

    heads, kv, hidden = fields["heads"], fields["kv_heads"], fields["hidden"]
    if heads % kv != 0:
        raise SpecError(f"num_key_value_heads={kv} does not divide the {heads} attention heads", file=file,
                        key="num_key_value_heads", hint="GQA needs groups of equal size")
    if fields.get("head_dim") is None and hidden % heads != 0:
        raise SpecError(f"{heads} attention heads do not divide hidden size {hidden}", file=file,
                        hint="add head_dim to the config when hidden is not heads × head_dim")

    if name is None:
        given = data.get("_name_or_path")
        name = given if isinstance(given, str) and given.strip() else (p.resolve().parent.name or p.stem)
    source = f"Hugging Face config.json (model_type {model_type}{_NOTES.get(model_type, '')}): {file}"
    return TransformerSpec(name=name, source=source, **fields)
