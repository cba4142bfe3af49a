"""NeMo 2.0: a recipe override YAML (``trainer.strategy`` = MegatronStrategy, ``data``, ``model.config``, ``optim``).

Keys: NVIDIA/NeMo nemo/collections/llm/recipes/llama3_70b.py (trainer(): MegatronStrategy tensor_model_parallel_size
… sequence_parallel, num_nodes, devices; pretrain_recipe(): data seq_length / global_batch_size / micro_batch_size);
NeMo 2.0 docs "Migrate Parallelism Configurations from NeMo 1.0 to NeMo 2.0" (parallelism lives in the
MegatronStrategy); the model config is Megatron-Core's TransformerConfig (recompute_*, num_layers_in_first/last_
pipeline_stage, account_for_*_in_pipeline_split) and the optimizer Megatron-Core's OptimizerConfig
(use_distributed_optimizer).  Table with citations: docs/launch.md.
"""
from __future__ import annotations

import yaml

from parplan.launch.common import Job, LaunchConfig, refuse
from parplan.launch.megatron import header

# catalog workload id → NeMo 2.0 recipe module (nemo/collections/llm/recipes/<name>.py)
RECIPES = {"llama3-8b": "llama3_8b", "llama3-70b": "llama3_70b", "llama3-405b": "llama31_405b",
           "llama2-7b": "llama2_7b", "mixtral-8x7b": "mixtral_8x7b", "mixtral-8x22b": "mixtral_8x22b",
           "nemotron4-15b": "nemotron4_15b", "nemotron4-340b": "nemotron4_340b", "gpt3-175b": "gpt3_175b",
           "qwen2.5-72b": "qwen25_72b", "deepseek-v3": "deepseek_v3", "deepseek-v2-lite": "deepseek_v2_lite"}


def strategy(job: Job) -> dict:
    p = job.plan
    s = {
        "tensor_model_parallel_size": p.tp,  # MegatronStrategy (llama3_70b.py trainer())
        "pipeline_model_parallel_size": p.pp,
        # None = no interleaving (llama3_70b.py: virtual_pipeline_parallelism Optional[int] = 5)
        "virtual_pipeline_model_parallel_size": p.vpp if p.vpp > 1 else None,
        "context_parallel_size": p.cp,
        "sequence_parallel": bool(p.sp and p.tp > 1),
    }
    if job.is_moe:
        s["expert_model_parallel_size"] = p.ep  # MegatronStrategy → Megatron-Core ModelParallelConfig
        s["expert_tensor_parallel_size"] = p.etp
    if p.shard:
        # DistributedDataParallelConfig.num_distributed_optimizer_instances (nemo.yaml supports.hsdp)
        s["ddp"] = {"num_distributed_optimizer_instances": (p.dp * p.cp) // p.shard}
    return s


def model_config(job: Job) -> dict:
    p = job.plan
    c: dict = {}
    # Megatron-Core TransformerConfig recompute_granularity / recompute_method / recompute_num_layers / recompute_modules
    if p.recompute == "selective":
        c["recompute_granularity"] = "selective"
    elif p.recompute == "full":
        c.update(recompute_granularity="full", recompute_method="uniform", recompute_num_layers=1)
    elif p.recompute == "modules":
        mods = ["core_attn", "layernorm"] + (["moe_act"] if job.is_moe else []) + \
            (["mla_up_proj"] if job.is_moe and job.model.is_mla else [])
        c.update(recompute_granularity="selective", recompute_modules=mods)
    if p.first_layers:
        c["num_layers_in_first_pipeline_stage"] = p.first_layers  # TransformerConfig
    if p.last_layers:
        c["num_layers_in_last_pipeline_stage"] = p.last_layers  # TransformerConfig
    if p.embed_as_layer:
        c["account_for_embedding_in_pipeline_split"] = True  # TransformerConfig
    if p.loss_as_layer:
        c["account_for_loss_in_pipeline_split"] = True  # TransformerConfig
    return c


def plugins(job: Job) -> dict:
    """MegatronMixedPrecision (nemo/lightning/pytorch/plugins/mixed_precision.py; the bf16_mixed /
    bf16_with_fp8_mixed / bf16_with_mxfp8_mixed factories of recipes/precision/mixed_precision.py)."""
    pr = job.precision
    target = "nemo.lightning.pytorch.plugins.mixed_precision.MegatronMixedPrecision"
    if pr in ("bf16", "fp16", "fp32"):
        return {"_target_": target, "precision": {"bf16": "bf16-mixed", "fp16": "16-mixed", "fp32": "32"}[pr]}
    if pr == "fp8":
        return {"_target_": target, "precision": "bf16-mixed", "fp8": "hybrid", "fp8_recipe": job.fw.fp8_default_recipe}
    if pr == "mxfp8":
        return {"_target_": target, "precision": "bf16-mixed", "fp8": "e4m3", "fp8_recipe": "mxfp8"}
    raise refuse(job.to, f"precision={pr}", "NeMo's precision recipes are bf16/fp16 mixed and fp8 (delayed, "
                 "tensorwise, blockwise, mxfp8) (recipes/precision/mixed_precision.py)",
                 "precision fp32, fp16, bf16, fp8, mxfp8")


def export(job: Job) -> LaunchConfig:
    p, t = job.plan, job.training
    cfg = {
        "trainer": {"num_nodes": job.nodes, "devices": job.per_node,  # nl.Trainer (llama3_70b.py trainer())
                    "strategy": strategy(job), "plugins": plugins(job)},
        "data": {"seq_length": t.seq_len, "global_batch_size": t.global_batch,  # MockDataModule (pretrain_recipe())
                 "micro_batch_size": p.mbs},
        # OptimizerConfig.use_distributed_optimizer (recipes/optim/adam.py distributed_fused_adam_with_cosine_annealing)
        "optim": {"config": {"use_distributed_optimizer": p.zero == 1}},
    }
    mc = model_config(job)
    if mc:
        cfg["model"] = {"config": mc}
    recipe = RECIPES.get(job.catalog_id or "")
    how = (f"# apply to the recipe: nemo llm pretrain --factory {recipe} (nemo/collections/llm/recipes/{recipe}.py)"
           if recipe else "# apply to the NeMo 2.0 pretrain recipe whose model matches this workload "
                          "(nemo/collections/llm/recipes/)")
    text = "\n".join([*header(job, "NeMo 2.0 recipe overrides"), how, ""]) + \
        yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False)
    return LaunchConfig("nemo", "nemo_overrides.yaml", text, cfg)
