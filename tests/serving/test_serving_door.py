"""--serve reads the serve file and --deployment; the training options a serving verb does not read are refused
naming them (they were dropped: check --serve --min-tokens-per-s 1e9 PASSed at 1,484 tokens/s), and --deployment
without --serve is refused (a training search ran instead)."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
HW = "h100-sxm-80gb:1x8"


@pytest.mark.parametrize("args, flag", [
    (("check", "--min-tokens-per-s", "1e9"), "--min-tokens-per-s"),
    (("check", "--max-memory-fraction", "0.5"), "--max-memory-fraction"),
    (("check", "--min-mfu", "1"), "--min-mfu"),
    (("check", "--fix", "tp=3"), "--fix"),
    (("estimate", "--framework", "bogus"), "--framework"),
    (("estimate", "--plan-file", "missing.yaml"), "--plan-file"),
    (("suggest", "--fix", "tp=3"), "--fix"),
    (("suggest", "--objective", "bogus"), "--objective"),
    (("simulate", "--mode", "bogus"), "--mode"),
    (("simulate", "--trace", "t.json"), "--trace"),
    (("validate", "--framework", "nemo"), "--framework"),
])
def test_options_a_serving_verb_does_not_read_exit_2(root, args, flag):
    verb, *rest = args
    r = runner.invoke(app, [verb, "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"), *rest])
    assert r.exit_code == 2 and flag in r.stderr and "serving" in r.stderr, r.output


@pytest.mark.parametrize("verb", ["check", "estimate", "simulate", "validate"])
def test_a_deployment_without_serve_exits_2(verb):
    r = runner.invoke(app, [verb, "llama3-70b", "--hw", HW, "--deployment", "tp=8,batch=64"])
    assert r.exit_code == 2 and "--deployment" in r.stderr, r.output


def test_the_serving_check_still_runs(root):
    r = runner.invoke(app, ["check", "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml")])
    assert r.exit_code == 0 and r.stdout.startswith("PASS"), r.output


def test_suggested_deployment_strings_round_trip(root):
    # a one-replica row printed as "tp=8,batch=64,chunk=8192" re-parsed as 8 replicas on 64 GPUs (estimate, check and
    # export then priced or launched 8× the devices suggest reported)
    from parplan.models.serving_plan import parse_deployment
    from parplan.planner.serving_search import suggest_serving_plans
    from parplan.serving import _inputs

    w, c, s = _inputs("llama3-70b", "dgx-h100-64", str(root / "examples/serve-chat.yaml"))
    ps = suggest_serving_plans(w, c, s, top=0)
    assert any(e.deployment.n_devices < c.n_devices for e in ps.ranked)
    for e in ps.ranked:
        text = e.deployment.to_string()
        assert parse_deployment(text, c.n_devices) == e.deployment, text


def test_a_deployment_over_the_spd_budget_fails_check(root):
    # the serve file's spd_drop_budget (0 by default) was read only by the search: check PASSed spd_drop=1
    r = runner.invoke(app, ["check", "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"),
                            "--deployment", "tp=8,batch=64;spd_drop=1"])
    assert r.exit_code == 1 and "spd_drop_budget" in r.stdout, r.output


@pytest.mark.parametrize("args", [
    ("simulate", "llama3-70b", "--hw", HW, "--serve", "examples/serve-chat.yaml", "--deployment", "tp=8,batch=64",
     "--seed", "-1"),
    ("validate", "llama3-70b", "--hw", HW, "--serve", "examples/serve-chat.yaml", "--deployment", "tp=8,batch=64",
     "--seed", "-1"),
    ("suggest", "llama3-70b", "--hw", "dgx-h100-64", "--export", "vllm", "--quiet", "--top", "1"),
])
def test_former_tracebacks_exit_2(root, args):
    # numpy's ValueError on a negative seed; a KeyError for a serving engine given to training suggest --export
    r = runner.invoke(app, [str(root / a) if a.startswith("examples/") else a for a in args])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("engine, deployment, model", [
    ("sglang", "tp=8,batch=1", "llama3-70b"),
    ("vllm", "attention:1x(tp=1,batch=1)+expert:1x(ep=2);micro_batches=16", "mixtral-8x7b"),
])
def test_simulations_whose_iterations_are_priced_in_full_are_bounded(root, tmp_path, engine, deployment, model):
    # 1,000 requests at batch 1 ran past a minute: the budget counted events, not that each iteration is priced
    import yaml

    doc = yaml.safe_load((root / "examples/serve-chat.yaml").read_text(encoding="utf-8"))
    doc["engine"] = engine
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = runner.invoke(app, ["simulate", model, "--hw", HW, "--serve", str(f), "--deployment", deployment])
    assert r.exit_code == 2 and "--max-events" in r.stderr and "priced in full" in r.stderr, r.output


def test_a_deployment_that_does_not_fit_prints_no_latency(root):
    # a placeholder TTFT of 8e30 s was printed as a figure by estimate and check
    args = ["llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"), "--deployment",
            "tp=1,batch=64,replicas=8"]
    r = runner.invoke(app, ["estimate", *args])
    assert r.exit_code == 0 and "does not fit" in r.stdout and "e+30" not in r.stdout and "00000000" not in r.stdout
    r = runner.invoke(app, ["check", *args])
    assert r.exit_code == 1 and "FAIL fits" in r.stdout and "e+30" not in r.stdout, r.output
    import json

    rec = json.loads(runner.invoke(app, ["estimate", *args, "--format", "json"]).stdout)["plans"][0]
    assert rec["ttft_p50_s"] is None and rec["tokens_per_s"] is None


@pytest.mark.parametrize("deployment, needle", [("tp=1,batch=64,replicas=8", "does not fit"),
                                                ("tp=8,batch=64,chunk=1", "--max-num-batched-tokens")])
def test_export_refuses_launchers_that_cannot_start(root, deployment, needle):
    r = runner.invoke(app, ["export", "llama3-70b", "--hw", HW, "--serve", str(root / "examples/serve-chat.yaml"),
                            "--deployment", deployment, "--to", "vllm"])
    assert r.exit_code == 2 and needle in r.stderr, r.output


def test_one_output_token_has_no_time_per_output_token(tmp_path):
    # validate printed "+inf %" for TPOT (the simulator has none), and check judged a TPOT SLO on a decode never run
    import yaml

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"isl": 2048, "osl": 1, "concurrency": 8, "slo": {"tpot_s": 0.05}}), encoding="utf-8")
    args = ["llama3-70b", "--hw", HW, "--serve", str(f), "--deployment", "tp=8,batch=64"]
    r = runner.invoke(app, ["validate", *args, "--requests", "100"])
    assert "no decode (osl 1)" in r.stdout and "inf" not in r.stdout, r.output
    assert runner.invoke(app, ["check", *args]).exit_code == 0


def test_a_deployment_knob_given_twice_exits_2():
    from parplan.errors import SpecError
    from parplan.models.serving_plan import parse_deployment

    with pytest.raises(SpecError, match="given twice"):  # the last one silently won
        parse_deployment("tp=8,batch=64;spd_drop=0.5;spd_drop=0", 8)


def test_the_memory_floor_advice_counts_the_expert_pool(root):
    # "the smallest weight share is 4.2 GiB of 80 GiB": the attention pool's share of an af pair whose expert pool
    # needs ~541 GiB per device
    r = runner.invoke(app, ["suggest", "deepseek-v3", "--hw", "h100-sxm-80gb:2x8", "--serve",
                            str(root / "examples/serve-chat.yaml"), "--top", "1", "--quiet"])
    line = next(x for x in r.output.splitlines() if "smallest weight share" in x)
    share = float(line.split("smallest weight share is ")[1].split(" GiB")[0])
    assert share > 40.0, line
