"""Static batching (offline benchmarks such as TensorRT-LLM's gptSessionBenchmark and ``trtllm-bench --static``):
B prompts of a fixed ISL run their context phase together — one iteration of B·ISL tokens that also samples each
sequence's first token — then OSL − 1 generation steps of B sequences whose KV cache grows from ISL + 1 to
ISL + OSL − 1 tokens.  Latency is the whole ``generate`` call; throughput is B·OSL / latency (TensorRT-LLM:
``out_tps = output_seqlen * batch_size / total_latency / tp``, docs/source/blogs/XQA-kernel.md;
benchmarks/cpp/gptSessionBenchmark.cpp times ``session.generate`` from the context phase to the last token).
Priced on the same iteration terms as continuous batching (models/serving_terms.py)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models import serving_memory as sm
from parplan.models.serving_terms import PARTS, serving_context, total
from parplan.workloads.serving import load_serving


@dataclass(frozen=True)
class StaticBatchEstimate:
    """One static batch on one replica: seconds, tokens/s (per replica and per device), bytes."""

    batch: int
    isl: int
    osl: int
    context_s: float  # the context phase: every prompt's prefill and its first token (= TTFT of the batch)
    generation_s: float  # the OSL − 1 generation steps
    output_tokens_per_s: float  # per replica
    output_tokens_per_s_per_device: float
    context_breakdown_s: dict
    generation_breakdown_s: dict  # summed over the generation steps
    kv_tokens_needed: int
    kv_capacity_tokens: int
    fits: bool

    @property
    def latency_s(self) -> float:
        return self.context_s + self.generation_s


def static_batch(workload, cluster, serving, deployment, *, engine_terms: dict | None = None) -> StaticBatchEstimate:
    """Price one static batch of ``max_batch`` fixed-length requests on one replica of an aggregated deployment
    (``engine_terms``: fitted engine-profile values, see ``serving_terms.serving_context``)."""
    from parplan.models.serving import _check, _iter_fn, _Pools, as_deployment

    serving = load_serving(serving)
    dep = as_deployment(deployment, cluster.n_devices)
    _check(workload, cluster, dep)
    if dep.mode != "aggregated":
        raise SpecError("static batching prices an aggregated deployment (one pool)", key="deployment")
    if serving.isl.dist != "fixed" or serving.osl.dist != "fixed":
        raise SpecError("static batching needs fixed isl and osl", key="isl")
    c = serving_context(workload, cluster, serving, engine_terms)
    P = _Pools([dep], "mixed")
    it = _iter_fn(c, P, [dep])
    B, I, O = float(dep.pools[0].max_batch), float(serving.isl_mean), float(serving.osl_mean)
    ctx = it(np.array([B * I]), 0.0, 0.0, prefill_seqs=np.array([B]))
    steps = np.arange(1.0, O)  # generation step j attends over ISL + j cached tokens
    gen = it(np.zeros_like(steps), np.full_like(steps, B), B * (I + steps)) if O > 1 else {k: np.zeros(1) for k in PARTS}
    t_ctx = float(total(ctx)[0])
    t_gen = float(np.sum(total(gen)))
    mem = sm.pool_memory(c, None, serving, P, float(c.hw.memory_capacity_bytes))
    K, need = int(mem[4][0]), int(B * (I + O))
    w, act, res = float(mem[0][0]), float(mem[2][0]), float(mem[3][0])
    per_rep = B * O / (t_ctx + t_gen)
    return StaticBatchEstimate(
        batch=int(B), isl=int(I), osl=int(O), context_s=t_ctx, generation_s=t_gen, output_tokens_per_s=per_rep,
        output_tokens_per_s_per_device=per_rep / float(dep.pools[0].devices_per_replica),
        context_breakdown_s={k: float(np.sum(ctx[k])) for k in PARTS},
        generation_breakdown_s={k: float(np.sum(np.broadcast_to(gen[k], steps.shape if O > 1 else (1,))))
                                for k in PARTS},
        kv_tokens_needed=need, kv_capacity_tokens=K,
        fits=bool(w + act + res < float(c.hw.memory_capacity_bytes) and K >= need))
