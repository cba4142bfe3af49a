"""Layer-chain searches whose outputs are pinned (tests/layerchain/test_dp_pins.py): the benchmark's three rows
(benchmarks/family_speed.py: the ViT example's whole search, PipeEdge P1's DP, the 64-layer chain on 16 boards),
and DPs over other chains and clusters — a source device or none, one device of a type, memory that fits only
part of the chain, every objective of the search."""
from __future__ import annotations

from pathlib import Path

from edge_instances import EDGE_16, chain_64  # noqa: F401  (the benchmark's instance, pinned here)

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


PIPEEDGE = {"family": "layer-chain", "name": "pipeedge-vit-base-mb8", "chain": "pipeedge-vit-base",
            "inference": {"microbatch": 8, "dtype": "fp32", "requests": 100}}


def _dnn(name: str, arch: str, source=None, mb: int = 8, image=None) -> dict:
    d = {"family": "layer-chain", "name": name, "dnn": {"arch": arch},
         "inference": {"microbatch": mb, "dtype": "fp32", "requests": 50}}
    if image is not None:
        d["dnn"]["image"] = image
    if source is not None:
        d["inference"]["source"] = source
    return d


BOARDS_16 = {**EDGE_16, "name": "edge-8pi5-8pi4", "devices": EDGE_16["devices"][:2]}
PI4_ONLY = {"name": "pi5-4", "kind": "edge-cluster",
            "devices": [{"device": "raspberry-pi-5", "count": 4, "ids": ["pi-0", "pi-1", "pi-2", "pi-3"],
                         "network": "wifi6"}], "source": "test instance: the example's boards without the server"}

SMALL_MIXED = {"name": "mixed-small", "kind": "edge-cluster",
               "devices": [{"device": "raspberry-pi-4", "count": 2, "ids": ["a-0", "a-1"], "network": "wifi6"},
                           {"device": "raspberry-pi-5", "count": 1, "ids": ["b-0"], "network": "wifi6"},
                           {"device": "jetson-nano", "count": 2, "ids": ["c-0", "c-1"], "network": "gige"}],
               "source": "test instance: three board types, one of them a single board"}

# the DP alone: (name, workload, cluster)
DP_CASES = [
    ("vit-example", EX / "vit-edge.yaml", "edge-4pi-server"),
    ("pipeedge-p1", PIPEEDGE, "pipeedge-4mb-4rcc"),
    ("chain-64", chain_64(), EDGE_16),
    ("pipeedge-on-4pi", PIPEEDGE, "edge-4pi-server"),
    ("chain-64-boards", chain_64(), BOARDS_16),
    ("vit-4pi-only", EX / "vit-edge.yaml", PI4_ONLY),
    ("pipeedge-p1-mb1", {**PIPEEDGE, "inference": {"microbatch": 1}}, "pipeedge-4mb-4rcc"),
    ("vgg16-mixed-src", _dnn("vgg", "vgg16", source="b-0", image=224), SMALL_MIXED),
    ("resnet18-mixed", _dnn("r18", "resnet18", mb=32), SMALL_MIXED),
    ("mobilenet-cecpa", _dnn("mn", "mobilenetv2", source="edge-1"), "cecpa-3edge-cloud"),
    ("vit-pipar", _dnn("vit", "vit-base", mb=64, source="dev-2"), "pipar-4pi4-server"),
]

# the whole search: (name, workload, cluster, objective)
SEARCH_CASES = [
    ("vit-example", EX / "vit-edge.yaml", "edge-4pi-server", None),
    ("vit-example-latency", EX / "vit-edge.yaml", "edge-4pi-server", "latency"),
    ("vit-example-energy", EX / "vit-edge.yaml", "edge-4pi-server", "energy"),
    ("pipeedge-p1", PIPEEDGE, "pipeedge-4mb-4rcc", None),
    ("chain-64", chain_64(), EDGE_16, None),
    ("vgg16-mixed-src", _dnn("vgg", "vgg16", source="b-0", image=224), SMALL_MIXED, "latency"),
    ("mobilenet-cecpa", _dnn("mn", "mobilenetv2", source="edge-1"), "cecpa-3edge-cloud", "energy"),
]


def load(w, hw):
    from parplan.hardware.edge import load_edge_cluster
    from parplan.workloads.layerchain import load_layerchain

    return load_layerchain(w), load_edge_cluster(hw)
