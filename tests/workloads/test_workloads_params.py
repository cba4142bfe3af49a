"""Parameter counts derived by hand from published architectures, written out term by term."""
from __future__ import annotations

from dataclasses import replace

import pytest

from parplan.workloads import load_workload
from parplan.workloads.transformer import TransformerSpec


def test_llama2_7b_exact():
    L, h, f, V = 32, 4096, 11008, 32000
    per_layer = 4 * h * h + 3 * h * f + 2 * h          # q,k,v,o + gate/up/down + 2 RMSNorm weights
    expected = L * per_layer + 2 * V * h + h            # + untied embedding and LM head + final RMSNorm
    assert expected == 6_738_415_616
    assert load_workload("llama2-7b").model.total_params == expected


def test_llama2_70b_exact_gqa():
    L, h, f, V, kv = 80, 8192, 28672, 32000, 8 * 128
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h
    expected = L * per_layer + 2 * V * h + h
    assert expected == 68_976_648_192
    assert load_workload("llama2-70b").model.total_params == expected


def test_gpt3_175b():
    L, h, V, P = 96, 12288, 51200, 2048
    attn = 4 * h * h + 4 * h                            # qkv + out weights and biases
    mlp = 8 * h * h + 5 * h                             # h->4h->h weights, 4h + h biases
    norms = 2 * 2 * h                                   # two LayerNorms (weight + bias)
    expected = L * (attn + mlp + norms) + V * h + P * h + 2 * h   # tied head, learned positions, final LN
    assert load_workload("gpt3-175b").model.total_params == expected
    assert expected == pytest.approx(174.6e9, rel=1e-3)


def test_megatron_formula_1t():
    """Narayanan et al. 2021 Eq. (params = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))) gives 1008B for Table 1's 1T row."""
    l, h, V, s = 128, 25600, 51200, 2048
    narayanan = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))
    ours = load_workload("megatron-1t").model.total_params
    assert narayanan == pytest.approx(1008e9, rel=1e-3)
    assert ours == pytest.approx(narayanan, rel=1e-6)   # differs only by the final LayerNorm


def test_bloom_176b_only_embedding_layernorm_missing():
    h = 14336
    assert 176_247_271_424 - load_workload("bloom-176b").model.total_params == 2 * h


@pytest.mark.parametrize("ident, numparams", [
    ("mpt-1b", 1_315_950_592), ("mpt-3b", 2_651_837_440), ("mpt-7b", 6_658_859_008),
    ("mpt-13b", 12_853_954_560), ("mpt-30b", 29_975_214_080), ("mpt-70b", 64_862_437_376),
])
def test_llm_foundry_numparams_exact(ident, numparams):
    """llm-foundry's benchmark NumParams (seq 2048) are the yaml models with MPTConfig defaults:
    learned 2048-row position table and biases everywhere. Our formula reproduces them exactly."""
    spec = load_workload(ident).model
    bench = replace(spec, position="learned", max_position=2048, bias=True)
    assert bench.total_params == numparams


def test_spec_counts_components():
    s = TransformerSpec(name="toy", layers=2, hidden=8, heads=2, kv_heads=1, ffn_hidden=16, ffn="swiglu",
                        vocab=10, norm="rmsnorm")
    # q 8x8, k/v 8x4 each, o 8x8 ; 3 x 8x16 ; 2 RMSNorm of 8
    assert s.layer_params == 64 + 32 + 32 + 64 + 3 * 128 + 16
    assert s.total_params == 2 * s.layer_params + 80 + 80 + 8
