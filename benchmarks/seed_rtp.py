"""Seed S12 (RTP, rotated tensor parallelism with memory deduplication, arXiv 2311.01635): near-minimal per-device
memory against Megatron TP / FSDP at DDP-like speed.  parplan has no rotated-weights plan yet, so the claim is printed
as not reached, with parplan's DDP / FSDP / TP per-device memory and step time beside the paper's claim.

Scenario (../shared/SEEDS.md S12 (d)): 8 × A100 40 GB on NVLink (dgx-a100-8), GPT-style models, s = 1024.

    python benchmarks/seed_rtp.py
"""
from __future__ import annotations

import sys

PAPER = ("RTP: memory remarkably close to optimal (single-machine memory divided equally), performance comparable "
         "to DDP (abstract)")
WHY = ("RTP rotates weight shards among workers while each computes on its own data (a plan with neither the "
       "all-gather of FSDP nor the activation split of TP); parplan has no such plan knob, cost terms or executor "
       "ops, so RTP's own memory and speed are not priced")
PLANS = {"DDP": "dp=8,zero=0,mbs=4", "FSDP (ZeRO-3)": "dp=8,zero=3,mbs=4", "Megatron TP8": "dp=1,tp=8,mbs=4,sp=true"}


def main(argv=None) -> int:
    import parplan

    print(f"paper: {PAPER}")
    print(f"{'model':<10} {'plan':<15} {'memory GB':>10} {'step s':>8}")
    for model in ("mpt-1b", "mpt-7b"):
        for name, plan in PLANS.items():
            e = parplan.estimate(model, "dgx-a100-8", plan, seq_len=1024, global_batch=64)
            print(f"{model:<10} {name:<15} {e.memory_peak_bytes / 1e9:>10.1f} {e.step_time_s:>8.3f}")
    print(f"claim not reached: {WHY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
