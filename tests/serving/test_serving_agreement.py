"""The analytical serving model against the serving executor on a CI-sized matrix (benchmarks/validate_serving.py
plays the full 25 deployments): TTFT p50, TPOT p50 and throughput within 10 %, TTFT p99 within 20 %, like for like
(the model at the arrival rate the seeded arrivals offer in the measured window)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from parplan.executor.serving import simulate_serving
from parplan.executor.serving_mix import draw_requests, mix_from_serving
from parplan.models.serving import as_deployment, estimate_serving
from parplan.serving import _inputs

CLUSTER = "dgx-h100-64"
ROWS = [  # (model, deployment, serve spec): aggregated chunked prefill at two loads, disaggregated, DP attention
    ("llama3-8b", "tp=1,batch=64,chunk=2048,replicas=1", {"isl": 2048, "osl": 128, "arrival_rate_per_s": 1.0}),
    ("llama3-8b", "tp=1,batch=64,chunk=2048,replicas=1", {"isl": 2048, "osl": 128, "arrival_rate_per_s": 8.0}),
    ("llama3-8b", "prefill:1x(tp=1)+decode:1x(tp=1,batch=128)", {"isl": 2048, "osl": 128, "arrival_rate_per_s": 4.0}),
    ("llama3-70b", "tp=8,batch=64,chunk=2048,replicas=1", {"isl": 2048, "osl": 128, "arrival_rate_per_s": 3.0}),
    # attention-DP ranks in lock-step: aggregated, and a disaggregated prefill pool
    ("mixtral-8x7b", "tp=2,dp=4,ep=8,batch=256,chunk=4096,replicas=1",
     {"isl": 2048, "osl": 128, "arrival_rate_per_s": 4.0}),
    ("mixtral-8x7b", "prefill:1x(tp=2,dp=2,ep=4)+decode:1x(tp=4,batch=256)",
     {"isl": 2048, "osl": 128, "arrival_rate_per_s": 4.0}),
]
N = 300


@pytest.mark.parametrize("model,dep,serve", ROWS)
def test_model_agrees_with_the_executor(model, dep, serve):
    w, c, s = _inputs(model, CLUSTER, serve)
    d = as_deployment(dep, c.n_devices)
    sim = simulate_serving(w, c, s, d, n_requests=N, seed=0)
    arr = draw_requests(mix_from_serving(s), N, 0).arrival_s
    offered = (N - 1 - sim.warmup) / (arr[N - 1] - arr[sim.warmup])
    e = estimate_serving(w, c, replace(s, arrival_rate_per_s=float(offered)), d)
    pairs = {"ttft_p50": (e.ttft_p50_s, sim.ttft_s.p50, 0.10), "ttft_p99": (e.ttft_p99_s, sim.ttft_s.p99, 0.20),
             "tpot_p50": (e.tpot_p50_s, sim.tpot_s.p50, 0.10),
             "tokens_per_s": (e.output_tokens_per_s, sim.output_tokens_per_s, 0.10)}
    for k, (a, b, tol) in pairs.items():
        assert a == pytest.approx(b, rel=tol), f"{k}: model {a:.4g} vs executor {b:.4g}"
