"""Seed S09 (MegaScale-Infer, Zhu et al., arXiv 2504.02263): attention/FFN disaggregation with ping-pong
micro-batches — the paper's up to 1.90× per-GPU decode throughput beside parplan's, the executor confirming.

Scenario (../shared/SEEDS.md S09 (d)): H800 nodes of 8 GPUs (NVLink 400 GB/s, 400 Gb/s RDMA per GPU), 4 nodes;
decode at a 2k context (ISL 2,048, OSL 256) under a time-per-output-token SLO of 50 ms; MoE models of the catalog:
Mixtral 8x22B (141B, 8 experts top-2 — the closest to the seed's 132B-class top-2 MoE) and Qwen3-235B-A22B (128
experts top-8: a sparser k/E).  Plan A = colocated attention + experts (EP8 / EP16 / EP32 on one, two or four
nodes with TP × DP attention: vLLM/SGLang expert parallelism); plan B = af-disaggregated pools with m = 3
ping-pong micro-batches, the attention : expert split n_a : n_e chosen by a grid search (the same grid for every
model; no per-case tuning).  Each plan's batch per replica is the largest of the grid meeting the SLO on the decode
iteration.

Metric (S09 (b)): per-GPU decode throughput = attention replicas × batch / decode iteration / GPUs of the plan.
Prefill is served elsewhere (MegaScale-Infer is a decode system): the executor plays every request through a
separate prefill pool (sized to never be the bottleneck, its GPUs not counted) → KV transfer → the plan's decode
side, saturated, and reports output tokens/s per decode-side GPU.

    python benchmarks/seed_megascale_infer.py [--requests-per-seq 3]
"""
from __future__ import annotations

import argparse
import math
import sys

PAPER = "MegaScale-Infer: up to 1.90× per-GPU decode throughput vs state-of-the-art serving (abstract); seed 1.3–1.9×"
# H800 SXM5 nodes, NVLink cut to 400 GB/s (nvlink4-h800), 400 Gb/s RoCE per GPU (S09 (d); the link files cite
# their sources)
HW = "h800-sxm-80gb:4x8@nvlink4-h800,roce-400"
MODELS = ("mixtral-8x22b", "qwen3-235b-a22b")
SERVE = {"isl": 2048, "osl": 256, "slo": {"tpot_s": 0.05}}
TPOT_SLO = 0.05  # s; the "Done when" TPOT bound, used for every plan and model
BATCHES = (16, 32, 64, 128, 256, 512)
MICRO_BATCHES = 3  # S09 (d): ping-pong m = 3
# colocated EP layouts over one, two and four nodes (experts over tp·dp attention ranks, vLLM/SGLang
# --enable-expert-parallel); searched like plan B so the baseline is the model's best colocated plan
COLOCATED = ("tp=8,ep=8,replicas=1", "tp=4,dp=2,ep=8,replicas=1", "tp=2,dp=4,ep=8,replicas=1",
             "tp=8,dp=2,ep=16,replicas=1", "tp=4,dp=4,ep=16,replicas=1", "tp=8,dp=4,ep=32,replicas=1",
             "tp=4,dp=8,ep=32,replicas=1")
ATTN_REPLICAS, ATTN_TP = (1, 2, 4, 8), (2, 4, 8)
EXPERT_POOLS = ((8, 1), (8, 2), (16, 1), (16, 2))  # (ep, tp) of the one expert replica
TOLERANCE = 0.10


def candidates(plan: str) -> list[str]:
    if plan == "A":
        return [f"{p},batch={b}" for p in COLOCATED for b in BATCHES]
    return [f"attention:{na}x(tp={ta},batch={b})+expert:1x(ep={ne},tp={te});micro_batches={MICRO_BATCHES}"
            for na in ATTN_REPLICAS for ta in ATTN_TP for ne, te in EXPERT_POOLS for b in BATCHES]


def decode_per_gpu(e) -> float:
    """S09's metric from a ServingEstimate: decoding sequences / decode iteration / GPUs."""
    dep = e.deployment
    main = dep.pool("attention" if dep.mode == "af-disaggregated" else "mixed")
    return main.replicas * e.batch_per_replica / e.decode_iteration_s / dep.n_devices


def best_plan(w, c, s, plan: str):
    """The candidate of ``plan`` with the highest per-GPU decode throughput meeting the TPOT SLO (or None)."""
    from parplan.errors import SpecError
    from parplan.models.serving import estimate_serving

    best, tried = None, 0
    for d in candidates(plan):
        try:
            e = estimate_serving(w, c, s, d)
        except SpecError:  # a degree the model does not divide (ep over 8 experts, tp over heads) or too many GPUs
            continue
        tried += 1
        if e.fits and e.decode_iteration_s <= TPOT_SLO and (best is None or decode_per_gpu(e) > decode_per_gpu(best)):
            best = e
    return best, tried


def simulated_per_gpu(w, c, s, e, requests_per_seq: float = 3.0) -> tuple[float, int]:
    """Executor: a prefill pool (not counted) → KV transfer → the plan's decode side, saturated; output tokens/s
    per decode-side GPU, and the requests played."""
    from parplan.executor.serving import PoolSpec, deployment_pools, simulate_pools
    from parplan.executor.serving_mix import mix_from_serving
    from parplan.models.serving import pool_cost
    from parplan.models.serving_plan import parse_deployment

    dep = e.deployment
    helper = parse_deployment("prefill:1x(tp=8)+decode:1x(tp=8)", c.n_devices)
    pre = pool_cost(w, c, s, helper, 0)
    side = deployment_pools(w, c, s, dep)
    if dep.mode == "aggregated":
        side = [PoolSpec("decode", p.replicas, p.cost, p.devices_per_replica) for p in side]
    seqs = sum(p.replicas * min(p.cost.max_batch, p.cost.kv_capacity_tokens // (SERVE["isl"] + SERVE["osl"]))
               for p in side if p.role != "expert")
    need = seqs / (SERVE["osl"] * e.decode_iteration_s)  # requests/s the decode side finishes
    n_pre = max(1, math.ceil(2.0 * need * pre.iteration_s(SERVE["isl"], 0, 0)))
    pools = [PoolSpec("prefill", n_pre, pre, 8)] + side
    n = max(64, int(requests_per_seq * 2 * seqs))
    sim = simulate_pools(pools, mix_from_serving(s), n_requests=n, seed=0, micro_batches=dep.micro_batches)
    devices = sum(p.replicas * p.devices_per_replica for p in side)
    return sim.output_tokens_per_s / devices, n


def compare(model: str, requests_per_seq: float = 3.0) -> dict:
    from parplan.serving import _inputs

    w, c, s = _inputs(model, HW, SERVE)
    a, na = best_plan(w, c, s, "A")
    b, nb = best_plan(w, c, s, "B")
    out = {"model": model, "A": a, "B": b, "searched": na + nb}
    if a is None or b is None:
        return out
    out["ratio"] = decode_per_gpu(b) / decode_per_gpu(a)
    sa, _ = simulated_per_gpu(w, c, s, a, requests_per_seq)
    sb, _ = simulated_per_gpu(w, c, s, b, requests_per_seq)
    out.update(sim_A=sa, sim_B=sb, sim_ratio=sb / sa)
    out["agrees"] = sb > sa and abs(out["sim_ratio"] / out["ratio"] - 1) <= TOLERANCE
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests-per-seq", type=float, default=3.0,
                    help="requests the executor plays per closed-loop client slot (steady state after the warm-up)")
    a = ap.parse_args(argv)
    print(f"paper: {PAPER}")
    print(f"scenario: {HW}, ISL {SERVE['isl']} / OSL {SERVE['osl']}, TPOT ≤ {1e3 * TPOT_SLO:.0f} ms, "
          f"ping-pong m = {MICRO_BATCHES}")
    ok, shown = True, []
    for m in MODELS:
        r = compare(m, a.requests_per_seq)
        print(f"\n{m} ({r['searched']} deployments priced)")
        for k in ("A", "B"):
            e = r[k]
            if e is None:
                print(f"  plan {k}: no deployment meets the SLO")
                continue
            sim = f"{r['sim_' + k]:8.1f}" if "sim_" + k in r else "       –"
            print(f"  plan {k}: {e.deployment.to_string():<70} GPUs {e.deployment.n_devices:>3}  TPOT "
                  f"{1e3 * e.decode_iteration_s:5.1f} ms  tok/s/GPU parplan {decode_per_gpu(e):8.1f}  executor {sim}")
        if "ratio" not in r:
            ok = False
            print("  claim NOT reachable: a plan has no deployment meeting the SLO")
            continue
        shown.append(r["ratio"])
        print(f"  B/A per-GPU decode throughput: parplan {r['ratio']:.2f}×, executor {r['sim_ratio']:.2f}× "
              f"({'agrees' if r['agrees'] else 'does NOT agree'} within {100 * TOLERANCE:.0f} %); paper up to 1.90×")
        ok &= bool(r["agrees"])
    if shown:
        inside = [x for x in shown if 1.3 <= x <= 1.9]
        lo, hi = min(shown), max(shown)
        print(f"\nparplan B/A {lo:.2f}–{hi:.2f}× over {len(shown)} models; paper up to 1.90× (seed 1.3–1.9×): "
              + ("claim reached" if len(inside) == len(shown) else
                 "claim reached in direction; size " + ("above" if hi > 1.9 else "below") + " the range on "
                 f"{len(shown) - len(inside)} model(s)"))
        if hi > 1.9:
            print("why above: the colocated plan runs its experts at the attention batch of one replica "
                  "(tokens·k/E per expert: memory-bound expert GEMMs, the whole expert weights read each step, plus "
                  "the TP all-reduces and EP all-to-all of every MoE layer on the decode critical path), while the "
                  "disaggregated plan gathers several attention replicas' tokens per expert and hides the exchange "
                  "behind the ping-pong; the paper's baselines (vLLM / TensorRT-LLM with their own tuned batches "
                  "and parallelism) were not read, so the model's baseline may be weaker than the paper's")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
