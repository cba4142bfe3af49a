"""The JSON every verb writes: one envelope (``parplan.planner.export.envelope``, docs/json_schema.md) around the
same per-plan object, and ``check_document`` that tells whether a document follows the schema."""
from __future__ import annotations

from typing import Any

from parplan.planner.export import (EXPORT_COLUMNS, KINDS, SCHEMA_VERSION, envelope, estimate_frame, records)

# the envelope's own keys, and their types
HEAD = {"schema_version": str, "kind": str, "workload": str, "cluster": str, "n_devices": int, "heterogeneous": bool,
        "plans": list}
# keys every plan object has, homogeneous or heterogeneous, and their types
PLAN_CORE = {"rank": int, "plan": str, "fits": bool, "step_time_s": float, "tokens_per_s": float, "mfu": float,
             "memory_peak_bytes": int, "equivalent_plans": int}
# a heterogeneous plan object (multi-group cluster) also has these (cli/hetero_out.py HETERO_COLUMNS)
HETERO_PLAN = {"label": str, "tp": int, "mbs": int, "zero": int, "recompute": str, "sp": bool, "pipelines": int,
               "stages": str, "layout": dict, "heuristic": bool}
# the verb's own top-level keys that its documents always have
KIND_KEYS = {"estimate": (), "suggest": ("search",), "check": ("ok", "requirements", "plans_searched", "plans_passing"),
             "simulate": ("schedule", "simulated_step_time_s", "devices", "totals"),  # devices: [] on mixed clusters
             "validate": ("ok", "tolerance")}
KIND_PLAN_KEYS = {"validate": ("simulated_step_s", "step_diff", "ok"), "simulate": ("simulated_step_time_s",)}
# serving documents (``--serve``: the envelope carries the request mix under ``serving``): each plan object has the
# core keys first, then these serving keys (cli/serve_out.py ROW_KEYS; a latency is null where it is unbounded);
# validate's plans have ``mode`` and their analytical/simulated pairs (cli/serve_sim_out.py)
SERVING_HEAD = {"isl": dict, "osl": dict, "engine": str}
SERVING_PLAN = {"mode": str, "n_devices": int, "ttft_p50_s": (float, None), "ttft_p99_s": (float, None),
                "tpot_p50_s": (float, None), "tpot_p99_s": (float, None), "output_tokens_per_s": float,
                "output_tokens_per_s_per_device": float, "kv_capacity_tokens": int, "slo_ok": bool}


def _is(value: Any, kind) -> bool:
    if isinstance(kind, tuple):  # (type, None): the type or null
        return value is None or any(_is(value, k) for k in kind if k is not None)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def check_document(doc: Any) -> list[str]:
    """What is wrong with ``doc`` as a parplan JSON document (an empty list: it follows the schema)."""
    bad: list[str] = []
    if not isinstance(doc, dict):
        return ["not an object"]
    for k, t in HEAD.items():
        if k not in doc:
            bad.append(f"missing {k}")
        elif not _is(doc[k], t):
            bad.append(f"{k}: not a {t.__name__}")
    if list(doc)[:len(HEAD) - 1] != [k for k in HEAD if k != "plans"]:
        bad.append("the envelope's keys are not first, in order")
    if doc.get("schema_version") != SCHEMA_VERSION:
        bad.append(f"schema_version {doc.get('schema_version')!r} is not {SCHEMA_VERSION!r}")
    kind = doc.get("kind")
    if kind not in KINDS:
        return bad + [f"kind {kind!r} is not one of {KINDS}"]
    for k in KIND_KEYS[kind]:
        if k not in doc:
            bad.append(f"{kind}: missing {k}")
    serving = "serving" in doc
    if serving:
        sv = doc["serving"]
        if not isinstance(sv, dict):
            bad.append("serving: not an object")
        else:
            bad += [f"serving: missing or mistyped {k}" for k, t in SERVING_HEAD.items()
                    if k not in sv or not _is(sv[k], t)]
    for i, p in enumerate(doc.get("plans") or []):
        where = f"plans[{i}]"
        if not isinstance(p, dict):
            bad.append(f"{where}: not an object")
            continue
        for k, t in PLAN_CORE.items():
            if k not in p:
                bad.append(f"{where}: missing {k}")
            elif not _is(p[k], t):
                bad.append(f"{where}.{k}: not a {t.__name__}")
        if serving:
            if list(p)[:len(PLAN_CORE)] != list(PLAN_CORE):
                bad.append(f"{where}: not the core keys first, in order")
            # validate --serve plans carry analytical_/simulated_/diff_ pairs instead of the estimate's keys
            for k, t in (SERVING_PLAN if kind != "validate" else {"mode": str}).items():
                if k not in p:
                    bad.append(f"{where}: missing {k}")
                elif not _is(p[k], t):
                    bad.append(f"{where}.{k}: mistyped")
        elif doc.get("heterogeneous"):
            for k, t in HETERO_PLAN.items():
                if k not in p or not _is(p[k], t):
                    bad.append(f"{where}: missing or mistyped {k}")
        elif list(p)[:len(EXPORT_COLUMNS)] != list(EXPORT_COLUMNS):
            bad.append(f"{where}: not the export columns first, in order")
        for k in KIND_PLAN_KEYS.get(kind, ()):
            if k not in p:
                bad.append(f"{where}: missing {k}")
        for k, v in p.items():
            # a serving plan's memory_bytes is a mapping of byte counts by part
            counts = v.values() if serving and isinstance(v, dict) else (v,)
            if str(k).endswith("_bytes") and any(x is not None and not _is(x, int) for x in counts):
                bad.append(f"{where}.{k}: a byte count, not an integer")
    return bad


def estimate_plan_record(e, n_nodes: int, rank: int = 1, **extra) -> dict:
    """The per-plan object of an ``Estimate`` (the export row, then the estimate's own details)."""
    row = records(estimate_frame(e, n_nodes=n_nodes, rank=rank))[0]
    row.update({"reasons": list(e.reasons), "chosen": dict(e.chosen), "heaviest_memory_stage": e.heaviest_memory_stage,
                "model_flops_per_step": e.model_flops_per_step, "compute_bound_s": e.compute_bound_s,
                "provenance": e.provenance, "tokens_per_s_low": e.tokens_per_s_low,
                "tokens_per_s_high": e.tokens_per_s_high,
                "breakdown": {"time_s": dict(e.breakdown.time_s), "memory_bytes": dict(e.breakdown.memory_bytes)}})
    row.update(extra)
    return row


def estimate_json(e, cluster) -> dict:
    return envelope("estimate", workload=e.workload, cluster=e.cluster, n_devices=e.n_devices,
                    plans=[estimate_plan_record(e, cluster.group.nodes)])


def check_json(r, cluster) -> dict:
    """``check``: the reported plan (the passing one, or the closest) and each requirement."""
    e = r.estimate
    return envelope("check", workload=e.workload, cluster=e.cluster, n_devices=e.n_devices,
                    plans=[estimate_plan_record(e, cluster.group.nodes)] if e is not None else [],
                    ok=bool(r.ok), requirements=[x.to_dict() for x in r.results], plans_searched=r.searched,
                    plans_passing=r.passing)


def simulate_json(s, e, cluster) -> dict:
    """``simulate``: the plan's analytical object with the simulated step, then the simulation's details."""
    details = s.to_dict()
    details.pop("plan", None)
    for k in ("workload", "cluster"):
        details.pop(k, None)
    details["simulated_step_time_s"] = details.pop("step_time_s")
    plan = estimate_plan_record(e, cluster.group.nodes, simulated_step_time_s=s.step_time_s)
    return envelope("simulate", workload=e.workload, cluster=e.cluster, n_devices=e.n_devices, plans=[plan],
                    **details)


def validate_json(rows, estimates, tolerance: float, workload: str, cluster) -> dict:
    """``validate``: per plan, its analytical object with the simulated step and memory and the differences."""
    plans = [estimate_plan_record(e, cluster.group.nodes, rank=i, **{k: v for k, v in a.row().items() if k != "plan"},
                                  ok=bool(a.ok(tolerance)))
             for i, (a, e) in enumerate(zip(rows, estimates), 1)]
    return envelope("validate", workload=workload, cluster=cluster.name, n_devices=cluster.n_devices, plans=plans,
                    tolerance=tolerance, ok=all(a.ok(tolerance) for a in rows))
