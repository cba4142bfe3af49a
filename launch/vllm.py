"""vLLM: a bash script that starts one ``vllm serve`` per replica (and, disaggregated, the prefill → decode proxy).

Flag names: vLLM docs/configuration/engine_args.md (``vllm serve`` engine arguments: --tensor-parallel-size,
--pipeline-parallel-size, --data-parallel-size, --enable-expert-parallel, --max-num-seqs,
--max-num-batched-tokens, --enable-chunked-prefill, --max-model-len, --gpu-memory-utilization, --dtype,
--quantization, --kv-cache-dtype, --distributed-executor-backend).  Expert / data parallelism:
docs/serving/data_parallel_deployment.md and docs/serving/expert_parallel_deployment.md.  Disaggregated prefill:
docs/features/disagg_prefill.md and docs/features/nixl_connector_usage.md (--kv-transfer-config with the
NixlConnector, kv_producer / kv_consumer, VLLM_NIXL_SIDE_CHANNEL_HOST/PORT, toy_proxy_server.py).  Multi-node
replicas: docs/serving/distributed_serving.md (a Ray cluster over the replica's nodes).  Table: docs/launch.md.
"""
from __future__ import annotations

from parplan.errors import SpecError
from parplan.launch.common import LaunchConfig
from parplan.launch.serve_common import (BASE_PORT, ROUTER_PORT, ServeJob, cmd_lines, continued, dispatch, header, per_rank,
                                         memory_fraction, pool_limits, preamble, serve_refuse, urls)

NIXL_SIDE_PORT = 5600  # nixl_connector_usage.md VLLM_NIXL_SIDE_CHANNEL_PORT default (one per DP rank on a host)
RAY_PORT = 6379  # `ray start --head` default port (Ray docs, ray start)
CHECKPOINT_QUANT = {"int8": "INT8 (W8A8, compressed-tensors)", "int4": "INT4 (AWQ / GPTQ)",
                    "nvfp4": "NVFP4 (ModelOpt)"}  # vLLM docs/features/quantization/: read from the checkpoint


def check(job: ServeJob) -> None:
    for pool in job.deployment.pools:
        ranks = pool.tp * pool.attn_dp
        if pool.ep > 1 and pool.ep != ranks:
            # expert_parallel_deployment.md: "the EP size is automatically calculated" as TP × DP; without the
            # flag the expert layers are tensor-parallel over DP × TP (data_parallel_deployment.md)
            raise serve_refuse(job.to, f"ep={pool.ep}", f"--enable-expert-parallel sets EP = TP × DP = {ranks}; "
                               "vLLM has no smaller expert group", f"ep=1 or ep={ranks} for tp={pool.tp}, "
                               f"dp={pool.attn_dp}")


def pool_flags(job: ServeJob, index: int) -> list[tuple[str, object]]:
    pool, s = job.deployment.pools[index], job.serving
    seqs, tokens = pool_limits(pool, job)
    f: list[tuple[str, object]] = [("--host", '"$HOST"'), ("--port", '"$2"'),
                                   ("--tensor-parallel-size", pool.tp), ("--pipeline-parallel-size", pool.pp)]
    if pool.attn_dp > 1:
        # each DP rank is its own engine core with its own scheduler (data_parallel_deployment.md)
        f.append(("--data-parallel-size", pool.attn_dp))
    if pool.ep > 1:
        f.append(("--enable-expert-parallel", None))  # expert_parallel_deployment.md
    f.append(("--max-num-seqs", per_rank(seqs, pool.attn_dp)))  # engine_args.md: sequences per iteration
    if pool.chunk_tokens:
        if per_rank(tokens, pool.attn_dp) < per_rank(seqs, pool.attn_dp):  # vLLM refuses a token budget below
            raise SpecError(f"chunk={pool.chunk_tokens} is below batch={seqs}: vLLM needs --max-num-batched-tokens ≥ "
                            "--max-num-seqs", key="--deployment", hint=f"chunk ≥ {seqs}, or a smaller batch")
        f += [("--enable-chunked-prefill", None),  # engine_args.md
              ("--max-num-batched-tokens", per_rank(tokens, pool.attn_dp))]
    else:
        # whole prompts: the token budget must hold the longest request (engine_args.md --max-num-batched-tokens)
        f += [("--no-enable-chunked-prefill", None), ("--max-num-batched-tokens", tokens)]
    f += [("--max-model-len", job.max_model_len), ("--gpu-memory-utilization", memory_fraction(job.to)),
          ("--dtype", "bfloat16")]  # engine_args.md --dtype: the unquantized parts' type
    if s.weights == "fp8":
        f.append(("--quantization", "fp8"))  # docs/features/quantization/fp8.md: online dynamic FP8
    if s.kv_cache == "fp8":
        f.append(("--kv-cache-dtype", "fp8"))  # engine_args.md --kv-cache-dtype {auto,fp8,fp8_e5m2,fp8_e4m3}
    if pool.role in ("prefill", "decode"):
        role = "kv_producer" if pool.role == "prefill" else "kv_consumer"  # nixl_connector_usage.md KV roles
        f.append(("--kv-transfer-config", f"'{{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"{role}\"}}'"))
    if job.pool_instances(index)[0].nodes > 1:
        f.append(("--distributed-executor-backend", "ray"))  # distributed_serving.md (multi-node)
        if pool.attn_dp > 1:
            f.append(("--data-parallel-backend", "ray"))  # data_parallel_deployment.md
    return f


def replica_function(job: ServeJob, index: int) -> tuple[str, list[str]]:
    pool = job.deployment.pools[index]
    name = f"{pool.role}_replica"
    multi = job.pool_instances(index)[0].nodes > 1
    env = ['CUDA_VISIBLE_DEVICES="$1"']
    if pool.role in ("prefill", "decode"):
        # one side-channel port per DP rank on a host (nixl_connector_usage.md); the host is the replica's node
        env += ['VLLM_NIXL_SIDE_CHANNEL_HOST="$4"',
                f'VLLM_NIXL_SIDE_CHANNEL_PORT=$(({NIXL_SIDE_PORT} + ($2 - {BASE_PORT[job.to]}) * {pool.attn_dp}))']
    serve = continued([f"  {' '.join(env)} vllm serve \"$MODEL\""] + cmd_lines(pool_flags(job, index)))
    serve[-1] += " &"
    body = [f"{name}() {{  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts"]
    if multi:
        body += ['  if [ "$3" -eq 0 ]; then',
                 f'    ray start --head --port {RAY_PORT}',
                 f"    sleep 30  # the other {job.pool_instances(index)[0].nodes - 1} node(s) join the Ray cluster",
                 *["  " + ln for ln in serve], "  else",
                 f'    ray start --address "$4:{RAY_PORT}" --block &', "  fi"]
    else:
        body += serve
    return name, body + ["}"]


def router(job: ServeJob) -> list[str]:
    if job.deployment.mode != "disaggregated":
        n = len(job.instances)
        return [f"# {n} replicas: put a load balancer in front of their ports" if n > 1 else "# one replica"]

    def hosts_ports(role):
        hp = [u.rsplit(":", 1) for u in urls(job, role)]
        return " ".join(f'"{h}"' for h, _ in hp), " ".join(p for _, p in hp)

    ph, pp = hosts_ports("prefill")
    dh, dp = hosts_ports("decode")
    # nixl_connector_usage.md "Proxy for Multiple Instances": requests go to a prefiller, then to a decoder
    lines = ['if [ "$NODE_RANK" = 0 ]; then',
             '  VLLM_REPO=${VLLM_REPO:?set VLLM_REPO to a vLLM checkout (its NIXL proxy server)}',
             '  python "$VLLM_REPO/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py" \\',
             f'    --port "${{ROUTER_PORT:-{ROUTER_PORT}}}" \\',
             f"    --prefiller-hosts {ph} --prefiller-ports {pp} \\",
             f"    --decoder-hosts {dh} --decoder-ports {dp} &", "fi"]
    return lines


def export(job: ServeJob) -> LaunchConfig:
    check(job)
    s = job.serving
    lines = ["#!/usr/bin/env bash", *header(job, "vLLM serve")]
    if s.weights in CHECKPOINT_QUANT:
        lines.append(f"# weights {s.weights}: MODEL must be a {CHECKPOINT_QUANT[s.weights]} checkpoint; vLLM reads "
                     "its quantization_config (docs/features/quantization/)")
    pre = preamble(job)
    if s.weights in CHECKPOINT_QUANT:
        pre = [ln if not ln.startswith("MODEL=") else
               f"MODEL=${{MODEL:?set MODEL to a {s.weights} checkpoint of {job.workload.name}}}" for ln in pre]
    lines += pre
    fns: dict[int, str] = {}
    for i in range(len(job.deployment.pools)):
        name, body = replica_function(job, i)
        fns[i] = name
        lines += body + [""]
    lines += dispatch(job, fns) + [""] + router(job) + ["wait"]
    mapping = {"engine": "vllm", "instances": [
        {"role": i.role, "replica": i.replica, "node": i.first_node, "nodes": i.nodes, "gpus": list(i.gpus),
         "port": i.port} for i in job.instances],
        "pools": [{"role": p.role, "replicas": p.replicas,
                   "flags": {k: v for k, v in pool_flags(job, n) if k not in ("--host", "--port")}}
                  for n, p in enumerate(job.deployment.pools)]}
    return LaunchConfig("vllm", "serve_vllm.sh", "\n".join(lines) + "\n", mapping)
