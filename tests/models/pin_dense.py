"""The dense model's numbers pinned before the family split (issue: families as plug-ins).

``python tests/models/pin_dense.py`` writes ``tests/models/data/dense_pin.json``: every output array of the dense
cost model for a deterministic sample of valid plans (several workloads, clusters, frameworks, precisions).  The
test ``test_dense_pin.py`` recomputes them; a refactor that changes any number fails it.  Regenerate only when a
change of the model's numbers is intended (and say so in the commit).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CASES = [  # (workload, cluster, framework, precision, seq_len, global_batch)
    ("llama3-70b", "dgx-h100-64", "megatron-core", "bf16", 8192, 128),
    ("llama3-8b", "dgx-a100-8", "torchtitan", "bf16", 4096, 64),
    ("gpt3-175b", "selene-a100-3072", "megatron-core", "bf16", 2048, 1536),
    ("llama3-405b", "dgx-h100-1024", "nemo", "fp8", 8192, 512),
    ("mpt-7b", "a100-40gb-roce-128", "llm-foundry", "bf16", 2048, 512),
    ("bloom-176b", "jean-zay-a100-384", "deepspeed", "bf16", 2048, 384),
    ("llama2-70b", "tpu-v5p-1024", "maxtext", "bf16", 4096, 1024),
    ("llama3-70b", "gb200-nvl72-576", "megatron-core", "fp8", 8192, 576),
]
PER_CASE = 12
# contract-v2 knobs the search space does not enumerate, pinned by hand (case index -> plans)
EXTRA = {
    3: ["tp=8,pp=8,cp=2,vpp=8,mbs=1,zero=1,recompute=none,sp=true,embed_as_layer=true,loss_as_layer=true",
        "tp=8,pp=4,cp=1,mbs=1,zero=1,recompute=selective,sp=true,first_layers=30,last_layers=30"],
    0: ["tp=1,pp=1,cp=1,mbs=1,zero=3,recompute=full,sp=false,reshard=false",
        "tp=2,pp=1,cp=1,mbs=1,zero=3,recompute=full,sp=true,shard=8",
        "tp=8,pp=1,cp=1,mbs=1,zero=2,recompute=selective,sp=true"],
}
OUT = Path(__file__).parent / "data" / "dense_pin.json"


def sample_plans(w, c, k: int, seed: int) -> list[str]:
    from parplan.hardware.types import Cluster  # noqa: F401
    from parplan.planner.space import build_space

    g = c.group
    sp = build_space(w, c.n_devices, int(getattr(g, "scale_up_devices", g.devices_per_node)), max_mbs=4)
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(sp), size=min(k, len(sp)), replace=False)
    return [sp.plans.plan(int(i)).to_string() for i in sorted(idx)]


def compute(case: tuple, plans: list[str]) -> dict:
    from parplan.hardware.catalog import load_cluster
    from parplan.models.efficiency import efficiency_for
    from parplan.models.plan import parse_plan
    from parplan.models.plan_arrays import PlanArrays
    from parplan.models.primitives.framework_terms import FrameworkTerms
    from parplan.models.training import evaluate_workload
    from parplan.workloads.loader import load_workload

    wid, cid, fw, prec, s, B = case
    w = load_workload(wid, framework=fw, precision=prec, seq_len=s, global_batch=B)
    c = load_cluster(cid)
    P = PlanArrays.from_plans([parse_plan(p, c.n_devices) for p in plans])
    # the kernel-level formulas, without the fitted global terms (a recalibration moves no pin)
    res = evaluate_workload(w, c, P, efficiency_for(c.group.device).with_terms(FrameworkTerms()))
    return {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (len(plans),)).tolist() for k, v in sorted(res.items())}


def case_id(case) -> str:
    """A case's test id: ``workload@cluster``."""
    return f"{case[0]}@{case[1]}"


def main(argv: list[str] | None = None) -> None:
    """Write every case afresh (new plan samples), or with ``--only ID …`` recompute those cases' outputs on the
    plans already pinned — for a change meant to move their numbers (the searches the samples come from have moved
    since the pins were first written, so a full rewrite would pin other plans, not the same ones anew)."""
    import argparse

    from parplan.hardware.catalog import load_cluster
    from parplan.workloads.loader import load_workload

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=[case_id(c) for c in CASES], default=None)
    args = ap.parse_args(argv)
    if args.only:
        data = json.loads(OUT.read_text())
        for entry in data:
            if case_id(entry["case"]) in args.only:
                entry["outputs"] = compute(tuple(entry["case"]), entry["plans"])
    else:
        data = []
        for i, case in enumerate(CASES):
            wid, cid, fw, prec, s, B = case
            w = load_workload(wid, framework=fw, precision=prec, seq_len=s, global_batch=B)
            plans = sample_plans(w, load_cluster(cid), PER_CASE, seed=i) + EXTRA.get(i, [])
            data.append({"case": list(case), "plans": plans, "outputs": compute(case, plans)})
    OUT.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"wrote {OUT.name}: {', '.join(args.only) if args.only else 'every case'}, "
          f"{sum(len(d['plans']) for d in data)} plans")


if __name__ == "__main__":
    main()
