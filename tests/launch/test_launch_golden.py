"""Golden launch exports (llama3-70b tp8·pp4·vpp5 and a Mixtral 8x7B MoE plan on dgx-h100-64, every framework) and
the files parsed back: TOML through tomllib, YAML through PyYAML, the DeepSpeed JSON, the shell scripts by bash."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from parplan.launch import export_plan
from parplan.launch.deepspeed import config_json
from parplan.launch.toml_emit import dumps
from launch_cases import CASES, DENSE, MOE

GOLDEN = Path(__file__).parent / "golden"
tomllib = pytest.importorskip("tomllib")


@pytest.mark.parametrize("name,workload,cluster,plan,to", CASES, ids=[c[0] for c in CASES])
def test_golden(name, workload, cluster, plan, to):
    cfg = export_plan(workload, cluster, plan, to)
    path = GOLDEN / name
    if os.environ.get("PARPLAN_REGEN_GOLDEN"):
        path.write_text(cfg.text, encoding="utf-8")
    assert cfg.text == path.read_text(encoding="utf-8")
    assert cfg.framework == to and cfg.filename


def _flags(text: str) -> dict:
    """--flag value pairs of a launch script (a flag alone maps to None; several values to a list)."""
    toks = [t for line in text.splitlines() if line.startswith("  --") for t in line.rstrip(" \\").split()]
    out, key = {}, None
    for t in toks:
        if t.startswith("--"):
            key = t
            out[key] = None
        elif key is not None:
            out[key] = t if out[key] is None else (out[key] if isinstance(out[key], list) else [out[key]]) + [t]
    return out


def test_megatron_dense_flags():
    f = _flags(export_plan("llama3-70b", "dgx-h100-64", DENSE, "megatron").text)
    assert f["--tensor-model-parallel-size"] == "8" and f["--pipeline-model-parallel-size"] == "4"
    assert f["--num-layers-per-virtual-pipeline-stage"] == "4"  # 80 layers / (4 · 5)
    assert "--sequence-parallel" in f and "--use-distributed-optimizer" in f
    assert f["--recompute-granularity"] == "selective"
    assert f["--micro-batch-size"] == "1" and f["--global-batch-size"] == "2048" and f["--seq-length"] == "8192"
    assert f["--num-query-groups"] == "8" and "--group-query-attention" in f and "--bf16" in f


def test_megatron_moe_flags():
    f = _flags(export_plan("mixtral-8x7b", "dgx-h100-64", MOE, "megatron").text)
    assert f["--expert-model-parallel-size"] == "8" and f["--expert-tensor-parallel-size"] == "1"
    assert f["--num-experts"] == "8" and f["--moe-router-topk"] == "2"
    assert f["--recompute-modules"] == ["core_attn", "layernorm", "moe_act"]


def test_megatron_recompute_full_and_uneven_stages():
    plan = "tp=8,pp=4,mbs=1,zero=1,recompute=full,sp=true,first_layers=18,last_layers=18"
    f = _flags(export_plan("llama3-70b", "dgx-h100-64", plan, "megatron").text)
    assert f["--recompute-granularity"] == "full" and f["--recompute-method"] == "uniform"
    assert f["--recompute-num-layers"] == "1"
    assert f["--decoder-first-pipeline-num-layers"] == "18" and f["--decoder-last-pipeline-num-layers"] == "18"
    g = _flags(export_plan("llama3-70b", "dgx-h100-64", "tp=8,pp=2,vpp=41,mbs=1,zero=1,embed_as_layer=true,"
                                                          "loss_as_layer=true", "megatron").text)
    assert "--account-for-embedding-in-pipeline-split" in g and "--account-for-loss-in-pipeline-split" in g
    assert g["--num-virtual-stages-per-pipeline-rank"] == "41"  # (80 + 2) / (2 · 41) = 1 layer a chunk


@pytest.mark.parametrize("zero,flag,value", [(2, "--data-parallel-sharding-strategy", "optim_grads"),
                                             (3, "--data-parallel-sharding-strategy", "optim_grads_params")])
def test_megatron_fsdp(zero, flag, value):
    f = _flags(export_plan("llama3-8b", "dgx-h100-64", f"tp=1,mbs=1,zero={zero}", "megatron").text)
    assert f[flag] == value and "--use-megatron-fsdp" in f


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("name", [c[0] for c in CASES if c[0].endswith(".sh")])
def test_scripts_parse_in_bash(name):
    r = subprocess.run(["bash", "-n", str(GOLDEN / name)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_nemo_yaml():
    d = yaml.safe_load(export_plan("llama3-70b", "dgx-h100-64", DENSE, "nemo").text)
    s = d["trainer"]["strategy"]
    assert (s["tensor_model_parallel_size"], s["pipeline_model_parallel_size"],
            s["virtual_pipeline_model_parallel_size"], s["context_parallel_size"], s["sequence_parallel"]) == \
        (8, 4, 5, 1, True)
    assert (d["trainer"]["num_nodes"], d["trainer"]["devices"]) == (8, 8)
    assert d["data"] == {"seq_length": 8192, "global_batch_size": 2048, "micro_batch_size": 1}
    assert d["optim"]["config"]["use_distributed_optimizer"] is True
    m = yaml.safe_load(export_plan("mixtral-8x7b", "dgx-h100-64", MOE, "nemo").text)
    assert m["trainer"]["strategy"]["expert_model_parallel_size"] == 8
    assert m["model"]["config"]["recompute_modules"] == ["core_attn", "layernorm", "moe_act"]


def test_torchtitan_toml_round_trip():
    cfg = export_plan("llama3-70b", "dgx-h100-64", "tp=8,pp=4,vpp=5,mbs=1,zero=3,recompute=full,sp=true",
                      "torchtitan")
    d = tomllib.loads(cfg.text)
    assert d == cfg.mapping
    p = d["parallelism"]
    assert (p["tensor_parallel_degree"], p["pipeline_parallel_degree"], p["data_parallel_shard_degree"]) == (8, 4, 2)
    assert p["pipeline_parallel_schedule"] == "Interleaved1F1B"
    parts = p["module_fqns_per_model_part"]
    assert len(parts) == 20 and sum(n.startswith("layers.") for part in parts for n in part) == 80
    assert parts[0][0] == "tok_embeddings" and parts[-1][-2:] == ["norm", "output"]
    assert d["model"] == {"name": "llama3", "flavor": "70B"} and d["activation_checkpoint"]["mode"] == "full"
    assert d["training"]["global_batch_size"] == 2048 and d["training"]["local_batch_size"] == 1024


def test_toml_emitter_escapes():
    text = dumps({"t": {"s": 'a "q" \\ \n', "b": True, "n": 3, "l": [["x"], ["y", "z"]]}})
    assert tomllib.loads(text) == {"t": {"s": 'a "q" \\ \n', "b": True, "n": 3, "l": [["x"], ["y", "z"]]}}


@pytest.mark.parametrize("name", [c[0] for c in CASES if "deepspeed" in c[0]])
def test_deepspeed_config(name):
    _, workload, cluster, plan, to = next(c for c in CASES if c[0] == name)
    cfg = export_plan(workload, cluster, plan, to)
    d = config_json(cfg.text)
    assert d == cfg.mapping["ds_config"]
    dp = 64 // (int(plan.split("tp=")[1].split(",")[0]) * int(plan.split("pp=")[1].split(",")[0]))
    # config-json.md: train_batch_size = micro batch per GPU × gradient accumulation × data-parallel GPUs
    assert d["train_batch_size"] == d["train_micro_batch_size_per_gpu"] * d["gradient_accumulation_steps"] * dp
    assert d["zero_optimization"]["stage"] == 1 and d["bf16"]["enabled"] is True
    assert "activation_checkpointing" in d
    assert json.loads(json.dumps(d)) == d


def test_maxtext_mesh_covers_the_devices():
    for plan, work in ((DENSE, "llama3-70b"), ("tp=2,pp=2,ep=8,mbs=1,zero=3,recompute=full,sp=true", "mixtral-8x7b")):
        d = yaml.safe_load(export_plan(work, "dgx-h100-64", plan, "maxtext").text)
        ici = [v for k, v in d.items() if k.startswith("ici_")]
        dcn = [v for k, v in d.items() if k.startswith("dcn_")]
        assert _prod(ici) == 8 and _prod(dcn) == 8  # one node of 8 inside, 8 nodes across
        # global batch = per_device_batch_size × devices × gradient_accumulation_steps (types.py)
        g = 2048 if work == "llama3-70b" else 128
        assert d["per_device_batch_size"] * 64 * d["gradient_accumulation_steps"] == g
    d = yaml.safe_load(export_plan("llama3-70b", "dgx-h100-64", DENSE, "maxtext").text)
    assert d["shard_optimizer_over_data"] is True and d["num_pipeline_repeats"] == 5
    assert d["num_layers_per_pipeline_stage"] == 4 and d["remat_policy"] == "minimal"


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out
