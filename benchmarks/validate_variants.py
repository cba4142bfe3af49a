"""The process-network closed form (models/variants.py) against the engine's play of a stream of items through
the replicated stages (executor/process_network.py): throughput, latency and energy per item of the first Pareto
variants of the subtitling pipeline on three platforms.

    python benchmarks/validate_variants.py
"""
from __future__ import annotations

import sys

from parplan.executor.process_network import agreement

CASES = [("examples/subtitling.yaml", "odroid-xu4", 4), ("examples/subtitling.yaml", "rk3588", 4),
         ("examples/subtitling.yaml", "ryzen-5950x", 3)]


def rows() -> list:
    out = []
    for model, hw, top in CASES:
        for r in agreement(model, hw, top=top, n_items=240):
            out.append({"platform": hw, **r})
    return out


def main() -> int:
    rs = rows()
    for r in rs:
        print(f"{r['platform']:<12} {r['metric']:<18} engine {r['simulated']:>10.5g} closed {r['predicted']:>10.5g} "
              f"{100 * r['error']:>+7.3f}%  {r['plan']}")
    ok = sum(abs(r["error"]) <= 0.05 for r in rs)
    print(f"\n{ok}/{len(rs)} within 5 % ({len(rs) // 3} variants × throughput, latency, energy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
