"""Hugging Face config.json import (local files only) against published parameter counts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from parplan.errors import SpecError
from parplan.workloads import load_workload
from parplan.workloads.hf import SUPPORTED_MODEL_TYPES, load_hf_config

DATA = Path(__file__).parent / "data"


def test_llama2_7b():
    s = load_hf_config(DATA / "llama2-7b.json")
    assert s.name == "meta-llama/Llama-2-7b-hf"
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.ffn_hidden, s.vocab) == (32, 4096, 32, 32, 11008, 32000)
    assert (s.ffn, s.norm, s.position, s.tied_embeddings, s.bias, s.dropout) == (
        "swiglu", "rmsnorm", "rope", False, False, False)
    h, f = 4096, 11008
    assert s.total_params == 32 * (4 * h * h + 3 * h * f + 2 * h) + 2 * 32000 * h + h == 6_738_415_616
    assert s.total_params == load_workload("llama2-7b").model.total_params  # same as the catalog entry


def test_mistral_folder_and_default_name():
    """A folder holding config.json is accepted; without _name_or_path the folder names the model."""
    s = load_hf_config(DATA / "mistral-7b-v0.1")
    assert s.name == "mistral-7b-v0.1"
    assert (s.kv_heads, s.ffn_hidden, s.head_dim_) == (8, 14336, 128)
    h, kv, f = 4096, 8 * 128, 14336
    expected = 32 * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + 2 * 32000 * h + h
    assert s.total_params == expected == 7_241_732_096   # Mistral-7B-v0.1: 7.24B


def test_qwen2_05b_tied_and_qkv_bias_note():
    s = load_hf_config(DATA / "qwen2-0.5b.json")
    assert (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim_) == (24, 896, 14, 2, 64)
    assert s.tied_embeddings and not s.bias
    assert "q/k/v biases not counted" in s.source
    qkv_bias = 24 * (896 + 2 * 2 * 64)
    assert s.total_params + qkv_bias == 494_032_768     # Qwen2-0.5B checkpoint tensor count (0.49B)


def test_gpt2_124m():
    s = load_hf_config(DATA / "gpt2.json", name="gpt2")
    assert s.name == "gpt2"
    assert (s.ffn_hidden, s.position, s.max_position, s.norm, s.bias, s.tied_embeddings, s.dropout) == (
        3072, "learned", 1024, "layernorm", True, True, True)
    assert s.total_params == 124_439_808


def test_pythia_160m_gpt_neox():
    s = load_hf_config(DATA / "pythia-160m.json")
    assert (s.position, s.norm, s.bias, s.tied_embeddings, s.ffn) == ("rope", "layernorm", True, False, "gelu")
    assert s.total_params == 162_322_944


def test_opt_125m():
    s = load_hf_config(DATA / "opt-125m.json")
    assert s.max_position == 2050 and s.tied_embeddings and s.ffn == "gelu" and s.dropout
    assert "ReLU" in s.source
    assert s.total_params == 125_239_296


def test_load_workload_json_needs_training_values():
    with pytest.raises(SpecError, match="training.seq_len: required key is missing"):
        load_workload(str(DATA / "gpt2.json"))
    w = load_workload(str(DATA / "gpt2.json"), seq_len=1024, global_batch=512)
    assert w.model.total_params == 124_439_808 and w.training.tokens_per_step == 1024 * 512


# --- errors ---------------------------------------------------------------------------------------------------

def _write(tmp_path: Path, text: str, name: str = "config.json") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _cfg(**over) -> dict:
    base = json.loads((DATA / "llama2-7b.json").read_text())
    base.update(over)
    return {k: v for k, v in base.items() if v is not ...}


def test_file_not_found(tmp_path):
    with pytest.raises(SpecError, match="missing.json: file not found"):
        load_hf_config(tmp_path / "missing.json")


def test_bad_json_line_col(tmp_path):
    p = _write(tmp_path, '{\n  "model_type": "llama",\n  "hidden_size": 4096\n  "vocab_size": 32000\n}\n')
    with pytest.raises(SpecError) as err:
        load_hf_config(p)
    assert str(err.value) == f"{p}:4:3: malformed JSON: Expecting ',' delimiter"


def test_not_an_object(tmp_path):
    with pytest.raises(SpecError, match="expected a JSON object"):
        load_hf_config(_write(tmp_path, "[1, 2]"))


def test_unsupported_model_type_suggests_closest(tmp_path):
    p = _write(tmp_path, json.dumps(_cfg(model_type="gpt-neox")))
    with pytest.raises(SpecError) as err:
        load_hf_config(p)
    msg = str(err.value)
    assert "model_type: unsupported model_type 'gpt-neox'" in msg
    assert "(allowed: " + ", ".join(SUPPORTED_MODEL_TYPES) + ")" in msg
    assert "did you mean 'gpt_neox'" in msg


def test_missing_model_type(tmp_path):
    p = _write(tmp_path, json.dumps(_cfg(model_type=...)))
    with pytest.raises(SpecError, match="model_type: required key is missing"):
        load_hf_config(p)


def test_missing_key_named_with_model_type(tmp_path):
    p = _write(tmp_path, json.dumps(_cfg(intermediate_size=...)))
    with pytest.raises(SpecError) as err:
        load_hf_config(p)
    assert str(err.value) == f"{p}: intermediate_size: required key is missing for model_type 'llama'"


@pytest.mark.parametrize("bad", [0, -4, 4096.0, "4096", True])
def test_not_positive_int(tmp_path, bad):
    p = _write(tmp_path, json.dumps(_cfg(hidden_size=bad)))
    with pytest.raises(SpecError, match=r"hidden_size: must be a positive integer, got "):
        load_hf_config(p)


def test_kv_heads_must_divide_heads(tmp_path):
    p = _write(tmp_path, json.dumps(_cfg(num_key_value_heads=5)))
    with pytest.raises(SpecError, match="num_key_value_heads: num_key_value_heads=5 does not divide"):
        load_hf_config(p)


def test_kv_heads_default_and_null(tmp_path):
    p = _write(tmp_path, json.dumps(_cfg(num_key_value_heads=None, head_dim=None)))
    s = load_hf_config(p)
    assert s.kv_heads == 32 and s.head_dim is None


def test_opt_projection_mismatch(tmp_path):
    cfg = json.loads((DATA / "opt-125m.json").read_text())
    cfg.update(hidden_size=1024, word_embed_proj_dim=512)     # OPT-350m style
    p = _write(tmp_path, json.dumps(cfg))
    with pytest.raises(SpecError, match="word_embed_proj_dim: word_embed_proj_dim=512 differs from hidden_size=1024"):
        load_hf_config(p)


def test_gpt2_n_inner_used(tmp_path):
    cfg = json.loads((DATA / "gpt2.json").read_text())
    cfg["n_inner"] = 1000
    assert load_hf_config(_write(tmp_path, json.dumps(cfg))).ffn_hidden == 1000
