"""Input contract v2 training keys: ``training.framework`` (checked against the framework catalog) and the
precisions mxfp8 / nvfp4 / int8; the loader's keyword overrides."""
from __future__ import annotations

import pytest

from parplan.errors import SpecError
from parplan.workloads import load_workload
from parplan.workloads.loader import workload_ids
from parplan.workloads.transformer import BYTES_PER_VALUE, TrainingJob

IDS = "deepspeed, llm-foundry, maxtext, megatron-core, nemo, torchtitan"


def _file(tmp_path, training: str) -> str:
    p = tmp_path / "model.yaml"
    p.write_text("model: llama3-8b\ntraining:\n  seq_len: 4096\n  global_batch: 64\n" + training, encoding="utf-8")
    return str(p)


def test_framework_defaults_to_megatron_core():
    assert TrainingJob(seq_len=8, global_batch=8).framework == "megatron-core"
    assert load_workload("llama3-8b", global_batch=8).training.framework == "megatron-core"


def test_every_catalog_workload_still_loads_with_the_default_framework():
    for ident in workload_ids():
        assert load_workload(ident, seq_len=2048, global_batch=8).training.framework == "megatron-core"


def test_framework_key_in_a_workload_file(tmp_path):
    w = load_workload(_file(tmp_path, "  framework: torchtitan\n"))
    assert w.training.framework == "torchtitan" and w.training.seq_len == 4096


def test_bad_framework_is_one_line_with_file_line_allowed_and_hint(tmp_path):
    path = _file(tmp_path, "  framework: torchtitn\n")
    with pytest.raises(SpecError) as e:
        load_workload(path)
    assert str(e.value) == (f"{path}:5:3: training.framework: bad value 'torchtitn' (allowed: {IDS}); "
                            "did you mean 'torchtitan'?")


def test_framework_must_be_a_string(tmp_path):
    with pytest.raises(SpecError, match=r"training.framework: bad value 3: input should be a valid string"):
        load_workload(_file(tmp_path, "  framework: 3\n"))


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "int8"])
def test_every_precision_is_accepted(tmp_path, precision):
    assert load_workload(_file(tmp_path, f"  precision: {precision}\n")).training.precision == precision
    assert precision in BYTES_PER_VALUE


def test_bytes_per_value_of_the_new_precisions():
    assert (BYTES_PER_VALUE["mxfp8"], BYTES_PER_VALUE["nvfp4"], BYTES_PER_VALUE["int8"]) == (1, 0.5, 1)
    assert (BYTES_PER_VALUE["fp32"], BYTES_PER_VALUE["bf16"], BYTES_PER_VALUE["fp8"]) == (4, 2, 1)


def test_bad_precision_lists_the_new_values(tmp_path):
    path = _file(tmp_path, "  precision: fp4\n")
    with pytest.raises(SpecError) as e:
        load_workload(path)
    assert str(e.value).startswith(f"{path}:5:3: training.precision: bad value 'fp4' (allowed: fp32, fp16, bf16, "
                                   "fp8, mxfp8, nvfp4, int8); did you mean 'nvfp4'")


def test_overrides_set_framework_and_precision(tmp_path):
    w = load_workload(_file(tmp_path, "  framework: nemo\n"), framework="deepspeed", precision="nvfp4")
    assert (w.training.framework, w.training.precision) == ("deepspeed", "nvfp4")
    w = load_workload("llama3-8b", global_batch=8, framework="maxtext")
    assert w.training.framework == "maxtext"
    w2 = load_workload(w, framework="llm-foundry")  # an already loaded workload
    assert w2.training.framework == "llm-foundry" and w2.model is w.model
    assert load_workload(w, framework=None) is w


@pytest.mark.parametrize("ref", ["llama3-8b", "workload-object"])
def test_bad_framework_override_is_an_error(ref):
    base = load_workload("llama3-8b", global_batch=8)
    with pytest.raises(SpecError) as e:
        load_workload(base if ref == "workload-object" else ref, global_batch=8, framework="megatron")
    assert str(e.value) == (f"training.framework: bad value 'megatron' (allowed: {IDS}); "
                            "did you mean 'megatron-core'?")
