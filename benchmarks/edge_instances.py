"""The larger layer-chain instance of ``benchmarks/family_speed.py`` (a 64-layer chain on 16 boards of two types
and a server), shared with the tests that pin its search (``tests/layerchain/dp_cases.py``)."""
from __future__ import annotations


def chain_64() -> dict:
    """A 64-layer chain (ViT-Base/16-sized blocks repeated: attention and MLP halves) for the DP on 16 boards."""
    layers = []
    for i in range(32):
        layers.append({"name": f"attn{i}", "flops": 2.9e9, "params": 2.36e6, "out_elements": 151296})
        layers.append({"name": f"mlp{i}", "flops": 5.8e9, "params": 4.72e6, "out_elements": 151296})
    return {"family": "layer-chain", "name": "chain-64", "layers": layers, "input_elements": 150528,
            "inference": {"microbatch": 8, "dtype": "fp32", "requests": 100, "source": "pi5-0"}}


EDGE_16 = {"name": "edge-8pi5-8pi4-server", "kind": "edge-cluster",
           "devices": [{"device": "raspberry-pi-5", "count": 8, "ids": [f"pi5-{i}" for i in range(8)],
                        "network": "wifi6"},
                       {"device": "raspberry-pi-4", "count": 8, "ids": [f"pi4-{i}" for i in range(8)],
                        "network": "wifi6"},
                       {"device": "gpu-server-a100", "count": 1, "ids": ["server"], "network": "gige"}],
           "source": "benchmark instance: 16 boards of two types and a server (devices cited in their catalog entries)"}
