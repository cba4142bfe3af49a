"""Seed S19 (HelixPipe, attention-parallel pipeline parallelism, arXiv 2507.00394): ≈ +26 % for a 7B model at 128k
on 64 GPUs.  parplan has no attention-parallel pipeline schedule yet, so the claim is printed as not reached, with
parplan's baseline (the best static plan family the seed names: TP × CP × PP with 1F1B) beside it.

Scenario (../shared/SEEDS.md S19 (d)): 8 × 8 GPUs (dgx-h100-64 stands in for the H20 cluster, which has no catalog
entry), llama2-7b (h = 4096, L = 32), s ∈ {16k, 32k, 64k, 128k}.

    python benchmarks/seed_helixpipe.py
"""
from __future__ import annotations

import sys

PAPER = "HelixPipe: 26 % faster than baseline methods for a 7B model at 128k on 64 H20 GPUs (abstract)"
WHY = ("HelixPipe moves each micro-batch's attention to another pipeline stage (the attention-parallel partition, "
       "two-fold FILO schedule); parplan's executor plays 1F1B / interleaved / ZB-H1 with attention inside each "
       "stage's layers, so plan B has no cost model or executor schedule to price")


def main(argv=None) -> int:
    import parplan

    print(f"paper: {PAPER}")
    print("parplan baseline (plan A of S19 (d)), step time per sequence length:")
    for s in (16384, 32768, 65536, 131072):
        e = parplan.estimate("llama2-7b", "dgx-h100-64", "tp=1,pp=8,cp=8,mbs=1,zero=1,recompute=selective",
                             seq_len=s, global_batch=64)
        attn = e.breakdown.time_s["compute_attention_s"]
        print(f"  s = {s // 1024:>3}k: A {e.step_time_s:8.2f} s, attention {100 * attn / e.step_time_s:4.0f} % of it")
    print(f"claim not reached: {WHY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
