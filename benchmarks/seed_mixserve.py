"""Seed S15 (MixServe, Zhou et al., arXiv 2601.08800): hybrid TP × EP with a fused all-reduce + all-to-all for MoE
serving — the paper's TTFT 1.08–3.80× and ITL 1.03–1.66× beside parplan's, the executor confirming.

Scenario (../shared/SEEDS.md S15 (d)): 2 nodes × 8 H800 (NVLink 400 GB/s inside a node), inter-node 200 Gb/s RoCE
per GPU (low bandwidth) or 400 Gb/s NDR InfiniBand per GPU (high); DeepSeek-V3 (the DeepSeek-R1 architecture: 671B,
256 routed experts top-8, h = 7168, MLA) with fp8 weights, activations and KV cache.  TTFT: one 8,192-token prompt
(one user); ITL: decode at batch 64 (64 users, ISL 2,048 / OSL uniform 128–384, mean 256 — spread so that the
closed loop reaches a steady state instead of replaying one synchronized cohort; the mean time per output token).  Plans:
A = pure TP16 spanning both nodes; B = pure EP16 with DP16 attention; C = TP8 (inside a node) × EP2 (across nodes)
with the fused AR–A2A (``fused=true``: the MoE layer's all-reduce and all-to-all overlap, max instead of sum); C
without fusion is printed too.

Plan A is priced by the model's terms through ``evaluate_serving`` only: ``estimate_serving`` and ``pool_cost`` refuse
a TP degree beyond one scale-up domain (models/serving.py ``_check``), so the executor cannot play it; the executor
confirms C against B.

    python benchmarks/seed_mixserve.py [--itl-requests 384]
"""
from __future__ import annotations

import argparse
import sys

PAPER = ("MixServe: TTFT 1.08–3.80× and ITL 1.03–1.66× faster vs existing approaches, throughput +5.2–50.3 % "
         "(abstract)")
MODEL = "deepseek-v3"
# H800 nodes (nvlink4-h800); inter-node 200 Gb/s RoCE or 400 Gb/s NDR per GPU (S15 (d): 4–8 × 200 Gb/s RoCE)
LINKS = {"RoCE 200 (low)": "h800-sxm-80gb:2x8@nvlink4-h800,roce-200",
         "NDR 400 (high)": "h800-sxm-80gb:2x8@nvlink4-h800,ib-ndr400"}
FP8 = {"weights": "fp8", "activations": "fp8", "kv_cache": "fp8"}
TTFT_SERVE = {"isl": 8192, "osl": 2, "concurrency": 1, "precision": FP8}
ITL_SERVE = {"isl": 2048, "osl": {"dist": "uniform", "min": 128, "max": 384}, "concurrency": 64, "precision": FP8}
PLANS = {"A (TP16)": "tp=16,batch=64", "B (EP16, DP attention)": "tp=1,dp=16,ep=16,batch=64",
         "C (TP8×EP2, fused)": "tp=8,dp=2,ep=2,batch=64;fused=true", "C unfused": "tp=8,dp=2,ep=2,batch=64"}
SIMULABLE = ("B (EP16, DP attention)", "C (TP8×EP2, fused)")
TOLERANCE = 0.10


def _model(w, c, s, dep: str):
    """The model's estimate; past the scale-up guard of estimate_serving for plan A (the same terms)."""
    from parplan.models.serving import as_deployment, estimate_at, evaluate_serving

    d = as_deployment(dep, c.n_devices)
    return estimate_at(evaluate_serving(w, c, s, [d]), 0, d, w, c, s)


def _sim(w, c, s, dep: str, n: int, metric: str) -> float:
    from parplan.executor.serving import simulate_serving
    from parplan.models.serving import as_deployment

    sim = simulate_serving(w, c, s, as_deployment(dep, c.n_devices), n_requests=n, seed=0, warmup=max(1, n // 10))
    return sim.ttft_s.p50 if metric == "ttft" else sim.tpot_s.p50


def rows(itl_requests: int = 384, links=None, plans=PLANS) -> list[dict]:
    from parplan.serving import _inputs

    out = []
    for name, hw in (links or LINKS).items():
        for metric, serve, n in (("ttft", TTFT_SERVE, 3), ("itl", ITL_SERVE, itl_requests)):
            w, c, s = _inputs(MODEL, hw, serve)
            r = {"link": name, "metric": metric, "model": {}, "sim": {}}
            for p, dep in plans.items():
                e = _model(w, c, s, dep)
                r["model"][p] = e.ttft_p50_s if metric == "ttft" else e.tpot_p50_s
                if p in SIMULABLE:
                    r["sim"][p] = _sim(w, c, s, dep, n, metric)
            out.append(r)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--itl-requests", type=int, default=384, help="requests the executor plays for the ITL rows")
    a = ap.parse_args(argv)
    print(f"paper: {PAPER}")
    print(f"scenario: {MODEL} fp8 on 2 × 8 H800; TTFT of one 8k prompt, ITL at batch 64 (ISL 2k / OSL 256)")
    keys = list(PLANS)
    print(f"{'link':<15} {'metric':<5} " + " ".join(f"{k:>23}" for k in keys) + f" {'C vs A':>7} {'C vs B':>7} "
          f"{'exec C vs B':>11} {'agree':>5}")
    rs = rows(a.itl_requests)
    ok = True
    C, A, B = "C (TP8×EP2, fused)", "A (TP16)", "B (EP16, DP attention)"
    for r in rs:
        m, s = r["model"], r["sim"]
        vs_a, vs_b = m[A] / m[C], m[B] / m[C]
        ex = s[B] / s[C]
        r.update(vs_a=vs_a, vs_b=vs_b, sim_vs_b=ex, agrees=abs(ex / vs_b - 1) <= TOLERANCE)
        ok &= r["agrees"]
        print(f"{r['link']:<15} {r['metric']:<5} " + " ".join(f"{1e3 * m[k]:>20.1f} ms" for k in keys)
              + f" {vs_a:>6.2f}× {vs_b:>6.2f}× {ex:>10.2f}× {'yes' if r['agrees'] else 'NO':>5}")
    print("(C vs X = X's latency / C's: > 1 means the hybrid is faster; paper TTFT 1.08–3.80×, ITL 1.03–1.66×)")
    best = {(r["link"], r["metric"]): min(r["model"], key=r["model"].get) for r in rs}
    for (link, metric), p in best.items():
        print(f"  fastest in the model, {link}, {metric}: {p}")
    c_wins = all(r["vs_a"] > 1 and r["vs_b"] > 1 for r in rs)
    if c_wins:
        print("claim reached in direction: the fused hybrid beats both pure TP and pure EP on every row")
    else:
        print("claim NOT reached: the fused hybrid C does not beat both baselines on every row — TTFT: C vs A "
              f"{min(r['vs_a'] for r in rs if r['metric'] == 'ttft'):.2f}–"
              f"{max(r['vs_a'] for r in rs if r['metric'] == 'ttft'):.2f}×, C vs B "
              f"{min(r['vs_b'] for r in rs if r['metric'] == 'ttft'):.2f}–"
              f"{max(r['vs_b'] for r in rs if r['metric'] == 'ttft'):.2f}×; ITL: C vs A "
              f"{min(r['vs_a'] for r in rs if r['metric'] == 'itl'):.2f}–"
              f"{max(r['vs_a'] for r in rs if r['metric'] == 'itl'):.2f}×, C vs B "
              f"{min(r['vs_b'] for r in rs if r['metric'] == 'itl'):.2f}–"
              f"{max(r['vs_b'] for r in rs if r['metric'] == 'itl'):.2f}×.  Why, in the model: (1) one prompt "
              "lives on one attention-DP rank, so C prefills it on one TP8 group while A spreads it over 16 GPUs "
              "(the second node's attention idles: TP16's all-reduces across nodes cost less than that); B's rank "
              "is one GPU, hence C's TTFT lead over B; (2) decode at batch 64 spreads over B's 16 ranks (4 "
              "sequences each) and EP16's all-to-all stays small, so B decodes fastest; (3) C's EP2 all-to-all is "
              "priced as an intra-node exchange (ep = 2 ≤ 8 devices per node) carrying all of a TP rank's tokens, "
              "not MixServe's inter-node exchange of each TP rank's 1/8 share with per-node de-duplication; (4) "
              "pure TP16 cannot be planned by estimate_serving (TP is held to one scale-up domain).  The paper's "
              "baselines and its exact fused algorithm were not read; the model is not tuned to reach the figure")
    itl_off = [r for r in rs if r["metric"] == "itl" and not r["agrees"]]
    if itl_off:
        print("executor beyond the tolerance on ITL: its ranks step in lock-step, so a prompt alone on one rank "
              "stalls the other ranks' decodes for its whole prefill, and prompts on different ranks share an "
              "iteration only when they queue together; the model's prefill-busy mix packs queued prompts across "
              "ranks as one queue would (models/serving_queue.py chunk_costs) and so prices B's stalls lower")
    print(f"executor: {'confirms' if ok else 'does NOT confirm'} C vs B (ratio within {100 * TOLERANCE:.0f} % of "
          "the model's) on every row; plan A is model-only (pool_cost refuses TP across nodes)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
