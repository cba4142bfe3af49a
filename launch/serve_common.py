"""What the serving exporters (vLLM, SGLang, TensorRT-LLM) share: the ``ServeJob`` (a validated deployment with
its serving spec), the placement of every replica on the cluster's nodes and GPUs, the refusals every engine
makes, and the bash skeleton the three launch scripts are written in.

A deployment (``parplan.models.serving_plan``) is pools of identical replicas; every replica becomes one engine
instance (one ``vllm serve`` / ``sglang.launch_server`` / ``trtllm-serve`` server) on ``devices_per_replica``
GPUs with a port of its own.  Replicas are packed onto nodes in pool order; a replica larger than a node spans
whole nodes.  The script runs on every node (``NODE_RANK``) and starts the instances placed there; node
addresses come from ``NODE_ADDRS``.  Disaggregated deployments add the engine's prefill → decode router.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.serving_plan import Deployment, Pool
from parplan.workloads.serving import ServingSpec
from parplan.workloads.transformer import Workload

SERVE_TARGETS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
# default server ports: vLLM engine_args --port 8000; SGLang server_arguments.md --port 30000; trtllm-serve --port 8000
BASE_PORT = {"vllm": 8000, "sglang": 30000, "trtllm": 8000}
ROUTER_PORT = 9000  # the front end of a disaggregated deployment (an ordinary free port; ROUTER_PORT overrides it)
TAIL_Q = 0.9999  # a lognormal length is cut at this quantile for the engines' maximum sequence length

# catalog id → Hugging Face repository of its weights (the default MODEL; each is the model card of that repo)
HF_IDS = {
    "llama2-7b": "meta-llama/Llama-2-7b-hf",  # huggingface.co/meta-llama/Llama-2-7b-hf
    "llama2-13b": "meta-llama/Llama-2-13b-hf",  # huggingface.co/meta-llama/Llama-2-13b-hf
    "llama2-70b": "meta-llama/Llama-2-70b-hf",  # huggingface.co/meta-llama/Llama-2-70b-hf
    "llama3-8b": "meta-llama/Meta-Llama-3-8B",  # huggingface.co/meta-llama/Meta-Llama-3-8B
    "llama3-70b": "meta-llama/Meta-Llama-3-70B",  # huggingface.co/meta-llama/Meta-Llama-3-70B
    "llama3-405b": "meta-llama/Llama-3.1-405B",  # huggingface.co/meta-llama/Llama-3.1-405B
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",  # huggingface.co/mistralai/Mixtral-8x7B-v0.1
    "mixtral-8x22b": "mistralai/Mixtral-8x22B-v0.1",  # huggingface.co/mistralai/Mixtral-8x22B-v0.1
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",  # huggingface.co/deepseek-ai/DeepSeek-V3
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",  # huggingface.co/Qwen/Qwen3-235B-A22B
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",  # huggingface.co/Qwen/Qwen3-30B-A3B
    "qwen2.5-72b": "Qwen/Qwen2.5-72B",  # huggingface.co/Qwen/Qwen2.5-72B
    "gpt-oss-120b": "openai/gpt-oss-120b",  # huggingface.co/openai/gpt-oss-120b
    "gpt-oss-20b": "openai/gpt-oss-20b",  # huggingface.co/openai/gpt-oss-20b
}


def serve_refuse(to: str, knob: str, why: str, expressible: str) -> SpecError:
    """The one-line refusal of a deployment the engine cannot launch: the knob, why, and what it could launch."""
    return SpecError(f"{SERVE_TARGETS[to]} cannot express {knob}: {why}", key=f"deployment.{knob.split('=')[0]}",
                     hint=f"expressible: {expressible}")


@dataclass(frozen=True)
class Instance:
    """One engine server: replica ``replica`` of pool ``pool_index`` on ``nodes`` node(s) from ``first_node``,
    on the local GPUs ``gpus`` of each, answering on ``port``."""

    pool_index: int
    role: str
    replica: int
    first_node: int
    nodes: int
    gpus: tuple[int, ...]
    port: int

    @property
    def cuda_visible(self) -> str:
        return ",".join(str(g) for g in self.gpus)

    @property
    def tag(self) -> str:
        return f"{self.role}{self.replica}"


@dataclass(frozen=True)
class ServeJob:
    """A validated serving deployment with what every engine exporter derives from it."""

    to: str
    workload: Workload
    cluster: Cluster
    serving: ServingSpec
    deployment: Deployment
    catalog_id: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def model(self):
        return self.workload.model

    @property
    def is_moe(self) -> bool:
        return getattr(self.model, "family", "") == "moe-transformer"

    @property
    def per_node(self) -> int:
        return int(self.cluster.group.devices_per_node)

    @property
    def hf_id(self) -> str | None:
        return HF_IDS.get(self.catalog_id or "")

    @property
    def max_input_len(self) -> int:
        return max_tokens(self.serving.isl)

    @property
    def max_model_len(self) -> int:
        """Longest prompt + answer a request brings (the engines' maximum sequence length)."""
        return self.max_input_len + max_tokens(self.serving.osl)

    @cached_property
    def instances(self) -> tuple[Instance, ...]:
        return place(self.deployment, self.per_node, int(self.cluster.group.nodes), BASE_PORT[self.to])

    def pool_instances(self, index: int) -> list[Instance]:
        return [i for i in self.instances if i.pool_index == index]

    @property
    def nodes_used(self) -> int:
        return max(i.first_node + i.nodes for i in self.instances)


def max_tokens(dist) -> int:
    """The most tokens a length distribution gives: its value (fixed), its maximum (uniform), its ``TAIL_Q``
    quantile (lognormal: the engines refuse the rarer longer requests)."""
    if dist.dist == "fixed":
        return int(round(dist.mean))
    if dist.dist == "uniform":
        return int(dist.hi)
    return int(math.ceil(dist.quantile(TAIL_Q)))


def per_rank(total: int, ranks: int) -> int:
    """A replica's limit shared over its attention-data-parallel ranks (each rank schedules its own batch)."""
    return max(1, -(-int(total) // int(ranks)))


def place(dep: Deployment, per_node: int, nodes: int, base_port: int) -> tuple[Instance, ...]:
    """Every replica of every pool on (first node, local GPUs, port): packed node by node in pool order; a replica
    that fits a node never straddles two; a larger one takes whole nodes."""
    out: list[Instance] = []
    node, used = 0, 0
    for pi, pool in enumerate(dep.pools):
        d = pool.devices_per_replica
        for r in range(pool.replicas):
            if d <= per_node:
                if per_node - used < d:
                    node, used = node + 1, 0
                first, span, gpus = node, 1, tuple(range(used, used + d))
                used += d
                if used == per_node:
                    node, used = node + 1, 0
            else:
                if d % per_node:
                    raise SpecError(f"a {pool.role} replica spans {d} devices, not whole nodes of {per_node}",
                                    key="deployment", hint=f"make tp·pp·dp a multiple of {per_node} or at most "
                                    f"{per_node}")
                if used:
                    node, used = node + 1, 0
                first, span, gpus = node, d // per_node, tuple(range(per_node))
                node += span
            if first + span > nodes:
                raise SpecError(f"the deployment's replicas do not fit {nodes} nodes of {per_node} devices "
                                "(a replica never straddles nodes it does not fill)", key="deployment",
                                hint="fewer replicas, or replica sizes that pack the nodes")
            out.append(Instance(pi, pool.role, r, first, span, gpus, base_port + len(out)))
    return tuple(out)


def make_serve_job(to: str, workload: Workload, cluster: Cluster, serving: ServingSpec, deployment: Deployment,
                   catalog_id: str | None = None) -> ServeJob:
    """Validate ``deployment`` for engine ``to``: the refusals every engine shares, then the placement."""
    if to not in SERVE_TARGETS:
        from parplan.errors import did_you_mean

        raise SpecError(f"bad value {to!r}", key="--to", allowed=list(SERVE_TARGETS),
                        hint=did_you_mean(str(to), SERVE_TARGETS))
    if not cluster.is_homogeneous:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups; a serving export "
                        "launches one homogeneous deployment", key="--hw", hint="export for a single-group cluster")
    if deployment.n_devices > cluster.n_devices:
        raise SpecError(f"deployment uses {deployment.n_devices} devices, the cluster has {cluster.n_devices}",
                        key="deployment")
    name = SERVE_TARGETS[to]
    if deployment.mode == "af-disaggregated":
        # MegaScale-Infer (seed S09) attention/FFN disaggregation with ping-pong micro-batches: none of vLLM
        # (docs/features/disagg_prefill.md: prefill/decode only), SGLang (pd_disaggregation.md: prefill/decode)
        # or TensorRT-LLM (docs/source/features/disagg-serving.md: context/generation) splits attention from FFN
        raise serve_refuse(to, "af-disaggregated", f"{name} disaggregates prefill from decode, not attention from "
                           "the expert FFN (MegaScale-Infer runs on its own runtime)",
                           "aggregated or prefill:…+decode:… pools")
    if deployment.spd_drop:
        # SPD (seed S07) drops TP all-reduces after fine-tuning the blocks for it: a research fork, no engine flag
        raise serve_refuse(to, f"spd_drop={deployment.spd_drop:g}", f"{name} runs every tensor-parallel "
                           "all-reduce; SPD's sync-point drop lives only in the paper's research fork", "spd_drop=0")
    if deployment.fused_ar_a2a:
        # MixServe (seed S15) fuses the TP all-reduce with the EP all-to-all in its own kernels
        raise serve_refuse(to, "fused=true", f"{name} has no fused all-reduce + all-to-all of MixServe's hybrid "
                           "TP/EP", "fused=false")
    for pool in deployment.pools:
        if pool.ep > 1 and not getattr(workload.model, "experts", 0):
            raise serve_refuse(to, f"ep={pool.ep}", f"{workload.name} is dense: expert parallelism needs experts",
                               "ep=1")
    if serving.activations == "fp8" and serving.weights == "bf16":
        # FP8 activations run the W8A8 FP8 GEMMs: vLLM docs/features/quantization/fp8.md, SGLang --quantization
        # fp8, TensorRT-LLM docs/source/features/quantization.md (FP8 weights and activations together)
        raise serve_refuse(to, "activations=fp8", "FP8 activations come with FP8 (or lower) weights in the "
                           f"engine's quantized GEMMs; {name} has no bf16-weight FP8-activation path",
                           "weights fp8/int8/int4/nvfp4 with activations fp8, or activations bf16")
    notes: list[str] = []
    if serving.engine != to:
        notes.append(f"serving.engine {serving.engine} → {to} (the export's engine)")
        serving = replace(serving, engine=to)
    job = ServeJob(to=to, workload=workload, cluster=cluster, serving=serving, deployment=deployment,
                   catalog_id=catalog_id, notes=tuple(notes))
    job.instances  # noqa: B018 — the placement's errors surface here
    return job


# --- the bash skeleton ----------------------------------------------------------------------------------------------
def q(v: Any) -> str:
    return shlex.quote(str(v))


def cmd_lines(argv: list[tuple[str, Any]], indent: str = "    ") -> list[str]:
    """``--flag value`` pairs as continued lines (value None: a switch; a value already quoted starts with $ or ')."""
    out = []
    for flag, v in argv:
        if v is None:
            out.append(f"{indent}{flag}")
        else:
            s = str(v)
            word = s if s.startswith(("$", '"', "'")) else q(s)
            out.append(f"{indent}{flag} {word}")
    return out


def continued(lines: list[str]) -> list[str]:
    return [ln + " \\" for ln in lines[:-1]] + lines[-1:]


def header(job: ServeJob, what: str) -> list[str]:
    s, dep = job.serving, job.deployment
    mix = (f"ISL {s.isl.dist} mean {s.isl.mean:g} / OSL {s.osl.dist} mean {s.osl.mean:g}; max model length "
           f"{job.max_model_len}")
    lines = [f"# {what}: {job.workload.name} on {job.cluster.name} ({dep.n_devices} of {job.cluster.n_devices} "
             f"devices, {job.nodes_used} node(s))",
             f"# parplan deployment: {dep.to_string()}",
             f"# serving: {mix}; precision weights {s.weights}, activations {s.activations}, kv cache {s.kv_cache}"]
    lines += [f"# note: {n}" for n in job.notes]
    lines.append("# usage: NODE_RANK=<this node> NODE_ADDRS=\"<address of node 0> <node 1> …\" bash <this script>")
    return lines


def preamble(job: ServeJob) -> list[str]:
    default = job.hf_id
    model = (f'MODEL=${{MODEL:-{default}}}  # Hugging Face id or local path of the weights' if default else
             f'MODEL=${{MODEL:?set MODEL to the Hugging Face id or local path of the {job.workload.name} weights}}')
    lines = ["set -euo pipefail", "", model, 'NODE_RANK=${NODE_RANK:-0}', 'HOST=${HOST:-0.0.0.0}',
             'read -r -a NODE_ADDR <<< "${NODE_ADDRS:-localhost}"']
    if job.nodes_used > 1:
        lines.append(f'[ "${{#NODE_ADDR[@]}}" -ge {job.nodes_used} ] || {{ echo "set NODE_ADDRS to the '
                     f'{job.nodes_used} node addresses" >&2; exit 2; }}')
    return lines + [""]


def dispatch(job: ServeJob, fn_of: dict[int, str]) -> list[str]:
    """``case "$NODE_RANK"``: on each node, the replica functions of the instances placed there (arguments: GPUs,
    port, this node's rank within the replica, the replica's first-node address, its hosts as ``addr:gpus,…``)."""
    by_node: dict[int, list[str]] = {}
    for inst in job.instances:
        for k in range(inst.nodes):
            hosts = ",".join(f"${{NODE_ADDR[{n}]}}:{len(inst.gpus)}"
                             for n in range(inst.first_node, inst.first_node + inst.nodes))
            call = (f"{fn_of[inst.pool_index]} {inst.cuda_visible} {inst.port} {k} "
                    f'"${{NODE_ADDR[{inst.first_node}]}}" "{hosts}"  # {inst.tag}')
            by_node.setdefault(inst.first_node + k, []).append(call)
    lines = ['case "$NODE_RANK" in']
    for node in sorted(by_node):
        calls = by_node[node]
        lines.append(f"  {node})")
        lines += [f"    {c}" for c in calls]
        lines.append("    ;;")
    lines += ['  *) echo "node $NODE_RANK runs no replica of this deployment" >&2 ;;', "esac"]
    return lines


def urls(job: ServeJob, role: str) -> list[str]:
    """host:port of every instance of the pool ``role`` (bash words over ``NODE_ADDR``)."""
    idx = next(i for i, p in enumerate(job.deployment.pools) if p.role == role)
    return [f"${{NODE_ADDR[{i.first_node}]}}:{i.port}" for i in job.pool_instances(idx)]


def pool_limits(pool: Pool, job: ServeJob) -> tuple[int, int]:
    """(sequences, tokens) one iteration of a replica may carry: the pool's batch, and its chunk — or, with chunked
    prefill off, the longest request (the engines need a whole prompt in one iteration then)."""
    return pool.max_batch, (pool.chunk_tokens or job.max_model_len)


def memory_fraction(to: str) -> float:
    """The engine's memory setting (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static, TensorRT-LLM
    kv_cache_config.free_gpu_memory_fraction) that parplan's KV capacity was priced with: the engine profile of
    catalogs/calibration/serving.yaml (each value cites the engine's documented default)."""
    from parplan.models.serving_terms import serving_file

    return float(serving_file().engines[to].gpu_memory_utilization)
