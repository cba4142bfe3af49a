"""Framework profiles (catalogs/frameworks): every file loads, the schema rejects bad files with one clear line,
plan_reasons follows each framework's cited constraints, and plan_mask agrees with plan_reasons."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from parplan.catalogs import entries
from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.models.framework import (DEFAULT_FRAMEWORK, FP8_RECIPES, FrameworkFile, FrameworkProfile,
                                      framework_ids, get_framework)
from parplan.models.plan import RECOMPUTE, Plan
from parplan.spec import load_yaml_file, validate
from parplan.workloads import load_workload

W70 = load_workload("llama3-70b", global_batch=128, seq_len=8192)  # 80 layers, 64 heads, 8 kv heads
IDS = ("deepspeed", "llm-foundry", "maxtext", "megatron-core", "nemo", "torchtitan")


def reasons(fw: str, workload=W70, dpn=8, **plan) -> list[str]:
    return get_framework(fw).plan_reasons(Plan(**{"dp": 8, **plan}), dpn, workload)


# --- the catalog ---------------------------------------------------------------------------------------------------
def test_every_profile_loads_with_consistent_fields():
    assert tuple(framework_ids()) == IDS and DEFAULT_FRAMEWORK == "megatron-core"
    for i in IDS:
        f = get_framework(i)
        assert isinstance(f, FrameworkProfile) and f.id == i and len(f.source) > 20
        assert f.tp_comm_overlap in f.tp_comm_overlap_options
        assert set(f.fp8_cast_bytes_per_element) == set(f.fp8_recipes) <= set(FP8_RECIPES)
        assert (f.fp8_default_recipe is None) == (not f.fp8_recipes)
        assert f.grad_reduce_dtype in ("fp32", "bf16") and "none" in f.recompute and "full" in f.recompute
        assert f.hsdp == bool(f.hsdp_zero) and set(f.hsdp_zero) <= set(f.zero)
        assert get_framework(i) is f  # cached


def test_every_field_of_every_file_has_a_citation_comment(root):
    """Each YAML field sits under (or on the same line as) a comment: the source of the value."""
    for path in sorted((root / "catalogs" / "frameworks").glob("*.yaml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        block = None
        for n, line in enumerate(lines):
            key = line.strip().split(":")[0]
            if line.startswith(("overlaps:", "supports:", "fp8:")):
                block = line.split(":")[0]
            elif not line.startswith(" "):
                block = None
            if block and line.startswith("  ") and not line.startswith("   ") and not line.strip().startswith("#"):
                commented = "#" in line or lines[n - 1].strip().startswith("#")
                assert commented or key in ("tp_within_node", "max_mbs", "hsdp_zero", "reshard_after_forward_optional",
                                            "uneven_pp", "default_recipe", "sp", "pp", "vpp", "cp"), \
                    f"{path.name}:{n + 1}: {key} has no citation comment"


def test_cast_bytes_follow_the_documented_derivation():
    mc = get_framework("megatron-core").fp8_cast_bytes_per_element
    assert mc["delayed"] == 2 + 1  # read bf16, write fp8, amax fused
    assert mc["tensorwise"] == 2 + 2 + 1  # + an amax read pass
    assert mc["mxfp8"] == 3 + 1 / 32  # + an E8M0 scale per 32 elements
    assert mc["nvfp4"] == 2 + 2 + 0.5 + 1 / 16  # global amax pass, 4-bit payload, E4M3 scale per 16
    for i in IDS:
        f = get_framework(i)
        for r, b in f.fp8_cast_bytes_per_element.items():
            assert b == mc.get(r, b)  # the same recipe costs the same everywhere
    assert get_framework("torchtitan").fp8_cast_bytes() == 5.0  # default recipe: tensorwise
    with pytest.raises(SpecError, match="LLM Foundry has no FP8 recipe 'mxfp8'"):
        get_framework("llm-foundry").fp8_cast_bytes("mxfp8")


def test_unknown_framework_id_suggests_the_closest():
    with pytest.raises(SpecError) as e:
        get_framework("torchtitn")
    assert str(e.value) == ("unknown framework 'torchtitn' (allowed: " + ", ".join(IDS)
                            + "); did you mean 'torchtitan'?")


# --- schema errors: one line naming the file, the key and what is allowed -------------------------------------------
def _validate_text(tmp_path, text: str):
    p = tmp_path / "fw.yaml"
    p.write_text(text, encoding="utf-8")
    return validate(FrameworkFile, load_yaml_file(p), file=str(p))


def _megatron_text() -> str:
    return entries("frameworks")["megatron-core"].read_text(encoding="utf-8")


def test_schema_unknown_key_names_file_line_key_and_allowed(tmp_path):
    text = _megatron_text().replace("  dp_grad_reduce: true", "  dp_grad_reduc: true")
    with pytest.raises(SpecError) as e:
        _validate_text(tmp_path, text)
    msg = str(e.value)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "dp_grad_reduc:" in s)
    assert msg.startswith(f"{tmp_path / 'fw.yaml'}:{line}:3: overlaps: unknown key 'dp_grad_reduc' (allowed: ")
    assert "cp_comm_overlap, dp_grad_reduce, dp_param_gather" in msg and "did you mean 'dp_grad_reduce'" in msg


def test_schema_unknown_top_level_key(tmp_path):
    with pytest.raises(SpecError, match=r"unknown key 'overlap' \(allowed: attention_kernel, fp8, grad_reduce_dtype"):
        _validate_text(tmp_path, _megatron_text().replace("overlaps:", "overlap:"))


@pytest.mark.parametrize("old, new, message", [
    ("{default: wgrad, options: [none, wgrad, full]}", "{default: partial, options: [none]}",
     "overlaps.tp_comm_overlap.default: bad value 'partial' (allowed: none, wgrad, full)"),
    ("{default: wgrad, options: [none, wgrad, full]}", "{default: full, options: [none, wgrad]}",
     "default 'full' is not among options"),
    ("grad_reduce_dtype: fp32", "grad_reduce_dtype: fp16", "grad_reduce_dtype: bad value 'fp16' (allowed: fp32, bf16)"),
    ("attention_kernel: cudnn", "attention_kernel: fa4", "attention_kernel: bad value 'fa4'"),
    ("zero: [0, 1, 2, 3]", "zero: [0, 4]", "supports.zero[1]: bad value 4 (allowed: 0, 1, 2, 3)"),
    ("sp: optional", "sp: sometimes", "supports.sp: bad value 'sometimes' (allowed: optional, always-with-tp, none)"),
    ("nvfp4: 4.5625}", "nvfp4: 4.5625, rowwise: 5.0}", "cast_bytes_per_element must give exactly the recipes"),
    ("hsdp: true", "hsdp: false", "hsdp_zero lists the zero levels usable with hybrid sharding"),
    ("zero: [0, 1, 2, 3]", "zero: [0, 1]", "hsdp_zero [1, 2, 3] must be among the supported zero levels [0, 1]"),
    ("max_mbs: null", "max_mbs: 0", "supports.max_mbs: bad value 0: input should be greater than 0"),
    ("hsdp_zero: [1, 2, 3]", "hsdp_zero: [1, 2]\n  zero_x: 1", "supports: unknown key 'zero_x'"),
    ("require: {pp: 1, ep: 1}", "require: {ppp: 1}", "unknown plan key 'ppp'"),
    ("require: {pp: 1, ep: 1}", "require: {pp: many}", "pp: expected a whole number, a comparison like '>1'"),
])
def test_schema_bad_values(tmp_path, old, new, message):
    text = _megatron_text()
    assert old in text
    with pytest.raises(SpecError) as e:
        _validate_text(tmp_path, text.replace(old, new, 1))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_file_id_must_match_its_name(tmp_path, monkeypatch):
    import parplan.models.framework as fwmod

    (tmp_path / "other.yaml").write_text(_megatron_text(), encoding="utf-8")
    monkeypatch.setattr(fwmod, "entries", lambda *_: {"other": tmp_path / "other.yaml"})
    fwmod.get_framework.cache_clear()
    try:
        with pytest.raises(SpecError, match="id: id 'megatron-core' does not match the file name"):
            fwmod.get_framework("other")
    finally:
        fwmod.get_framework.cache_clear()


# --- plan_reasons: the cited constraints -----------------------------------------------------------------------------
def test_megatron_core_launches_the_usual_plans():
    assert reasons("megatron-core", tp=8, pp=4, vpp=5, zero=1, sp=True, recompute="selective") == []
    assert reasons("megatron-core", tp=4, pp=2, cp=2, zero=3) == []  # Megatron-FSDP with TP/PP/CP
    assert reasons("megatron-core", pp=3) == []  # uneven split: --pipeline-model-parallel-layout
    assert reasons("megatron-core", zero=3, reshard=False) == []  # torch-FSDP2 path
    assert reasons("megatron-core", pp=2, zero=3, reshard=False) == [
        "Megatron-Core: reshard=false runs on the torch-FSDP2 path (--use-torch-fsdp2), which rejects pipeline and "
        "expert parallelism"]


def test_nemo_accepts_vpp_and_rejects_fsdp():
    assert reasons("nemo", tp=8, pp=4, vpp=5, zero=1, sp=True) == []
    assert reasons("nemo", zero=3) == ["NeMo has no zero=3 (supports zero 0, 1)"]


def test_torchtitan_fsdp2_ddp_and_sequence_parallel():
    assert reasons("torchtitan", zero=1) == ["TorchTitan has no zero=1 (supports zero 0, 3)"]
    assert reasons("torchtitan", zero=2)[0].startswith("TorchTitan has no zero=2")
    assert reasons("torchtitan", zero=3, tp=8, pp=4, vpp=2, cp=2, sp=True, reshard=False) == []
    assert reasons("torchtitan", zero=0) == []  # 1-D DDP
    assert reasons("torchtitan", zero=0, tp=2, sp=True) == [
        "TorchTitan: DDP (zero=0) runs only as 1-D data parallelism ('DDP has not supported > 1D parallelism'); "
        "use zero=3"]
    assert reasons("torchtitan", dp=1, zero=0, cp=2)[0].startswith("TorchTitan: context parallelism shards over")
    assert reasons("torchtitan", zero=3, tp=2) == [
        "TorchTitan always shards norms and dropout over the tp ranks (sequence parallelism); use sp=true"]
    assert reasons("torchtitan", zero=3, shard=4) == []  # HSDP: 2 replicas of 4-way FSDP
    odd = load_workload("llama3-70b", global_batch=128, seq_len=8190)
    assert reasons("torchtitan", odd, zero=3, tp=2, sp=True) == [
        "TorchTitan: the sequence length must be divisible by tp × 2·cp"]


def test_maxtext_pipelines_only_even_splits():
    assert reasons("maxtext", pp=4, vpp=2, zero=3) == []  # pipeline parallelism with circular repeats
    assert reasons("maxtext", pp=3, zero=3) == ["MaxText needs layers=80 divisible by pp·vpp=3"]
    assert reasons("maxtext", pp=4, first_layers=17) == [
        "MaxText has no explicit pipeline split (first_layers, last_layers, embed_as_layer, loss_as_layer)"]
    assert reasons("maxtext", zero=2) == ["MaxText has no zero=2 (supports zero 0, 1, 3)"]
    assert reasons("maxtext", pp=3) != [] and reasons("maxtext", None, pp=3) == []  # the split needs the model


def test_deepspeed_zero_with_pipeline_and_autotp():
    assert reasons("deepspeed", zero=3) == [] and reasons("deepspeed", pp=4, zero=1) == []
    assert reasons("deepspeed", pp=4, zero=2) == ["DeepSpeed: ZeRO-2 and ZeRO-3 are incompatible with pipeline "
                                                  "parallelism"]
    assert reasons("deepspeed", tp=4, zero=3) == ["DeepSpeed: AutoTP training works with ZeRO stages 0, 1 and 2 "
                                                  "only (ZeRO-3 not supported)"]
    assert reasons("deepspeed", tp=16, dpn=8, zero=1) == ["DeepSpeed keeps tensor parallelism within a node "
                                                          "(tp=16 > 8 devices per node)"]
    assert reasons("deepspeed", tp=16, dpn=None, zero=1) == []
    assert reasons("deepspeed", tp=2, sp=True) == ["DeepSpeed has no sequence parallelism (sp=true)"]
    assert reasons("deepspeed", pp=4, vpp=2) == ["DeepSpeed has no interleaved pipeline stages (vpp=2)"]
    assert reasons("deepspeed", cp=3, zero=3)[0] == ("DeepSpeed: Ulysses splits the attention heads over the "
                                                     "sequence-parallel ranks: heads must be divisible by cp")
    assert reasons("deepspeed", recompute="selective") == ["DeepSpeed has no recompute=selective (supports none, full)"]


def test_llm_foundry_is_fsdp_only():
    assert reasons("llm-foundry", zero=3, recompute="full") == [] and reasons("llm-foundry", zero=2, shard=4) == []
    assert reasons("llm-foundry", tp=2, pp=2, cp=2, zero=1) == [
        "LLM Foundry has no zero=1 (supports zero 0, 2, 3)", "LLM Foundry has no tensor parallelism (tp=2)",
        "LLM Foundry has no pipeline parallelism (pp=2)", "LLM Foundry has no context parallelism (cp=2)"]


def test_generic_knob_consistency():
    assert reasons("megatron-core", zero=1, reshard=False) == ["reshard=false needs zero=3 (parameters sharded)"]
    assert reasons("megatron-core", zero=3, shard=3) == ["shard=3 does not divide dp·cp=8"]
    assert reasons("nemo", zero=0, shard=4) == ["NeMo hybrid-shards only with zero 1 (zero=0)"]
    assert reasons("megatron-core", zero=3, shard=8) == []  # the whole dp×cp group is not hybrid sharding


# --- plan_mask ≡ plan_reasons ---------------------------------------------------------------------------------------
V2 = {"reshard": (True, False), "shard": (0, 2, 4, 8), "first_layers": (0, 0, 17), "last_layers": (0, 0, 9),
      "embed_as_layer": (False, True), "loss_as_layer": (False, True)}
V1 = {"dp": (1, 2, 8), "tp": (1, 2, 8, 16), "pp": (1, 3, 4), "cp": (1, 2, 3), "ep": (1, 1, 2), "mbs": (1, 4),
      "vpp": (1, 2, 5), "zero": (0, 1, 2, 3), "recompute": ("none", "selective", "full"), "sp": (False, True)}


def _random_plans(n: int, seed: int, v2: bool = True) -> list[Plan]:
    rng = np.random.default_rng(seed)
    keys = {**V1, **(V2 if v2 else {})}
    return [Plan(**{k: vals[int(rng.integers(len(vals)))] for k, vals in keys.items()}) for _ in range(n)]


def _as_arrays(plans: list[Plan], v2: bool = True) -> SimpleNamespace:
    keys = [k for k in {**V1, **(V2 if v2 else {})} if k != "ep"]  # PlanArrays has no ep: it defaults to 1
    cols = {k: np.array([RECOMPUTE.index(p.recompute) if k == "recompute" else getattr(p, k) for p in plans])
            for k in keys}
    return SimpleNamespace(**cols)


@pytest.mark.parametrize("fw", IDS)
def test_plan_mask_equals_plan_reasons_on_a_random_sample(fw):
    f = get_framework(fw)
    plans = [p for p in _random_plans(1500, seed=IDS.index(fw)) if p.ep == 1]
    mask = f.plan_mask(_as_arrays(plans), n_devices_per_node=8, workload=W70)
    expect = np.array([not f.plan_reasons(p, 8, W70) for p in plans])
    assert mask.shape == (len(plans),) and np.array_equal(mask, expect)
    assert 0 < mask.sum() < len(plans)


def test_plan_mask_without_v2_fields_and_broadcast_shapes():
    f = get_framework("torchtitan")
    plans = _random_plans(300, seed=7, v2=False)
    plans = [p for p in plans if p.ep == 1]
    assert np.array_equal(f.plan_mask(_as_arrays(plans, v2=False)), [not f.plan_reasons(p) for p in plans])
    # a broadcast grid: rows × zero levels, like the planner's space
    grid = SimpleNamespace(dp=np.array([8, 8]).reshape(2, 1), tp=np.array([1, 8]).reshape(2, 1),
                           zero=np.array([0, 1, 2, 3]).reshape(1, 4), sp=np.array(True))
    assert f.plan_mask(grid).tolist() == [[True, False, False, True], [False, False, False, True]]


@settings(max_examples=150, deadline=None)
@given(fw=st.sampled_from(IDS), dp=st.sampled_from([1, 2, 4, 16]), tp=st.sampled_from([1, 2, 8, 16]),
       pp=st.sampled_from([1, 2, 3, 5]), cp=st.sampled_from([1, 2, 4]), vpp=st.sampled_from([1, 2]),
       zero=st.integers(0, 3), rc=st.sampled_from(RECOMPUTE), sp=st.booleans(), reshard=st.booleans(),
       shard=st.sampled_from([0, 2, 4]), first=st.sampled_from([0, 10]), emb=st.booleans())
def test_plan_mask_agrees_with_plan_reasons_everywhere(fw, dp, tp, pp, cp, vpp, zero, rc, sp, reshard, shard, first,
                                                       emb):
    p = Plan(dp=dp, tp=tp, pp=pp, cp=cp, vpp=vpp, zero=zero, recompute=rc, sp=sp, reshard=reshard, shard=shard,
             first_layers=first, embed_as_layer=emb)
    f = get_framework(fw)
    assert bool(f.plan_mask(_as_arrays([p]), 8, W70)[0]) == (f.plan_reasons(p, 8, W70) == [])


# --- catalog CLI -----------------------------------------------------------------------------------------------------
def test_catalog_list_and_show_frameworks():
    runner = CliRunner()
    r = runner.invoke(app, ["catalog", "list", "frameworks"])
    assert r.exit_code == 0, r.output
    for i in IDS:
        assert i in r.stdout
    assert "wgrad (none|wgrad|full)" in r.stdout and "always-with-tp" in r.stdout
    r = runner.invoke(app, ["catalog", "show", "megatron-core"])
    assert r.exit_code == 0 and r.stdout.startswith("# frameworks/megatron-core.yaml\nid: megatron-core\n")
    assert yaml.safe_load(r.stdout)["supports"]["zero"] == [0, 1, 2, 3]
    r = runner.invoke(app, ["catalog", "show", "deepsped"])
    assert r.exit_code == 2 and "did you mean 'deepspeed'" in r.stderr


@pytest.mark.parametrize("fw", IDS)
def test_recompute_modules_only_where_the_framework_has_it(fw):
    f = get_framework(fw)
    p = Plan(dp=8, tp=1, pp=1, recompute="modules")
    mask = f.plan_mask(_as_arrays([p], v2=False), n_devices_per_node=8, workload=W70)
    assert bool(mask[0]) == ("modules" in f.recompute) == (fw in ("megatron-core", "nemo"))
