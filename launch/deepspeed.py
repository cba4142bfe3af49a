"""DeepSpeed: a ``ds_config.json`` and the ``deepspeed`` launcher running Megatron-DeepSpeed's pretrain_gpt.py.

Config keys: deepspeedai/DeepSpeed docs/_pages/config-json.md (train_batch_size = train_micro_batch_size_per_gpu ×
gradient_accumulation_steps × data-parallel GPUs; zero_optimization.stage, mics_shard_size; bf16 / fp16 enabled;
activation_checkpointing).  Launcher: ``deepspeed --num_nodes --num_gpus`` (docs/_tutorials/getting-started.md).
Megatron-DeepSpeed flags: its examples_deepspeed scripts (--deepspeed --deepspeed_config --zero-stage,
--no-pipeline-parallel when pp = 1, --deepspeed-activation-checkpointing) and docs/_tutorials/mixture-of-experts-nlg.md
(--num-experts, --moe-expert-parallel-size).  Table: docs/launch.md.
"""
from __future__ import annotations

import json

from parplan.launch.common import Job, LaunchConfig, refuse
from parplan.launch.megatron import Flags, header, render_flags


def check(job: Job) -> None:
    p = job.plan
    if p.cp > 1 and p.cp_kind != "ulysses":
        # DeepSpeed's sequence parallelism is Ulysses, an all-to-all over attention heads (docs/_tutorials/
        # ds-sequence.md): a ring (or other) layout would not launch what was priced
        raise refuse(job.to, f"cp_kind={p.cp_kind}", "DeepSpeed's sequence parallelism is Ulysses (all-to-all over "
                     "heads), not this context-parallel layout", "cp_kind=ulysses")
    if p.cp > 1 and (p.tp > 1 or p.pp > 1):
        raise refuse(job.to, f"cp={p.cp}", f"DeepSpeed-Ulysses is incompatible with Megatron-LM's tensor or pipeline "
                     f"parallelism (docs/_tutorials/ds-sequence.md; tp={p.tp}, pp={p.pp})", "cp=1, or tp=1 and pp=1")
    if job.precision not in ("bf16", "fp16", "fp32"):
        raise refuse(job.to, f"precision={job.precision}", "DeepSpeed has no FP8/FP4 recipe of its own "
                     "(deepspeed.yaml fp8.recipes is empty; config-json.md has bf16 and fp16)",
                     "precision fp32, fp16, bf16")
    if p.ep > 1 and (p.dp % p.ep):
        raise refuse(job.to, f"ep={p.ep}", f"DeepSpeed-MoE cuts expert-parallel groups out of the data-parallel "
                     f"ranks (utils/groups.py), so ep must divide dp={p.dp}", f"ep dividing {p.dp}")


def ds_config(job: Job) -> dict:
    p, t = job.plan, job.training
    zero: dict = {"stage": p.zero}  # config-json.md zero_optimization.stage 0-3
    if p.shard:
        zero["mics_shard_size"] = p.shard  # config-json.md / zero/config.py: MiCS shard groups (hybrid sharding)
    cfg = {
        "train_batch_size": t.global_batch,  # config-json.md
        "train_micro_batch_size_per_gpu": p.mbs,  # config-json.md
        "gradient_accumulation_steps": job.micro_batches,  # config-json.md
        "zero_optimization": zero,
        "bf16": {"enabled": job.precision == "bf16"},  # config-json.md "BFLOAT16 training options"
        "fp16": {"enabled": job.precision == "fp16"},  # config-json.md "FP16 training options"
    }
    if p.recompute == "full":
        # config-json.md "Activation Checkpointing": whole-layer checkpoints (deepspeed.yaml supports.recompute)
        cfg["activation_checkpointing"] = {"partition_activations": False, "contiguous_memory_optimization": False,
                                           "cpu_checkpointing": False}
    return cfg


def mds_flags(job: Job) -> Flags:
    """Megatron-DeepSpeed pretrain_gpt.py flags (its examples_deepspeed launch scripts)."""
    p, m, t = job.plan, job.model, job.training
    f: Flags = [("--num-layers", m.layers), ("--hidden-size", m.hidden), ("--ffn-hidden-size", m.ffn_hidden),
                ("--num-attention-heads", m.heads), ("--seq-length", t.seq_len),
                ("--max-position-embeddings", max(t.seq_len, m.max_position or 0))]
    if m.kv_heads != m.heads:
        f.append(("--num-key-value-heads", m.kv_heads))  # examples_deepspeed llama scripts
    if m.ffn == "swiglu":
        f.append(("--swiglu", None))
    if m.norm == "rmsnorm":
        f.append(("--normalization", "rmsnorm"))
    if not m.tied_embeddings:
        f.append(("--untie-embeddings-and-output-weights", None))
    if not m.bias:
        f.append(("--disable-bias-linear", None))
    f += [("--tensor-model-parallel-size", p.tp)]
    if p.cp > 1:  # DeepSpeed-Ulysses: --ds-sequence-parallel-size (docs/_tutorials/ds-sequence.md)
        f.append(("--ds-sequence-parallel-size", p.cp))
    f += [("--pipeline-model-parallel-size", p.pp)] if p.pp > 1 else [("--no-pipeline-parallel", None)]
    if job.is_moe:
        # mixture-of-experts-nlg.md: --num-experts, --moe-expert-parallel-size; --topk (Megatron-DeepSpeed arguments.py)
        f += [("--num-experts", m.experts), ("--moe-expert-parallel-size", p.ep), ("--topk", m.top_k)]
    if job.precision in ("bf16", "fp16"):
        f.append((f"--{job.precision}", None))
    if p.recompute == "full":
        f += [("--checkpoint-activations", None), ("--deepspeed-activation-checkpointing", None)]
    f += [("--micro-batch-size", p.mbs), ("--global-batch-size", t.global_batch),
          ("--deepspeed", None), ("--deepspeed_config", "ds_config.json"), ("--zero-stage", p.zero)]
    return f


def export(job: Job) -> LaunchConfig:
    check(job)
    cfg = ds_config(job)
    flags = mds_flags(job)
    lines = ["#!/usr/bin/env bash", *header(job, "DeepSpeed (Megatron-DeepSpeed pretrain_gpt.py)"), "set -euo pipefail",
             "", 'MEGATRON_DEEPSPEED=${MEGATRON_DEEPSPEED:-.}  # a Megatron-DeepSpeed checkout',
             'HOSTFILE=${HOSTFILE:-hostfile}  # one line per node: "<host> slots=%d"' % job.per_node,
             'TRAIN_ITERS=${TRAIN_ITERS:-100}', 'DATA_ARGS=${DATA_ARGS:?set DATA_ARGS to --data-path … and the tokenizer}',
             "", "cat > ds_config.json <<'EOF'", json.dumps(cfg, indent=2), "EOF", "",
             # deepspeed launcher --hostfile --num_nodes --num_gpus (docs/_tutorials/getting-started.md)
             f'deepspeed --hostfile "$HOSTFILE" --num_nodes {job.nodes} --num_gpus {job.per_node} \\',
             '  "$MEGATRON_DEEPSPEED/pretrain_gpt.py" \\']
    body = render_flags(flags) + ['  --train-iters "$TRAIN_ITERS"', "  $DATA_ARGS"]
    lines += [ln + " \\" for ln in body[:-1]] + [body[-1]]
    mapping = {"ds_config": cfg, "launcher": {"num_nodes": job.nodes, "num_gpus": job.per_node},
               "flags": {flag: v for flag, v in flags}}
    return LaunchConfig("deepspeed", "launch_deepspeed.sh", "\n".join(lines) + "\n", mapping)


def config_json(text: str) -> dict:
    """The ds_config.json a DeepSpeed launch script writes (for tests and tools)."""
    body = text.split("cat > ds_config.json <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    return json.loads(body)

