"""The layer-training closed form (models/layertrain*.py) against the engine replay (executor/layertrain.py): VGG-16
(ImageNet and CIFAR-10 heads), ResNet-50 and a GA-MLP under pure DP, SplitBrain's hybrid, all-MP, mixed assignments
that make a blocking exchange share the link with queued all-reduces, and ADMM at 32 and 8 bits.

    python benchmarks/validate_layertrain.py
"""
from __future__ import annotations

import sys

from parplan.executor.layertrain import agreement

VGG = "examples/vgg16-splitbrain.yaml"
CIFAR = {"family": "layer-training", "name": "vgg16-cifar10", "network": {"arch": "vgg16", "dataset": "cifar10"},
         "job": {"batch_per_worker": 128}}
RESNET = {"family": "layer-training", "name": "resnet50", "network": {"arch": "resnet50"},
          "job": {"batch_per_worker": 64, "dtype": "fp16", "optimizer": "adam"}}
CASES = [
    (VGG, "v100-eth10-4", ["workers=4,modes=dp", "workers=4,modes=hybrid", "workers=4,modes=12DMDMD",
                            "workers=4,modes=11D2M2DM"]),
    (VGG, "v100-eth25-8", ["workers=8,modes=dp", "workers=8,modes=hybrid", "workers=8,modes=mp"]),
    (VGG, "v100-nvlink-8", ["workers=8,modes=dp", "workers=8,modes=hybrid"]),
    (CIFAR, "v100-eth10-4", ["workers=4,modes=dp", "workers=4,modes=hybrid"]),
    (RESNET, "v100-eth25-8", ["workers=8,modes=dp", "workers=8,modes=hybrid"]),
    ("examples/gamlp-admm.yaml", "v100-pcie3-8", ["method=admm,workers=8,bits=32", "method=admm,workers=8,bits=8",
                                                  "method=admm,workers=4,bits=8"]),
    ("examples/gamlp-admm.yaml", "v100-eth25-8", ["method=admm,workers=8,bits=32", "method=admm,workers=8,bits=8"]),
]


def rows() -> list:
    out = []
    for model, hw, plans in CASES:
        name = model["name"] if isinstance(model, dict) else model.rsplit("/", 1)[-1]
        for r in agreement(model, hw, plans=plans):
            out.append({"workload": name, "cluster": hw, **r})
    return out


def main() -> int:
    rs = rows()
    print(f"{'workload':<22} {'cluster':<14} {'plan':<38} {'engine':>10} {'closed':>10} {'error':>8}")
    for r in rs:
        print(f"{r['workload']:<22} {r['cluster']:<14} {r['plan']:<38} {r['simulated_s'] * 1e3:>8.2f}ms "
              f"{r['predicted_s'] * 1e3:>8.2f}ms {100 * r['error']:>+7.3f}%")
    ok = sum(abs(r["error"]) <= 0.05 for r in rs)
    print(f"\n{ok}/{len(rs)} within 5 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
