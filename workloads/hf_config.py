"""A parsed Hugging Face ``config.json`` with typed, error-reporting accessors that remember which keys were read,
and the rule that every other key must be listed as known to be irrelevant (no key is silently dropped)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from parplan.errors import SpecError, short
from parplan.workloads.transformer import (MAX_EXPERTS, MAX_FFN_HIDDEN, MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN,
                                           MAX_LAYERS, MAX_LORA_RANK, MAX_MTP_LAYERS, MAX_POSITION,
                                           MAX_SHARED_EXPERTS, MAX_VOCAB)

# Largest value of each integer key read (the maxima of the YAML architecture schema); any other integer key is
# at most MAX_CONFIG_INT.
MAX_CONFIG_INT = 16_777_216  # 2^24
_MAX_BY_KEY = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
                     "interleave_moe_layer_step", "no_rope_layer_interval"), MAX_LAYERS),
    **dict.fromkeys(("hidden_size", "n_embd", "word_embed_proj_dim"), MAX_HIDDEN),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_key_value_heads"), MAX_HEADS),
    **dict.fromkeys(("head_dim", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"), MAX_HEAD_DIM),
    **dict.fromkeys(("intermediate_size", "intermediate_size_mlp", "ffn_dim", "n_inner", "moe_intermediate_size",
                     "shared_expert_intermediate_size"), MAX_FFN_HIDDEN),
    "vocab_size": MAX_VOCAB,
    **dict.fromkeys(("n_positions", "max_position_embeddings", "sliding_window", "attention_chunk_size"),
                    MAX_POSITION),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok",
                     "experts_per_token"), MAX_EXPERTS),
    "n_shared_experts": MAX_SHARED_EXPERTS,
    **dict.fromkeys(("q_lora_rank", "kv_lora_rank"), MAX_LORA_RANK),
    "num_nextn_predict_layers": MAX_MTP_LAYERS,
}

# Keys every model type may carry that change neither the shapes nor the training cost of the decoder.
COMMON_KNOWN = frozenset({
    # provenance and bookkeeping
    "_name_or_path", "architectures", "model_type", "transformers_version", "auto_map", "_attn_implementation_autoset",
    "_commit_hash", "torch_dtype", "dtype", "use_bfloat16", "torchscript", "return_dict", "output_hidden_states",
    "output_attentions", "use_return_dict", "pruned_heads", "tie_encoder_decoder", "is_encoder_decoder",
    "is_decoder", "add_cross_attention", "cross_attention_hidden_size", "chunk_size_feed_forward",
    "tf_legacy_loss", "finetuning_task", "problem_type", "id2label", "label2id", "task_specific_params",
    # tokenizer ids
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "unk_token_id", "decoder_start_token_id",
    "tokenizer_class", "prefix",
    # initialisation, numerics, inference-only switches
    "initializer_range", "init_std", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "use_cache",
    "pretraining_tp",  # Llama-1/2 inference-time TP slicing of the MLP; same weights
    "hidden_act",  # the MLP's elementwise activation (silu / gelu); its matrix count comes from the model type
    # position encoding details: RoPE base / scaling change no shape, no FLOP count of the GEMMs
    "rope_theta", "rope_scaling", "rope_parameters", "max_position_embeddings",
    # checkpoint storage format (the planner prices training in training.precision)
    "quantization_config",
    # generation defaults written by older save_pretrained (PretrainedConfig), unused by training
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
    "diversity_penalty", "temperature", "top_p", "typical_p", "repetition_penalty", "length_penalty",
    "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
    "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
})

# MoE training-loss and routing-math keys: they change the loss or the gating arithmetic, not shapes or FLOPs
MOE_ROUTING_KNOWN = frozenset({
    "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob",
    "aux_loss_alpha", "seq_aux", "routed_scaling_factor", "scoring_func", "n_group", "topk_group",
    "ep_size",  # DeepSeek remote code: inference-time expert sharding, not a model property
})


class Config:
    """A JSON object of config keys (or a nested one, ``prefix`` = its key path) that records the keys read."""

    def __init__(self, data: dict, file: str, model_type: str, prefix: str = "") -> None:
        self.data = data
        self.file = file
        self.model_type = model_type
        self.prefix = prefix
        self.read: set[str] = set()
        self.type_known: frozenset = frozenset()  # the model type's allow-list of irrelevant keys
        self.known: set[str] = set()  # extra keys the reader declares irrelevant (with a comment where it does)
        self.children: list[Config] = []
        self.keymap: dict[str, str] = {}  # spec field -> the config key it came from (for error messages)

    def key(self, k: str) -> str:
        return f"{self.prefix}{k}"

    def error(self, k: str | None, message: str, hint: str | None = None) -> SpecError:
        return SpecError(message, file=self.file, key=self.key(k) if k else (self.prefix.rstrip(".") or None),
                         hint=hint)

    def raw(self, k: str) -> Any:
        self.read.add(k)
        return self.data.get(k)

    def has(self, k: str) -> bool:
        return self.raw(k) is not None

    def pos_int(self, k: str, default: int | None = None) -> int:
        value = self.raw(k)
        if value is None:
            if default is not None:
                return default
            raise self.error(k, f"required key is missing for model_type {self.model_type!r}")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.error(k, f"must be a positive integer, got {short(value)}")
        return self._at_most(k, value)

    def _at_most(self, k: str, value: int) -> int:
        top = _MAX_BY_KEY.get(k, MAX_CONFIG_INT)
        if value > top:
            raise self.error(k, f"bad value {short(value)}: must be ≤ {top:,}")
        return value

    def nonneg_int(self, k: str, default: int = 0) -> int:
        value = self.raw(k)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.error(k, f"must be a non-negative integer, got {short(value)}")
        return self._at_most(k, value)

    def flag(self, k: str, default: bool) -> bool:
        value = self.raw(k)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(k, f"must be true or false, got {short(value)}")
        return value

    def prob(self, k: str, default: float) -> float:
        value = self.raw(k)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise self.error(k, f"must be a probability in [0, 1], got {short(value)}")
        return float(value)

    def string(self, k: str, default: str) -> str:
        value = self.raw(k)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(k, f"must be a string, got {short(value)}")
        return value

    def list_of(self, k: str, kind: type, length: int | None = None) -> list | None:
        """A list whose items are all ``kind`` (bool excluded from int), optionally of a given length."""
        value = self.raw(k)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, kind) and not (kind is int and isinstance(v, bool))
                                                  for v in value):
            raise self.error(k, f"must be a list of {kind.__name__}, got {short(value, 60)}")
        if length is not None and len(value) != length:
            raise self.error(k, f"has {len(value)} entries, expected one per layer ({length})")
        return value

    def sub(self, k: str, type_known: frozenset) -> "Config":
        """The nested object at key ``k`` (e.g. Llama 4's ``text_config``) as its own Config with its allow-list."""
        value = self.raw(k)
        if not isinstance(value, dict):
            raise self.error(k, f"must be a JSON object of config keys, got {type(value).__name__}")
        child = Config(value, self.file, self.model_type, prefix=f"{self.prefix}{k}.")
        child.type_known = type_known
        self.children.append(child)
        return child

    def check_unknown(self) -> None:
        """Every key must have been read or be listed as irrelevant; nested configs are checked too."""
        allowed = COMMON_KNOWN | self.type_known | self.known | self.read
        unknown = sorted(k for k in self.data if k not in allowed)
        if unknown:
            where = f" in {self.prefix.rstrip('.')}" if self.prefix else ""
            raise SpecError(f"unknown key{'s' if len(unknown) > 1 else ''}{where} for model_type "
                            f"{self.model_type!r}: {', '.join(self.key(k) for k in unknown)}", file=self.file,
                            key=self.key(unknown[0]),
                            hint="parplan does not know whether they change the model's shape or cost: remove them "
                                 "from the config if they do not, or file an issue to have them supported")
        for child in self.children:
            child.check_unknown()


def read_json(path: Path, file: str) -> Any:
    """The parsed ``config.json``, read through the bounded door of :mod:`parplan.spec` (size, depth, number and
    string length limits)."""
    from parplan.spec import load_json_file

    try:
        return load_json_file(path, file)
    except SpecError as err:
        if err.message.startswith("is a directory"):
            raise SpecError("is a directory without a config.json", file=file) from None
        raise
