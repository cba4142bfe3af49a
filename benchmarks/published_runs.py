"""Published training runs → (workload, cluster, plan, measured step time), shared by accuracy.py and calibrate.py.

Data: ``data/published_training_runs.csv`` (copied unchanged from the project's measurement collection, with its
source columns) and ``data/accuracy_setup.csv`` (how each row is expressed in parplan's inputs, which knobs the
source omits, how the measured figure becomes a step time, and the calibration/test split).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from parplan.errors import SpecError
from parplan.hardware.catalog import cluster_from_dict
from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.estimate import Estimate, estimate_plan, validate_plan
from parplan.models.plan import Plan, parse_plan
from parplan.models.training import PlanArrays, evaluate_workload
from parplan.workloads.loader import load_workload
from parplan.workloads.transformer import Workload

DATA = Path(__file__).resolve().parent / "data"


@dataclass
class Run:
    row_id: str
    source_id: str
    model: str
    split: str
    workload: Workload
    cluster: Cluster
    plan_text: str
    free_knobs: tuple[str, ...]
    measured_step_time_s: float
    measured_from: str
    assumptions: str


def _num(x) -> float:
    return float(x) if x is not None and not (isinstance(x, float) and math.isnan(x)) else float("nan")


def measured_step_time(r: pd.Series, how: str, n: int) -> float:
    """Each source's own figure, converted with that source's FLOP convention, to seconds per global step."""
    B, s = float(r.global_batch_seqs), float(r.seq_len)
    if how == "iter_time":
        return float(r.iter_time_s)
    if how == "tokens_per_gpu":
        return B * s / (float(r.tokens_per_s_per_gpu) * n)
    if how == "tokens_total":
        return B * s / float(r.tokens_per_s_total)
    if how == "tflops_megatron_eq3":
        # Narayanan et al. 2021 eq. 3 (counts the recompute forward): 96·B·s·l·h²·(1 + s/6h + V/16lh)
        l, h, V = float(r.n_layers), float(r.hidden), float(r.vocab)
        flops = 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h))
        return flops / (float(r.tflops_per_gpu) * 1e12 * n)
    raise ValueError(how)


def _inline_gpt(r: pd.Series) -> dict:
    """Megatron GPT of Narayanan et al. Table 1: MHA, gelu FFN 4h, learned positions, tied embeddings, dropout."""
    return {"name": str(r.model), "architecture": {
        "layers": int(r.n_layers), "hidden": int(r.hidden), "heads": int(r.n_heads), "ffn_hidden": int(r.ffn_hidden),
        "ffn": "gelu", "vocab": int(r.vocab), "tied_embeddings": True, "position": "learned",
        "max_position": int(r.seq_len), "norm": "layernorm", "bias": True, "dropout": True}}


def load_runs() -> tuple[list[Run], list[tuple[str, str, str]]]:
    """Expressible runs, and (row_id, source_id, reason) for the rows that are not."""
    pub = pd.read_csv(DATA / "published_training_runs.csv")
    setup = pd.read_csv(DATA / "accuracy_setup.csv", dtype=str, keep_default_na=False)
    pub = pub.set_index("row_id")
    runs, skipped = [], []
    for _, st in setup.iterrows():
        r = pub.loc[st.row_id]
        if st.measured_from == "skip":
            skipped.append((st.row_id, r.source_id, st.assumptions))
            continue
        overrides = {"seq_len": int(r.seq_len), "global_batch": int(r.global_batch_seqs), "precision": st.precision,
                     "attention": st.attention}
        wl_ref = _inline_gpt(r) if st.workload == "inline-gpt" else st.workload
        try:
            workload = load_workload(wl_ref, **overrides)
        except SpecError as err:
            skipped.append((st.row_id, r.source_id, f"workload unavailable: {err}"))
            continue
        n = int(r.num_gpus)
        dpn = int(st.devices_per_node)
        group = {"device": st.device, "nodes": max(1, n // dpn), "devices_per_node": min(dpn, n),
                 "intra_node": st.intra_node, "inter_node": st.inter_node}
        if st.nics_per_node:
            group["nics_per_node"] = int(st.nics_per_node)
        cluster = cluster_from_dict({"name": f"{st.device}-{n}", "groups": [group]})
        runs.append(Run(row_id=st.row_id, source_id=r.source_id, model=str(r.model), split=st.split,
                        workload=workload, cluster=cluster, plan_text=st.plan,
                        free_knobs=tuple(k for k in st.free_knobs.split(",") if k),
                        measured_step_time_s=measured_step_time(r, st.measured_from, n),
                        measured_from=st.measured_from, assumptions=st.assumptions))
    return runs, skipped


def candidate_plans(run: Run) -> list[Plan]:
    """The row's plan, or — for knobs the source omits — every valid value of them (mbs ≤ 8, vpp ≤ 8)."""
    base = parse_plan(run.plan_text, run.cluster.n_devices)
    if not run.free_knobs:
        return [base]
    out = []
    mbs_opts = [1, 2, 4, 8] if "mbs" in run.free_knobs else [base.mbs]
    vpp_opts = list(range(1, 9)) if "vpp" in run.free_knobs else [base.vpp]
    for mbs in mbs_opts:
        for vpp in vpp_opts:
            p = Plan(**{**base.as_dict(), "mbs": mbs, "vpp": vpp})
            try:
                validate_plan(run.workload, run.cluster, p)
            except SpecError:
                continue
            out.append(p)
    return out


def predict(run: Run, eff: Efficiency | None = None) -> Estimate:
    """parplan's estimate for the row: its plan, or the fastest fitting choice of the knobs the source omits."""
    eff = eff or efficiency_for(run.cluster.group.device.id)
    plans = candidate_plans(run)
    if len(plans) == 1:
        return estimate_plan(run.workload, run.cluster, plans[0], eff)
    res = evaluate_workload(run.workload, run.cluster, PlanArrays.from_plans(plans), eff)
    t = np.where(res["fits"], res["step_time_s"], np.inf)
    best = int(np.argmin(t)) if np.isfinite(t).any() else int(np.argmin(res["step_time_s"]))
    return estimate_plan(run.workload, run.cluster, plans[best], eff)


def accuracy_table(runs: list[Run], eff_for=None) -> pd.DataFrame:
    rows = []
    for run in runs:
        eff = eff_for(run.cluster.group.device.id) if eff_for else None
        est = predict(run, eff)
        err = (est.step_time_s - run.measured_step_time_s) / run.measured_step_time_s
        rows.append({"row_id": run.row_id, "source": run.source_id, "split": run.split, "model": run.model,
                     "device": run.cluster.group.device.id, "n": run.cluster.n_devices,
                     "precision": run.workload.training.precision,
                     "plan": est.plan.to_string(), "measured_s": run.measured_step_time_s,
                     "predicted_s": est.step_time_s, "error_pct": 100.0 * err, "fits": est.fits,
                     "mfu_pred": est.mfu})
    return pd.DataFrame(rows)


def summarize(table: pd.DataFrame) -> dict:
    ape = table.error_pct.abs()
    per_source = table.assign(ape=ape).groupby("source").ape.mean()
    return {"rows": len(table), "mape_pct": float(ape.mean()), "balanced_mape_pct": float(per_source.mean()),
            "max_ape_pct": float(ape.max()), "per_source": per_source.to_dict()}
