"""Hugging Face import of mixture-of-experts configs, the unknown-key rule and the model_type suggestions.

The sample configs under data/moe/ are hand-written from the public config.json files:
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parplan.errors import SpecError
from parplan.workloads import load_workload
from parplan.workloads.hf import DENSE_MODEL_TYPES, MOE_MODEL_TYPES, load_hf_config, model_type_hint
from parplan.workloads.hf_moe import fit_full_every, fit_moe_mask
from parplan.workloads.moe import MoESpec

DATA = Path(__file__).parent / "data" / "moe"
SOURCES = {
    "mixtral-8x7b-v0.1.json": "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json",
    "qwen1.5-moe-a2.7b.json": "https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B/blob/main/config.json",
    "qwen3-30b-a3b.json": "https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json",
    "deepseek-v3.json": "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json",
    "deepseek-v2-lite.json": "https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json",
    "gpt-oss-20b.json": "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json",
    "llama4-scout-17b-16e.json": "https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E/blob/main/config.json",
    # text_config of the Maverick config as a flat llama4_text config
    "llama4-maverick-17b-128e-text.json":
        "https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E/blob/main/config.json",
}
# sample config -> (model_type, catalog id whose architecture it must reproduce, or None)
SAMPLES = {
    "mixtral-8x7b-v0.1.json": ("mixtral", "mixtral-8x7b"),
    "qwen1.5-moe-a2.7b.json": ("qwen2_moe", None),
    "qwen3-30b-a3b.json": ("qwen3_moe", "qwen3-30b-a3b"),
    "deepseek-v3.json": ("deepseek_v3", "deepseek-v3"),
    "deepseek-v2-lite.json": ("deepseek_v2", "deepseek-v2-lite"),
    "gpt-oss-20b.json": ("gpt_oss", "gpt-oss-20b"),
    "llama4-scout-17b-16e.json": ("llama4", "llama4-scout"),
    "llama4-maverick-17b-128e-text.json": ("llama4_text", "llama4-maverick"),
}
COUNTED = ("total_params", "active_params", "mtp_params", "n_moe_layers", "sliding_window", "full_attention_every",
           "expert_layer_params_total", "attention_projections", "router_params")


def test_every_sample_is_cited():
    assert set(SOURCES) == set(SAMPLES) == {p.name for p in DATA.glob("*.json")}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_and_matches_the_catalog(name):
    model_type, ident = SAMPLES[name]
    s = load_hf_config(DATA / name)
    assert isinstance(s, MoESpec) and f"model_type {model_type}" in s.source
    if ident is not None:
        c = load_workload(ident).model
        for attr in COUNTED:
            assert getattr(s, attr) == getattr(c, attr), f"{name}: {attr}"


def test_qwen1_5_moe_published():
    """Qwen1.5-MoE-A2.7B model card: 14.3B total, 2.7B activated (shared expert of 5632 = 4 × 1408)."""
    s = load_hf_config(DATA / "qwen1.5-moe-a2.7b.json")
    assert (s.shared_experts, s.shared_ffn_hidden_) == (1, 5632)
    assert abs(s.total_params - 14.3e9) / 14.3e9 < 0.005 and abs(s.active_params - 2.7e9) / 2.7e9 < 0.02
    assert "shared-expert gate" in s.source


def _write(tmp_path: Path, cfg: dict) -> Path:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg), encoding="utf-8")
    return p


def _cfg(name: str, **over) -> dict:
    cfg = json.loads((DATA / name).read_text())
    cfg.update(over)
    return {k: v for k, v in cfg.items() if v is not ...}


def test_llama4_flat_with_model_type_llama4(tmp_path):
    nested = json.loads((DATA / "llama4-scout-17b-16e.json").read_text())
    flat = dict(nested["text_config"], model_type="llama4")
    assert load_hf_config(_write(tmp_path, flat)).total_params == load_hf_config(DATA / "llama4-scout-17b-16e.json").total_params


def test_unknown_keys_named_sorted(tmp_path):
    p = _write(tmp_path, _cfg("mixtral-8x7b-v0.1.json", zeta_gate=1, alpha_mode="x"))
    with pytest.raises(SpecError) as e:
        load_hf_config(p)
    assert str(e.value).startswith(f"{p}: alpha_mode: unknown keys for model_type 'mixtral': alpha_mode, zeta_gate; "
                                   "parplan does not know whether they change the model's shape or cost: remove them")
    assert "file an issue" in str(e.value)


def test_unknown_key_in_llama4_text_config(tmp_path):
    cfg = json.loads((DATA / "llama4-scout-17b-16e.json").read_text())
    cfg["text_config"]["expert_capacity"] = 2
    with pytest.raises(SpecError, match=r"text_config.expert_capacity: unknown key in text_config for model_type "
                                        r"'llama4': text_config.expert_capacity"):
        load_hf_config(_write(tmp_path, cfg))


def test_unknown_key_in_a_dense_config_too(tmp_path):
    cfg = json.loads((DATA.parent / "llama2-7b.json").read_text())
    cfg["num_local_experts"] = 8
    with pytest.raises(SpecError, match=r"num_local_experts: unknown key for model_type 'llama': num_local_experts"):
        load_hf_config(_write(tmp_path, cfg))


def test_mixtral_never_suggests_mistral(tmp_path):
    assert load_hf_config(DATA / "mixtral-8x7b-v0.1.json").family == "moe-transformer"  # handled, no suggestion
    for typo in ("mixtrall", "mixtral_v2", "Mixtral"):
        hint = model_type_hint(typo) or ""
        assert "mistral" not in hint, typo
    with pytest.raises(SpecError) as e:
        load_hf_config(_write(tmp_path, _cfg("mixtral-8x7b-v0.1.json", model_type="mixtrall")))
    assert "did you mean 'mixtral'?" in str(e.value) and "'mistral'" not in str(e.value)


@pytest.mark.parametrize("model_type", ["llama_moe", "mistral_moe", "qwen_moe", "gpt2_moe", "olmoe", "deepseek",
                                        "deepseek_v4", "qwen3moe"])
def test_moe_looking_types_get_moe_suggestions_only(model_type):
    hint = model_type_hint(model_type)
    if hint:
        suggested = [w.strip("'?,") for w in hint.split() if w.startswith("'")]
        assert suggested and all(t in MOE_MODEL_TYPES for t in suggested), hint
        assert not any(t in DENSE_MODEL_TYPES for t in suggested)
    assert model_type_hint("qwen3moe") == "did you mean 'qwen3_moe' or 'qwen2_moe'?"


@pytest.mark.parametrize("change, key, message", [
    ({"mlp_only_layers": [5]}, "mlp_only_layers", "MoE layers"),
    ({"use_sliding_window": True}, "use_sliding_window", "not expressible"),
    ({"attention_bias": True}, "attention_bias", "not expressible"),
    ({"num_experts_per_tok": 200}, "num_experts_per_tok", "top_k=200 must be between 1 and experts=128"),
    ({"num_key_value_heads": 5}, "num_key_value_heads", "does not divide"),
])
def test_qwen3_errors(tmp_path, change, key, message):
    with pytest.raises(SpecError) as e:
        load_hf_config(_write(tmp_path, _cfg("qwen3-30b-a3b.json", **change)))
    assert f": {key}: " in str(e.value) and message in str(e.value)


def test_qwen3_mlp_only_leading_layers_are_dense(tmp_path):
    s = load_hf_config(_write(tmp_path, _cfg("qwen3-30b-a3b.json", mlp_only_layers=[0, 1])))
    assert (s.first_dense_layers, s.moe_every, s.ffn_hidden) == (2, 1, 6144)


def test_deepseek_errors(tmp_path):
    with pytest.raises(SpecError, match=r"moe_layer_freq: MoE layers \[0, 2, 4"):     # i % 2 == 0 from layer 0
        load_hf_config(_write(tmp_path, _cfg("deepseek-v3.json", first_k_dense_replace=0, moe_layer_freq=2)))
    with pytest.raises(SpecError, match=r"v_head_dim: required key is missing for model_type 'deepseek_v3'"):
        load_hf_config(_write(tmp_path, _cfg("deepseek-v3.json", v_head_dim=...)))
    with pytest.raises(SpecError, match=r"num_key_value_heads: kv_heads=16: MLA up-projects"):
        load_hf_config(_write(tmp_path, _cfg("deepseek-v3.json", num_key_value_heads=16)))
    s = load_hf_config(_write(tmp_path, _cfg("deepseek-v3.json", first_k_dense_replace=1, moe_layer_freq=2)))
    assert (s.first_dense_layers, s.moe_every) == (1, 2)   # layers 2, 4, 6, …: (i - 1) % 2 == 1


def test_gpt_oss_errors(tmp_path):
    types = ["full_attention"] * 2 + ["sliding_attention"] * 22
    with pytest.raises(SpecError, match=r"layer_types: the full-attention layers are not every n-th layer"):
        load_hf_config(_write(tmp_path, _cfg("gpt-oss-20b.json", layer_types=types)))
    with pytest.raises(SpecError, match=r"experts_per_token: differs from num_experts_per_tok=4"):
        load_hf_config(_write(tmp_path, _cfg("gpt-oss-20b.json", experts_per_token=2)))
    s = load_hf_config(_write(tmp_path, _cfg("gpt-oss-20b.json", layer_types=["full_attention"] * 24)))
    assert (s.sliding_window, s.full_attention_every) == (0, 1)


def test_mixtral_window_on_every_layer_is_an_error(tmp_path):
    with pytest.raises(SpecError, match=r"sliding_window: a 4096-token window on every layer is not expressible"):
        load_hf_config(_write(tmp_path, _cfg("mixtral-8x7b-v0.1.json", sliding_window=4096)))


def test_llama4_attention_pattern(tmp_path):
    cfg = json.loads((DATA / "llama4-scout-17b-16e.json").read_text())
    cfg["text_config"]["no_rope_layers"] = [0 if i % 2 else 1 for i in range(48)]   # NoPE every 2nd layer
    assert load_hf_config(_write(tmp_path, cfg)).full_attention_every == 2
    cfg["text_config"]["attention_chunk_size"] = None
    assert load_hf_config(_write(tmp_path, cfg)).sliding_window == 0
    cfg["text_config"]["attention_bias"] = True
    with pytest.raises(SpecError, match=r"text_config.attention_bias: attention biases"):
        load_hf_config(_write(tmp_path, cfg))


def test_fit_helpers():
    assert fit_moe_mask([False, True, False, True]) == (0, 2)
    assert fit_moe_mask([False, False, True, True]) == (2, 1)
    assert fit_moe_mask([True, False, True, False]) is None
    assert fit_moe_mask([False] * 3) is None
    assert fit_full_every([False, False, False, True] * 2) == 4 and fit_full_every([True] * 3) == 1
    assert fit_full_every([True, False, False]) is None


def test_llama4_bad_layer_lists(tmp_path):
    cfg = json.loads((DATA / "llama4-scout-17b-16e.json").read_text())
    cfg["text_config"]["moe_layers"] = [1, 99]
    with pytest.raises(SpecError, match=r"text_config.moe_layers: layers \[99\] do not exist"):
        load_hf_config(_write(tmp_path, cfg))
    cfg["text_config"]["moe_layers"] = None
    cfg["text_config"]["no_rope_layers"] = [2] * 48
    with pytest.raises(SpecError, match=r"text_config.no_rope_layers: must hold one 0 or 1 per layer"):
        load_hf_config(_write(tmp_path, cfg))


def test_dense_looking_types_get_dense_suggestions_only():
    assert model_type_hint("qwen3") == "did you mean 'qwen2'?"          # dense Qwen3 is not qwen3_moe
    assert model_type_hint("gpt-oss") == "did you mean 'gpt_oss'?"       # MoE-looking


def test_llama_mlp_bias_is_read_even_without_attention_bias(tmp_path):
    cfg = json.loads((DATA.parent / "llama2-7b.json").read_text())
    cfg.update(attention_bias=False, mlp_bias=False)
    assert load_hf_config(_write(tmp_path, cfg)).bias is False
