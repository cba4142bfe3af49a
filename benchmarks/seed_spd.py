"""Seed S07 (SPD, Sync-Point Drop, Kim et al., ICML 2025, arXiv 2502.20727): dropping the attention all-reduce of
tensor parallelism in a fraction f of the blocks — the paper's ≈ 20 % lower latency for LLaMA2-70B on 8 GPUs beside
parplan's, on low-bandwidth (PCIe-only) and high-bandwidth (NVLink) links, with the serving executor confirming.

Scenario (../shared/SEEDS.md S07 (d)): 8 × A100 80 GB, (i) PCIe Gen4 x16 only (A100 PCIe cards, LBW) and (ii) NVLink 3
(A100 SXM, HBW); LLaMA2-70B in 16-bit, batch 1 (one user, closed loop), a 2,048-token prompt and 256 output tokens;
TP8 against TP8 + SPD with f ∈ {0.5, 0.75, 0.9} (``spd_drop`` of the deployment, models/serving_terms.py).  The
latency is one request's end-to-end time: the model's TTFT (the prefill; one user never queues) plus 255 decode
iterations; the executor plays the same requests (``simulate_serving``, its E2E p50).  The seed also asks whether
TP4 × PP2 or a smaller TP competes on PCIe: printed below the table.

    python benchmarks/seed_spd.py [--requests 4]
"""
from __future__ import annotations

import argparse
import sys

PAPER = "SPD: ≈ 20 % lower inference latency for LLaMA2-70B on 8 GPUs, < 1 % accuracy loss (abstract)"
MODEL = "llama2-70b"
# A100 PCIe 80GB cards on PCIe Gen4 x16 (LBW) and the A100 SXM4 80GB on NVLink 3 (HBW, DGX A100); the inter-node
# link is unused on one node (catalogs/hardware/links/*.yaml cite each link)
LINKS = {"PCIe (LBW)": "a100-pcie-80gb:1x8@pcie4-x16,ib-hdr200",
         "NVLink (HBW)": "a100-sxm-80gb:1x8@nvlink3,ib-hdr200"}
SERVE = {"isl": 2048, "osl": 256, "concurrency": 1}  # S07 (d): batch 1, prefill 2k + 256 decode
FRACTIONS = (0.5, 0.75, 0.9)
BASE = "tp=8,batch=1"
ALTERNATIVES = ("tp=4,pp=2,batch=1", "tp=2,pp=4,batch=1")
TOLERANCE = 0.10  # the executor's latency ratio within 10 % of the model's (issue 12 item 6)
# S07 (d) expected (derived in the seed): LBW Δ ≈ 15–25 % at f ≈ 0.75–0.9, HBW Δ ≈ 3–10 %
EXPECTED = {"PCIe (LBW)": (0.15, 0.25), "NVLink (HBW)": (0.03, 0.10)}


def _latency(w, c, s, dep: str) -> tuple[float, object]:
    from parplan.models.serving import estimate_serving

    e = estimate_serving(w, c, s, dep)
    return e.ttft_p50_s + (SERVE["osl"] - 1) * e.decode_iteration_s, e


def _simulated(w, c, s, dep: str, n_requests: int) -> float:
    from parplan.executor.serving import simulate_serving
    from parplan.models.serving import as_deployment

    sim = simulate_serving(w, c, s, as_deployment(dep, c.n_devices), n_requests=n_requests, seed=0, warmup=1)
    return sim.e2e_s.p50


def rows(n_requests: int = 4, links=None, fractions=FRACTIONS) -> list[dict]:
    """One row per (link, f): model and executor latency of TP8 and TP8 + SPD, the reductions and ratios."""
    from parplan.serving import _inputs

    out = []
    for name, hw in (links or LINKS).items():
        w, c, s = _inputs(MODEL, hw, SERVE)
        base, e0 = _latency(w, c, s, BASE)
        sim_base = _simulated(w, c, s, BASE, n_requests)
        comm = e0.decode_breakdown_s["tp_comm_s"] / e0.decode_iteration_s
        ar_s = e0.decode_breakdown_s["tp_comm_s"] / (2 * w.model.layers)  # two all-reduces per block
        for f in fractions:
            dep = f"{BASE};spd_drop={f}"
            lat, _ = _latency(w, c, s, dep)
            sim = _simulated(w, c, s, dep, n_requests)
            ratio, sim_ratio = base / lat, sim_base / sim
            out.append({"link": name, "f": f, "model_base_s": base, "model_spd_s": lat, "sim_base_s": sim_base,
                        "sim_spd_s": sim, "reduction": 1 - lat / base, "sim_reduction": 1 - sim / sim_base,
                        "ratio": ratio, "sim_ratio": sim_ratio, "decode_comm_share": comm, "decode_ar_s": ar_s,
                        "agrees": abs(sim_ratio / ratio - 1) <= TOLERANCE and sim < sim_base})
    return out


def alternatives(hw: str = LINKS["PCIe (LBW)"]) -> list[tuple[str, float]]:
    from parplan.serving import _inputs

    w, c, s = _inputs(MODEL, hw, SERVE)
    return [(d, _latency(w, c, s, d)[0]) for d in (BASE, f"{BASE};spd_drop=0.9") + ALTERNATIVES]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=4, help="requests the executor plays per deployment (one user)")
    a = ap.parse_args(argv)
    print(f"paper: {PAPER}")
    print(f"scenario: {MODEL} 16-bit, 8 × A100 80GB, batch 1, ISL {SERVE['isl']} / OSL {SERVE['osl']}; "
          f"latency = one request end to end")
    print(f"{'link':<13} {'f':>5} {'TP8 s':>8} {'SPD s':>8} {'parplan Δ':>10} {'executor Δ':>11} {'ratio':>6} "
          f"{'exec ratio':>10} {'agree':>6} {'paper':>6}")
    rs = rows(a.requests)
    for r in rs:
        print(f"{r['link']:<13} {r['f']:>5.2f} {r['model_base_s']:>8.2f} {r['model_spd_s']:>8.2f} "
              f"{100 * r['reduction']:>9.1f}% {100 * r['sim_reduction']:>10.1f}% {r['ratio']:>6.3f} "
              f"{r['sim_ratio']:>10.3f} {'yes' if r['agrees'] else 'NO':>6} {'≈20%':>6}")
    for name in LINKS:
        share = next(r["decode_comm_share"] for r in rs if r["link"] == name)
        print(f"{name}: TP all-reduces are {100 * share:.0f} % of a TP8 decode iteration")
    lbw = [r for r in rs if r["link"] == "PCIe (LBW)" and r["f"] >= 0.75]
    hbw = [r for r in rs if r["link"] == "NVLink (HBW)"]
    lo, hi = min(r["reduction"] for r in lbw), max(r["reduction"] for r in lbw)
    print(f"\nparplan: PCIe Δ {100 * lo:.0f}–{100 * hi:.0f} % at f = 0.75–0.9 "
          f"({100 * next(r['reduction'] for r in rs if r['link'] == 'PCIe (LBW)' and r['f'] == 0.5):.0f} % at "
          f"f = 0.5); NVLink Δ {100 * min(r['reduction'] for r in hbw):.0f}–"
          f"{100 * max(r['reduction'] for r in hbw):.0f} %; paper ≈ 20 % (seed's derived LBW 15–25 %, HBW 3–10 %)")
    pcie = [r["reduction"] for r in rs if r["link"] == "PCIe (LBW)"]
    reached = any(0.15 <= x <= 0.25 for x in pcie) and max(r["reduction"] for r in hbw) < lo
    if reached:
        print(f"claim reached: parplan's PCIe gain spans {100 * min(pcie):.0f}–{100 * hi:.0f} % over "
              "f ∈ {0.5, 0.75, 0.9} (the paper's f for its ≈ 20 % was not read), less on NVLink")
    else:
        print("claim NOT reached: no f gives 15–25 % on PCIe, or NVLink does not gain less")
    if hi > EXPECTED["PCIe (LBW)"][1]:
        print(f"note: at f = 0.9 parplan's PCIe gain ({100 * hi:.0f} %) exceeds the seed's derived 15–25 %: the "
              "model prices one 16 KB decode all-reduce over 8 PCIe GPUs at "
              f"{1e6 * lbw[0]['decode_ar_s']:.0f} µs (the collective layer's small-message regime), which makes "
              f"communication {100 * lbw[0]['decode_comm_share']:.0f} % of a decode step (the seed assumed 30–50 %)")
    ok = all(r["agrees"] for r in rs)
    print(f"executor: {'confirms' if ok else 'does NOT confirm'} direction and size (latency ratio within "
          f"{100 * TOLERANCE:.0f} % of the model's) on {sum(r['agrees'] for r in rs)}/{len(rs)} rows")
    print("\nPCIe alternatives (model, one request end to end):")
    for d, lat in alternatives():
        print(f"  {d:<28} {lat:8.2f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
