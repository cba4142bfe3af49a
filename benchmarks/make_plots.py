"""The figures of the README (docs/img/*.png), one of each `parplan plot` kind.

    python benchmarks/make_plots.py [--out docs/img] [--format png|svg]

* pareto.png — Llama 3 70B on dgx-h100-64: every plan of the search, tokens/s against peak memory per device;
* breakdown.png — the same search's top 5 plans: step-time and memory breakdowns;
* timeline.png — one simulated step of an interleaved plan (tp=8, pp=4, vpp=2) of Llama 3 70B on dgx-h100-64 with
  a global batch of 32 sequences (16 micro-batches per pipeline: short enough to read every micro-batch);
* scaling.png — a small sweep computed here with the planner: Llama 3 8B and 70B on dgx-h100 clusters of 4, 8,
  16 and 32 nodes (32–256 H100), the top 3 plans per cell in the `parplan sweep` table layout.

Each figure takes about a second; the whole script runs in well under a minute on one core.
"""
from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD, CLUSTER = "llama3-70b", "dgx-h100-64"
TIMELINE_PLAN = "tp=8,pp=4,vpp=2,mbs=1,zero=1,recompute=selective,sp=true"
TIMELINE_GLOBAL_BATCH = 32
SCALING_WORKLOADS = ("llama3-8b", "llama3-70b")
SCALING_NODES = (4, 8, 16, 32)  # nodes of 8 H100 (the dgx-h100-64 node type)


def sweep_table(workloads=SCALING_WORKLOADS, nodes=SCALING_NODES, base: str = CLUSTER, top: int = 3):
    """A sweep table with the planner directly: one row per cell × plan (the export columns, ``status`` ok)."""
    import pandas as pd

    from parplan.hardware.catalog import load_cluster
    from parplan.planner.planset import suggest_plans
    from parplan.planner.sizing import scale_cluster
    from parplan.workloads.loader import load_workload

    c0 = load_cluster(base)
    frames = []
    for name in workloads:
        w = load_workload(name)
        for n in nodes:
            df = suggest_plans(w, scale_cluster(c0, n), top=top).to_frame()
            df["status"] = "ok"
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder of the figures")
    ap.add_argument("--format", choices=("png", "svg"), default="png")
    args = ap.parse_args(argv)

    from parplan.plots import breakdown, pareto, save, scaling, timeline

    args.out.mkdir(parents=True, exist_ok=True)
    figures = {
        "pareto": lambda: pareto(WORKLOAD, CLUSTER),
        "breakdown": lambda: breakdown(WORKLOAD, CLUSTER, top=5),
        "timeline": lambda: timeline(WORKLOAD, CLUSTER, TIMELINE_PLAN, global_batch=TIMELINE_GLOBAL_BATCH),
        "scaling": lambda: scaling(sweep_table(), title="Llama 3 on DGX H100 nodes: best plan per cluster size"),
    }
    for name, make in figures.items():
        path = save(make(), args.out / f"{name}.{args.format}")
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
              f"({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
