"""Closed form (models/edge.py) vs the engine (executor/edge_pipeline.py) on ≥ 10 layer-chain cases: pipelines and
splits of ViT / VGG / ResNet / MobileNetV2 on the edge clusters, PipeEdge's profiled ViT-Base, PiPar/FL training plans
and CEC-PA placements.  Prints the table and "N/M within 5 %".

    python benchmarks/validate_layerchain.py
"""
from __future__ import annotations

import sys

from parplan.executor.edge_pipeline import agreement

TOL = 0.05
INF = lambda arch, src=None, mb=1, req=50: {  # noqa: E731
    "family": "layer-chain", "name": f"{arch}-mb{mb}", "dnn": {"arch": arch},
    "inference": {"microbatch": mb, "requests": req, **({"source": src} if src else {})}}
CASES = [
    ({"family": "layer-chain", "name": "pipeedge-vit-base", "chain": "pipeedge-vit-base",
      "inference": {"microbatch": 8, "requests": 50}}, "pipeedge-4mb-4rcc"),
    (INF("vit-base", "pi-0", 8), "edge-4pi-server"),
    (INF("mobilenetv2", "pi-0"), "edge-4pi-server"),
    (INF("resnet18", "pi-0", 4), "edge-4pi-server"),
    (INF("vgg16"), "pipeedge-4mb-4rcc"),
    ({"family": "layer-chain", "name": "vgg16-cifar", "dnn": {"arch": "vgg16", "image": 32, "classes": 10},
      "training": {"batch": 16, "batches": 100}}, "pipar-4pi4-server"),
]


def main() -> int:
    from seed_cecpa import cluster, workload  # the CEC-PA scenario (benchmarks/ is on the path when run from here)

    rows = []
    for w, hw in CASES + [(workload(), cluster(50))]:
        for r in agreement(w, hw, top=3):
            rows.append((w["name"], r))
    print(f"{'workload':<20} {'technique':<14} {'closed form':>12} {'engine':>12} {'error':>8}  plan")
    ok = 0
    for name, r in rows:
        good = abs(r["error"]) <= TOL
        ok += good
        print(f"{name:<20} {r['technique']:<14} {r['predicted_s']:>11.4g}s {r['simulated_s']:>11.4g}s "
              f"{100 * r['error']:>+7.2f}%  {r['plan'][:70]}")
    print(f"{ok}/{len(rows)} within 5 %")
    return 0 if ok >= 10 and ok == len(rows) else 1


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    sys.exit(main())
