"""Published training runs → (workload, cluster, partial plan, measured step time), shared by accuracy.py and
calibrate.py.

Data: ``data/published_training_runs.csv`` (copied unchanged from the project's measurement collection, with its
source columns) and ``data/accuracy_setup.csv`` (how each row is expressed in parplan's inputs: architecture,
cluster, framework, precision, the plan as far as the source states it, how the measured figure becomes a step
time, and every assumption).  Knobs the source leaves out are chosen by parplan's partial-plan completion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from parplan.errors import SpecError
from parplan.hardware.catalog import cluster_from_dict
from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.estimate import Estimate
from parplan.planner.complete import complete_plan, parse_partial
from parplan.workloads.loader import load_workload
from parplan.workloads.transformer import Workload

DATA = Path(__file__).resolve().parent / "data"


@dataclass
class Run:
    row_id: str
    source_id: str
    model: str
    workload: Workload
    cluster: Cluster
    plan_text: str
    given: dict
    measured_step_time_s: float
    measured_from: str
    framework: str
    assumptions: str


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


def _bool(x: str, default: bool) -> bool:
    return default if x == "" else x.strip().lower() == "true"


def _inline_gpt(r: pd.Series) -> dict:
    """Megatron GPT of Narayanan et al. Table 1: MHA, gelu FFN 4h, learned positions, tied embeddings, dropout."""
    return {"name": str(r.model), "architecture": {
        "layers": int(r.n_layers), "hidden": int(r.hidden), "heads": int(r.n_heads), "ffn_hidden": int(r.ffn_hidden),
        "ffn": "gelu", "vocab": int(r.vocab), "tied_embeddings": True, "position": "learned",
        "max_position": int(r.seq_len), "norm": "layernorm", "bias": True, "dropout": True}}


def _inline(r: pd.Series, st: pd.Series) -> dict:
    """An architecture from the published row's own dimensions and the setup's arch_* columns (relu = 2-matrix MLP,
    priced like gelu)."""
    arch = {"layers": int(r.n_layers), "hidden": int(r.hidden), "heads": int(r.n_heads),
            "kv_heads": int(r.n_kv_heads) if not math.isnan(r.n_kv_heads) else int(r.n_heads),
            "ffn_hidden": int(r.ffn_hidden), "ffn": "swiglu" if st.arch_ffn == "swiglu" else "gelu",
            "vocab": int(r.vocab), "tied_embeddings": _bool(st.arch_tied, False),
            "position": st.arch_position or "rope", "norm": st.arch_norm or "rmsnorm",
            "bias": _bool(st.arch_bias, False), "dropout": _bool(st.arch_dropout, False)}
    if st.arch_head_dim:
        arch["head_dim"] = int(st.arch_head_dim)
    if arch["position"] == "learned":
        arch["max_position"] = int(r.seq_len)
    return {"name": str(r.model), "architecture": arch}


def _training(text: str) -> dict:
    """The setup's family-specific training keys, ``"expert_imbalance=1.0;mtp_layers=0;ep_a2a_overlap=1f1b"``."""
    out: dict = {}
    for item in filter(None, (x.strip() for x in text.split(";"))):
        k, _, v = item.partition("=")
        k, v = k.strip(), v.strip()
        out[k] = int(v) if k == "mtp_layers" else (v if k == "ep_a2a_overlap" else float(v))
    return out


def _cluster(st: pd.Series, n: int) -> Cluster:
    dpn = int(st.devices_per_node)
    group = {"device": st.device, "nodes": max(1, n // dpn), "devices_per_node": min(dpn, n),
             "intra_node": st.intra_node, "inter_node": st.inter_node}
    if st.nics_per_node:
        group["nics_per_node"] = int(st.nics_per_node)
    if st.scale_up_domain:
        group["scale_up_domain"] = int(st.scale_up_domain)
    if st.topology:
        group["topology"] = st.topology
    return cluster_from_dict({"name": f"{st.device}-{n}", "groups": [group]})


FAMILY_NOTE = {"moe-transformer": "mixture-of-experts family (moe-transformer): reported in the MoE accuracy table"}


def load_runs(families: tuple = ("dense-transformer",)) -> tuple[list[Run], list[tuple[str, str, str]], int]:
    """Expressible runs of the given workload families, (row_id, source_id, reason) for the rows that are not (or
    belong to another family), and the count of rows in the file."""
    from parplan.workloads.registry import family_of

    pub = pd.read_csv(DATA / "published_training_runs.csv").set_index("row_id")
    setup = pd.read_csv(DATA / "accuracy_setup.csv", dtype=str, keep_default_na=False)
    missing = set(pub.index) - set(setup.row_id)
    if missing:
        raise SystemExit(f"accuracy_setup.csv lacks rows {sorted(missing)}")
    runs, skipped = [], []
    for _, st in setup.iterrows():
        r = pub.loc[st.row_id]
        if st.measured_from == "skip":
            skipped.append((st.row_id, r.source_id, st.assumptions))
            continue
        overrides = {"seq_len": int(r.seq_len), "global_batch": int(r.global_batch_seqs), "precision": st.precision,
                     "attention": st.attention, "framework": st.framework, **_training(st.training)}
        ref = {"inline-gpt": lambda: _inline_gpt(r), "inline": lambda: _inline(r, st)}.get(st.workload)
        try:
            workload = load_workload(ref() if ref else st.workload, **overrides)
            n = int(r.num_gpus)
            cluster = _cluster(st, n)
            given = parse_partial(st.plan, n)
        except SpecError as err:
            skipped.append((st.row_id, r.source_id, f"not expressible: {err}"))
            continue
        fam = family_of(workload.model).name
        if fam not in families:
            skipped.append((st.row_id, r.source_id, FAMILY_NOTE.get(fam, f"{fam} family: reported in its own table")))
            continue
        runs.append(Run(row_id=st.row_id, source_id=r.source_id, model=str(r.model), workload=workload,
                        cluster=cluster, plan_text=st.plan, given=given,
                        measured_step_time_s=measured_step_time(r, st.measured_from, n),
                        measured_from=st.measured_from, framework=st.framework, assumptions=st.assumptions))
    return runs, skipped, len(pub)


def predict(run: Run, eff: Efficiency | None = None) -> Estimate:
    """parplan's estimate for the row: the published knobs pinned, the rest completed (fastest that fits)."""
    eff = eff or efficiency_for(run.cluster.group.device)
    est, chosen = complete_plan(run.workload, run.cluster, run.given, eff)
    return est


def accuracy_table(runs: list[Run], eff_for=None) -> pd.DataFrame:
    rows = []
    for run in runs:
        eff = eff_for(run) if eff_for else None
        est = predict(run, eff)
        err = (est.step_time_s - run.measured_step_time_s) / run.measured_step_time_s
        rows.append({"row_id": run.row_id, "source": run.source_id, "model": run.model,
                     "device": run.cluster.group.device.id, "n": run.cluster.n_devices,
                     "precision": run.workload.training.precision, "framework": run.framework,
                     "plan": est.plan.to_string(), "measured_s": run.measured_step_time_s,
                     "predicted_s": est.step_time_s, "error_pct": 100.0 * err, "fits": est.fits,
                     "provenance_class": est.provenance_class, "mfu_pred": est.mfu})
    return pd.DataFrame(rows)


def summarize(table: pd.DataFrame) -> dict:
    ape = table.error_pct.abs()
    per_source = table.assign(ape=ape).groupby("source").ape.mean()
    return {"rows": len(table), "mape_pct": float(ape.mean()), "balanced_mape_pct": float(per_source.mean()),
            "max_ape_pct": float(ape.max()), "per_source": per_source.to_dict(),
            "max_source_mape_pct": float(per_source.max()) if len(per_source) else float("nan")}
