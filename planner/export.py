"""CSV/JSON export of ranked plans: one row per plan, the columns of ``EXPORT_COLUMNS`` in that order (stable)."""
from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd

from parplan.models.plan import RECOMPUTE, V2_DEFAULTS
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
)
# time parts a family may add to the shared ones (they are part of the sum too); 0 where a family has none
FAMILY_TIME_PARTS = ("ep_comm_exposed_s",)
assert set(TIME_PARTS + MEMORY_PARTS + FAMILY_TIME_PARTS) <= set(EXPORT_COLUMNS)

CSV_FLOAT_FORMAT = "%.6g"


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
    return [b + x for b, x in zip(base, extra)]


def frame(P: PlanArrays, res: dict, *, workload: str, cluster: str, n_nodes: int, n_devices: int,
          price_per_hour: float | None = None, first_rank: int = 1, framework: str = "megatron-core",
          provenance_class: str = "defaults", best_high_s: float | None = None) -> pd.DataFrame:
    """The export table for the plans ``P`` (already in rank order) and their ``evaluate`` results ``res``."""
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
    df = pd.DataFrame({k: np.asarray(cols[k]) if not isinstance(cols[k], list) else cols[k] for k in EXPORT_COLUMNS},
                      columns=list(EXPORT_COLUMNS))
    return df


def to_csv(df: pd.DataFrame) -> str:
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format=CSV_FLOAT_FORMAT, lineterminator="\n")
    return buf.getvalue()


def records(df: pd.DataFrame) -> list[dict]:
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


def to_json(obj) -> str:
    return json.dumps(obj, indent=2, default=float)
