"""Workload specs: dense and mixture-of-experts transformers (catalog, inline YAML, Hugging Face ``config.json``),
their families (:mod:`parplan.workloads.registry`) and training jobs."""
from parplan.workloads.transformer import TrainingJob, TransformerSpec, Workload
from parplan.workloads.moe import MoESpec
from parplan.workloads.loader import load_workload, workload_ids, workload_from_dict
from parplan.workloads.registry import family_info, family_names, family_of

__all__ = ["TrainingJob", "TransformerSpec", "MoESpec", "Workload", "load_workload", "workload_ids",
           "workload_from_dict", "family_info", "family_names", "family_of"]
