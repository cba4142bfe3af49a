"""The search space keeps only the plans the workload's framework can launch; `suggest --framework` selects it
and `--explain` counts what it excluded."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import cluster_dict
from parplan.cli.app import app
from parplan.hardware import load_cluster
from parplan.models.framework import framework_ids, get_framework
from parplan.planner import build_space
from parplan.workloads import load_workload

W70 = load_workload("llama3-70b", global_batch=128, seq_len=8192)
H100_4 = load_cluster(cluster_dict(device="h100-sxm-80gb", nodes=4, intra="nvlink4", inter="ib-ndr400"))
runner = CliRunner()
SUGGEST = ("suggest", "llama3-70b", "--hw", "dgx-h100-64", "--global-batch", "128", "--quiet")


def invoke(*args):
    r = runner.invoke(app, [str(a) for a in args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r


def space(fw: str | None = None, workload=W70):
    return build_space(workload, H100_4.n_devices, H100_4.group.devices_per_node, framework=fw)


def test_megatron_core_default_excludes_nothing_here():
    sp = space()
    assert sp.excluded_plans["framework"] == 0 and len(sp) == len(space("megatron-core"))
    assert set(np.unique(sp.plans.zero)) == {0, 1, 2, 3}


@pytest.mark.parametrize("fw", sorted(set(framework_ids()) - {"llm-foundry"}))
def test_every_plan_of_a_framework_space_is_launchable_and_the_counts_add_up(fw):
    sp, full = space(fw), space("megatron-core")
    assert 0 < len(sp) <= len(full)
    assert len(sp) + sp.excluded_plans["framework"] == len(full)  # megatron-core excludes none of these plans
    f = get_framework(fw)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(sp), size=min(200, len(sp)), replace=False):
        assert f.plan_reasons(sp.plans.plan(int(i)), 8, W70) == []
    assert f.plan_mask(sp.plans, 8, W70).all()


def test_torchtitan_space_keeps_fsdp2_ddp_and_sequence_parallel():
    P = space("torchtitan").plans
    assert set(np.unique(P.zero)) == {0, 3}
    assert np.all(P.sp[P.tp > 1])
    ddp = P.zero == 0
    assert np.all((P.tp[ddp] == 1) & (P.pp[ddp] == 1) & (P.cp[ddp] == 1) | (P.dp[ddp] == 1))
    assert "TorchTitan cannot launch them (zero level ×" in space("torchtitan").rule_text["framework"]


def test_workload_framework_drives_the_space():
    w = load_workload("llama3-70b", global_batch=128, seq_len=8192, framework="deepspeed")
    P = space(workload=w).plans
    assert not np.any((P.pp > 1) & (P.zero > 1)) and not np.any((P.tp > 1) & (P.zero == 3))
    assert not P.sp.any() and np.all(P.vpp == 1) and set(np.unique(P.recompute)) == {0, 2}
    assert len(space("megatron-core", workload=w)) > len(P)  # the argument replaces the workload's framework


def test_llm_foundry_space_is_fsdp_only():
    P = space("llm-foundry").plans
    assert np.all((P.tp == 1) & (P.pp == 1) & (P.cp == 1)) and set(np.unique(P.zero)) <= {0, 2, 3}


# --- CLI -------------------------------------------------------------------------------------------------------------
def _csv(*extra) -> pd.DataFrame:
    r = invoke(*SUGGEST, "--top", "0", "--format", "csv", *extra)
    assert r.exit_code == 0, r.output
    return pd.read_csv(io.StringIO(r.stdout))


def test_suggest_framework_ranks_only_launchable_plans():
    tt = _csv("--framework", "torchtitan")
    assert set(tt.zero) <= {0, 3} and tt[tt.tp > 1].sp.all() and len(tt) > 10
    nemo = _csv("--framework", "nemo")
    assert set(nemo.zero) <= {0, 1}
    assert len(_csv()) > max(len(tt), len(nemo))


def test_suggest_framework_explain_counts_the_excluded_plans():
    r = invoke(*SUGGEST, "--framework", "torchtitan", "--explain", "--top", "1")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stderr.splitlines() if "candidates excluded" in x)
    assert "TorchTitan cannot launch them (zero level ×" in line and "sp=false with tp>1 ×" in line


def test_suggest_framework_bad_value_is_one_line_exit_2():
    r = invoke(*SUGGEST, "--framework", "torchtitn")
    assert r.exit_code == 2
    assert r.stderr == ("error: --framework: bad value 'torchtitn' (allowed: deepspeed, llm-foundry, maxtext, "
                        "megatron-core, nemo, torchtitan); did you mean 'torchtitan'?\n")


def test_suggest_framework_with_an_impossible_pin():
    r = invoke(*SUGGEST, "--framework", "torchtitan", "--fix", "zero=1")
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: plan: no valid plan for Llama 3 70B on 64 devices with zero=1 (TorchTitan "
                               "cannot launch them (zero level ×")


def test_suggest_new_precision_is_accepted_and_bad_one_lists_it():
    r = invoke(*SUGGEST, "--precision", "fp4")
    assert r.exit_code == 2 and r.stderr.startswith(
        "error: --precision: bad value 'fp4' (allowed: fp32, fp16, bf16, fp8, mxfp8, nvfp4, int8)")


def test_suggest_framework_is_refused_on_a_multi_group_cluster():
    r = invoke("suggest", "llama2-7b", "--hw", "mixed-h100-a100-64", "--framework", "nemo", "--quiet")
    assert r.exit_code == 2 and "--framework not supported on a multi-group cluster" in r.stderr


def test_searched_layouts_are_the_frameworks_and_each_space_keeps_its_own():
    """The search enumerates exactly the context-parallel layouts some framework launches; each framework's space
    holds only its own (DeepSpeed: Ulysses; torchtitan: ring), Ulysses only where cp divides the heads per TP rank."""
    from parplan.models.framework import framework_ids
    from parplan.models.plan import CP_KINDS, RESEARCH_CP_KINDS
    from parplan.planner.space import SEARCHED_CP_KINDS

    launched = {k for f in framework_ids() for k in get_framework(f).cp_kinds}
    assert launched == set(SEARCHED_CP_KINDS) == set(CP_KINDS) - set(RESEARCH_CP_KINDS)
    w = load_workload("llama3-8b", global_batch=64, seq_len=32768)
    for fw, kinds in (("megatron-core", {0, 1}), ("deepspeed", {1}), ("torchtitan", {0})):
        P = space(fw, workload=w).plans
        multi = P.cp > 1
        assert multi.any() and set(np.unique(P.cp_kind[multi])) == kinds, fw
        uly = P.cp_kind == 1
        assert np.all((w.model.kv_heads // P.tp[uly]) % P.cp[uly] == 0)


def test_a_plan_without_a_layout_runs_the_frameworks_default():
    from parplan import estimate

    w = load_workload("llama3-8b", global_batch=64, seq_len=32768, framework="deepspeed")
    e = estimate(w, "dgx-h100-64", "tp=1,pp=1,cp=4")
    assert e.plan.cp_kind == "ulysses"
    ring = estimate(load_workload("llama3-8b", global_batch=64, seq_len=32768), "dgx-h100-64", "tp=1,pp=1,cp=4")
    assert ring.plan.cp_kind == "ring"
