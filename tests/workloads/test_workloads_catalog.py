"""The workload catalog: every entry loads, the required ids exist, parameter counts match their sources."""
from __future__ import annotations

import pytest

from parplan.catalogs import entries
from parplan.errors import SpecError
from parplan.spec import load_yaml_file, validate
from parplan.workloads import load_workload, workload_ids
from parplan.workloads.loader import CatalogWorkload, catalog_workload

REQUIRED = {
    "gpt3-175b", "mt-nlg-530b", "megatron-1t", "bloom-176b", "opt-175b",
    "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
    "nemotron4-15b", "nemotron4-340b", "mpt-7b", "mpt-30b", "mpt-70b", "qwen2.5-72b",
    # needed by the accuracy benchmark
    "gpt-22b", "mpt-1b", "mpt-3b", "mpt-13b",
}
# NeMo configs whose only stated size is the nominal one in their name (see each entry's notes).
NOMINAL_ONLY = {"nemotron-8b", "nemotron-22b"}
TOLERANCE = 0.03

IDS = workload_ids()


def _entry(ident: str) -> CatalogWorkload:
    path = entries("workloads")[ident]
    return validate(CatalogWorkload, load_yaml_file(path), file=str(path))


def test_required_ids_present():
    missing = REQUIRED - set(IDS)
    assert not missing, f"catalog lacks {sorted(missing)}"


# catalog models whose source publishes no global batch: a run must state one
NO_PUBLISHED_BATCH = {"qwen2.5-72b"}


@pytest.mark.parametrize("ident", IDS)
def test_entry_loads_with_training(ident):
    e = _entry(ident)
    if ident in NO_PUBLISHED_BATCH:
        assert e.training.global_batch is None
        with pytest.raises(SpecError, match=r"training.global_batch: required key is missing; add it to the file or "
                                            r"pass --global-batch"):
            load_workload(ident)
        w = load_workload(ident, global_batch=512)
    else:
        w = load_workload(ident)
    assert w.name and w.model.source
    assert w.training.seq_len > 0 and w.training.global_batch > 0
    assert e.id == ident
    assert e.training_source, "the training block must cite its source"


@pytest.mark.parametrize("ident", IDS)
def test_params_match_published(ident):
    e = _entry(ident)
    if e.params_published is None:
        assert ident in NOMINAL_ONLY, f"{ident}: params_published missing"
        assert e.notes and "params_published omitted" in e.notes
        return
    computed = catalog_workload(ident)[0].total_params
    rel = abs(computed - e.params_published) / e.params_published
    assert rel <= TOLERANCE, f"{ident}: computed {computed:,} vs published {e.params_published:,.0f} ({rel:.2%})"


def test_tolerance_check_can_fail():
    """The 3 % check compares a computed count, so a wrong architecture is caught."""
    spec = load_workload("llama2-7b").model
    from dataclasses import replace

    wrong = replace(spec, layers=spec.layers + 2)  # two extra layers: +6 %
    assert abs(wrong.total_params - _entry("llama2-7b").params_published) / _entry("llama2-7b").params_published > TOLERANCE


@pytest.mark.parametrize("ident", ["llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "nemotron4-15b",
                                   "nemotron4-340b", "qwen2.5-72b"])
def test_gqa_entries(ident):
    assert catalog_workload(ident)[0].kv_heads == 8


def test_spot_values():
    g = load_workload("gpt3-175b")
    assert (g.model.vocab, g.model.position, g.model.max_position, g.model.tied_embeddings) == (51200, "learned", 2048, True)
    assert g.training.seq_len == 2048
    b = load_workload("bloom-176b").model
    assert (b.position, b.vocab, b.tied_embeddings, b.bias) == ("alibi", 250880, True, True)
    o = load_workload("opt-175b")
    assert o.model.max_position == 2050 and o.model.ffn == "gelu" and o.training.global_batch == 1024
    m = load_workload("mpt-70b").model
    assert (m.layers, m.hidden, m.heads, m.position, m.bias, m.vocab) == (80, 8192, 64, "alibi", False, 50368)
    n = load_workload("nemotron4-340b")
    assert n.training.global_batch == 2304 and n.model.ffn_hidden == 4 * n.model.hidden
    q = catalog_workload("qwen2.5-72b")[0]
    assert (q.ffn_hidden, q.vocab, q.bias) == (29568, 152064, False)
