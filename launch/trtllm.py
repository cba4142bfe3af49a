"""TensorRT-LLM: a bash script that writes one LLM API options YAML per pool and starts one ``trtllm-serve`` per
replica with it (``--extra_llm_api_options``; the same file drives ``trtllm-bench``); disaggregated, it adds the
``trtllm-serve disaggregated`` orchestrator and its config.

Keys: NVIDIA/TensorRT-LLM docs/source/features/parallel-strategy.md (tensor_parallel_size, pipeline_parallel_size,
enable_attention_dp, moe_expert_parallel_size × moe_tensor_parallel_size = tensor_parallel_size), the LLM API
reference (LlmArgs: max_batch_size, max_num_tokens, max_seq_len, enable_chunked_prefill, dtype,
kv_cache_config.free_gpu_memory_fraction / dtype), docs/source/features/disagg-serving.md
(cache_transceiver_config, disable_overlap_scheduler on context servers, ``trtllm-serve disaggregated -c`` with
context_servers / generation_servers), docs/source/commands/trtllm-serve (--host --port --backend
--extra_llm_api_options; multi-node through ``mpirun … trtllm-llmapi-launch``).  Table: docs/launch.md.
"""
from __future__ import annotations

import yaml

from parplan.launch.common import LaunchConfig
from parplan.launch.serve_common import (ROUTER_PORT, ServeJob, continued, dispatch, header, memory_fraction,
                                         per_rank, pool_limits, preamble, serve_refuse, urls)

CACHE_BACKEND = "DEFAULT"  # disagg-serving.md cache_transceiver_config.backend: DEFAULT | UCX | NIXL | MPI
# docs/source/features/quantization.md: the PyTorch backend loads ModelOpt pre-quantized checkpoints
CHECKPOINT_QUANT = {"fp8": "FP8", "int8": "INT8 (W8A8 SmoothQuant)", "int4": "INT4 (AWQ)", "nvfp4": "NVFP4"}


def check(job: ServeJob) -> None:
    for pool in job.deployment.pools:
        if pool.attn_dp > 1 and pool.tp > 1:
            # parallel-strategy.md: attention DP replicates every attention GEMM on every tensor_parallel_size rank
            raise serve_refuse(job.to, f"dp={pool.attn_dp} with tp={pool.tp}", "enable_attention_dp runs attention "
                               "data-parallel over all tensor_parallel_size ranks (attention TP 1)",
                               f"tp=1,dp={pool.tp * pool.attn_dp} or tp={pool.tp * pool.attn_dp},dp=1")
        if pool.attn_dp > 1 and not job.is_moe:
            # a dense replica's attention-DP ranks replicate the whole model (parplan prices the MLP replicated
            # too); TensorRT-LLM's attention DP keeps the FFN tensor-parallel over all ranks
            raise serve_refuse(job.to, f"dp={pool.attn_dp}", "on a dense model attention DP keeps the FFN "
                               "tensor-parallel over all ranks, not replicated", f"replicas={pool.attn_dp} of tp=1")


def options(job: ServeJob, index: int) -> dict:
    """The LLM API options of one pool (the --extra_llm_api_options YAML)."""
    pool, s = job.deployment.pools[index], job.serving
    seqs, tokens = pool_limits(pool, job)
    ranks = pool.tp * pool.attn_dp
    o: dict = {"tensor_parallel_size": ranks, "pipeline_parallel_size": pool.pp}
    if job.is_moe:
        # parallel-strategy.md: moe_tensor_parallel_size × moe_expert_parallel_size = tensor_parallel_size
        o.update(moe_expert_parallel_size=pool.ep, moe_tensor_parallel_size=ranks // pool.ep)
    o["enable_attention_dp"] = pool.attn_dp > 1
    # with attention DP different requests go to different DP ranks (parallel-strategy.md): per-rank limits
    o["max_batch_size"] = per_rank(seqs, pool.attn_dp)
    o["max_num_tokens"] = per_rank(tokens, pool.attn_dp) if pool.chunk_tokens else tokens
    o["max_seq_len"] = job.max_model_len
    o["enable_chunked_prefill"] = bool(pool.chunk_tokens)
    if s.weights == "bf16":
        o["dtype"] = "bfloat16"
    o["kv_cache_config"] = {"free_gpu_memory_fraction": memory_fraction(job.to),
                            "dtype": "fp8" if s.kv_cache == "fp8" else "auto"}
    if pool.role in ("prefill", "decode"):
        if pool.role == "prefill":
            o["disable_overlap_scheduler"] = True  # disagg-serving.md: not supported on context servers
        # disagg-serving.md: max_tokens_in_buffer ≥ the longest prompt
        o["cache_transceiver_config"] = {"backend": CACHE_BACKEND, "max_tokens_in_buffer": job.max_input_len}
    return o


def options_file(role: str) -> str:
    return f"extra_llm_api_options_{role}.yaml"


def replica_function(job: ServeJob, index: int) -> tuple[str, list[str]]:
    pool = job.deployment.pools[index]
    name = f"{pool.role}_replica"
    inst = job.pool_instances(index)[0]
    serve = [f'trtllm-serve "$MODEL"', '    --host "$HOST"', '    --port "$2"', "    --backend pytorch",
             f"    --extra_llm_api_options {options_file(pool.role)}"]
    body = [f"{name}() {{  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts"]
    if inst.nodes > 1:
        # one MPI job over the replica's nodes, started from its first node (trtllm-serve multi-node docs)
        n = pool.devices_per_replica
        cmd = continued([f'    mpirun -H "$5" -n {n} -x CUDA_VISIBLE_DEVICES="$1" trtllm-llmapi-launch {serve[0]}']
                        + ["    " + ln for ln in serve[1:]])
        cmd[-1] += " &"
        body += ['  if [ "$3" -eq 0 ]; then', *cmd, "  fi"]
    else:
        cmd = continued([f'  CUDA_VISIBLE_DEVICES="$1" {serve[0]}'] + ["  " + ln for ln in serve[1:]])
        cmd[-1] += " &"
        body += cmd
    return name, body + ["}"]


def disagg_config(job: ServeJob) -> dict:
    """disagg-serving.md: the orchestrator's hostname/port and the context / generation server URLs."""
    ctx, gen = urls(job, "prefill"), urls(job, "decode")
    return {"hostname": "${NODE_ADDR[0]}", "port": "${ROUTER_PORT}", "backend": "pytorch",
            "context_servers": {"num_instances": len(ctx), "urls": ctx},
            "generation_servers": {"num_instances": len(gen), "urls": gen}}


def export(job: ServeJob) -> LaunchConfig:
    check(job)
    s = job.serving
    lines = ["#!/usr/bin/env bash", *header(job, "TensorRT-LLM trtllm-serve")]
    pre = preamble(job)
    if s.weights in CHECKPOINT_QUANT:
        lines.append(f"# weights {s.weights}: MODEL must be a ModelOpt {CHECKPOINT_QUANT[s.weights]} checkpoint "
                     "(docs/source/features/quantization.md)")
        pre = [ln if not ln.startswith("MODEL=") else
               f"MODEL=${{MODEL:?set MODEL to a {s.weights} checkpoint of {job.workload.name}}}" for ln in pre]
    lines += pre
    opts = {p.role: options(job, i) for i, p in enumerate(job.deployment.pools)}
    for role, o in opts.items():
        lines += [f"cat > {options_file(role)} <<'EOF'", *yaml.safe_dump(o, sort_keys=False).splitlines(), "EOF"]
    lines.append(f"# offline throughput with the same options: trtllm-bench --model \"$MODEL\" throughput --dataset "
                 f"DATASET --backend pytorch --extra_llm_api_options {options_file(job.deployment.pools[0].role)}")
    lines.append("")
    fns: dict[int, str] = {}
    for i in range(len(job.deployment.pools)):
        name, body = replica_function(job, i)
        fns[i] = name
        lines += body + [""]
    lines += dispatch(job, fns) + [""]
    mapping = {"engine": "trtllm", "options": opts, "instances": [
        {"role": i.role, "replica": i.replica, "node": i.first_node, "nodes": i.nodes, "gpus": list(i.gpus),
         "port": i.port} for i in job.instances]}
    if job.deployment.mode == "disaggregated":
        cfg = disagg_config(job)
        mapping["disagg_config"] = cfg
        lines += ['if [ "$NODE_RANK" = 0 ]; then', f"  ROUTER_PORT=${{ROUTER_PORT:-{ROUTER_PORT}}}",
                  "  cat > disagg_config.yaml <<EOF", *["  " + ln for ln in yaml.safe_dump(cfg, sort_keys=False)
                                                        .splitlines()], "EOF",
                  "  trtllm-serve disaggregated -c disagg_config.yaml &", "fi"]
    elif len(job.instances) > 1:
        lines.append(f"# {len(job.instances)} replicas: put a load balancer in front of their ports")
    lines.append("wait")
    return LaunchConfig("trtllm", "serve_trtllm.sh", "\n".join(lines) + "\n", mapping)
