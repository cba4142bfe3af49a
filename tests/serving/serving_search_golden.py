"""Golden outputs of the serving search (``suggest_serving_plans``), recorded from the object-by-object search
before the search was rebuilt on arrays (issue 16); ``test_serving_search_golden.py`` checks the search against them.

    python tests/serving/serving_search_golden.py [--full PATH]     # re-record tests/serving/data/…json

``snapshot`` keeps the reported rows compactly: the stats, the whole ranked list as one digest of its deployment
strings and equal-outcome counts, its first row in full and the next ones by their ranking keys, the Pareto front
by its keys (its first row in full), the closest deployment in full and the advice lines.  ``--full PATH`` also
writes every ranked row in full (for a one-off comparison; ``--compare PATH`` checks the search against it)."""
from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GOLDEN = HERE / "data" / "serving_search_golden.json"
HEAD = 30  # ranked rows kept per case (the first in full, the others by their ranking keys)
REL = 1e-12

OPEN_SPD = {"isl": {"dist": "lognormal", "mean": 1024, "p99": 4096}, "osl": 128, "arrival_rate_per_s": 6.0,
            "slo": {"ttft_p99_s": 2.0, "tpot_s": 0.05}, "spd_drop_budget": 0.5}
SATURATED_FP8 = {"isl": 1024, "osl": 512, "slo": {"min_tokens_per_s": 500, "tpot_s": 0.1}, "engine": "sglang",
                 "precision": {"weights": "fp8", "activations": "fp8", "kv_cache": "fp8"}}
MOE_OPEN = {"isl": {"dist": "uniform", "min": 256, "max": 3072}, "osl": 256, "arrival_rate_per_s": 12.0,
            "slo": {"ttft_p99_s": 1.5, "tpot_s": 0.04}, "engine": "trtllm"}
TIGHT = {"isl": 2048, "osl": 256, "concurrency": 64, "slo": {"ttft_p99_s": 0.001}}
OVERLOAD = {"isl": 2048, "osl": 256, "arrival_rate_per_s": 5000.0, "slo": {"tpot_s": 0.05}}
CHAT = "examples/serve-chat.yaml"

# name: (model, hardware, serve spec (a path under the repo or a mapping), search keywords)
CASES = {
    "chat-llama3-70b-1x8": ("llama3-70b", "h100-sxm-80gb:1x8", CHAT, {}),
    "chat-mixtral-2x8-all-modes": ("mixtral-8x7b", "h100-sxm-80gb:2x8", CHAT, {}),
    "open-spd-llama3-8b-2x8": ("llama3-8b", "h100-sxm-80gb:2x8", OPEN_SPD, {}),
    "saturated-fp8-llama3-70b-h200": ("llama3-70b", "h200-sxm-141gb:1x8", SATURATED_FP8, {}),
    "open-mla-deepseek-v2-lite-1x8": ("deepseek-v2-lite", "h100-sxm-80gb:1x8", MOE_OPEN, {}),
    "af-only-qwen3-30b-1x8": ("qwen3-30b-a3b", "h100-sxm-80gb:1x8", CHAT, {"modes": ("af-disaggregated",)}),
    "infeasible-slo-llama3-70b": ("llama3-70b", "h100-sxm-80gb:1x8", TIGHT, {}),
    "overloaded-llama3-8b": ("llama3-8b", "h100-sxm-80gb:1x8", OVERLOAD, {}),
    "nofit-llama3-405b-1x4": ("llama3-405b", "h100-sxm-80gb:1x4", CHAT, {}),
}


def run_case(name: str):
    from parplan.serving import _inputs
    from parplan.planner.serving_search import suggest_serving_plans

    model, hw, serve, kw = CASES[name]
    w, c, s = _inputs(model, hw, str(ROOT / serve) if isinstance(serve, str) else serve)
    return suggest_serving_plans(w, c, s, top=0, **kw)


def _row(e, eq=None) -> dict:
    d = e.to_dict()
    if eq is not None:
        d["equiv"] = eq
    return d


def _keys(e, eq=None) -> list:
    """A row by what ranks it: deployment, equal-outcome count, tokens/s per device, TTFT p99, TPOT p50, goodput."""
    return [e.deployment.to_string(), eq, e.output_tokens_per_s_per_device, e.ttft_p99_s, e.tpot_p50_s,
            e.goodput_tokens_per_s]


def snapshot(ps, full: bool = False) -> dict:
    """Every reported row in full (``full``), else compactly (module docstring)."""
    stats = {k: v for k, v in ps.stats.items() if k != "wall_s"}
    lines = "\n".join(f"{e.deployment.to_string()}|{n}" for e, n in zip(ps.ranked, ps.equivalent))
    out = {"stats": stats, "ranked_n": len(ps.ranked), "ranked_digest": hashlib.sha256(lines.encode()).hexdigest(),
           "closest": None if ps.closest is None else _row(ps.closest), "advice": list(ps.advice)}
    if full:
        out["ranked"] = [_row(e, n) for e, n in zip(ps.ranked, ps.equivalent)]
        out["pareto"] = [_row(e) for e in ps.pareto]
        return out
    out["ranked_first"] = _row(ps.ranked[0], ps.equivalent[0]) if ps.ranked else None
    out["ranked_keys"] = [_keys(e, n) for e, n in zip(ps.ranked[1:HEAD], ps.equivalent[1:HEAD])]
    out["pareto_first"] = _row(ps.pareto[0]) if ps.pareto else None
    out["pareto_keys"] = [_keys(e) for e in ps.pareto]
    return out


def mismatches(want, got, path: str = "", rel: float = REL) -> list[str]:
    """Where two snapshots differ: floats beyond ``rel`` relative, anything else not equal."""
    out: list[str] = []
    if isinstance(want, dict) and isinstance(got, dict):
        if set(want) != set(got):
            return [f"{path}: keys {sorted(set(want) ^ set(got))}"]
        for k in want:
            out += mismatches(want[k], got[k], f"{path}.{k}", rel)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items, got {len(got)}"]
        for i, (a, b) in enumerate(zip(want, got)):
            out += mismatches(a, b, f"{path}[{i}]", rel)
    elif isinstance(want, float) and isinstance(got, (float, int)) and not isinstance(got, bool):
        if not (want == got or math.isclose(want, got, rel_tol=rel, abs_tol=0.0)):
            out.append(f"{path}: {want!r} != {got!r}")
    elif want != got or type(want) is not type(got):
        out.append(f"{path}: {want!r} != {got!r}")
    return out


def _normal(x):
    return json.loads(json.dumps(x))  # tuples → lists, as the golden file holds them


def record(full_path: "str | None" = None) -> None:
    golden, full = {}, {}
    for name in CASES:
        ps = run_case(name)
        golden[name] = _normal(snapshot(ps))
        if full_path:
            full[name] = _normal(snapshot(ps, full=True))
        print(f"{name}: {ps.stats['candidates']:,} candidates, {len(ps.ranked):,} ranked, {ps.stats['wall_s']:.2f} s")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, separators=(",", ":"), sort_keys=True) + "\n")
    if full_path:
        Path(full_path).write_text(json.dumps(full, separators=(",", ":"), sort_keys=True))


def compare_full(full_path: str) -> int:
    want = json.loads(Path(full_path).read_text())
    bad = 0
    for name in CASES:
        ps = run_case(name)
        diff = mismatches(want[name], _normal(snapshot(ps, full=True)))
        bad += bool(diff)
        print(f"{name}: {'identical' if not diff else f'{len(diff)} differences, first: ' + diff[0]}"
              f" ({ps.stats['candidates']:,} candidates, {ps.stats['wall_s']:.2f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--compare"]:
        raise SystemExit(compare_full(args[1]))
    record(args[1] if args[:1] == ["--full"] else None)
