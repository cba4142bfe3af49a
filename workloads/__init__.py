"""Workload specs: dense transformers (catalog, inline YAML, Hugging Face ``config.json``) and training jobs."""
from parplan.workloads.transformer import TrainingJob, TransformerSpec, Workload
from parplan.workloads.loader import load_workload, workload_ids, workload_from_dict

__all__ = ["TrainingJob", "TransformerSpec", "Workload", "load_workload", "workload_ids", "workload_from_dict"]
