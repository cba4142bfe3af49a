"""The moe-transformer ``architecture:`` schema (inline YAML), the family registry and the loader's family dispatch."""
from __future__ import annotations

import pytest

from parplan.errors import SpecError
from parplan.workloads import load_workload
from parplan.workloads.moe import MoEArchitecture, MoESpec
from parplan.workloads.registry import family_info, family_names, family_of
from parplan.workloads.transformer import TransformerSpec

BASE = """\
architecture:
  family: moe-transformer
  layers: 4
  hidden: 256
  heads: 8
  kv_heads: 2
  ffn: swiglu
  vocab: 1000
  norm: rmsnorm
  experts: 8
  top_k: 2
  moe_ffn_hidden: 128
{extra}training:
  seq_len: 512
  global_batch: 8
"""


def _file(tmp_path, extra: str = "", replace: tuple[str, str] | None = None) -> str:
    text = BASE.format(extra=extra)
    if replace:
        text = text.replace(*replace)
    p = tmp_path / "moe.yaml"
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_inline_moe_loads(tmp_path):
    w = load_workload(_file(tmp_path, "  shared_experts: 1\n  first_dense_layers: 1\n  ffn_hidden: 512\n"))
    s = w.model
    assert isinstance(s, MoESpec) and (s.experts, s.top_k, s.shared_experts, s.n_moe_layers) == (8, 2, 1, 3)
    assert s.source == f"user input ({w.source_file})" and w.name == "moe"


def test_unknown_key_located(tmp_path):
    path = _file(tmp_path, "  expert: 3\n")
    with pytest.raises(SpecError) as e:
        load_workload(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:13:3: architecture: unknown key 'expert' (allowed: bias, dropout, expert_bias, "
                          "experts, family, ffn, ffn_hidden, first_dense_layers, full_attention_every,")
    assert "moe_ffn_hidden" in msg and "did you mean 'experts'" in msg


def test_bad_top_k(tmp_path):
    path = _file(tmp_path, replace=("top_k: 2", "top_k: 9"))
    with pytest.raises(SpecError) as e:
        load_workload(path)
    assert str(e.value) == f"{path}:11:3: architecture.top_k: top_k=9 must be between 1 and experts=8"


def test_one_expert_is_not_a_mixture(tmp_path):
    with pytest.raises(SpecError, match=r":10:3: architecture.experts: bad value 1: input should be greater than or "
                                        r"equal to 2"):
        load_workload(_file(tmp_path, replace=("experts: 8", "experts: 1")))


def test_mla_dims_must_come_together(tmp_path):
    path = _file(tmp_path, "  kv_lora_rank: 64\n  qk_rope_head_dim: 16\n")
    with pytest.raises(SpecError) as e:
        load_workload(path)
    # a missing key is located at its mapping (the architecture: line)
    assert str(e.value).startswith(f"{path}:1:1: architecture.qk_nope_head_dim: MLA needs kv_lora_rank, "
                                   "qk_nope_head_dim, qk_rope_head_dim and v_head_dim together (missing: "
                                   "qk_nope_head_dim, v_head_dim)")
    with pytest.raises(SpecError, match=r"architecture.kv_lora_rank: MLA needs"):
        load_workload(_file(tmp_path, "  q_lora_rank: 64\n"))


def test_mla_spec_from_yaml(tmp_path):
    s = load_workload(_file(tmp_path, "  kv_lora_rank: 64\n  qk_nope_head_dim: 32\n  qk_rope_head_dim: 16\n"
                                      "  v_head_dim: 32\n", replace=("kv_heads: 2", "kv_heads: 8"))).model
    assert s.is_mla and s.head_dim_ == 48 and s.attn_v_dim == 8 * 32
    with pytest.raises(SpecError, match=r"architecture.kv_heads: kv_heads=2: MLA up-projects"):
        load_workload(_file(tmp_path, "  kv_lora_rank: 64\n  qk_nope_head_dim: 32\n  qk_rope_head_dim: 16\n"
                                      "  v_head_dim: 32\n"))


def test_first_dense_layers_below_layers(tmp_path):
    with pytest.raises(SpecError, match=r"architecture.first_dense_layers: first_dense_layers=4 must be below "
                                        r"layers=4"):
        load_workload(_file(tmp_path, "  first_dense_layers: 4\n  ffn_hidden: 512\n"))


def test_dense_layers_need_ffn_hidden(tmp_path):
    with pytest.raises(SpecError, match=r"architecture.ffn_hidden: required key is missing"):
        load_workload(_file(tmp_path, "  moe_every: 2\n"))


def test_window_needs_a_pattern(tmp_path):
    with pytest.raises(SpecError, match=r"architecture.full_attention_every: sliding_window is set but"):
        load_workload(_file(tmp_path, "  sliding_window: 128\n"))
    s = load_workload(_file(tmp_path, "  sliding_window: 128\n  full_attention_every: 2\n")).model
    assert s.full_attention_mask == (False, True, False, True)


def test_ffn_type_required(tmp_path):
    with pytest.raises(SpecError, match=r"architecture.ffn: required key is missing"):
        load_workload(_file(tmp_path, replace=("  ffn: swiglu\n", "")))


def test_unknown_family_lists_families_without_cross_family_hint(tmp_path):
    path = _file(tmp_path, replace=("family: moe-transformer", "family: moe"))
    with pytest.raises(SpecError) as e:
        load_workload(path)
    assert str(e.value) == (f"{path}:2:3: architecture.family: unknown family 'moe' "
                            "(allowed: dense-transformer, moe-transformer)")
    with pytest.raises(SpecError, match=r"did you mean 'moe-transformer'\?$"):
        load_workload(_file(tmp_path, replace=("family: moe-transformer", "family: moe-transfomer")))
    with pytest.raises(SpecError) as e:
        family_info("mixtral")
    assert "did you mean" not in str(e.value)


def test_moe_keys_on_a_dense_family_are_unknown(tmp_path):
    path = _file(tmp_path, replace=("family: moe-transformer", "family: dense-transformer"))
    with pytest.raises(SpecError, match=r"architecture: unknown key 'experts'"):
        load_workload(path)


def test_registry():
    assert {"dense-transformer", "moe-transformer"} <= set(family_names())
    moe = family_info("moe-transformer")
    assert moe.spec_type is MoESpec and moe.architecture_schema is MoEArchitecture
    assert (moe.model, moe.space, moe.executor) == ("parplan.models.moe", "parplan.planner.spaces.moe",
                                                    "parplan.executor.moe")
    dense = family_info("dense-transformer")
    assert (dense.model, dense.space, dense.executor) == ("parplan.models.training", "parplan.planner.spaces.dense",
                                                          "parplan.executor.dense")
    assert family_of(load_workload("deepseek-v3").model) is moe           # most derived type wins
    assert family_of(load_workload("llama3-8b").model) is dense
    assert dense.spec_type is TransformerSpec and moe.summary and dense.summary


def test_back_compat_imports():
    from parplan.workloads.loader import ArchitectureEntry, spec_from_architecture

    a = ArchitectureEntry(layers=2, hidden=64, heads=4, vocab=100)
    s = spec_from_architecture(a, "toy", "test", None)
    assert type(s) is TransformerSpec and s.ffn_hidden == 256
