"""HelixPipe (``helix=true``, ``models/helix_terms.py``): hand-derived terms, the invariants (parts sum to the step,
finite, faster hardware never slower, more memory never makes a plan not fit, helix=false plans untouched), the
plan rules through the API and the CLI, and the search's ``--fix helix=true``."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import faster
from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.hardware import load_cluster
from parplan.models.estimate import validate_plan
from parplan.models.helix_terms import LSE_BYTES
from parplan.models.plan import parse_plan
from parplan.models.training import TIME_PARTS, PlanArrays, evaluate_workload
from parplan.models.training_memory import MEMORY_PARTS
from parplan.workloads import load_workload

W = load_workload("llama2-7b", seq_len=32768, global_batch=32)
H64 = load_cluster("dgx-h100-64")
H20 = load_cluster("h20-64")
PLANS = ["dp=1,tp=8,pp=8,mbs=1,recompute=full,sp=true,helix=true",
         "dp=2,tp=4,pp=8,mbs=1,zero=1,recompute=full,sp=true,helix=true",
         "dp=4,tp=8,pp=2,mbs=2,zero=0,recompute=none,sp=true,helix=true",
         "dp=1,tp=4,pp=16,mbs=1,recompute=full,sp=false,helix=true"]


def run(w, c, plans) -> dict:
    ps = [parse_plan(p, c.n_devices) for p in plans]
    for p in ps:
        validate_plan(w, c, p)
    return evaluate_workload(w, c, PlanArrays.from_plans(ps))


def one(w, c, plan) -> dict:
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in run(w, c, [plan]).items()}


def test_parts_sum_to_the_step_and_memory_and_are_finite():
    r = run(W, H64, PLANS)
    for i in range(len(PLANS)):
        assert all(np.isfinite(np.asarray(v, dtype=float)[i]) for v in r.values())
        assert sum(r[k][i] for k in TIME_PARTS) == pytest.approx(r["step_time_s"][i], rel=1e-9)
        assert sum(r[k][i] for k in MEMORY_PARTS) == pytest.approx(r["memory_peak_bytes"][i], rel=1e-9)
        assert all(r[k][i] >= 0 for k in TIME_PARTS + MEMORY_PARTS)
        assert r["hfu"][i] <= 1.0


def test_a_plan_is_priced_alike_alone_and_among_others():
    """Helix and non-helix plans in one array: each gets its own terms (estimate and search run one formula)."""
    mixed = PLANS + [p.replace(",helix=true", "") for p in PLANS]
    r = run(W, H64, mixed)
    for i, p in enumerate(mixed):
        alone = one(W, H64, p)
        assert r["step_time_s"][i] == pytest.approx(alone["step_time_s"], rel=1e-12)
        assert r["memory_peak_bytes"][i] == pytest.approx(alone["memory_peak_bytes"], rel=1e-12)


def test_helix_false_plans_keep_the_dense_numbers():
    """A helix=false plan evaluated with helix plans beside it equals the plain dense evaluation."""
    base = [p.replace(",helix=true", "") for p in PLANS]
    plain = run(W, H64, base)
    mixed = run(W, H64, base + PLANS)
    for k in ("step_time_s", "memory_peak_bytes", "pipeline_bubble_s", "dp_comm_exposed_s"):
        assert np.array_equal(np.asarray(mixed[k])[: len(base)], np.asarray(plain[k]))


def test_fill_is_one_layer_per_stage_hand_derived():
    """m ≥ p: the bubble is (p − 1)·(F + B' + 2h), F, B' one layer's forward and backward (+ recompute), h one hop."""
    p = "dp=2,tp=8,pp=4,mbs=1,recompute=full,sp=true,helix=true"
    r = one(load_workload("llama2-7b", seq_len=32768, global_batch=16), H64, p)
    hop = r["op_helix_x_bytes"] / r["link_pp_bytes_per_s"] + r["link_pp_latency_s"]
    fill = 3 * (r["op_helix_fwd_s"] + r["op_helix_bwd_s"] + 2 * hop)
    assert r["op_helix_fill_s"] == pytest.approx(fill, rel=1e-12)
    assert r["pipeline_bubble_s"] == pytest.approx(fill, rel=1e-9)
    # 1F1B on the same layout idles (p − 1) stage slots of L/p layers each: far more than one layer's
    dense = one(load_workload("llama2-7b", seq_len=32768, global_batch=16), H64, p.replace(",helix=true", ""))
    assert dense["pipeline_bubble_s"] > 4 * r["pipeline_bubble_s"]


def test_recomputation_without_attention():
    """recompute=full replays the layer but the attention core: 0 < rc < the layer's forward, and below the dense
    full recompute (which replays the attention too); recompute=none replays nothing."""
    r = one(W, H64, PLANS[0])
    d = one(W, H64, PLANS[0].replace(",helix=true", ""))
    assert 0 < r["op_helix_rc_s"] < r["op_helix_fwd_s"]
    assert d["op_layer_recompute_s"] == pytest.approx(r["op_helix_fwd_s"], rel=1e-12)  # dense full = the forward
    assert one(W, H64, PLANS[2])["op_helix_rc_s"] == 0.0  # the dense full recompute replays the attention too
    assert r["hardware_flops_per_step"] < d["hardware_flops_per_step"]


def test_kept_bytes_hand_derived():
    """recompute=full keeps the layer input (e·T·h/t with SP), the attention output e·T·q/t and the fp32 softmax
    statistics 4·T·a/t per micro-batch and layer; FILO keeps every micro-batch's at the turn."""
    r = one(W, H64, PLANS[0])
    T, h, q, a, e, t = 32768, 4096, 4096, 32, 2.0, 8
    kept = e * T / t * h + e * T * q / t + LSE_BYTES * T * a / t
    assert r["op_helix_kept_bytes"] == pytest.approx(kept, rel=1e-12)
    m, n = 32, 4  # micro-batches, layers per stage
    assert r["activations_bytes"] >= m * n * kept


def test_working_set_is_the_dense_layer_without_recompute():
    """Under recompute=full the layer being recomputed holds the bytes the dense model keeps per layer without
    recompute (fused attention)."""
    for plan in ("dp=1,tp=8,pp=8,mbs=1,recompute=full,sp=true,helix=true",
                 "dp=2,tp=4,pp=8,mbs=2,recompute=full,sp=false,helix=true"):
        ws = one(W, H64, plan)["op_helix_working_bytes"]
        dense = one(W, H64, plan.replace("recompute=full", "recompute=none").replace(",helix=true", ""))
        assert ws == pytest.approx(dense["op_activation_bytes_per_layer"], rel=1e-12)


@st.composite
def helix_plans(draw):
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([2, 4, 8, 16]))
    dp = 64 // (tp * pp)
    s = draw(st.sampled_from([4096, 16384, 65536]))
    gb = draw(st.sampled_from([8, 16, 64]))
    mbs = draw(st.sampled_from([1, 2]))
    zero = draw(st.sampled_from([0, 1])) if dp > 1 else 0
    rc = draw(st.sampled_from(["none", "full"]))
    sp = tp > 1 and draw(st.booleans())
    k = draw(st.sampled_from([(2, 1, 1, 1), (1, 2, 1, 1), (1, 1, 2, 1), (1, 1, 1, 2), (2, 2, 2, 2)]))
    return s, gb, f"dp={dp},tp={tp},pp={pp},mbs={mbs},zero={zero},recompute={rc},sp={'true' if sp else 'false'}," \
                  f"helix=true", k


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(helix_plans())
def test_faster_hardware_never_slower_and_more_memory_never_unfits(case):
    s, gb, plan, k = case
    w = load_workload("llama2-7b", seq_len=s, global_batch=gb)
    try:
        base = one(w, H64, plan)
    except SpecError:
        return  # the batch does not split (dp·mbs does not divide it): not a helix question
    fast = one(w, faster(H64, *k), plan)
    assert fast["step_time_s"] <= base["step_time_s"] * (1 + 1e-9), (plan, k)
    more = one(w, faster(H64, memory=2.0), plan)
    assert more["fits"] >= base["fits"]
    assert sum(base[t] for t in TIME_PARTS) == pytest.approx(base["step_time_s"], rel=1e-9)


@pytest.mark.parametrize("plan, key", [
    ("dp=8,tp=8,pp=1,helix=true", "plan.pp"),
    ("dp=1,tp=8,pp=4,cp=2,helix=true", "plan.cp"),
    ("dp=1,tp=8,pp=8,vpp=2,helix=true", "plan.vpp"),
    ("dp=2,tp=4,pp=8,zero=2,helix=true", "plan.zero"),
    ("dp=1,tp=8,pp=8,recompute=selective,helix=true", "plan.recompute"),
    ("dp=1,tp=8,pp=8,first_layers=2,helix=true", "plan.first_layers"),
    ("dp=2,tp=1,pp=32,mbs=1,helix=true", None),  # pp=32 divides the layers: fine
])
def test_plan_rules(plan, key):
    p = parse_plan(plan, 64)
    if key is None:
        validate_plan(W, H64, p)
        return
    with pytest.raises(SpecError) as err:
        validate_plan(W, H64, p)
    assert err.value.key == key


def test_pp_must_divide_the_layers_and_moe_refuses():
    w = load_workload("llama2-13b", seq_len=4096, global_batch=64)  # 40 layers
    validate_plan(w, H64, parse_plan("tp=8,pp=8,helix=true", 64))  # 40 layers over 8 stages: 5 each
    with pytest.raises(SpecError, match="divide"):
        validate_plan(w, H64, parse_plan("tp=2,pp=16,helix=true", 64))
    moe = load_workload("mixtral-8x7b", seq_len=4096, global_batch=64)
    with pytest.raises(SpecError, match="dense transformers"):
        validate_plan(moe, H64, parse_plan("dp=1,tp=8,pp=8,sp=true,helix=true", 64))


def test_cli_estimate_and_errors():
    r = CliRunner().invoke(app, ["estimate", "llama2-7b", "--hw", "h20-64", "--seq-len", "131072", "--global-batch",
                                 "16", "--plan", "tp=8,pp=8,mbs=1,recompute=full,sp=true,helix=true", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert '"helix": true' in r.output
    bad = CliRunner().invoke(app, ["estimate", "llama2-7b", "--hw", "h20-64", "--plan", "tp=8,pp=8,cp=1,vpp=2,helix=true"])
    assert bad.exit_code == 2
    assert "vpp" in bad.output and "Traceback" not in bad.output


def test_search_with_helix_pinned():
    """--fix helix=true: every plan found is a helix plan that validates; the rules count what they excluded."""
    from parplan.planner.spaces import build_space

    space = build_space(W, 64, 8, fix={"helix": True}, max_mbs=2)
    assert len(space) > 0
    P = space.plans
    assert np.all(P.helix) and np.all(P.cp == 1) and np.all(P.vpp == 1) and np.all(P.pp >= 2)
    assert np.all(P.zero <= 1) and np.all(np.isin(P.recompute, (0, 2)))
    assert space.excluded_plans["helix_rows"] > 0 and space.excluded_plans["helix_cells"] > 0
    for i in range(0, len(space), max(1, len(space) // 25)):
        validate_plan(W, H64, P.plan(i))
    r = CliRunner().invoke(app, ["suggest", "llama2-7b", "--hw", "h20-64", "--seq-len", "65536", "--global-batch",
                                 "32", "--fix", "helix=true", "--top", "3", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert r.output.count('"helix": true') >= 3


def test_unsearched_pins_are_refused_not_dropped():
    r = CliRunner().invoke(app, ["suggest", "llama2-7b", "--hw", "dgx-h100-64", "--fix", "shard=2"])
    assert r.exit_code == 2
    assert "shard" in r.output and "not a search axis" in r.output


def test_reshard_pin_is_searched():
    from parplan.planner.spaces import build_space

    space = build_space(W, 64, 8, fix={"reshard": False}, max_mbs=1)
    assert len(space) > 0 and np.all(~space.plans.reshard) and np.all(space.plans.zero == 3)


@pytest.mark.parametrize("fix", [{"helix": True}, {"rotate": True}])
def test_memory_lower_bound_holds_on_pinned_spaces(fix):
    """The search prunes by a memory lower bound: it must stay ≤ the priced peak on helix and rotate plans."""
    from parplan.models.hardware_context import framework_of, hardware_context
    from parplan.planner.search import memory_lower_bound
    from parplan.planner.spaces import build_space

    w = load_workload("llama2-7b", seq_len=8192, global_batch=64)
    space = build_space(w, 64, 8, fix=fix, max_mbs=2)
    assert len(space) > 0
    lb = memory_lower_bound(w, space.plans)
    hw = hardware_context(H64.group, w.training.precision, None, framework=framework_of(w))
    from parplan.models.families import cost_model

    peak = cost_model(w).evaluate(w.model, w.training, hw, space.plans)["memory_peak_bytes"]
    assert np.all(lb <= peak * (1 + 1e-12))
