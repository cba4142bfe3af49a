"""Values inside a field's type but outside what the model can price are refused with the key named (they printed
inf, 300-digit numbers or negative times, or crashed the executor)."""
from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()


def invoke(*args):
    r = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    return r


@pytest.mark.parametrize("args, needle", [
    (("suggest", "llama3-8b", "--hw", "dgx-h100-64", "--price-per-hour", "1e308", "--objective", "cost"),
     "--price-per-hour"),  # every plan cost inf $/Mtok and the cost ranking put 2 %-MFU plans first
    (("sweep", "--models", "llama3-8b", "--hw", "dgx-h100-64", "--sizes", "8", "--price-per-hour", "1e308"),
     "--price-per-hour"),
    (("simulate", "llama3-8b", "--hw", "dgx-h100-64", "--plan", "tp=1,pp=1", "--slowdown", "0=1e308"),
     "--slowdown"),  # an IndexError in the executor's analysis
])
def test_huge_options_exit_2(args, needle, tmp_path):
    if args[0] == "sweep":
        args = args + ("-o", tmp_path / "s.csv")
    r = invoke(*args)
    assert r.exit_code == 2 and needle in r.stderr, r.output


def _edited(root, tmp_path, example, edit):
    doc = yaml.safe_load((root / "examples" / example).read_text(encoding="utf-8"))
    edit(doc)
    f = tmp_path / example
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return f


def test_a_vanishing_offered_load_exits_2(root, tmp_path):
    f = _edited(root, tmp_path, "kv-store.yaml", lambda d: d["clients"].update(offered_load=1e-320))
    r = invoke("estimate", f, "--hw", "smr-3x-16c-10gbe", "--plan", "scheme=psmr,threads=16,rings=1,batch=32")
    assert r.exit_code == 2 and "clients.offered_load" in r.stderr, r.output


@pytest.mark.parametrize("screen", [[-1920, 1080], [0, 0], [100000000000, 1080]])
def test_a_screen_outside_any_display_exits_2(root, tmp_path, screen):
    f = _edited(root, tmp_path, "offload-heritage.yaml", lambda d: d["heritage"].update(screen=screen))
    r = invoke("estimate", f, "--hw", "heritage-rtx4090")
    assert r.exit_code == 2 and "heritage.screen" in r.stderr, r.output


@pytest.mark.parametrize("args", [
    ("estimate", "examples/mandelbrot-offload.yaml", "--hw", "caf-k40-phi", "--plan", "place=cpu,place=tesla-k40"),
    ("estimate", "examples/dit-flux-64k.yaml", "--hw", "h100-sxm-80gb:2x8", "--plan", "tp=1,tp=2"),
    ("suggest", "examples/kv-store.yaml", "--hw", "smr-3x-16c-10gbe", "--fix", "threads=4", "--fix", "threads=16"),
])
def test_a_key_given_twice_exits_2(root, args):
    # the last value silently won
    r = invoke(*[root / a if a.startswith("examples/") else a for a in args])
    assert r.exit_code == 2 and "given twice" in r.stderr, r.output


def test_searched_thread_counts_beyond_the_replica_exit_2_naming_the_file_key(root, tmp_path):
    # check turned the unrunnable best row into a --plan the user never gave, and blamed --plan
    f = _edited(root, tmp_path, "kv-store.yaml", lambda d: d["search"].update(threads=[256]))
    for verb in ("check", "suggest"):
        r = invoke(verb, f, "--hw", "smr-3x-16c-10gbe")
        assert r.exit_code == 2 and "search.threads" in r.stderr, r.output


@pytest.mark.parametrize("where, edit", [
    ("slo.tpot_s", lambda d: d.setdefault("slo", {}).update(tpot_s=True)),  # a 1 s SLO
    ("spd_drop_budget", lambda d: d.update(spd_drop_budget=True)),  # every TP sync may drop
])
def test_a_yaml_boolean_where_a_number_belongs_exits_2(root, tmp_path, where, edit):
    f = _edited(root, tmp_path, "serve-chat.yaml", edit)
    r = invoke("estimate", "llama3-70b", "--hw", "h100-sxm-80gb:1x8", "--serve", f, "--deployment", "tp=8,batch=64")
    assert r.exit_code == 2 and where in r.stderr and "expected a number" in r.stderr, r.output


def test_a_yaml_boolean_for_the_expert_imbalance_exits_2(root, tmp_path):
    f = _edited(root, tmp_path, "mixtral-8x7b.yaml", lambda d: d["training"].update(expert_imbalance=True))
    r = invoke("estimate", f, "--hw", root / "examples/cluster-h100-64.yaml", "--plan", "ep=8")
    assert r.exit_code == 2 and "training.expert_imbalance" in r.stderr, r.output


def test_a_process_network_fix_of_an_unknown_stage_exits_2(root):
    # the typo pinned nothing and check PASSed the unpinned best
    for verb in ("suggest", "check"):
        r = invoke(verb, root / "examples/subtitling.yaml", "--hw", "odroid-xu4", "--fix", "speech_to_text=dnn")
        assert r.exit_code == 2 and "unknown stage" in r.stderr, r.output


def test_an_output_that_cannot_be_written_names_it():
    # "error: : No space left on device"
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    r = invoke("estimate", "llama3-8b", "--hw", "dgx-h100-64", "--plan", "tp=8", "-o", "/dev/full")
    assert r.exit_code == 2 and "--output: cannot write '/dev/full'" in r.stderr, r.output


@pytest.mark.parametrize("option, value", [("--seq-len", "0"), ("--global-batch", "-64")])
def test_overrides_are_judged_as_options(root, option, value):
    # reported at a line of the workload file ("llama3-70b.yaml:4:3: training.seq_len"), which said 8192
    r = invoke("estimate", root / "examples/llama3-70b.yaml", "--hw", root / "examples/cluster-h100-64.yaml",
               "--plan", "tp=8", option, value)
    assert r.exit_code == 2 and r.stderr.startswith(f"error: {option}:"), r.output


def test_a_serving_precision_the_device_lacks_names_the_serve_key(root):
    r = invoke("estimate", "llama3-70b", "--hw", "v100-nvlink-8", "--serve", root / "examples/serve-chat.yaml",
               "--deployment", "tp=8,batch=64")
    assert r.exit_code == 2 and "precision.activations" in r.stderr and "training." not in r.stderr, r.output


@pytest.mark.parametrize("text", ["", "{}\n"])
@pytest.mark.parametrize("verb", ["estimate", "simulate"])
def test_a_broken_workload_file_is_reported_before_the_missing_plan(tmp_path, text, verb):
    f = tmp_path / "w.yaml"
    f.write_text(text, encoding="utf-8")
    r = invoke(verb, f, "--hw", "dgx-h100-64")
    assert r.exit_code == 2 and "w.yaml" in r.stderr and "--plan" not in r.stderr.split(":")[1], r.output


@pytest.mark.parametrize("args", [
    ("export", "examples/kv-store.yaml", "--hw", "smr-3x-16c-10gbe", "--plan", "scheme=psmr", "--to", "megatron"),
    ("sweep", "--models", "examples/dit-flux-64k.yaml", "--hw", "h100-sxm-80gb:2x8", "--quiet"),
])
def test_another_familys_file_in_a_transformer_command_says_so(root, tmp_path, args):
    # "unknown key 'family' (allowed: architecture, hf_config, model, name, training)"
    args = tuple(str(root / a) if a.startswith("examples/") else a for a in args)
    if args[0] == "sweep":
        args += ("-o", str(tmp_path / "s.csv"))
    r = invoke(*args)
    assert r.exit_code == 2 and "this command plans transformer workloads" in r.stderr, r.output


def test_a_token_budget_beyond_any_run_exits_2():
    r = invoke("suggest", "llama3-8b", "--hw", "dgx-h100-64", "--objective", "time-to-train", "--token-budget", "1e30T")
    assert r.exit_code == 2 and "--token-budget" in r.stderr, r.output


@pytest.mark.parametrize("args", [
    ("suggest", "examples/kv-store.yaml", "--hw", "smr-3x-16c-10gbe", "--fix", "threads=1_6"),
    ("estimate", "examples/kv-store.yaml", "--hw", "smr-3x-16c-10gbe", "--plan", "threads=\u0663"),
    ("estimate", "examples/kv-store.yaml", "--hw", "smr-3x-16c-10gbe", "--plan", "threads=\uff11\uff16"),
])
def test_numbers_are_ascii_digits(root, args):
    # int() read "1_6" as 16, the Arabic-Indic three as 3 and full-width 16 as 16
    r = invoke(*[str(root / a) if a.startswith("examples/") else a for a in args])
    assert r.exit_code == 2, r.output


@pytest.mark.parametrize("ident, folder", [("c6678", "hardware/dsps"), ("epyc-7763", "hardware/cpus"),
                                           ("odroid-xu4", "platforms"), ("pipeedge-vit-base", "layerchains")])
def test_catalog_show_prints_the_family_entries_catalog_list_names(ident, folder):
    # "unknown catalog id 'c6678'; see `parplan catalog list`", which lists it
    r = invoke("catalog", "show", ident)
    assert r.exit_code == 0 and r.stdout.startswith(f"# {folder}/{ident}.yaml"), r.output
