"""MaxText: a config YAML on top of base.yml (mesh degrees per ICI / DCN axis, batch, remat, dtype).

Keys: AI-Hypercomputer/maxtext src/MaxText/configs/types.py (IciParallelism ici_{data,fsdp,tensor,tensor_sequence,
pipeline,context,expert}_parallelism; DcnParallelism dcn_*; PipelineParallelism num_layers_per_pipeline_stage,
num_pipeline_repeats, num_pipeline_microbatches; DatasetGeneral per_device_batch_size; Optimizer
gradient_accumulation_steps; RematAndOffload remat_policy and the custom-policy tensor locations; DataTypes dtype;
Quantization quantization; LayoutAndSharding shard_optimizer_over_data) and MaxText/configs/base.yml
(max_target_length, model_name; configs inherit it through base_config).  Table: docs/launch.md.
"""
from __future__ import annotations

import yaml

from parplan.errors import SpecError
from parplan.launch.common import Job, LaunchConfig, refuse, split_mesh
from parplan.launch.megatron import header

# catalog workload id → MaxText model_name (MaxText/configs/models/<name>.yml)
MODELS = {k: k for k in ("llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
                         "mixtral-8x7b", "mixtral-8x22b", "gpt3-175b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                         "gpt-oss-20b", "gpt-oss-120b")}
MODELS.update({"deepseek-v3": "deepseek3-671b", "deepseek-v2-lite": "deepseek2-16b"})
# remat: full = 'full'; selective = 'minimal' (saves the matmul outputs, recomputes the rest); none = 'custom'
# with every tensor kept on device (types.py RematPolicy, RematAndOffload; maxtext.yaml supports.recompute)
CUSTOM_TENSORS = ("decoder_layer_input", "context", "mlpwi", "mlpwi_0", "mlpwi_1", "mlpwo", "query_proj",
                  "key_proj", "value_proj", "qkv_proj", "out_proj")
# precision → (dtype, quantization) (types.py DType, QuantizationType; maxtext.yaml fp8.recipes)
PRECISION = {"bf16": ("bfloat16", None), "fp32": ("float32", None), "fp16": ("float16", None),
             "fp8": ("bfloat16", "fp8"), "mxfp8": ("bfloat16", "te_mxfp8"), "nvfp4": ("bfloat16", "te_nvfp4"),
             "int8": ("bfloat16", "int8")}


def mesh(job: Job) -> dict:
    p = job.plan
    if p.dp % p.ep:
        raise refuse(job.to, f"ep={p.ep}", f"the expert axis is a mesh axis beside data/fsdp: ep must divide dp={p.dp}",
                     f"ep dividing {p.dp}")
    batch = p.dp // p.ep  # data-parallel degree left to the data / fsdp axes
    fsdp, data = 1, batch
    if p.zero == 3:
        shard = p.shard or p.dp * p.cp
        if shard % (p.cp * p.ep) or batch % (shard // (p.cp * p.ep)):
            raise refuse(job.to, f"shard={p.shard}", "the fsdp axis excludes the context and expert axes, so the "
                         f"shard group must be a multiple of cp·ep={p.cp * p.ep} within dp·cp",
                         "shard=0, or a shard group of whole fsdp × context × expert blocks")
        fsdp = shard // (p.cp * p.ep)
        data = batch // fsdp
    tensor_axis = "tensor_sequence" if (p.sp and p.tp > 1) else "tensor"  # types.py ici_tensor_sequence_parallelism
    axes = [(tensor_axis, p.tp), ("context", p.cp), ("expert", p.ep), ("fsdp", fsdp), ("data", data),
            ("pipeline", p.pp)]
    try:
        split = split_mesh(axes, job.domain, job.n_devices)
    except SpecError:
        raise refuse(job.to, "the plan's degrees", f"they do not tile ICI domains of {job.domain} devices",
                     "degrees whose innermost product fills a scale-up domain") from None
    out: dict = {}
    for name, (ici, _) in split.items():
        out[f"ici_{name}_parallelism"] = ici  # types.py IciParallelism
    for name, (_, dcn) in split.items():
        out[f"dcn_{name}_parallelism"] = dcn  # types.py DcnParallelism
    return out


def export(job: Job) -> LaunchConfig:
    p, t, m = job.plan, job.training, job.model
    cfg: dict = {"base_config": "base.yml"}  # configs inherit base.yml (MaxText/configs/models/gpu/*.yml)
    name = MODELS.get(job.catalog_id or "")
    if name:
        cfg["model_name"] = name  # base.yml model_name → MaxText/configs/models/<name>.yml
    cfg["max_target_length"] = t.seq_len  # base.yml
    cfg.update(mesh(job))
    if p.zero == 1:
        cfg["shard_optimizer_over_data"] = True  # "Enable ZeRO-1 optimizer sharding over the data axis" (types.py)
    # global batch = per_device_batch_size × devices × gradient_accumulation_steps (types.py DatasetGeneral, Optimizer)
    if p.pp == 1:
        ga, per_device = job.micro_batches, p.dp * p.mbs / job.n_devices
    else:  # the pipeline runs the step's micro-batches itself (num_pipeline_microbatches)
        ga, per_device = 1, t.global_batch / job.n_devices
        cfg["num_layers_per_pipeline_stage"] = m.layers // (p.pp * p.vpp)  # types.py PipelineParallelism
        cfg["num_pipeline_repeats"] = p.vpp  # circular pipeline repeats (types.py)
        cfg["num_pipeline_microbatches"] = job.micro_batches  # types.py
    cfg["per_device_batch_size"] = int(per_device) if float(per_device).is_integer() else per_device
    cfg["gradient_accumulation_steps"] = ga
    if p.recompute == "full":
        cfg["remat_policy"] = "full"
    elif p.recompute == "selective":
        cfg["remat_policy"] = "minimal"
    else:
        cfg["remat_policy"] = "custom"
        cfg.update({k: "device" for k in CUSTOM_TENSORS})  # types.py RematLocation device
    dtype, quant = PRECISION[job.precision]
    cfg["dtype"] = dtype  # types.py DataTypes.dtype
    if quant:
        cfg["quantization"] = quant  # types.py Quantization.quantization
    head = "\n".join(header(job, "MaxText config")) + "\n"
    head += "# run: python3 -m MaxText.train maxtext_config.yml (base.yml beside it)\n"
    if not name:
        head += "# no MaxText model config is known for this workload: add model_name or the base_* dimensions\n"
    return LaunchConfig("maxtext", "maxtext_config.yml", head + "\n" + yaml.safe_dump(cfg, sort_keys=False), cfg)
