"""The search's vectorized evaluation pinned bit for bit (issue 16: the evaluation at the numpy floor).

``python tests/models/eval_pin.py`` writes ``tests/models/data/eval_pin.json``: for each case, a sha256 digest of
every array ``planner.search.evaluate_space`` returns when it prices the whole space with every output of the cost
model (the unpruned pass the benchmarks time), and of the arrays the search itself keeps (``run_search``: the
memory-bound pruning that prices zero levels on their own rows).  ``test_eval_pinned.py`` recomputes them; a change
that moves any bit of any output fails it.  Beside each digest it records summary figures (count, NaNs, sum,
a weighted sum, min, max) that the test compares within 1e-9 on any machine: the digests are exact only for the
numpy build and CPU they were written on (one ulp of log2 or interp may differ elsewhere: numpy picks its SIMD
loops by the CPU's instruction sets, recorded as ``simd``, and two vendors' CPUs with the same sets still differ,
recorded as ``cpu``), the figures are not.
Regenerate only when a change of the model's numbers is intended (``--only CASE …`` for the cases it is meant for).
"""
from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import numpy as np

LONG_CONTEXT = {"model": "llama3-8b", "training": {
    "seq_len": 65536, "global_batch": 16,
    "sequences": {"dist": "lognormal", "median": 2048, "sigma": 1.5, "max": 65536, "mask": "document", "samples": 4}}}
A100_1024 = {"name": "a100-1024", "groups": [{"device": "a100-sxm-80gb", "nodes": 128, "devices_per_node": 8,
                                              "intra_node": "nvlink3", "inter_node": "ib-hdr200"}]}
CASES = {  # id -> (workload, cluster): benchmarks/planner_speed.py's four jobs, two MoE jobs, one long-context job
    "gpt3-175b@a100-1024": ("gpt3-175b", A100_1024),
    "megatron-1t@selene-a100-3072": ("megatron-1t", "selene-a100-3072"),
    "llama3-405b@h100-16384": ("llama3-405b", "h100-16384"),
    "llama2-7b@dgx-a100-8": ("llama2-7b", "dgx-a100-8"),
    "mixtral-8x7b@dgx-h100-64": ("mixtral-8x7b", "dgx-h100-64"),
    "qwen3-30b-a3b@dgx-h100-64": ("qwen3-30b-a3b", "dgx-h100-64"),
    "llama3-8b-64k-documents@dgx-h100-64": (LONG_CONTEXT, "dgx-h100-64"),
}
KEY_BATCH = 24  # outputs priced per evaluate_space pass (bounds the memory of the pinned pass)
OUT = Path(__file__).parent / "data" / "eval_pin.json"


def simd() -> list:
    """The SIMD targets numpy dispatches its loops to on this CPU (AVX2, AVX512_SKX, …): where they differ, one ulp
    of a transcendental may too."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return sorted(k for k in __cpu_dispatch__ if __cpu_features__.get(k))


def digest(a) -> list:
    """[sha256 of an array's float64 bytes (NaNs as 0) followed by its packed NaN positions, [count, NaNs, sum,
    weighted sum, min, max] of its finite part]."""
    x = np.ascontiguousarray(np.asarray(a, dtype=np.float64)).reshape(-1)
    nan = np.isnan(x)
    h = hashlib.sha256(np.where(nan, 0.0, x).tobytes())
    h.update(np.packbits(nan).tobytes())
    fin = np.where(np.isfinite(x), x, 0.0)
    wts = np.linspace(1.0, 2.0, x.size) if x.size else x
    figs = [float(x.size), float(nan.sum()), float(fin.sum()), float((fin * wts).sum()),
            float(fin.min()) if x.size else 0.0, float(fin.max()) if x.size else 0.0]
    return [h.hexdigest(), figs]


def compute(case_id: str) -> dict:
    from parplan.hardware.catalog import load_cluster
    from parplan.models.efficiency import efficiency_for
    from parplan.models.families import cost_model
    from parplan.models.primitives.framework_terms import FrameworkTerms
    from parplan.planner.search import evaluate_space, run_search
    from parplan.workloads.loader import load_workload

    wref, cref = CASES[case_id]
    w, c = load_workload(wref), load_cluster(cref)
    # the kernel-level formulas, without the fitted global terms (a recalibration moves no digest)
    ev = run_search(w, c, eff=efficiency_for(c.group.device).with_terms(FrameworkTerms()))
    out = {f"search/{k}": digest(v) for k, v in sorted(ev.metrics.items())}
    out["search/evaluated"] = digest(ev.evaluated)
    out["search/fits"] = digest(ev.fits)
    out["search/memory_lower_bound"] = digest(ev.memory_lower_bound)
    space = ev.space
    keys = sorted(cost_model(w).evaluate(w.model, w.training, ev.hw, space.grid(slice(0, 1))).keys())
    for i in range(0, len(keys), KEY_BATCH):
        res, priced = evaluate_space(w, ev.hw, space, keys[i:i + KEY_BATCH])
        out.update({f"space/{k}": digest(v) for k, v in res.items()})
        out["space/priced"] = digest(priced)
    out["plans"] = [str(len(space)), [float(len(space))]]
    return out


def cpu() -> str:
    """The CPU's vendor (``vendor_id`` of /proc/cpuinfo where there is one): two vendors' CPUs that report the same
    SIMD targets still round a transcendental differently in the last ulp."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.is_file() else []
    vendor = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("vendor_id")), None)
    return vendor or platform.processor() or "unknown"


BUILD_KEYS = ("numpy", "machine", "simd", "cpu")


def build() -> dict:
    return {"numpy": np.__version__, "machine": platform.machine(), "simd": simd(), "cpu": cpu()}


def build_key(record: dict) -> dict:
    """The build fields of a record (a pin file, a case's or another build's entry); absent ones are None."""
    return {k: record.get(k) for k in BUILD_KEYS}


def case_build(pin: dict, case_id: str) -> dict:
    """The build a case's digests were written with: its own where only it was rewritten (``--only``)."""
    return build_key(pin.get("builds", {}).get(case_id) or pin)


def digests_for(pin: dict, case_id: str, here: dict):
    """The case's digests written on the build ``here`` (the primary ones or another build's, ``--add-build``), or
    None where none were."""
    if case_build(pin, case_id) == here:
        return pin["cases"][case_id]
    for alt in pin.get("alt", []):
        if build_key(alt["build"]) == here and case_id in alt["cases"]:
            return alt["cases"][case_id]
    return None


def moved_figures(a: dict, b: dict) -> list:
    """Outputs whose summary figures differ beyond 1e-9 between two digest sets of one case."""
    return sorted(k for k in a if k not in b or not np.allclose(a[k][1], b[k][1], rtol=1e-9, atol=1e-300))


def main(argv=None) -> None:
    """``--only CASE …`` rewrites those cases alone (a change meant for them), recording the build they were
    computed with beside them, so the other cases keep the digests of their own build.  ``--add-build`` records
    this build's digests of every case beside the primary ones, refused where any figure differs from them (another
    CPU or numpy build rounding differently, not a change of the model)."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=sorted(CASES), default=None)
    ap.add_argument("--add-build", action="store_true")
    a = ap.parse_args(argv)
    if a.add_build:
        data = json.loads(OUT.read_text())
        got = {cid: compute(cid) for cid in CASES}
        moved = {cid: moved_figures(data["cases"][cid], g) for cid, g in got.items()}
        moved = {cid: ks for cid, ks in moved.items() if ks}
        if moved:
            raise SystemExit(f"figures differ from the primary digests (a model change?): {moved}")
        here = build()
        alts = [x for x in data.get("alt", []) if build_key(x["build"]) != here]
        data["alt"] = alts + [{"build": here, "cases": got}]
    elif a.only:
        data = json.loads(OUT.read_text())
        for cid in a.only:
            data["cases"][cid] = compute(cid)
            data.setdefault("builds", {})[cid] = build()
        data["alt"] = [{**x, "cases": {k: v for k, v in x["cases"].items() if k not in a.only}}
                       for x in data.get("alt", [])]
    else:
        data = {**build(), "cases": {cid: compute(cid) for cid in CASES}}
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.name}: {sum(len(v) for v in data['cases'].values())} digests")


if __name__ == "__main__":
    main()
