"""Search the cost models for physics violations: does faster hardware ever predict a slower step?

    python benchmarks/physics_search.py [--plans 3000] [--seed 1]

For dense and MoE workloads on 2- and 8-node H100 clusters, draws plans from each family's search space (seeded)
and prices them on the cluster and on a copy with 2× FLOP/s, 2× HBM bandwidth, 2× scale-up bandwidth, 2× NIC
bandwidth or ½ the link latencies.  Prints, per case and change, how many plans got slower and the worst one.
Exit 1 when any did (the property tests in tests/models/test_physics.py sample the same invariant).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from parplan.hardware import load_cluster  # noqa: E402
from parplan.hardware.catalog import cluster_from_dict  # noqa: E402
from parplan.models.families import cost_model  # noqa: E402
from parplan.planner.spaces import build_space  # noqa: E402
from parplan.workloads import load_workload  # noqa: E402

CASES = (("llama2-7b", 256, 4096), ("llama2-13b", 64, 2048), ("llama3-70b", 128, 8192), ("gpt3-175b", 256, 2048),
         ("mixtral-8x7b", 128, 4096), ("qwen3-30b-a3b", 128, 4096))


def cluster(nodes: int):
    return cluster_from_dict({"name": f"h100-{nodes * 8}", "groups": [{
        "device": "h100-sxm-80gb", "nodes": nodes, "devices_per_node": 8, "intra_node": "nvlink4",
        "inter_node": "ib-ndr400"}]})


def changed(c, flops=1.0, hbm=1.0, intra=1.0, inter=1.0, latency=1.0):
    g = c.group
    d = g.device
    dev = replace(d, peak_flops_per_s={k: v * flops for k, v in d.peak_flops_per_s.items()},
                  memory_bandwidth_bytes_per_s=d.memory_bandwidth_bytes_per_s * hbm)
    il = replace(g.intra_node, bandwidth_bytes_per_s=g.intra_node.bandwidth_bytes_per_s * intra,
                 latency_s=g.intra_node.latency_s * latency)
    xl = replace(g.inter_node, bandwidth_bytes_per_s=g.inter_node.bandwidth_bytes_per_s * inter,
                 latency_s=g.inter_node.latency_s * latency)
    return replace(c, groups=(replace(g, device=dev, intra_node=il, inter_node=xl),))


CHANGES = {"2x FLOP/s": dict(flops=2.0), "2x HBM": dict(hbm=2.0), "2x scale-up": dict(intra=2.0),
           "2x NIC": dict(inter=2.0), "1/2 latency": dict(latency=0.5)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plans", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    total = bad = 0
    for wid, B, s in CASES:
        for nodes in (2, 8):
            w = load_workload(wid, global_batch=B, seq_len=s)
            c = cluster(nodes)
            sp = build_space(w, c.n_devices, 8, max_mbs=8)
            P = sp.plans.subset(rng.choice(len(sp), size=min(args.plans, len(sp)), replace=False))
            m = cost_model(w)
            base = m.evaluate_workload(w, c, P)["step_time_s"]
            for name, kw in CHANGES.items():
                new = m.evaluate_workload(w, changed(c, **kw), P)["step_time_s"]
                worse = np.flatnonzero(new > base * (1 + 1e-9))
                total += len(P)
                bad += len(worse)
                if len(worse):
                    i = int(worse[np.argmax(new[worse] / base[worse])])
                    print(f"{wid:14s} {c.n_devices:4d} GPUs  {name:11s} {len(worse):4d} of {len(P)} slower; worst "
                          f"{100 * (new[i] / base[i] - 1):+.2f} %  {P.plan(i).to_string()}")
    print(f"{bad} of {total} (plan, change) pairs predict a slower step on faster hardware")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
