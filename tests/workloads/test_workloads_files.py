"""User workload YAML files that point at a Hugging Face config.json, and the 'exactly one source' rule."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from parplan.errors import SpecError
from parplan.workloads import load_workload

DATA = Path(__file__).parent / "data"


def test_hf_config_relative_to_yaml(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    shutil.copy(DATA / "llama2-7b.json", project / "data" / "llama2-7b.json")
    yml = project / "model.yaml"
    yml.write_text("hf_config: data/llama2-7b.json\n"
                   "training:\n  seq_len: 4096\n  global_batch: 1024\n  precision: bf16\n  optimizer: adamw\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)                      # the path resolves against the YAML, not the cwd
    w = load_workload(str(yml))
    assert w.name == "meta-llama/Llama-2-7b-hf"
    assert w.model.total_params == 6_738_415_616
    assert (w.training.seq_len, w.training.global_batch, w.training.optimizer) == (4096, 1024, "adamw")
    assert w.source_file == str(yml)


def test_hf_config_yaml_name_and_override(tmp_path):
    shutil.copytree(DATA, tmp_path / "data")
    yml = tmp_path / "m.yaml"
    yml.write_text("name: my-gpt2\nhf_config: data/gpt2.json\ntraining:\n  seq_len: 1024\n  global_batch: 8\n")
    w = load_workload(yml, global_batch=64)
    assert w.name == "my-gpt2" and w.model.name == "my-gpt2"
    assert w.training.global_batch == 64


def test_hf_config_missing_file_reported(tmp_path):
    yml = tmp_path / "m.yaml"
    yml.write_text("hf_config: data/nope.json\ntraining:\n  seq_len: 1024\n  global_batch: 8\n")
    with pytest.raises(SpecError, match=r"nope\.json: file not found"):
        load_workload(yml)


def test_model_and_architecture_rejected(tmp_path):
    yml = tmp_path / "both.yaml"
    yml.write_text("model: llama2-7b\narchitecture:\n  layers: 2\n  hidden: 64\n  heads: 4\n  vocab: 100\n"
                   "training:\n  seq_len: 128\n  global_batch: 4\n")
    with pytest.raises(SpecError) as err:
        load_workload(yml)
    assert "give exactly one of 'model' (catalog id), 'architecture' (inline) or 'hf_config'" in str(err.value)
    assert "(got model, architecture)" in str(err.value)


def test_catalog_model_with_training_override(tmp_path):
    yml = tmp_path / "m.yaml"
    yml.write_text("model: mpt-7b\ntraining:\n  global_batch: 256\n")
    w = load_workload(yml)
    assert w.training.seq_len == 2048 and w.training.global_batch == 256 and w.training.precision == "bf16"
