"""Memory under XLA (the MaxText profile's ``memory`` block): compile-time buffers on TPUs, activations split over
the tensor axis, and remat_policy 'minimal' keeping the weight matmuls' outputs — hand-derived cases, the search's
lower bound, the executor's memory and a published MaxText run that the caching-allocator model said did not fit."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.executor import compare_plan
from parplan.hardware.catalog import load_cluster
from parplan.models.estimate import estimate_plan
from parplan.models.framework import get_framework
from parplan.models.plan import parse_plan
from parplan.models.training_memory import FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES, allocator_overheads
from parplan.planner.search import SearchOptions, memory_lower_bound, run_search
from parplan.workloads.loader import load_workload

TPU_RESERVE = 34_359_738_368 - 33_014_415_360  # jax-ml/jax#1491: bytes_limit of a 32 GiB TPU


def _est(fw, cluster, plan, model="llama2-7b", B=256, s=2048):
    w = load_workload(model, framework=fw, seq_len=s, global_batch=B)
    c = load_cluster(cluster)
    return w, c, estimate_plan(w, c, parse_plan(plan, c.n_devices))


def test_maxtext_profile_reads_its_memory_block():
    fw = get_framework("maxtext")
    assert fw.tpu_compiled_buffers and fw.activations_split_over_tp and fw.selective_keeps == "matmul-outputs"
    assert fw.tpu_reserved_bytes == TPU_RESERVE
    # a profile without the block keeps the caching allocator and Korthikanti's set
    mc = get_framework("megatron-core")
    assert not mc.tpu_compiled_buffers and not mc.activations_split_over_tp and mc.selective_keeps == "korthikanti"


def test_allocator_overheads_by_runtime():
    fw = get_framework("maxtext")
    assert allocator_overheads(fw, launches_kernels=False) == (0.0, float(TPU_RESERVE))
    assert allocator_overheads(fw, launches_kernels=True) == (FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES)
    assert allocator_overheads(None) == (FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES)


def test_tpu_buffers_have_no_fragmentation_and_the_runtime_reserve():
    _, _, e = _est("maxtext", "tpu-v5e-256", "tp=1,pp=1,mbs=1,zero=3,recompute=full")
    m = e.breakdown.memory_bytes
    assert m["fragmentation_bytes"] == 0.0
    assert m["framework_reserved_bytes"] == pytest.approx(TPU_RESERVE)
    assert sum(m.values()) == pytest.approx(e.memory_peak_bytes, rel=1e-12)


def test_maxtext_on_gpus_keeps_the_caching_allocator():
    _, _, e = _est("maxtext", "dgx-h100-64", "tp=1,pp=1,mbs=1,zero=3,recompute=full")
    m = e.breakdown.memory_bytes
    assert m["framework_reserved_bytes"] == FRAMEWORK_RESERVED_BYTES
    dyn = e.memory_peak_bytes - m["fragmentation_bytes"] - m["framework_reserved_bytes"]
    assert m["fragmentation_bytes"] == pytest.approx(FRAGMENTATION_FRACTION * dyn, rel=1e-12)


def test_activations_are_split_over_tp_with_or_without_sp():
    a = _est("maxtext", "tpu-v5e-256", "tp=4,pp=1,mbs=2,zero=3,recompute=full,sp=false")[2]
    b = _est("maxtext", "tpu-v5e-256", "tp=4,pp=1,mbs=2,zero=3,recompute=full,sp=true")[2]
    assert a.breakdown.memory_bytes["activations_bytes"] == pytest.approx(b.breakdown.memory_bytes["activations_bytes"])
    # under Megatron-Core the replicated part stays whole without SP
    c = _est("megatron-core", "dgx-h100-64", "tp=4,pp=1,mbs=2,zero=1,recompute=full,sp=false")[2]
    d = _est("megatron-core", "dgx-h100-64", "tp=4,pp=1,mbs=2,zero=1,recompute=full,sp=true")[2]
    assert c.breakdown.memory_bytes["activations_bytes"] > d.breakdown.memory_bytes["activations_bytes"]


def test_minimal_remat_keeps_the_matmul_outputs_hand_derived():
    """Llama 2 7B (h = q = k = 4096, SwiGLU f = 11008, 32 layers), tp = 2, one micro-batch of 2 × 2048 tokens: the
    difference selective − full is 32 layers × (kept − layer input); kept = e·T·(2h + q + 2k + 2f)/tp."""
    w, _, sel = _est("maxtext", "tpu-v5e-256", "tp=2,pp=1,mbs=2,zero=3,recompute=selective", B=256)
    full = _est("maxtext", "tpu-v5e-256", "tp=2,pp=1,mbs=2,zero=3,recompute=full", B=256)[2]
    e, T, tp, L = 2.0, 2 * 2048, 2, 32
    h, f = 4096.0, 11008.0
    kept = e * T * (2 * h + h + 2 * h + 2 * f) / tp
    layer_input = e * T * h / tp
    # full recompute also holds the working set of the layer being recomputed (Korthikanti's set, no scores)
    from parplan.models.training_memory import layer_bytes_without_scores
    working = float(layer_bytes_without_scores(w.model, np.float64(T), np.float64(tp), np.array(True), e))
    diff = sel.breakdown.memory_bytes["activations_bytes"] - full.breakdown.memory_bytes["activations_bytes"]
    assert diff == pytest.approx(L * (kept - layer_input) - working, rel=1e-9)


def test_lower_bound_never_exceeds_peak_on_a_maxtext_tpu_space():
    w = load_workload("llama2-13b", framework="maxtext", seq_len=2048, global_batch=256)
    ev = run_search(w, load_cluster("tpu-v5e-256"), SearchOptions(prune=False, max_mbs=4))
    lb = memory_lower_bound(w, ev.space.plans, ev.hw)
    assert np.all(lb <= ev.metrics["memory_peak_bytes"] * (1 + 1e-12))


def test_executor_memory_agrees_on_a_tpu_plan():
    w = load_workload("llama2-7b", framework="maxtext", seq_len=2048, global_batch=64)
    c = load_cluster("tpu-v5e-256")
    a = compare_plan(w, c, parse_plan("tp=4,pp=2,mbs=1,zero=1,recompute=selective", c.n_devices))
    assert abs(a.memory_diff) <= 0.01, a.row()


def test_published_maxtext_v5p_run_fits():
    """MaxText's Dec 2023 v5p README ran the 32B model on 64 v5p chips with ici_tensor_parallelism 4, FSDP 16,
    per-device batch 8 and remat_policy minimal (row N065 of the published runs); with Korthikanti's selective set,
    a caching allocator's reserve and no TP split of the embed axis the model priced 285 GiB of 95."""
    from published_runs import load_runs  # benchmarks/ is on the path (tests/conftest.py)

    run = next(r for r in load_runs()[0] if r.row_id == "N065")
    est = estimate_plan(run.workload, run.cluster, parse_plan(run.plan_text, run.cluster.n_devices))
    assert est.fits, est.reasons
