"""Seed S12 (RTP, rotated tensor parallelism with memory deduplication, Luo, Zhong, Fox, arXiv 2311.01635):
per-device memory near the optimum (one machine's memory divided equally) at DDP-like speed.

Scenario (../shared/SEEDS.md S12 (d)): 8 × A100-SXM4-40GB on NVLink 3 (one node, built inline: the catalog's
``dgx-a100-8`` carries the 80 GB part), GPT-style models (MPT 1.3B / 2.7B / 6.7B of the catalog), s = 1024, micro-
batch 4 and 8 per GPU, global batch 64.  Per model: DDP (zero=0), FSDP (zero=3), Megatron TP over the node, RTP
(zero=3, rotate=true; ``models/rtp_terms.py``) — per-device memory and model states, step time, throughput
against DDP, and RTP's step as the reference executor plays it (``executor/rotation.py``) beside the model's.
Then the largest trainable model of each (GPT-style width 2048, layers grown until the plan stops fitting, mbs 1
with full recompute so that model states dominate).

    python benchmarks/seed_rtp.py
"""
from __future__ import annotations

import sys

PAPER = ("RTP (abstract): memory consumption remarkably close to optimal (single-machine memory divided equally), "
         "performance comparable to DDP")
CLUSTER = {"name": "8x a100-sxm-40gb nvlink3", "groups": [{"device": "a100-sxm-40gb", "nodes": 1, "devices_per_node": 8,
                                                           "intra_node": "nvlink3", "inter_node": "ib-hdr200"}]}
MODELS = {"mpt-1b": "1.3B", "mpt-3b": "2.7B", "mpt-7b": "6.7B"}
SEQ, BATCH = 1024, 64
EXEC_TOLERANCE = 0.10  # the bound on model vs executor for RTP
GB = 1e9


def plans(model: str, mbs: int) -> dict[str, str]:
    rest = f"mbs={mbs},recompute=none"
    tp = 4 if model == "mpt-3b" else 8  # MPT 2.7B has 20 heads: TP 8 does not divide them
    return {"DDP": f"dp=8,zero=0,{rest}", "FSDP (ZeRO-3)": f"dp=8,zero=3,{rest}",
            f"Megatron TP{tp}": f"dp={8 // tp},tp={tp},sp=true,zero=1,{rest}", "RTP": f"dp=8,zero=3,rotate=true,{rest}"}


def _estimate(workload, cluster, text):
    from parplan.models.estimate import estimate_plan
    from parplan.models.plan import parse_plan

    return estimate_plan(workload, cluster, parse_plan(text, cluster.n_devices))


def table(cluster) -> tuple[list, list]:
    from parplan.executor.agreement import compare_plan
    from parplan.models.plan import parse_plan
    from parplan.workloads import load_workload

    rows, rtp = [], []
    for model, size in MODELS.items():
        w = load_workload(model, seq_len=SEQ, global_batch=BATCH)
        for mbs in (4, 8):
            ests = {name: _estimate(w, cluster, text) for name, text in plans(model, mbs).items()}
            ddp = ests["DDP"].step_time_s
            for name, e in ests.items():
                mb = e.breakdown.memory_bytes
                states = mb["params_bytes"] + mb["grads_bytes"] + mb["optimizer_bytes"]
                sim = ""
                if name == "RTP":
                    a = compare_plan(w, cluster, parse_plan(plans(model, mbs)[name], cluster.n_devices))
                    sim = f"{a.simulated_step_s:.3f} ({a.step_diff:+.1%})"
                    rtp.append((model, mbs, e, ests, a))
                rows.append((f"{model} ({size})", mbs, name, "yes" if e.fits else "no", e.memory_peak_bytes / GB,
                             states / GB, mb["zero3_gather_buffer_bytes"] / GB, e.step_time_s, ddp / e.step_time_s,
                             sim))
    return rows, rtp


def largest(cluster, plan: str) -> tuple[int, float]:
    """The most layers (and parameters) of a GPT-style width-2048 model (MPT 1B's layer) that ``plan`` fits."""
    from parplan.catalogs import entries
    from parplan.spec import load_yaml_file
    from parplan.workloads import load_workload

    base = load_yaml_file(str(entries("workloads")["mpt-1b"]))

    def at(layers: int):
        d = {k: base[k] for k in ("name", "architecture", "training")}
        d["architecture"] = {**d["architecture"], "layers": layers}
        w = load_workload(d, seq_len=SEQ, global_batch=8)
        return w, _estimate(w, cluster, plan)

    lo, hi = 0, 4096
    while hi - lo > 1:  # bisection on "fits" (monotone in the layers)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if at(mid)[1].fits else (lo, mid)
    return lo, (float(at(lo)[0].model.total_params) if lo else 0.0)


def main(argv=None) -> int:
    from parplan.hardware import load_cluster

    cluster = load_cluster(CLUSTER)
    print(f"paper: {PAPER}")
    print(f"scenario: {cluster.name}, s = {SEQ}, global batch {BATCH}, recompute none (S12 (d))")
    rows, rtp = table(cluster)
    head = (f"{'model':<15} {'mbs':>3} {'plan':<14} {'fits':>4} {'mem GB':>7} {'states GB':>9} {'buffer GB':>9} "
            f"{'step s':>7} {'vs DDP':>6}  executor step s")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r[0]:<15} {r[1]:>3} {r[2]:<14} {r[3]:>4} {r[4]:>7.1f} {r[5]:>9.2f} {r[6]:>9.3f} {r[7]:>7.3f} "
              f"{r[8]:>6.2f}  {r[9]}")
    print("(vs DDP: DDP's step / the plan's step, i.e. throughput relative to DDP — computed also where DDP does not "
          "fit; buffer: ZeRO-3's two gathered layers, RTP's two shard buffers)")

    # --- claims ---------------------------------------------------------------------------------------------------
    from parplan.models.plan import parse_plan
    from parplan.models.training import PlanArrays, evaluate_workload
    from parplan.models.training_memory import FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES
    from parplan.workloads import load_workload

    st = ("params_bytes", "grads_bytes", "optimizer_bytes")
    worst_exec = max(abs(a.step_diff) for *_, a in rtp)
    gap = []  # RTP's peak over the optimum: DDP's footprint with its model states divided by the 8 devices
    for _, _, e, ests, _ in rtp:
        d = ests["DDP"]
        dyn = (d.memory_peak_bytes - FRAMEWORK_RESERVED_BYTES) / (1 + FRAGMENTATION_FRACTION)
        states = sum(d.breakdown.memory_bytes[k] for k in st)
        opt = (dyn - states * 7 / 8) * (1 + FRAGMENTATION_FRACTION) + FRAMEWORK_RESERVED_BYTES
        gap.append(e.memory_peak_bytes / opt)
    le_fsdp = all(e.memory_peak_bytes <= ests["FSDP (ZeRO-3)"].memory_peak_bytes for _, _, e, ests, _ in rtp)
    speed = [(m, mbs, ests["DDP"].step_time_s / e.step_time_s) for m, mbs, e, ests, _ in rtp]
    exposed = max(e.breakdown.time_s["dp_comm_exposed_s"] for _, _, e, _, _ in rtp)
    gemm = [e.breakdown.time_s["compute_gemm_s"] / ests["FSDP (ZeRO-3)"].breakdown.time_s["compute_gemm_s"]
            for _, _, e, ests, _ in rtp]
    threshold = []  # tokens per GPU at which one forward hop takes one sub-step's GEMMs (c = t, S12 (b))
    for m, mbs, *_ in rtp:
        w = load_workload(m, seq_len=SEQ, global_batch=BATCH)
        r = evaluate_workload(w, cluster, PlanArrays.from_plans([parse_plan(plans(m, mbs)["RTP"], 8)]))
        threshold.append(mbs * SEQ * float(r["op_rtp_xfer_fwd_first_s"][0]) / float(r["op_rtp_sub_fwd_s"][0]))
    lo_speed, hi_speed = min(x for *_, x in speed), max(x for *_, x in speed)
    print()
    print(f"RTP peak memory / the optimum (DDP's footprint with its model states divided by 8): {min(gap):.3f} … "
          f"{max(gap):.3f}: {'reached' if max(gap) <= 1.05 else 'not reached'} (below 1: ZeRO-3 keeps 16-bit "
          "gradients where DDP reduces fp32 ones)")
    print(f"RTP peak memory <= FSDP's on every row: {'reached' if le_fsdp else 'not reached'} (the gap: FSDP's two "
          "gathered layers minus RTP's two shards, ×1.05 fragmentation)")
    print(f"executor vs model on RTP: worst {worst_exec:.2%} (bound {EXEC_TOLERANCE:.0%}): "
          f"{'reached' if worst_exec <= EXEC_TOLERANCE else 'not reached'}")
    sizes = {}
    for name, plan in (("DDP", "dp=8,zero=0,mbs=1,recompute=full"), ("FSDP", "dp=8,zero=3,mbs=1,recompute=full"),
                       ("RTP", "dp=8,zero=3,rotate=true,mbs=1,recompute=full")):
        sizes[name] = largest(cluster, plan)
        print(f"largest trainable (width 2048, mbs 1, full recompute) with {name:<4}: {sizes[name][0]:>4} layers, "
              f"{sizes[name][1] / 1e9:.1f}B parameters")
    grow = sizes["RTP"][1] / sizes["DDP"][1]
    print(f"largest trainable model RTP / DDP: {grow:.1f}× (derived expectation ≈ 8×): "
          f"{'reached' if grow >= 6.0 else 'not reached'}")
    ok_speed = lo_speed >= 0.85
    print(f"throughput RTP / DDP: {lo_speed:.2f} … {hi_speed:.2f} (S12 (d) derived expectation 0.85–1.0): "
          f"{'reached' if ok_speed else 'not reached'}")
    if not ok_speed:
        worst = min(speed, key=lambda t: t[2])
        print(f"  why: the rotations are hidden (exposed DP communication at most {exposed * 1e3:.1f} ms a step; a hop "
              f"takes one sub-step's GEMMs at {min(threshold):.0f}–{max(threshold):.0f} tokens per GPU, the plans "
              f"run {4 * SEQ}–{8 * SEQ}), but every linear runs as 8 GEMMs with 1/8 of its output columns, which "
              f"the calibration layer's kernel model (tile and wave quantization) prices {min(gemm):.2f}–"
              f"{max(gemm):.2f}× the full-width GEMM time (worst: {worst[0]} at mbs {worst[1]}, {worst[2]:.2f} of "
              "DDP's throughput); wider layers and larger micro-batches close the gap.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
