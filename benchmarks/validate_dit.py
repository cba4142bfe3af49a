"""DiT inference family: the closed form (models/dit.py) against the discrete-event play of one denoising step
(executor/dit.py) on every SP kind, both communication sides, torus chunks 1/2/4 and a TP plan, at 16k and 64k tokens
on one and two H100 nodes.  Prints the table and the count within ±5 %.

    python benchmarks/validate_dit.py
"""
from __future__ import annotations

import sys

CASES = (("examples/dit-flux-64k.yaml", "h100-sxm-80gb:2x8"),
         ({"family": "dit-inference", "name": "dit-12b-16k", "model": "dit-12b", "tokens": 16384},
          "h100-sxm-80gb:2x8"),
         ({"family": "dit-inference", "name": "wan-16k", "model": "wan2.1-t2v-14b", "tokens": 16384},
          "h100-sxm-80gb:1x8"))
TOL = 0.05


def main(argv=None) -> int:
    from parplan.executor.dit import agreement

    n = ok = 0
    print(f"{'workload':<14} {'plan':<58} {'executor':>10} {'model':>10} {'error':>8}")
    for model, hw in CASES:
        name = model["name"] if isinstance(model, dict) else "flux-64k"
        for r in agreement(model, hw):
            n += 1
            ok += abs(r["error"]) <= TOL
            print(f"{name:<14} {r['plan']:<58} {r['simulated_s'] * 1e3:>8.2f}ms {r['predicted_s'] * 1e3:>8.2f}ms "
                  f"{100 * r['error']:>+7.3f}%")
    print(f"{ok}/{n} plans within ±{100 * TOL:.0f} %")
    return 0 if ok == n else 1


if __name__ == "__main__":
    sys.exit(main())
