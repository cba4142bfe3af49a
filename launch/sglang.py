"""SGLang: a bash script that starts one ``python -m sglang.launch_server`` per replica, and the SGLang router in
front (``sglang_router.launch_router``: ``--worker-urls`` for replicas, ``--pd-disaggregation`` for prefill/decode).

Flag names: sgl-project/sglang docs/advanced_features/server_arguments.md (--tp, --dp, --pp-size, --ep-size,
--enable-dp-attention, --max-running-requests, --chunked-prefill-size, --context-length, --mem-fraction-static,
--dtype, --quantization, --kv-cache-dtype, --nnodes / --node-rank / --dist-init-addr, --disaggregation-mode,
--disaggregation-transfer-backend, --disaggregation-bootstrap-port).  PD disaggregation and its router:
docs/advanced_features/pd_disaggregation.md; the router: docs/advanced_features/sgl_model_gateway.md.
Table: docs/launch.md.
"""
from __future__ import annotations

from parplan.launch.common import LaunchConfig
from parplan.launch.serve_common import (ROUTER_PORT, ServeJob, cmd_lines, continued, dispatch, header,
                                         memory_fraction, pool_limits, preamble, urls)

BOOTSTRAP_PORT = 8998  # server_arguments.md --disaggregation-bootstrap-port default (one per prefill server)
DIST_PORT = 50000  # server_arguments.md multi-node example (--dist-init-addr sgl-dev-0:50000)
TRANSFER_BACKEND = "mooncake"  # server_arguments.md --disaggregation-transfer-backend default
# --quantization for the weight precisions SGLang quantizes itself (server_arguments.md: "add --quantization fp8
# on a fp16 checkpoint"); int8 / int4 / nvfp4 load from a quantized checkpoint, whose config it reads
CHECKPOINT_QUANT = {"int8": "W8A8 INT8", "int4": "INT4 (AWQ / GPTQ)", "nvfp4": "NVFP4 (ModelOpt)"}


def pool_flags(job: ServeJob, index: int) -> list[tuple[str, object]]:
    pool, s = job.deployment.pools[index], job.serving
    seqs, _ = pool_limits(pool, job)
    f: list[tuple[str, object]] = [("--model-path", '"$MODEL"'), ("--host", '"$HOST"'), ("--port", '"$2"')]
    if pool.attn_dp > 1 and job.is_moe:
        # DP attention: --tp is every rank of the replica, --dp the attention groups (attention TP = tp/dp) and the
        # MoE layers run over all tp ranks (server_arguments.md --enable-dp-attention)
        f += [("--tp", pool.tp * pool.attn_dp), ("--dp", pool.attn_dp), ("--enable-dp-attention", None)]
    elif pool.attn_dp > 1:
        # a dense model's attention-DP ranks replicate the whole model: plain data parallelism, dp × tp GPUs
        # (server_arguments.md "--dp 2 --tp 2 uses 4 GPUs")
        f += [("--tp", pool.tp), ("--dp", pool.attn_dp)]
    else:
        f.append(("--tp", pool.tp))
    if pool.pp > 1:
        f.append(("--pp-size", pool.pp))  # server_arguments.md --pipeline-parallel-size / --pp-size
    if pool.ep > 1:
        f.append(("--ep-size", pool.ep))  # server_arguments.md MoE: --expert-parallel-size / --ep-size
    # the server's total: with DP attention each DP worker takes max_running_requests // dp (model_runner.py)
    f.append(("--max-running-requests", seqs))
    # tokens per chunk of chunked prefill; -1 disables it (server_arguments.md --chunked-prefill-size)
    f.append(("--chunked-prefill-size", pool.chunk_tokens or -1))
    f += [("--context-length", job.max_model_len), ("--mem-fraction-static", memory_fraction(job.to)),
          ("--dtype", "bfloat16")]
    if s.weights == "fp8":
        f.append(("--quantization", "fp8"))
    if s.kv_cache == "fp8":
        f.append(("--kv-cache-dtype", "fp8_e4m3"))  # server_arguments.md --kv-cache-dtype fp8_e4m3 | fp8_e5m2
    if pool.role in ("prefill", "decode"):
        f += [("--disaggregation-mode", pool.role), ("--disaggregation-transfer-backend", TRANSFER_BACKEND)]
        if pool.role == "prefill":
            f.append(("--disaggregation-bootstrap-port", f'$(({BOOTSTRAP_PORT} + $2 - {job.instances[0].port}))'))
    if job.pool_instances(index)[0].nodes > 1:
        f += [("--nnodes", job.pool_instances(index)[0].nodes), ("--node-rank", '"$3"'),
              ("--dist-init-addr", f'"$4:$(({DIST_PORT} + $2 - {job.instances[0].port}))"')]
    return f


def replica_function(job: ServeJob, index: int) -> tuple[str, list[str]]:
    pool = job.deployment.pools[index]
    name = f"{pool.role}_replica"
    cmd = continued(['  CUDA_VISIBLE_DEVICES="$1" python -m sglang.launch_server'] + cmd_lines(pool_flags(job, index)))
    cmd[-1] += " &"
    return name, [f"{name}() {{  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts",
                  *cmd, "}"]


def router(job: ServeJob) -> list[str]:
    port = f'"${{ROUTER_PORT:-{ROUTER_PORT}}}"'
    if job.deployment.mode == "disaggregated":
        first = job.instances[0].port
        # pd_disaggregation.md: --prefill URL BOOTSTRAP_PORT (one per prefill server), --decode URL
        pre = " ".join(f'--prefill "http://{u}" {BOOTSTRAP_PORT + int(u.rsplit(":", 1)[1]) - first}'
                       for u in urls(job, "prefill"))
        dec = " ".join(f'--decode "http://{u}"' for u in urls(job, "decode"))
        args = f"--pd-disaggregation {pre} {dec}"
    elif len(job.instances) > 1:
        args = "--worker-urls " + " ".join(f'"http://{u}"' for u in urls(job, "mixed"))  # sgl_model_gateway.md
    else:
        return ["# one replica: clients talk to its port directly"]
    return ['if [ "$NODE_RANK" = 0 ]; then',
            f"  python -m sglang_router.launch_router {args} \\", f"    --host \"$HOST\" --port {port} &", "fi"]


def export(job: ServeJob) -> LaunchConfig:
    s = job.serving
    lines = ["#!/usr/bin/env bash", *header(job, "SGLang launch_server")]
    pre = preamble(job)
    if s.weights in CHECKPOINT_QUANT:
        lines.append(f"# weights {s.weights}: MODEL must be a {CHECKPOINT_QUANT[s.weights]} checkpoint; SGLang reads "
                     "its quantization config (server_arguments.md --quantization)")
        pre = [ln if not ln.startswith("MODEL=") else
               f"MODEL=${{MODEL:?set MODEL to a {s.weights} checkpoint of {job.workload.name}}}" for ln in pre]
    lines += pre
    fns: dict[int, str] = {}
    for i in range(len(job.deployment.pools)):
        name, body = replica_function(job, i)
        fns[i] = name
        lines += body + [""]
    lines += dispatch(job, fns) + [""] + router(job) + ["wait"]
    mapping = {"engine": "sglang", "instances": [
        {"role": i.role, "replica": i.replica, "node": i.first_node, "nodes": i.nodes, "gpus": list(i.gpus),
         "port": i.port} for i in job.instances],
        "pools": [{"role": p.role, "replicas": p.replicas,
                   "flags": {k: v for k, v in pool_flags(job, n) if k not in ("--model-path", "--host", "--port")}}
                  for n, p in enumerate(job.deployment.pools)]}
    return LaunchConfig("sglang", "serve_sglang.sh", "\n".join(lines) + "\n", mapping)
