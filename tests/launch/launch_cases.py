"""Golden export cases: (golden file, workload, cluster, plan, target); regenerate the files with
``PARPLAN_REGEN_GOLDEN=1 python -m pytest -q tests/launch/test_golden.py`` after an intended change."""
from __future__ import annotations

DENSE = "tp=8,pp=4,vpp=5,mbs=1,zero=1,recompute=selective,sp=true"
MOE = "tp=2,pp=2,ep=8,etp=1,mbs=1,zero=1,recompute=modules,sp=true"

CASES = [
    ("llama3-70b_megatron.sh", "llama3-70b", "dgx-h100-64", DENSE, "megatron"),
    ("llama3-70b_nemo.yaml", "llama3-70b", "dgx-h100-64", DENSE, "nemo"),
    ("llama3-70b_torchtitan.toml", "llama3-70b", "dgx-h100-64",
     "tp=8,pp=4,vpp=5,mbs=1,zero=3,recompute=full,sp=true", "torchtitan"),
    ("llama3-70b_deepspeed.sh", "llama3-70b", "dgx-h100-64", "tp=8,pp=4,mbs=1,zero=1,recompute=full", "deepspeed"),
    ("llama3-70b_maxtext.yml", "llama3-70b", "dgx-h100-64", DENSE, "maxtext"),
    ("mixtral-8x7b_megatron.sh", "mixtral-8x7b", "dgx-h100-64", MOE, "megatron"),
    ("mixtral-8x7b_nemo.yaml", "mixtral-8x7b", "dgx-h100-64", MOE, "nemo"),
    ("mixtral-8x7b_torchtitan.toml", "mixtral-8x7b", "dgx-h100-64",
     "tp=2,pp=2,ep=8,etp=1,mbs=1,zero=3,recompute=full,sp=true", "torchtitan"),
    ("mixtral-8x7b_deepspeed.sh", "mixtral-8x7b", "dgx-h100-64", "tp=1,pp=2,ep=8,mbs=1,zero=1,recompute=full",
     "deepspeed"),
    ("mixtral-8x7b_maxtext.yml", "mixtral-8x7b", "dgx-h100-64", "tp=2,pp=2,ep=8,mbs=1,zero=3,recompute=full,sp=true",
     "maxtext"),
]
