"""Megatron-LM ``pretrain_gpt.py``: a runnable shell script (torchrun launcher + the plan's flags).

Flag names: NVIDIA/Megatron-LM megatron/training/arguments.py (cited per flag below; the table is in
docs/launch.md).  Mixture-of-experts flags: megatron/core/transformer/moe/README.md.  Megatron-FSDP (zero 2/3):
docs/discussions/megatron-fsdp-user-guide/megatron-fsdp-user-guide.md ("Required Configurations").
"""
from __future__ import annotations

import shlex

from parplan.launch.common import Job, LaunchConfig, chunk_layer_counts, explicit_split, refuse

Flags = list[tuple[str, object]]  # (flag, value); value None = a switch, a list = several values


def parallel_flags(job: Job) -> Flags:
    """The plan's degrees and knobs as Megatron-Core flags (shared with the DeepSpeed export's Megatron flags)."""
    p = job.plan
    f: Flags = [
        ("--tensor-model-parallel-size", p.tp),  # arguments.py _add_distributed_args
        ("--pipeline-model-parallel-size", p.pp),  # arguments.py _add_distributed_args
        ("--context-parallel-size", p.cp),  # arguments.py _add_distributed_args
    ]
    if p.cp > 1:  # the layout: p2p = the ring, a2a = Ulysses (arguments.py --cp-comm-type; context_parallel.rst)
        f.append(("--cp-comm-type", "a2a" if getattr(p, "cp_kind", "ring") == "ulysses" else "p2p"))
    if p.vpp > 1:
        if explicit_split(p):
            # "Number of virtual pipeline stages per pipeline parallelism rank" (arguments.py), for uneven stages
            f.append(("--num-virtual-stages-per-pipeline-rank", p.vpp))
        else:
            # "Number of layers per virtual pipeline stage" (arguments.py)
            f.append(("--num-layers-per-virtual-pipeline-stage", chunk_layer_counts(job)[0]))
    if p.first_layers:
        f.append(("--decoder-first-pipeline-num-layers", p.first_layers))  # arguments.py
    if p.last_layers:
        f.append(("--decoder-last-pipeline-num-layers", p.last_layers))  # arguments.py
    if p.embed_as_layer:
        f.append(("--account-for-embedding-in-pipeline-split", None))  # arguments.py
    if p.loss_as_layer:
        f.append(("--account-for-loss-in-pipeline-split", None))  # arguments.py
    if p.sp and p.tp > 1:
        f.append(("--sequence-parallel", None))  # arguments.py; disabled when tp=1 (validate_args)
    if job.is_moe:
        f.append(("--expert-model-parallel-size", p.ep))  # arguments.py _add_moe_args
        f.append(("--expert-tensor-parallel-size", p.etp))  # arguments.py _add_moe_args (default = tp)
    return f


def zero_flags(job: Job) -> Flags:
    """ZeRO level → distributed optimizer / Megatron-FSDP / torch FSDP2 (megatron-core.yaml supports.zero)."""
    p = job.plan
    replicas = (p.dp * p.cp) // p.shard if p.shard else 1
    if p.zero == 0:
        return []
    if p.zero == 1:
        f: Flags = [("--use-distributed-optimizer", None),  # arguments.py
                    ("--overlap-grad-reduce", None),  # distributed_data_parallel_config.py overlap_grad_reduce
                    ("--overlap-param-gather", None)]  # arguments.py (distributed optimizer only)
        if replicas > 1:
            # "Number of Distributed Optimizer copies across Data Parallel domain" (arguments.py)
            f.append(("--num-distributed-optimizer-instances", replicas))
        return f
    if p.zero == 3 and not p.reshard:
        if replicas > 1:
            raise refuse(job.to, f"shard={p.shard} with reshard=false", "reshard=false runs on the torch FSDP2 "
                         "path (--use-torch-fsdp2), which has no hybrid-shard flag in arguments.py",
                         "reshard=false without shard, or shard with reshard=true (Megatron-FSDP)")
        # --use-torch-fsdp2 + torch_fsdp2_reshard_after_forward=False (arguments.py; training.py get_model)
        return [("--use-torch-fsdp2", None), ("--torch-fsdp2-no-reshard-after-forward", None)]
    strategy = "optim_grads" if p.zero == 2 else "optim_grads_params"
    # megatron-fsdp-user-guide.md "Required Configurations"; data_parallel_sharding_strategy optim_grads[_params]
    f = [("--use-megatron-fsdp", None), ("--data-parallel-sharding-strategy", strategy),
         ("--no-gradient-accumulation-fusion", None), ("--use-distributed-optimizer", None),
         ("--ckpt-format", "fsdp_dtensor"), ("--overlap-grad-reduce", None), ("--overlap-param-gather", None)]
    if replicas > 1:
        # hybrid sharding: the outer (replica) groups keep full copies (distributed_data_parallel_config.py
        # outer_dp_sharding_strategy; num_distributed_optimizer_instances)
        f += [("--num-distributed-optimizer-instances", replicas), ("--outer-dp-sharding-strategy", "no_shard")]
    return f


def recompute_flags(job: Job) -> Flags:
    r = job.plan.recompute
    if r == "none":
        return []
    if r == "selective":
        return [("--recompute-granularity", "selective")]  # arguments.py (default modules: core_attn)
    if r == "full":
        # arguments.py --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
        return [("--recompute-granularity", "full"), ("--recompute-method", "uniform"), ("--recompute-num-layers", 1)]
    mods = ["core_attn", "layernorm"]  # arguments.py --recompute-modules choices
    if job.is_moe:
        mods.append("moe_act")  # "recompute the MoE MLP activation function"
        if job.model.is_mla:
            mods.append("mla_up_proj")
    return [("--recompute-granularity", "selective"), ("--recompute-modules", mods)]


def precision_flags(job: Job) -> Flags:
    pr = job.precision
    if pr == "fp32":
        return []
    if pr == "fp16":
        return [("--fp16", None)]  # arguments.py _add_mixed_precision_args
    if pr == "bf16":
        return [("--bf16", None)]  # arguments.py _add_mixed_precision_args
    if pr == "fp8":
        # --fp8-format e4m3 | hybrid, --fp8-recipe tensorwise | delayed | mxfp8 | blockwise (arguments.py
        # _add_transformer_engine_args); the recipe the megatron-core profile prices (fp8.default_recipe)
        return [("--bf16", None), ("--fp8-format", "hybrid"), ("--fp8-recipe", job.fw.fp8_default_recipe)]
    if pr == "mxfp8":
        return [("--bf16", None), ("--fp8-format", "e4m3"), ("--fp8-recipe", "mxfp8")]  # arguments.py
    if pr == "nvfp4":
        # --fp4-format e2m1, --fp4-recipe nvfp4 (arguments.py "FP4 related arguments")
        return [("--bf16", None), ("--fp4-format", "e2m1"), ("--fp4-recipe", "nvfp4")]
    raise refuse(job.to, f"precision={pr}", "pretrain_gpt.py trains in fp32, fp16, bf16, fp8 or fp4 "
                 "(arguments.py); int8 is no training precision there", "precision fp32, fp16, bf16, fp8, mxfp8, nvfp4")


def model_flags(job: Job) -> Flags:
    m, t = job.model, job.training
    f: Flags = [
        ("--num-layers", m.layers), ("--hidden-size", m.hidden),  # arguments.py _add_network_size_args
        ("--ffn-hidden-size", m.ffn_hidden), ("--num-attention-heads", m.heads),
        ("--seq-length", t.seq_len), ("--max-position-embeddings", max(t.seq_len, m.max_position or 0)),
    ]
    if m.kv_heads != m.heads:
        f += [("--group-query-attention", None), ("--num-query-groups", m.kv_heads)]  # arguments.py
    if m.head_dim is not None and not getattr(m, "is_mla", False):
        f.append(("--kv-channels", m.head_dim))  # "Projection weights dimension in multi-head attention"
    if m.ffn == "swiglu":
        f.append(("--swiglu", None))  # arguments.py
    if m.norm == "rmsnorm":
        f.append(("--normalization", "RMSNorm"))  # arguments.py --normalization LayerNorm | RMSNorm
    f.append(("--position-embedding-type", {"rope": "rope", "learned": "learned_absolute"}.get(m.position, "none")))
    if not m.tied_embeddings:
        f.append(("--untie-embeddings-and-output-weights", None))  # arguments.py
    if not m.bias:
        f.append(("--disable-bias-linear", None))  # arguments.py
    if not m.dropout:
        f += [("--attention-dropout", 0), ("--hidden-dropout", 0)]  # arguments.py _add_regularization_args
    if job.is_moe:
        f += moe_model_flags(job)
    return f


def moe_model_flags(job: Job) -> Flags:
    m = job.model
    f: Flags = [("--num-experts", m.experts), ("--moe-router-topk", m.top_k),  # moe/README.md "Core Arguments"
                ("--moe-ffn-hidden-size", m.moe_ffn_hidden), ("--moe-grouped-gemm", None)]
    if m.shared_experts:
        # --moe-shared-expert-intermediate-size: total FFN size of the shared experts (moe/README.md)
        f.append(("--moe-shared-expert-intermediate-size", m.shared_experts * m.shared_ffn_hidden_))
    if m.first_dense_layers or m.moe_every > 1:
        pattern = "[" + ",".join("1" if x else "0" for x in m.moe_layer_mask) + "]"
        f.append(("--moe-layer-freq", pattern))  # arguments.py moe_freq_type: a list pattern, 1 = expert layer
    dispatcher = job.fw.moe_dispatcher  # megatron-core.yaml moe_dispatcher (README performance flags)
    f.append(("--moe-token-dispatcher-type", dispatcher))
    if dispatcher == "flex":
        f.append(("--moe-flex-dispatcher-backend", "deepep"))  # moe/README.md
    if m.is_mla:
        f += [("--multi-latent-attention", None), ("--kv-lora-rank", m.kv_lora_rank),  # arguments.py _add_mla_args
              ("--qk-head-dim", m.qk_nope_head_dim), ("--qk-pos-emb-head-dim", m.qk_rope_head_dim),
              ("--v-head-dim", m.v_head_dim)]
        if m.q_lora_rank:
            f.append(("--q-lora-rank", m.q_lora_rank))
    mtp = job.training.mtp_layers if job.training.mtp_layers is not None else m.mtp_layers
    if mtp:
        f.append(("--mtp-num-layers", mtp))  # arguments.py "Number of Multi-Token Prediction (MTP) Layers"
    return f


def megatron_flags(job: Job) -> Flags:
    p, t = job.plan, job.training
    return (model_flags(job) + parallel_flags(job) + zero_flags(job) + recompute_flags(job) + precision_flags(job)
            + [("--micro-batch-size", p.mbs), ("--global-batch-size", t.global_batch)])  # arguments.py training args


def render_flags(flags: Flags, indent: str = "  ") -> list[str]:
    lines = []
    for flag, v in flags:
        if v is None:
            lines.append(f"{indent}{flag}")
        elif isinstance(v, list):
            lines.append(f"{indent}{flag} " + " ".join(shlex.quote(str(x)) for x in v))
        else:
            lines.append(f"{indent}{flag} {shlex.quote(str(v))}")
    return lines


def header(job: Job, what: str) -> list[str]:
    return [f"# {what}: {job.workload.name} on {job.cluster.name} ({job.n_devices} devices)",
            f"# parplan plan: {job.plan.to_string()}",
            f"# {job.micro_batches} micro-batches of {job.plan.mbs} per pipeline per step"]


def export(job: Job) -> LaunchConfig:
    flags = megatron_flags(job)
    m = job.model
    lines = ["#!/usr/bin/env bash", *header(job, "Megatron-LM pretrain_gpt.py"), "set -euo pipefail", "",
             # "Using CUDA_DEVICE_MAX_CONNECTIONS=1 is necessary" with TP/SP comm overlap (arguments.py validate_args)
             "export CUDA_DEVICE_MAX_CONNECTIONS=1",
             'MEGATRON_LM=${MEGATRON_LM:-.}  # a Megatron-LM checkout',
             'NODE_RANK=${NODE_RANK:-0}', 'MASTER_ADDR=${MASTER_ADDR:-localhost}', 'MASTER_PORT=${MASTER_PORT:-6000}',
             'TRAIN_ITERS=${TRAIN_ITERS:-100}',
             # --mock-data + NullTokenizer (--vocab-size) run without a dataset (arguments.py _add_data_args,
             # _add_tokenizer_args); set DATA_ARGS to a real --data-path / tokenizer
             f'DATA_ARGS=${{DATA_ARGS:---mock-data --tokenizer-type NullTokenizer --vocab-size {m.vocab}}}', "",
             # torchrun --nnodes / --nproc-per-node / --node-rank / --master-addr / --master-port (PyTorch torchrun docs)
             f"torchrun --nnodes {job.nodes} --nproc-per-node {job.per_node} --node-rank \"$NODE_RANK\" \\",
             '  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" \\',
             '  "$MEGATRON_LM/pretrain_gpt.py" \\']
    body = render_flags(flags) + ['  --train-iters "$TRAIN_ITERS"', "  $DATA_ARGS"]
    lines += [ln + " \\" for ln in body[:-1]] + [body[-1]]
    mapping = {"launcher": {"nnodes": job.nodes, "nproc_per_node": job.per_node},
               "flags": {flag: v for flag, v in flags}}
    return LaunchConfig("megatron", "launch_megatron.sh", "\n".join(lines) + "\n", mapping)
