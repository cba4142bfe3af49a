"""Published inference runs → (workload, cluster, ServingSpec, Deployment, measured figure), for
serving_accuracy.py.

Data: ``data/published_inference_runs.csv`` (copied unchanged, with its source columns; provenance in
``data/published_inference_runs_README.md``).  Each row is one TensorRT-LLM benchmark: a model (from the catalog when
the row names a catalog model, else built inline from the row's architecture columns), ``num_gpus`` GPUs of one node,
tp × pp, a static batch, fixed input / output lengths, and a measured output throughput or first-token latency.
``load_rows`` returns the rows it can express and, for every other row, why not.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from parplan.errors import SpecError
from parplan.hardware.catalog import cluster_from_dict
from parplan.hardware.types import Cluster
from parplan.models.serving_plan import Deployment, parse_deployment
from parplan.workloads.loader import load_workload
from parplan.workloads.serving import ServingSpec, serving_from_dict
from parplan.workloads.transformer import Workload

DATA = Path(__file__).resolve().parent / "data"
CSV = DATA / "published_inference_runs.csv"

# the row's `gpu` → catalog device and its NVLink generation (catalogs/hardware/devices, links)
DEVICES = {"H100 80GB SXM": ("h100-sxm-80gb", "nvlink4"), "H200 141GB SXM": ("h200-sxm-141gb", "nvlink4"),
           "A100 80GB SXM": ("a100-sxm-80gb", "nvlink3")}
# the row's `model` → catalog id (catalogs/workloads/<id>.yaml: the same published configs)
CATALOG = {"Llama-2-7B": "llama2-7b", "Llama-2-13B": "llama2-13b", "Llama-2-70B": "llama2-70b"}
# columns a row leaves empty for these models, from the models' public configs
ARCH_FILL = {
    # EleutherAI/gpt-j-6b config.json: n_inner null (= 4·n_embd), vocab_size 50400, rotary, gelu_new, untied head
    "GPT-J 6B": {"ffn_hidden": 4 * 4096, "vocab": 50400, "ffn": "gelu", "norm": "layernorm", "bias": True},
    # the row's arch_source: "ffn not given; Falcon uses 4h" (tiiuae/falcon-180B config: gelu MLP of 4·hidden,
    # LayerNorm, no biases, rotary)
    "Falcon-180B": {"ffn_hidden": 4 * 14848, "ffn": "gelu", "norm": "layernorm", "bias": False},
}
# the row's precision → parplan's serving precisions.  TensorRT-LLM's FP8 builds quantize weights and activations
# (W8A8, performance.md "FP8"); fp16 is priced as bf16 (the same 16-bit tensor-core rate on A100/H100)
PRECISION = {"fp8": ("fp8", "fp8"), "fp16": ("bf16", "bf16")}
ENGINE = "trtllm"  # every row is a TensorRT-LLM run (framework column)
# ... of v0.5.0 or v0.6.1 (framework column): priced with the engine profile of those releases (serving.yaml
# `trtllm-0.6`: masked-MHA generation kernel, XQA came with v0.8 — TensorRT-LLM blogs/XQA-kernel.md)
ENGINE_PROFILE = "trtllm-0.6"


@dataclass
class Row:
    row_id: str
    source_id: str
    model: str
    workload: Workload
    cluster: Cluster
    serving: ServingSpec
    deployment: Deployment
    metric: str  # "throughput" (output tokens/s per GPU of a static batch) or "ttft" (seconds, batch 1)
    measured: float
    assumptions: list[str] = field(default_factory=list)


def _num(x: str) -> float | None:
    x = (x or "").strip()
    return float(x) if x else None


def _int(x: str) -> int | None:
    v = _num(x)
    return None if v is None else int(round(v))


def _workload(r: dict) -> tuple[Workload, list[str]]:
    notes: list[str] = []
    if r["model"] in CATALOG:
        return load_workload(CATALOG[r["model"]]), notes
    fill = ARCH_FILL.get(r["model"], {})
    heads = _int(r["n_heads"])
    arch = {"family": "dense-transformer", "layers": _int(r["n_layers"]), "hidden": _int(r["hidden"]),
            "heads": heads, "kv_heads": _int(r["n_kv_heads"]) or heads,
            "ffn_hidden": _int(r["ffn_hidden"]) or fill.get("ffn_hidden"),
            "ffn": fill.get("ffn", "swiglu"), "vocab": _int(r["vocab"]) or fill.get("vocab"),
            "tied_embeddings": False, "position": "rope", "norm": fill.get("norm", "rmsnorm"),
            "bias": fill.get("bias", False), "dropout": False}
    missing = [k for k, v in arch.items() if v is None]
    if missing:
        raise SpecError(f"architecture columns {', '.join(missing)} empty and not in ARCH_FILL", key="model")
    for k in ("ffn_hidden", "vocab"):
        if not _int(r[k]) and k in fill:
            notes.append(f"{k}={fill[k]} from the public config")
    # a serving workload still carries the contract-v1 training block (unused by the serving model)
    data = {"name": r["model"], "architecture": arch,
            "training": {"seq_len": 4096, "global_batch": 1, "precision": "bf16"}}
    return load_workload(data), notes


def _cluster(r: dict, n: int) -> Cluster:
    dev, link = DEVICES[r["gpu"]]
    # one node holds the run's GPUs (every row has num_gpus ≤ gpus_per_node = 8)
    return cluster_from_dict({"name": f"{dev}-{n}", "groups": [
        {"device": dev, "nodes": 1, "devices_per_node": n, "intra_node": link, "inter_node": "ib-ndr400"}]})


def translate(r: dict) -> Row:
    """One CSV row as parplan inputs and its measured figure; ``SpecError`` says why a row cannot be."""
    n, tp, pp = _int(r["num_gpus"]), _int(r["tp"]) or 1, _int(r["pp"]) or 1
    if r["gpu"] not in DEVICES:
        raise SpecError(f"gpu {r['gpu']!r} has no catalog device here", key="gpu")
    if _int(r["ep"]) or _int(r["attn_dp"]) or _int(r["moe_experts"]):
        raise SpecError("mixture-of-experts rows need the moe-transformer columns", key="moe_experts")
    if tp * pp != n:
        raise SpecError(f"tp·pp = {tp * pp} ≠ num_gpus = {n}", key="tp")
    wp = r["weight_precision"].strip()
    kv = r["kv_cache_precision"].split()[0] if r["kv_cache_precision"].strip() else wp
    if wp not in PRECISION or kv not in PRECISION:
        raise SpecError(f"precision {wp}/{kv} has no serving precision here", key="weight_precision")
    weights, act = PRECISION[wp]
    workload, notes = _workload(r)
    batch, isl, osl = _int(r["batch_size"]), _int(r["input_len"]), _int(r["output_len"])
    ttft = _num(r["ttft_ms"])
    if ttft is not None:
        metric, measured = "ttft", ttft / 1000.0
        load = {"concurrency": 1}  # one request at a time (batch 1)
    else:
        per_gpu, total = _num(r["output_tok_s_per_gpu"]), _num(r["output_tok_s_total"])
        if per_gpu is None and total is None:
            raise SpecError("no throughput or first-token latency reported", key="output_tok_s_total")
        metric = "throughput"
        if per_gpu is not None:
            measured = per_gpu
            if "ambiguous" in r["notes"].lower():
                notes.append("units ambiguous in the source; read as per GPU (its note)")
        else:
            measured = total / n
            notes.append("total vs per-GPU not stated by the source; read as the total over num_gpus")
        load = {}  # offline maximum throughput: saturated, every replica at its full batch
    if wp == "fp16":
        notes.append("fp16 priced as bf16")
    if "assumed" in r["kv_cache_precision"]:
        notes.append("kv cache fp8 assumed by the source")
    serving = serving_from_dict({"isl": isl, "osl": osl, **load,
                                 "precision": {"weights": weights, "activations": act, "kv_cache": PRECISION[kv][0]},
                                 "engine": ENGINE})
    if not r["framework"].startswith(("TensorRT-LLM v0.5", "TensorRT-LLM v0.6")):
        raise SpecError(f"framework {r['framework']!r} has no engine profile here", key="framework")
    serving = replace(serving, engine=ENGINE_PROFILE)  # serve.yaml names engines only; the release is the row's
    # static batching (gptSessionBenchmark): whole prompts, no chunked prefill, the row's batch on one replica
    dep = parse_deployment(f"tp={tp},pp={pp},batch={batch},replicas=1", n)
    return Row(row_id=r["row_id"], source_id=r["source_id"], model=r["model"], workload=workload,
               cluster=_cluster(r, n), serving=serving, deployment=dep, metric=metric, measured=measured,
               assumptions=notes)


def load_rows(path: Path = CSV) -> tuple[list[Row], list[tuple[str, str, str]], int]:
    """(expressible rows, (row_id, source_id, reason) for the others, rows in the file)."""
    with open(path, newline="", encoding="utf-8") as fh:
        raw = list(csv.DictReader(fh))
    rows, skipped = [], []
    for r in raw:
        try:
            rows.append(translate(r))
        except SpecError as err:
            skipped.append((r["row_id"], r["source_id"], f"not expressible: {err}"))
    return rows, skipped, len(raw)


def ape(predicted: float, measured: float) -> float:
    """Signed error in percent (predicted − measured) / measured; nan when the prediction is not finite."""
    if not math.isfinite(predicted):
        return float("nan")
    return 100.0 * (predicted - measured) / measured
