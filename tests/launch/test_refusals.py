"""Plans a framework cannot launch (its catalog profile says so) or cannot express in its launch arguments are
refused with a one-line SpecError that names the knob and what would be expressible."""
from __future__ import annotations

import pytest

from parplan.errors import SpecError
from parplan.launch import LaunchConfig, export_plan
from parplan.launch.common import TARGETS
from parplan.models.framework import get_framework
from parplan.models.plan import parse_plan

L70 = ("llama3-70b", "dgx-h100-64")
MIX = ("mixtral-8x7b", "dgx-h100-64")


def refused(workload, cluster, plan, to) -> str:
    with pytest.raises(SpecError) as e:
        export_plan(workload, cluster, plan, to)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("plan,to,words", [
    # catalog profiles (catalogs/frameworks/*.yaml): the export refuses what the framework cannot launch
    ("tp=8,pp=4,vpp=5,mbs=1,zero=1", "deepspeed", "interleaved pipeline stages (vpp=5)"),
    ("tp=8,pp=4,mbs=1,zero=1,sp=true", "deepspeed", "no sequence parallelism"),
    ("tp=8,pp=4,mbs=1,zero=1,sp=true", "torchtitan", "no zero=1"),
    ("tp=8,pp=4,mbs=1,zero=2,sp=true", "maxtext", "no zero=2"),
    ("tp=8,pp=4,mbs=1,zero=3,sp=true", "nemo", "no zero=3"),
    ("tp=8,pp=4,mbs=1,zero=1,sp=true,first_layers=18,last_layers=18", "maxtext", "explicit pipeline split"),
    ("tp=8,pp=4,mbs=1,zero=1,recompute=selective", "deepspeed", "no recompute=selective"),
])
def test_catalog_refusals(plan, to, words):
    msg = refused(*L70, plan, to)
    assert words in msg and "cannot launch" in msg


def test_recompute_modules_outside_megatron_core_and_nemo():
    plan = "tp=2,pp=2,ep=8,mbs=1,zero=3,recompute=modules,sp=true"
    assert "no recompute=modules" in refused(*MIX, plan, "torchtitan")
    assert "no recompute=modules" in refused(*MIX, plan, "maxtext")
    assert isinstance(export_plan(*MIX, "tp=2,pp=2,ep=8,mbs=1,zero=1,recompute=modules,sp=true", "nemo"), LaunchConfig)


def test_deepspeed_context_parallelism_is_ulysses_without_tp_or_pp():
    # the ring layout is not DeepSpeed's (its sequence parallelism is Ulysses): refused, naming what is expressible
    msg = refused(*L70, "tp=1,pp=1,cp=2,mbs=1,zero=1,cp_kind=ring", "deepspeed")
    assert "no cp_kind=ring (launches ulysses)" in msg
    # Ulysses beside tensor parallelism: Megatron-DeepSpeed cannot run it (docs/_tutorials/ds-sequence.md)
    assert "incompatible with Megatron-LM's tensor or pipeline parallelism" in refused(
        *L70, "tp=8,pp=1,cp=2,mbs=1,zero=1,cp_kind=ulysses", "deepspeed")
    # Ulysses alone: written as --ds-sequence-parallel-size
    cfg = export_plan(*L70, "tp=1,pp=1,cp=2,mbs=1,zero=1,cp_kind=ulysses", "deepspeed")
    assert "--ds-sequence-parallel-size 2" in cfg.text


@pytest.mark.parametrize("to,precision", [("deepspeed", "fp8"), ("torchtitan", "fp16"), ("nemo", "nvfp4"),
                                          ("megatron", "int8")])
def test_precision_refusals(to, precision):
    from parplan.workloads.loader import load_workload

    w = load_workload("llama3-8b", precision=precision)
    plan = {"deepspeed": "tp=1,mbs=1,zero=1", "torchtitan": "tp=1,mbs=1,zero=3", "nemo": "tp=1,mbs=1,zero=1",
            "megatron": "tp=1,mbs=1,zero=1"}[to]
    msg = refused(w, "dgx-h100-64", plan, to)
    assert f"precision={precision}" in msg and "expressible:" in msg


def test_torchtitan_uneven_split_with_interleaving():
    msg = refused(*L70, "tp=8,pp=2,vpp=41,mbs=1,zero=3,sp=true,embed_as_layer=true,loss_as_layer=true", "torchtitan")
    assert "vpp>1" in msg and "expressible:" in msg


def test_maxtext_expert_axis_must_divide_dp():
    # ep folded over dp·cp (dp=4, cp=2, ep=8): MaxText's expert axis sits beside the data axes
    msg = refused(*MIX, "tp=2,pp=4,cp=2,ep=8,mbs=1,zero=3,sp=true,recompute=full", "maxtext")
    assert "ep=8" in msg and "expressible:" in msg


def test_megatron_reshard_false_with_hybrid_shard():
    msg = refused("llama3-8b", "dgx-h100-64", "tp=1,mbs=1,zero=3,reshard=false,shard=8", "megatron")
    assert "reshard=false" in msg and "expressible:" in msg


def test_unknown_target():
    with pytest.raises(SpecError, match="allowed: megatron, nemo, torchtitan, deepspeed, maxtext"):
        export_plan(*L70, "tp=8,pp=4", "jax")


def test_multi_group_cluster_refused():
    with pytest.raises(SpecError):
        export_plan("llama3-8b", "mixed-h100-a100-64", "tp=1,mbs=1", "megatron")


@pytest.mark.parametrize("to", list(TARGETS))
def test_export_never_accepts_what_the_profile_rules_out(to):
    """For a sweep of plans: every accepted export is a plan the target's catalog profile can launch."""
    from parplan.workloads.loader import load_workload

    w = load_workload("llama3-8b", framework=TARGETS[to])
    fw = get_framework(TARGETS[to])
    for text in ("tp=1,mbs=1,zero=0", "tp=1,mbs=1,zero=1", "tp=2,mbs=1,zero=3,sp=true", "tp=8,pp=2,mbs=1,zero=1",
                 "tp=4,pp=2,vpp=2,mbs=1,zero=3,sp=true", "tp=8,cp=2,mbs=1,zero=1,sp=true",
                 "tp=8,mbs=1,zero=0,recompute=full"):
        plan = parse_plan(text, 64)
        try:
            export_plan(w, "dgx-h100-64", plan, to)
        except SpecError:
            continue
        assert fw.plan_reasons(plan, 8, w) == [], (to, text)


def test_the_context_parallel_layout_is_written_or_refused_never_dropped():
    """cp_kind=ulysses becomes Megatron-Core's --cp-comm-type a2a (the ring is p2p); where an export cannot write
    the layout (DCP anywhere, Ulysses outside Megatron) it refuses, naming cp_kind."""
    import pytest as _pytest

    from parplan.errors import SpecError
    from parplan.launch import export_plan

    plan = "dp=32,tp=1,pp=1,cp=2,mbs=1,zero=1,recompute=selective,sp=false,cp_kind=ulysses"
    assert "--cp-comm-type a2a" in export_plan("llama3-8b", "dgx-h100-64", plan, "megatron").text
    assert "--cp-comm-type p2p" in export_plan("llama3-8b", "dgx-h100-64", plan.replace(",cp_kind=ulysses", ""),
                                               "megatron").text
    for to, kind, zero in (("megatron", "dcp", 1), ("nemo", "ulysses", 1), ("torchtitan", "ulysses", 3)):
        with _pytest.raises(SpecError, match="cp_kind"):
            export_plan("llama3-8b", "dgx-h100-64", plan.replace("ulysses", kind).replace("zero=1", f"zero={zero}"), to)
