"""The mixture-of-experts catalog entries: they load with cited sources and training setups, and the catalog CLI
shows their family and parameter counts."""
from __future__ import annotations

import pytest

from parplan.catalogs import entries
from parplan.spec import load_yaml_file, validate
from parplan.workloads import load_workload, workload_ids
from parplan.workloads.loader import CatalogWorkload
from parplan.workloads.moe import MoESpec

MOE_IDS = ["deepseek-v2-lite", "deepseek-v3", "gpt-oss-120b", "gpt-oss-20b", "grok-1", "llama4-maverick",
           "llama4-scout", "mixtral-8x22b", "mixtral-8x7b", "qwen3-235b-a22b", "qwen3-30b-a3b"]


def _entry(ident: str) -> CatalogWorkload:
    path = entries("workloads")[ident]
    return validate(CatalogWorkload, load_yaml_file(path), file=str(path))


def test_moe_ids_present_and_only_they_are_moe():
    moe = [i for i in workload_ids() if load_workload(i, global_batch=8).model.family == "moe-transformer"]
    assert moe == MOE_IDS


@pytest.mark.parametrize("ident", MOE_IDS)
def test_entry_cites_its_sources(ident):
    e = _entry(ident)
    assert e.architecture["family"] == "moe-transformer"
    assert "http" in e.source or "arXiv" in e.source
    assert e.training_source and e.params_published
    if "not published" in e.training_source.lower() or "parplan default" in e.training_source:
        assert "parplan default" in e.training_source       # a default is labelled as one
    w = load_workload(ident)
    assert isinstance(w.model, MoESpec) and w.training.tokens_per_step > 0


def test_published_training_setups():
    ds = load_workload("deepseek-v3").training
    assert (ds.seq_len, ds.global_batch, ds.precision) == (4096, 15360, "fp8")
    lite = load_workload("deepseek-v2-lite").training
    assert (lite.seq_len, lite.global_batch) == (4096, 4608)


def test_catalog_cli_shows_family_and_active():
    from parplan.cli.catalog_cmd import Section, _list, _show

    out = _list(Section.workloads)
    assert "moe-transformer" in out and "dense-transformer" in out and "256 top-8 +1 shared" in out
    row = next(line for line in out.splitlines() if "deepseek-v3 " in line)
    assert "671.03" in row and "37.55" in row and "128 MLA" in row
    shown = _show("deepseek-v3")
    assert "# family: moe-transformer" in shown and "36.63 B without" in shown and "with the 1 MTP" in shown
    assert "# family: dense-transformer" in _show("llama3-8b")
