"""benchmarks/serving_rows.py: every published inference row translated into parplan's serving inputs (workload,
cluster, ServingSpec, Deployment, measured figure), the reasons for rows it cannot express, and the accuracy
harness of benchmarks/serving_accuracy.py on those rows (its figures are gated in test_serving_accuracy_gate.py)."""
from __future__ import annotations

import csv
import io

import pytest
from rich.console import Console

from parplan.errors import SpecError
from serving_rows import CSV, load_rows, translate

ROWS = {r["row_id"]: r for r in csv.DictReader(open(CSV, newline="", encoding="utf-8"))}


def test_every_row_is_expressed_and_the_file_keeps_its_source_columns():
    rows, skipped, n = load_rows()
    assert n == 31 and len(rows) == 31 and skipped == []
    head = next(iter(ROWS.values()))
    for col in ("source", "source_locator", "provenance", "arch_source", "confidence", "notes"):
        assert col in head


def test_throughput_row_of_a_catalog_model():
    r = translate(ROWS["I004"])  # Llama-2-70B, 2 H100, tp2, batch 1024, 128/128, fp8, 2657 tok/s/GPU
    assert r.workload.name == "Llama 2 70B" and r.metric == "throughput" and r.measured == 2657.0
    assert r.cluster.n_devices == 2 and r.cluster.group.device.id == "h100-sxm-80gb"
    p = r.deployment.pools[0]
    assert (r.deployment.mode, p.tp, p.pp, p.replicas, p.max_batch, p.chunk_tokens) == ("aggregated", 2, 1, 1, 1024, 0)
    s = r.serving
    # TensorRT-LLM v0.6.1: the engine profile of that release (masked-MHA generation kernel, serving.yaml)
    assert (s.isl.mean, s.osl.mean, s.load, s.engine) == (128, 128, "saturated", "trtllm-0.6")
    assert (s.weights, s.activations, s.kv_cache) == ("fp8", "fp8", "fp8")


def test_inline_architectures_fill_what_the_row_leaves_out():
    gptj = translate(ROWS["I001"])
    m = gptj.workload.model
    assert (m.layers, m.hidden, m.heads, m.ffn_hidden, m.vocab) == (28, 4096, 16, 16384, 50400)
    assert any("ffn_hidden" in a for a in gptj.assumptions)
    falcon = translate(ROWS["I008"]).workload.model
    assert (falcon.heads, falcon.kv_heads, falcon.ffn_hidden, falcon.vocab) == (232, 8, 4 * 14848, 65024)


def test_latency_rows_and_ambiguous_units():
    t = translate(ROWS["I018"])  # first-token latency 109 ms, batch 1, ISL 2048
    assert t.metric == "ttft" and t.measured == pytest.approx(0.109) and t.serving.concurrency == 1
    a100 = translate(ROWS["I012"])  # fp16 on A100, units "probably per GPU"
    assert a100.serving.weights == "bf16" and a100.measured == 670.0
    assert any("fp16 priced as bf16" in x for x in a100.assumptions)
    h200 = translate(ROWS["I029"])  # total vs per GPU not stated: the total over the 4 GPUs
    assert h200.measured == pytest.approx(6616 / 4) and h200.cluster.group.device.id == "h200-sxm-141gb"


@pytest.mark.parametrize("change,words", [
    ({"gpu": "MI300X"}, "no catalog device"),
    ({"tp": "2.0", "num_gpus": "4"}, "tp·pp = 2"),
    ({"moe_experts": "8"}, "mixture-of-experts"),
    ({"weight_precision": "int3"}, "no serving precision"),
    ({"output_tok_s_per_gpu": "", "output_tok_s_total": "", "ttft_ms": ""}, "no throughput"),
    ({"model": "Mystery-1B", "ffn_hidden": ""}, "ffn_hidden"),
])
def test_rows_it_cannot_express_say_why(change, words):
    with pytest.raises(SpecError) as e:
        translate({**ROWS["I004"], **change})
    assert words in str(e.value)


def test_accuracy_harness_reports_every_row_per_source(tmp_path):
    from serving_accuracy import run, summarize

    out = tmp_path / "acc.csv"
    res = run(["--csv", str(out)], console=Console(file=io.StringIO(), width=170))
    assert res["coverage"] == 1.0 and len(res["table"]) == 31
    s = res["summary"]
    assert set(s["throughput"]["per_source"]) == {"I01", "I02"} and set(s["ttft"]["per_source"]) == {"I01"}
    assert s["throughput"]["rows"] == 21 and s["ttft"]["rows"] == 10
    # each source is also predicted with the global terms fitted without it
    assert set(res["loso_terms"]) == {"I01", "I02"}
    assert all(t["predicted"] > 0 and t["loso_predicted"] > 0 for t in res["table"])
    assert len(list(csv.DictReader(open(out)))) == 31
    # summarize on a hand-made table: MAPE per source, balanced over sources
    tab = [{"metric": "ttft", "source": "A", "error_pct": 10.0, "row_id": "a"},
           {"metric": "ttft", "source": "A", "error_pct": -30.0, "row_id": "b"},
           {"metric": "ttft", "source": "B", "error_pct": 5.0, "row_id": "c"}]
    t = summarize(tab)["ttft"]
    assert t["per_source"] == {"A": 20.0, "B": 5.0} and t["balanced_mape_pct"] == 12.5
    assert t["mape_pct"] == pytest.approx(15.0) and t["worst"]["row_id"] == "b"
