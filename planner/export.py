"""CSV/JSON export of ranked plans: one row per plan, the columns of ``EXPORT_COLUMNS`` in that order (stable).

Byte counts and counts are integers (``INT_COLUMNS``), in CSV and JSON alike; other numbers are floats
(``CSV_FLOAT_FORMAT`` in CSV).  The JSON envelope every verb writes (``envelope``; docs/json_schema.md) carries
``schema_version``, ``kind``, ``workload``, ``cluster``, ``n_devices`` and ``plans``: one such row per plan.
"""
from __future__ import annotations

import io
import json
import math

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas only where a frame is built (CSV, JSON, to_frame): not for a table
    import pandas as pd

from parplan.models.plan import CP_KINDS, RECOMPUTE, V2_DEFAULTS
from parplan.models.training import MEMORY_PARTS, TIME_PARTS, PlanArrays

# Column names of the exported plan table, in order.  Stable: add columns at the end only.
EXPORT_COLUMNS = (
    "rank",  # 1 = best under the objective
    "workload", "cluster", "n_nodes", "n_devices",
    "plan",  # the plan string, accepted by `parplan estimate --plan`
    "dp", "tp", "pp", "cp", "ep", "mbs", "vpp", "zero", "recompute", "sp",
    "fits",  # peak memory ≤ device memory (the search only ranks plans within the headroom limit)
    "step_time_s", "tokens_per_s", "tokens_per_s_per_device", "mfu", "hfu",
    "memory_peak_bytes", "memory_capacity_bytes", "memory_fraction",
    "micro_batches", "critical_stage",
    "usd_per_million_tokens",  # empty without a price per device-hour
    # time per step, critical pipeline stage (s); sums to step_time_s
    "compute_gemm_s", "compute_attention_s", "compute_memory_bound_s", "recompute_s", "tp_comm_exposed_s",
    "cp_comm_exposed_s", "pp_p2p_s", "pipeline_bubble_s", "dp_comm_exposed_s", "optimizer_s",
    # memory per device, heaviest stage (bytes); sums to memory_peak_bytes
    "params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "zero3_gather_buffer_bytes",
    "transient_bytes", "framework_reserved_bytes", "fragmentation_bytes",
    # contract v2 (added at the end): the global framework terms' parts of the step (also in the sum above),
    # the 80 % interval of the step time, whether the plan ties with the best (intervals overlap), the framework
    "framework_overhead_s", "overlap_interference_s", "step_time_low_s", "step_time_high_s", "tie_with_best",
    "framework", "provenance_class",
    "reshard", "shard", "first_layers", "last_layers", "embed_as_layer", "loss_as_layer",
    # mixture-of-experts (0 / 1 for dense workloads): expert tensor parallelism, exposed expert all-to-all (s)
    "etp", "ep_comm_exposed_s",
    # equal-outcome plans (same step time and memory, relative TIE_EPS) are one row: how many plans it stands for
    "equivalent_plans",
    # failures and goodput (added at the end; empty without a token budget): the expected time to train the budget
    # with its 10th/90th percentiles, the useful fraction, the checkpoint interval (compute between checkpoints) and
    # stall, and the named breakdown of the expected time (s; models/primitives/reliability.py)
    "goodput", "time_to_train_s", "time_to_train_p10_s", "time_to_train_p90_s", "checkpoint_interval_s",
    "checkpoint_stall_s", "useful_compute_s", "checkpoint_stalls_s", "failure_lost_s", "restarts_s",
    "redundancy_overhead_s", "expected_failures", "mtbf_s",
    # the context-parallel layout (models.plan.CP_KINDS; "ring" where cp = 1)
    "cp_kind",
    # HelixPipe's attention-parallel pipeline; RTP's rotated ZeRO-3 shards (models/plan.py)
    "helix", "rotate",
)
# the goodput columns and the reliability model's output each one is (models/primitives/reliability.goodput)
GOODPUT_COLUMNS = {"goodput": "goodput", "time_to_train_s": "time_to_train_s", "time_to_train_p10_s": "time_p10_s",
                   "time_to_train_p90_s": "time_p90_s", "checkpoint_interval_s": "checkpoint_interval_s",
                   "checkpoint_stall_s": "checkpoint_stall_s", "useful_compute_s": "useful_s",
                   "checkpoint_stalls_s": "checkpoint_s", "failure_lost_s": "lost_s", "restarts_s": "restart_s",
                   "redundancy_overhead_s": "redundancy_s", "expected_failures": "expected_failures",
                   "mtbf_s": "mtbf_s"}
# time parts a family may add to the shared ones (they are part of the sum too); 0 where a family has none
FAMILY_TIME_PARTS = ("ep_comm_exposed_s",)
assert set(TIME_PARTS + MEMORY_PARTS + FAMILY_TIME_PARTS) <= set(EXPORT_COLUMNS)

# byte counts and counts: written as integers (a fraction of a byte is no quantity; "%.6g" wrote 5.94168e+10)
INT_COLUMNS = ("n_nodes", "n_devices", "memory_peak_bytes", "memory_capacity_bytes", "micro_batches",
               "equivalent_plans") + tuple(MEMORY_PARTS)
CSV_FLOAT_FORMAT = "%.6g"  # floats (times, rates, fractions): 6 significant digits
SCHEMA_VERSION = "1"  # of the JSON envelope (docs/json_schema.md); raised on any incompatible change
KINDS = ("estimate", "suggest", "check", "simulate", "validate")


def plan_strings(P: PlanArrays) -> list[str]:
    rc = np.array(RECOMPUTE, dtype=object)[P.recompute]
    sp = np.where(P.sp, "true", "false")
    base = [f"dp={a},tp={b},pp={c},cp={d},ep={x},mbs={e},vpp={f},zero={g},recompute={h},sp={i}"
            for a, b, c, d, x, e, f, g, h, i in zip(P.dp.tolist(), P.tp.tolist(), P.pp.tolist(), P.cp.tolist(),
                                                     P.ep.tolist(), P.mbs.tolist(), P.vpp.tolist(), P.zero.tolist(),
                                                     rc, sp)]
    extra = [""] * len(base)
    for k, d in V2_DEFAULTS.items():
        col = getattr(P, k)
        for i in np.flatnonzero(col != d):
            v = bool(col[i]) if isinstance(d, bool) else int(col[i])
            extra[i] += f",{k}={('true' if v else 'false') if isinstance(d, bool) else v}"
    if P.cp_kind is not None:  # the context-parallel layout, written when it is not the ring (as Plan.to_string)
        for i in np.flatnonzero(np.asarray(P.cp_kind) != 0):
            extra[i] += f",cp_kind={CP_KINDS[int(P.cp_kind[i])]}"
    return [b + x for b, x in zip(base, extra)]


def frame(P: PlanArrays, res: dict, **kw) -> "pd.DataFrame":
    """The export table (a DataFrame, columns ``EXPORT_COLUMNS``) of ``columns(P, res, **kw)``."""
    import pandas as pd

    return pd.DataFrame(columns(P, res, **kw), columns=list(EXPORT_COLUMNS))


def columns(P: PlanArrays, res: dict, *, workload: str, cluster: str, n_nodes: int, n_devices: int,
            price_per_hour: float | None = None, first_rank: int = 1, framework: str = "megatron-core",
            provenance_class: str = "defaults", best_high_s: float | None = None,
            equivalent: np.ndarray | None = None, goodput: dict | None = None) -> dict:
    """The export columns (name → array or list, in ``EXPORT_COLUMNS`` order) for the plans ``P`` (already in rank
    order) and their ``evaluate`` results ``res``; ``goodput``: the reliability model's outputs for them (the
    goodput columns; NaN without)."""
    n = len(P)
    crit = np.array(["first", "middle", "last"], dtype=object)[np.asarray(res["critical_stage"], dtype=np.int64)]
    crit = np.where(P.pp == 1, "only", crit)
    tps = np.asarray(res["tokens_per_s"], dtype=float)
    usd = (n_devices * float(price_per_hour) / 3600.0 / tps * 1e6) if price_per_hour is not None else np.full(n, np.nan)
    cols = {
        "rank": np.arange(first_rank, first_rank + n), "workload": [workload] * n, "cluster": [cluster] * n,
        "n_nodes": np.full(n, n_nodes), "n_devices": np.full(n, n_devices), "plan": plan_strings(P),
        "dp": P.dp, "tp": P.tp, "pp": P.pp, "cp": P.cp, "ep": P.ep, "mbs": P.mbs,
        "vpp": P.vpp, "zero": P.zero, "recompute": np.array(RECOMPUTE, dtype=object)[P.recompute],
        "sp": P.sp.astype(bool), "fits": np.asarray(res["fits"], dtype=bool),
        "step_time_s": res["step_time_s"], "tokens_per_s": tps, "tokens_per_s_per_device": tps / n_devices,
        "mfu": res["mfu"], "hfu": res["hfu"], "memory_peak_bytes": res["memory_peak_bytes"],
        "memory_capacity_bytes": res["memory_capacity_bytes"],
        "memory_fraction": np.asarray(res["memory_peak_bytes"]) / np.asarray(res["memory_capacity_bytes"]),
        "micro_batches": np.rint(np.asarray(res["micro_batches"], dtype=float)).astype(np.int64),
        "critical_stage": crit, "usd_per_million_tokens": usd,
    }
    for k in TIME_PARTS + MEMORY_PARTS:
        cols[k] = np.asarray(res[k], dtype=float)
    for k in FAMILY_TIME_PARTS:
        cols[k] = np.asarray(res[k], dtype=float) if k in res else np.zeros(n)
    lo, hi = np.asarray(res["step_time_low_s"], dtype=float), np.asarray(res["step_time_high_s"], dtype=float)
    # a plan ties with the best (rank 1, or ``best_high_s`` when this table starts lower) when their intervals
    # overlap: its fastest plausible step is below the best plan's slowest plausible one
    if best_high_s is None:
        best_high_s = float(hi[0]) if n else 0.0
    cols.update({"step_time_low_s": lo, "step_time_high_s": hi, "tie_with_best": lo <= best_high_s,
                 "framework": [framework] * n, "provenance_class": [provenance_class] * n})
    for k, d in V2_DEFAULTS.items():
        cols[k] = getattr(P, k).astype(bool if isinstance(d, bool) else np.int64)
    cols["equivalent_plans"] = np.ones(n, dtype=np.int64) if equivalent is None else np.asarray(equivalent)
    kinds = np.zeros(n, dtype=np.int64) if P.cp_kind is None else np.asarray(P.cp_kind, dtype=np.int64)
    cols["cp_kind"] = np.array(CP_KINDS, dtype=object)[kinds]
    cols.update(goodput_columns(goodput, n))
    for k in INT_COLUMNS:
        cols[k] = np.rint(np.asarray(cols[k], dtype=float)).astype(np.int64)
    return {k: np.asarray(cols[k]) if not isinstance(cols[k], list) else cols[k] for k in EXPORT_COLUMNS}


def goodput_columns(goodput: dict | None, n: int) -> dict:
    """The goodput columns of ``n`` rows (NaN where there is no model output or it is not finite)."""
    out = {}
    for col, key in GOODPUT_COLUMNS.items():
        v = np.full(n, np.nan) if goodput is None else np.asarray(goodput[key], dtype=float).reshape(-1)[:n]
        out[col] = np.where(np.isfinite(v), v, np.nan)
    return out


def to_csv(df: "pd.DataFrame") -> str:
    """CSV text: integer columns as integers (``INT_COLUMNS`` present in ``df`` are rounded), floats ``%.6g``."""
    df = integer_columns(df)
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format=CSV_FLOAT_FORMAT, lineterminator="\n")
    return buf.getvalue()


def records(df: "pd.DataFrame") -> list[dict]:
    """JSON-ready rows (NaN → None, numpy scalars → Python)."""
    out = []
    for row in df.to_dict(orient="records"):
        clean = {}
        for k, v in row.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and math.isnan(v):
                v = None
            clean[k] = v
        out.append(clean)
    return out


def integer_columns(df: "pd.DataFrame") -> "pd.DataFrame":
    """``df`` with its byte-count and count columns (``INT_COLUMNS`` and any ``*_bytes``) as integers (where no
    value is missing)."""
    out = df
    for k in df.columns:
        if (k in INT_COLUMNS or str(k).endswith("_bytes")) and df[k].dtype.kind == "f" and df[k].notna().all():
            if out is df:
                out = df.copy()
            out[k] = np.rint(df[k].to_numpy()).astype(np.int64)
    return out


def to_json(obj) -> str:
    return json.dumps(obj, indent=2, default=float)


def whole_bytes(obj):
    """``obj`` with every float under a ``*_bytes`` key (or a list of them) rounded to an integer (JSON)."""
    if isinstance(obj, dict):
        return {k: (_as_int(v) if str(k).endswith("_bytes") else whole_bytes(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [whole_bytes(v) for v in obj]
    return obj


def _as_int(v):
    if isinstance(v, (list, tuple)):
        return [_as_int(x) for x in v]
    if isinstance(v, dict):
        return whole_bytes(v)
    if isinstance(v, (float, np.floating)) and math.isfinite(float(v)):
        return int(round(float(v)))
    return v


def estimate_frame(e, *, n_nodes: int, price_per_hour: float | None = None, rank: int = 1) -> "pd.DataFrame":
    """The one-row export table of an ``Estimate`` (the same columns, in the same order, as a search's)."""
    import pandas as pd

    p = e.plan
    t, m = e.breakdown.time_s, e.breakdown.memory_bytes
    usd = (e.n_devices * float(price_per_hour) / 3600.0 / e.tokens_per_s * 1e6) if price_per_hour is not None \
        else float("nan")
    row = {"rank": rank, "workload": e.workload, "cluster": e.cluster, "n_nodes": n_nodes, "n_devices": e.n_devices,
           "plan": p.to_string(), "dp": p.dp, "tp": p.tp, "pp": p.pp, "cp": p.cp, "ep": p.ep, "mbs": p.mbs,
           "vpp": p.vpp, "zero": p.zero, "recompute": p.recompute, "sp": bool(p.sp), "fits": bool(e.fits),
           "step_time_s": e.step_time_s, "tokens_per_s": e.tokens_per_s,
           "tokens_per_s_per_device": e.tokens_per_s / e.n_devices, "mfu": e.mfu, "hfu": e.hfu,
           "memory_peak_bytes": e.memory_peak_bytes, "memory_capacity_bytes": e.memory_capacity_bytes,
           "memory_fraction": e.memory_peak_bytes / e.memory_capacity_bytes, "micro_batches": e.micro_batches,
           "critical_stage": "only" if p.pp == 1 else e.critical_stage, "usd_per_million_tokens": usd,
           **{k: float(t.get(k, 0.0)) for k in TIME_PARTS + FAMILY_TIME_PARTS},
           **{k: float(m.get(k, 0.0)) for k in MEMORY_PARTS},
           "step_time_low_s": e.step_time_low_s, "step_time_high_s": e.step_time_high_s, "tie_with_best": True,
           "framework": e.framework, "provenance_class": e.provenance_class,
           **{k: getattr(p, k) for k in V2_DEFAULTS}, "equivalent_plans": 1,
           **{k: float(v[0]) for k, v in goodput_columns(None, 1).items()}, "cp_kind": p.cp_kind}
    df = pd.DataFrame([{k: row[k] for k in EXPORT_COLUMNS}], columns=list(EXPORT_COLUMNS))
    return integer_columns(df)


def envelope(kind: str, *, workload: str, cluster: str, n_devices: int, plans: list[dict],
             heterogeneous: bool = False, **extra) -> dict:
    """The JSON document of every verb (docs/json_schema.md): the shared head, ``plans``, then ``extra`` (the
    verb's own keys).  Byte counts in it are integers."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    head = {"schema_version": SCHEMA_VERSION, "kind": kind, "workload": workload, "cluster": cluster,
            "n_devices": int(n_devices), "heterogeneous": bool(heterogeneous)}
    clash = set(head) & set(extra) | ({"plans"} & set(extra))
    if clash:
        raise ValueError(f"extra keys {sorted(clash)} clash with the envelope")
    return whole_bytes({**head, "plans": plans, **extra})
