"""Golden serving exports (vLLM, SGLang, TensorRT-LLM) of aggregated, attention-DP + EP, disaggregated and
multi-node deployments, and the scripts read back: bash -n, the flags of each replica, the TensorRT-LLM options
YAML through PyYAML.  Regenerate after an intended change with
``PARPLAN_REGEN_GOLDEN=1 python -m pytest -q tests/launch/test_serving_export_golden.py``."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from parplan.launch.export import export_serving

GOLDEN = Path(__file__).parent / "golden"
# ISL 2k / OSL 256 at 64 users, TTFT p99 ≤ 1 s, TPOT ≤ 50 ms: the issue's reference workload
SERVE = {"isl": 2048, "osl": 256, "concurrency": 64, "slo": {"ttft_p99_s": 1.0, "tpot_s": 0.05},
         "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "fp8"}}
DISAGG = "prefill:2x(tp=4)+decode:1x(tp=8,batch=128)"
MOE_ADP = "tp=1,dp=8,ep=8,batch=256,chunk=4096,replicas=2"
CASES = [
    ("serve_llama3-70b_vllm.sh", "llama3-70b", "tp=4,batch=128,chunk=2048,replicas=4", "vllm"),
    ("serve_llama3-70b_sglang.sh", "llama3-70b", "tp=4,batch=128,chunk=2048,replicas=4", "sglang"),
    ("serve_llama3-70b_trtllm.sh", "llama3-70b", "tp=4,batch=128,chunk=2048,replicas=4", "trtllm"),
    ("serve_mixtral-8x7b_vllm.sh", "mixtral-8x7b", MOE_ADP, "vllm"),
    ("serve_mixtral-8x7b_sglang.sh", "mixtral-8x7b", MOE_ADP, "sglang"),
    ("serve_mixtral-8x7b_trtllm.sh", "mixtral-8x7b", MOE_ADP, "trtllm"),
    ("serve_llama3-70b_disagg_vllm.sh", "llama3-70b", DISAGG, "vllm"),
    ("serve_llama3-70b_disagg_sglang.sh", "llama3-70b", DISAGG, "sglang"),
    ("serve_llama3-70b_disagg_trtllm.sh", "llama3-70b", DISAGG, "trtllm"),
    ("serve_llama3-405b_vllm.sh", "llama3-405b", "tp=8,pp=2,batch=64,replicas=1", "vllm"),
    ("serve_llama3-405b_sglang.sh", "llama3-405b", "tp=8,pp=2,batch=64,replicas=1", "sglang"),
    ("serve_llama3-405b_trtllm.sh", "llama3-405b", "tp=8,pp=2,batch=64,replicas=1", "trtllm"),
]


def export(workload, deployment, to, serve=SERVE):
    return export_serving(workload, "dgx-h100-64", serve, deployment, to)


@pytest.mark.parametrize("name,workload,deployment,to", CASES, ids=[c[0] for c in CASES])
def test_golden(name, workload, deployment, to):
    cfg = export(workload, deployment, to)
    path = GOLDEN / name
    if os.environ.get("PARPLAN_REGEN_GOLDEN"):
        path.write_text(cfg.text, encoding="utf-8")
    assert cfg.text == path.read_text(encoding="utf-8")
    assert cfg.framework == to and cfg.filename == f"serve_{to}.sh"


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_scripts_parse_in_bash(name):
    r = subprocess.run(["bash", "-n", str(GOLDEN / name)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def replica_flags(text: str, fn: str) -> dict:
    """--flag value pairs of the command inside the bash function ``fn`` (a switch maps to None)."""
    body = text.split(f"{fn}() {{", 1)[1].split("\n}", 1)[0]
    toks = [t for line in body.splitlines() for t in line.strip().rstrip("\\&").split()]
    out, key = {}, None
    for t in toks:
        if t.startswith("--"):
            key, out[t] = t, None
        elif key is not None and out[key] is None:
            out[key] = t
            key = None
    return out


def test_vllm_aggregated_flags():
    cfg = export("llama3-70b", "tp=4,batch=128,chunk=2048,replicas=4", "vllm")
    f = replica_flags(cfg.text, "mixed_replica")
    # engine_args.md names; the pool's batch and chunk, the request mix's longest request
    assert f["--tensor-parallel-size"] == "4" and f["--pipeline-parallel-size"] == "1"
    assert f["--max-num-seqs"] == "128" and f["--max-num-batched-tokens"] == "2048"
    assert "--enable-chunked-prefill" in f and f["--max-model-len"] == str(2048 + 256)
    assert f["--kv-cache-dtype"] == "fp8" and "--quantization" not in f
    # 4 tp=4 replicas pack two nodes, two a node, each its own GPUs and port
    inst = cfg.mapping["instances"]
    assert [(i["node"], tuple(i["gpus"]), i["port"]) for i in inst] == [
        (0, (0, 1, 2, 3), 8000), (0, (4, 5, 6, 7), 8001), (1, (0, 1, 2, 3), 8002), (1, (4, 5, 6, 7), 8003)]


def test_vllm_moe_expert_and_data_parallel():
    f = replica_flags(export("mixtral-8x7b", MOE_ADP, "vllm").text, "mixed_replica")
    assert f["--data-parallel-size"] == "8" and "--enable-expert-parallel" in f
    # each DP rank schedules its own batch: 256 sequences and 4096 tokens over 8 ranks
    assert f["--max-num-seqs"] == "32" and f["--max-num-batched-tokens"] == "512"


def test_sglang_dp_attention_flags():
    f = replica_flags(export("mixtral-8x7b", MOE_ADP, "sglang").text, "mixed_replica")
    assert (f["--tp"], f["--dp"], f["--ep-size"]) == ("8", "8", "8") and "--enable-dp-attention" in f
    assert f["--max-running-requests"] == "256" and f["--chunked-prefill-size"] == "4096"
    assert f["--kv-cache-dtype"] == "fp8_e4m3"


def _heredocs(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"cat > (\S+) <<'?EOF'?\n(.*?)\nEOF", text, re.S)}


def test_trtllm_options_yaml():
    cfg = export("mixtral-8x7b", MOE_ADP, "trtllm")
    docs = _heredocs(cfg.text)
    o = yaml.safe_load(docs["extra_llm_api_options_mixed.yaml"])
    assert o == cfg.mapping["options"]["mixed"]
    # parallel-strategy.md: moe_tp × moe_ep = tensor_parallel_size; attention DP over all 8 ranks
    assert o["tensor_parallel_size"] == 8 and o["moe_expert_parallel_size"] * o["moe_tensor_parallel_size"] == 8
    assert o["enable_attention_dp"] is True and o["max_batch_size"] == 32
    assert o["kv_cache_config"] == {"free_gpu_memory_fraction": 0.9, "dtype": "fp8"}


def test_disaggregated_routers():
    v = export("llama3-70b", DISAGG, "vllm").text
    assert '"kv_role":"kv_producer"' in replica_flags(v, "prefill_replica")["--kv-transfer-config"]
    assert '"kv_role":"kv_consumer"' in replica_flags(v, "decode_replica")["--kv-transfer-config"]
    assert "--prefiller-ports 8000 8001" in v and "--decoder-ports 8002" in v
    s = export("llama3-70b", DISAGG, "sglang").text
    assert replica_flags(s, "prefill_replica")["--disaggregation-mode"] == "prefill"
    assert replica_flags(s, "decode_replica")["--disaggregation-mode"] == "decode"
    assert '--prefill "http://${NODE_ADDR[0]}:30000" 8998 --prefill "http://${NODE_ADDR[0]}:30001" 8999' in s
    t = export("llama3-70b", DISAGG, "trtllm")
    cfg = t.mapping["disagg_config"]
    assert cfg["context_servers"]["num_instances"] == 2 and cfg["generation_servers"]["num_instances"] == 1
    ctx = yaml.safe_load(_heredocs(t.text)["extra_llm_api_options_prefill.yaml"])
    assert ctx["disable_overlap_scheduler"] is True and ctx["cache_transceiver_config"]["max_tokens_in_buffer"] == 2048


def test_multi_node_replica():
    v = export("llama3-405b", "tp=8,pp=2,batch=64,replicas=1", "vllm").text
    assert "ray start --head" in v and '--distributed-executor-backend ray' in v
    s = replica_flags(export("llama3-405b", "tp=8,pp=2,batch=64,replicas=1", "sglang").text, "mixed_replica")
    assert s["--nnodes"] == "2" and s["--node-rank"] == '"$3"' and s["--pp-size"] == "2"
    t = export("llama3-405b", "tp=8,pp=2,batch=64,replicas=1", "trtllm").text
    assert 'mpirun -H "$5" -n 16' in t and '"${NODE_ADDR[0]}:8,${NODE_ADDR[1]}:8"' in t


def test_quantized_weights_need_a_checkpoint():
    fp8 = {**SERVE, "precision": {"weights": "fp8", "activations": "fp8", "kv_cache": "fp8"}}
    assert replica_flags(export("llama3-70b", "tp=8", "vllm", fp8).text, "mixed_replica")["--quantization"] == "fp8"
    assert replica_flags(export("llama3-70b", "tp=8", "sglang", fp8).text, "mixed_replica")["--quantization"] == "fp8"
    assert "MODEL=${MODEL:?set MODEL to a fp8 checkpoint" in export("llama3-70b", "tp=8", "trtllm", fp8).text
    int4 = {**SERVE, "precision": {"weights": "int4", "activations": "bf16", "kv_cache": "bf16"}}
    for to in ("vllm", "sglang", "trtllm"):
        assert "MODEL=${MODEL:?set MODEL to a int4 checkpoint" in export("llama3-70b", "tp=8", to, int4).text
