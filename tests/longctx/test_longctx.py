"""Long-context sequence workloads and context-parallel layouts (models/longctx.py, models/longctx_terms.py)."""
from __future__ import annotations

import numpy as np
import pytest

import parplan
from parplan.errors import SpecError
from parplan.models.longctx import build_packs, chunk_pairs, cp_stats
from parplan.models.plan import parse_plan
from parplan.workloads.loader import load_workload
from parplan.workloads.transformer import SequenceSpec

CL = "dgx-h100-64"


def wl(mask="document", **seq):
    seq = seq or {"dist": "lognormal", "median": 2048, "sigma": 1.5, "max": 65536}
    return {"model": "llama3-8b", "training": {"seq_len": 65536, "global_batch": 16,
                                               "sequences": {**seq, "mask": mask, "samples": 4}}}


def test_document_mask_pairs_are_sum_of_l2_over_2():
    docs = np.array([1000, 3000, 96])
    M = chunk_pairs(docs, "document", 0.0, 1)
    assert M.sum() == sum(l * (l + 1) / 2 for l in docs)
    assert chunk_pairs(np.array([4096]), "causal", 0.0, 4).sum() == 4096 * 4097 / 2


def test_window_and_block_sparse_reduce_pairs():
    docs = np.array([8192])
    full = chunk_pairs(docs, "document", 0.0, 1).sum()
    assert chunk_pairs(docs, "sliding_window", 1024.0, 1).sum() < full / 4
    assert chunk_pairs(docs, "block_sparse", 0.25, 1).sum() == pytest.approx(full * 0.25)


def test_packs_fill_seq_len_and_are_deterministic():
    spec = SequenceSpec(dist="lognormal", params=(("median", 2048.0), ("sigma", 1.5)), samples=3, seed=7)
    a, b = build_packs(spec, 65536), build_packs(spec, 65536)
    assert all(int(p.sum()) == 65536 for p in a)
    assert all((x == y).all() for x, y in zip(a, b))


def test_zigzag_ring_balances_causal_and_dcp_balances_documents():
    st = cp_stats(None, 16384, 8, "ring")
    assert st.imbalance == pytest.approx(1.0, abs=1e-3)
    spec = load_workload(wl()).training.sequences
    ring, dcp = cp_stats(spec, 65536, 8, "ring"), cp_stats(spec, 65536, 8, "dcp")
    assert dcp.imbalance < ring.imbalance and dcp.kv_tokens < ring.kv_tokens


def test_default_ring_unchanged_by_explicit_kind():
    a = parplan.estimate("llama3-8b", CL, "tp=1,pp=1,cp=8,mbs=1,zero=1,recompute=selective", seq_len=65536,
                         global_batch=16)
    b = parplan.estimate("llama3-8b", CL, "tp=1,pp=1,cp=8,mbs=1,zero=1,recompute=selective,cp_kind=ring",
                         seq_len=65536, global_batch=16)
    assert a.step_time_s == b.step_time_s


def test_document_mask_is_cheaper_than_causal_and_breakdown_sums():
    plan = "tp=1,pp=1,cp=8,mbs=1,zero=1,recompute=selective"
    causal = parplan.estimate(wl("causal"), CL, plan)
    doc = parplan.estimate(wl("document"), CL, plan)
    assert doc.breakdown.time_s["compute_attention_s"] < causal.breakdown.time_s["compute_attention_s"]
    for e in (causal, doc, parplan.estimate(wl(), CL, plan + ",cp_kind=dcp"),
              parplan.estimate(wl(), CL, plan + ",cp_kind=hybrid")):
        assert sum(e.breakdown.time_s.values()) == pytest.approx(e.step_time_s, rel=1e-6)


@pytest.mark.parametrize("kind", ["ring", "ulysses", "hybrid", "dcp"])
def test_executor_confirms_each_layout(kind):
    w = load_workload({"model": "llama2-7b", "training": wl()["training"]})
    plan = f"tp=1,pp=1,cp=8,mbs=1,zero=1,recompute=selective,cp_kind={kind}"
    e = parplan.estimate(w, CL, plan)
    s = parplan.simulate(w, CL, plan, mode="replica")
    assert s.step_time_s == pytest.approx(e.step_time_s, rel=0.10)


def test_plan_string_writes_cp_kind_only_when_not_default():
    assert "cp_kind" not in parse_plan("dp=8,cp=8").to_string()
    assert parse_plan("dp=8,cp=8,cp_kind=dcp").to_string().endswith(",cp_kind=dcp")
    with pytest.raises(SpecError, match="cp_kind"):
        parse_plan("dp=8,cp=8,cp_kind=zigzag")


def test_ulysses_needs_heads_to_divide():
    with pytest.raises(SpecError, match="ulysses"):
        parplan.estimate("llama3-8b", CL, "tp=1,pp=1,cp=16,mbs=1,zero=1,cp_kind=ulysses", seq_len=65536,
                         global_batch=4)


def test_sliding_window_not_slower_than_document_mask():
    plan = "tp=1,pp=1,cp=8,mbs=1,zero=1,recompute=selective"
    for kind in ("ring", "hybrid", "dcp"):
        doc = parplan.estimate(wl("document"), CL, plan + f",cp_kind={kind}")
        win = parplan.estimate(wl("sliding_window(1024)"), CL, plan + f",cp_kind={kind}")
        assert win.step_time_s <= doc.step_time_s * (1 + 1e-9)


@pytest.mark.parametrize("seq, msg", [
    ({"dist": "lognormal", "median": 2048}, "sigma"),
    ({"dist": "fixed", "length": 512, "sigma": 1.0}, "sigma"),
    ({"packs": [[70000]]}, "more than seq_len"),
    ({"dist": "uniform", "min": 10, "max": 5}, "min"),
    ({"packs": [[100]], "dist": "fixed", "length": 5}, "exactly one"),
    ({"dist": "fixed", "length": 512, "bogus": 1}, "bogus"),
])
def test_sequences_schema_errors_are_one_line(seq, msg):
    with pytest.raises(SpecError) as err:
        load_workload({"model": "llama3-8b", "training": {"seq_len": 65536, "global_batch": 16, "sequences": seq}})
    assert msg in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("mask", ["sliding_window(0)", "block_sparse(1.5)", "diagonal"])
def test_bad_masks(mask):
    with pytest.raises(SpecError, match="mask|window|density"):
        load_workload(wl(mask))


def test_ring_rows_of_a_mixed_layout_search_build_no_ring_profile():
    """In a search over layouts (fixed-length sequences), ring plans are priced by the static ring element by
    element, so the layout statistics skip their per-device step profiles (cp² entries: a cp = 4096 ring would
    build 16 M of them per distinct (cp, tp)); each plan is priced alike among others and alone."""
    import numpy as np

    from parplan.hardware import load_cluster
    from parplan.models.families import cost_model
    from parplan.models.plan import Plan
    from parplan.models.plan_arrays import PlanArrays
    from parplan.workloads import load_workload

    w, c = load_workload("llama3-8b", seq_len=16384), load_cluster("h100-16384")
    plans = [Plan(dp=4, tp=1, pp=1, cp=4096, mbs=1, vpp=1, zero=1, recompute="none", sp=False),
             Plan(dp=2048, tp=1, pp=1, cp=8, mbs=1, vpp=1, zero=1, recompute="none", sp=False, cp_kind="ulysses")]
    model = cost_model(w)
    res = model.evaluate_workload(w, c, PlanArrays.from_plans(plans))
    alone = [float(model.evaluate_workload(w, c, PlanArrays.from_plans([p]))["step_time_s"][0]) for p in plans]
    assert np.allclose(res["step_time_s"], alone, rtol=1e-12)
