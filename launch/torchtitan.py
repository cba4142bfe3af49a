"""torchtitan: a job TOML ([model], [training], [parallelism], [activation_checkpoint], float8 / mx).

Keys: pytorch/torchtitan torchtitan/config/job_config.py (Model name / flavor / converters; Training
local_batch_size / global_batch_size / seq_len / mixed_precision_param; Parallelism data_parallel_replicate_degree,
data_parallel_shard_degree, fsdp_reshard_after_forward, tensor_parallel_degree, pipeline_parallel_degree,
module_fqns_per_model_part, pipeline_parallel_schedule, pipeline_parallel_microbatch_size, context_parallel_degree,
expert_parallel_degree; ActivationCheckpoint mode / selective_ac_option; Float8 recipe_name; MX recipe_name) and
torchtitan/distributed/parallel_dims.py (expert_tensor_parallel_degree: 1 or tp).  Table: docs/launch.md.
"""
from __future__ import annotations

from parplan.launch.common import Job, LaunchConfig, chunk_layer_counts, explicit_split, refuse
from parplan.launch.megatron import header
from parplan.launch.toml_emit import dumps

# catalog workload id → torchtitan (model.name, model.flavor): torchtitan/models/llama3/train_configs/llama3_*.toml
FLAVORS = {"llama3-8b": ("llama3", "8B"), "llama3-70b": ("llama3", "70B"), "llama3-405b": ("llama3", "405B")}


def model_parts(job: Job) -> list[list[str]]:
    """Module FQNs of every model chunk: tok_embeddings with the first, norm + output with the last (the
    llama3 module names torchtitan's generate_llm_fqn_per_model_part uses, distributed/pipeline_parallel.py)."""
    parts, start = [], 0
    counts = chunk_layer_counts(job)
    for i, n in enumerate(counts):
        names = [f"layers.{j}" for j in range(start, start + n)]
        start += n
        if i == 0:
            names.insert(0, "tok_embeddings")
        if i == len(counts) - 1:
            names += ["norm", "output"]
        parts.append(names)
    return parts


def parallelism(job: Job) -> dict:
    p = job.plan
    par: dict = {}
    if p.zero == 0:
        par.update(data_parallel_replicate_degree=p.dp, data_parallel_shard_degree=1)  # DDP (job_config.py)
    else:  # zero=3: FSDP2 over dp_shard × cp; HSDP with replicate > 1 (job_config.py Parallelism)
        shard = p.shard or p.dp * p.cp
        if shard % p.cp:
            raise refuse(job.to, f"shard={p.shard}", f"the FSDP mesh is data_parallel_shard_degree × cp, so the shard "
                         f"group must be a multiple of cp={p.cp}", f"shard a multiple of {p.cp}, or shard=0")
        dp_shard = shard // p.cp
        par.update(data_parallel_replicate_degree=p.dp // dp_shard, data_parallel_shard_degree=dp_shard,
                   fsdp_reshard_after_forward="always" if p.reshard else "never")  # job_config.py
    par["tensor_parallel_degree"] = p.tp  # job_config.py; apply_tp shards norms (SequenceParallel) with tp > 1
    par["context_parallel_degree"] = p.cp  # job_config.py
    if p.pp > 1:
        if p.vpp > 1 and explicit_split(p):
            raise refuse(job.to, "first_layers/last_layers/embed_as_layer/loss_as_layer with vpp>1",
                         "the export writes looped schedules as equal model chunks",
                         "an uneven split with vpp=1, or vpp>1 with the even split")
        par.update(pipeline_parallel_degree=p.pp,  # job_config.py
                   # "Looped schedules (e.g. Interleaved1F1B) require ... split_points = number of stages - 1"
                   pipeline_parallel_schedule="Interleaved1F1B" if p.vpp > 1 else "1F1B",
                   pipeline_parallel_microbatch_size=p.mbs,  # job_config.py
                   module_fqns_per_model_part=model_parts(job))  # job_config.py
    if job.is_moe:
        par["expert_parallel_degree"] = p.ep  # job_config.py
        if p.etp not in (1, p.tp):
            raise refuse(job.to, f"etp={p.etp}", "torchtitan's expert tensor parallel degree is 1 or tp "
                         "(parallel_dims.py _build_mesh_with_ep)", f"etp=1 or etp={p.tp}")
        par["expert_tensor_parallel_degree"] = p.etp  # parallel_dims.py
    return par


def precision(job: Job, tables: dict) -> None:
    pr = job.precision
    if pr in ("bf16", "fp8", "mxfp8"):
        tables["training"]["mixed_precision_param"] = "bfloat16"  # job_config.py Training
    elif pr == "fp32":
        tables["training"]["mixed_precision_param"] = "float32"
    else:
        raise refuse(job.to, f"precision={pr}", "mixed_precision_param is bfloat16 or float32, low precision comes "
                     "from the float8 / mx converters (job_config.py)", "precision fp32, bf16, fp8, mxfp8")
    if pr == "fp8":
        tables["model"]["converters"] = ["float8"]  # job_config.py Model.converters
        tables["float8"] = {"recipe_name": job.fw.fp8_default_recipe}  # Float8.recipe_name (torchtitan.yaml default)
    elif pr == "mxfp8":
        tables["model"]["converters"] = ["mx"]
        tables["mx"] = {"recipe_name": "mxfp8_cublas"}  # MX.recipe_name (job_config.py default)


def export(job: Job) -> LaunchConfig:
    p, t = job.plan, job.training
    known = FLAVORS.get(job.catalog_id or "")
    tables: dict = {"model": {"name": known[0], "flavor": known[1]} if known else {}}
    # pp = 1: micro-batches are gradient-accumulation steps of local_batch_size = mbs; pp > 1: one local batch
    # of global/dp is cut into micro-batches of pipeline_parallel_microbatch_size (job_config.py Training, Parallelism)
    local = p.mbs if p.pp == 1 else t.global_batch // p.dp
    tables["training"] = {"local_batch_size": local, "global_batch_size": t.global_batch, "seq_len": t.seq_len}
    precision(job, tables)
    tables["parallelism"] = parallelism(job)
    ac = {"mode": p.recompute}  # ActivationCheckpoint.mode none | selective | full
    if p.recompute == "selective":
        ac["selective_ac_option"] = "op"  # "'op' for op level ac" (job_config.py)
    tables["activation_checkpoint"] = ac
    if not tables["model"]:
        del tables["model"]
    head = "\n".join(header(job, "torchtitan job config")) + "\n"
    if not known:
        head += ("# no torchtitan flavor is known for this workload: add [model] name/flavor of a model "
                 "definition with its dimensions\n")
    return LaunchConfig("torchtitan", "torchtitan_job.toml", head + "\n" + dumps(tables), tables)
