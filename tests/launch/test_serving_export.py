"""Serving exports an engine cannot launch are refused with one line naming the knob and what it could launch;
`parplan export --serve … --deployment … --to vllm|sglang|trtllm` through typer's CliRunner, training exports
unchanged."""
from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.launch.export import export_serving
from test_serving_export_golden import SERVE

runner = CliRunner()


def refused(workload, deployment, to, serve=SERVE, cluster="dgx-h100-64") -> str:
    with pytest.raises(SpecError) as e:
        export_serving(workload, cluster, serve, deployment, to)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("to", ["vllm", "sglang", "trtllm"])
def test_every_engine_refuses_research_knobs(to):
    # MegaScale-Infer attention/FFN disaggregation, SPD's dropped syncs, MixServe's fused AR+A2A
    msg = refused("mixtral-8x7b", "attention:2x(tp=4,dp=2,batch=256)+expert:1x(ep=8);micro_batches=2", to)
    assert "af-disaggregated" in msg and "expressible:" in msg
    assert "spd_drop=0.5" in refused("llama3-70b", "tp=8,batch=64;spd_drop=0.5", to)
    assert "fused=true" in refused("mixtral-8x7b", "tp=8,ep=8;fused=true", to)
    assert "ep=2" in refused("llama3-70b", "tp=8,ep=2", to)  # a dense model has no experts
    fp8_act = {**SERVE, "precision": {"weights": "bf16", "activations": "fp8", "kv_cache": "bf16"}}
    assert "activations=fp8" in refused("llama3-70b", "tp=8", to, fp8_act)


def test_vllm_expert_group_is_tp_times_dp():
    msg = refused("mixtral-8x7b", "tp=2,dp=4,ep=4", "vllm")
    assert msg.startswith("deployment.ep: vLLM cannot express ep=4") and "expressible: ep=1 or ep=8" in msg


def test_trtllm_attention_dp_is_over_all_ranks():
    msg = refused("mixtral-8x7b", "tp=2,dp=4,ep=8", "trtllm")
    assert "dp=4 with tp=2" in msg and "expressible: tp=1,dp=8 or tp=8,dp=1" in msg
    assert "dp=8" in refused("llama3-70b", "tp=1,dp=8", "trtllm")  # dense: the FFN would stay sharded


def test_placement_and_cluster_refusals():
    assert "whole nodes" in refused("llama3-405b", "tp=4,pp=3,batch=64,replicas=1", "vllm")
    assert "device groups" in refused("llama2-13b", "tp=8", "vllm", cluster="mixed-h100-a100-64")
    with pytest.raises(SpecError, match="allowed: vllm, sglang, trtllm"):
        export_serving("llama3-70b", "dgx-h100-64", SERVE, "tp=8", "jax")


def test_serving_engine_follows_the_target():
    cfg = export_serving("llama3-70b", "dgx-h100-64", {**SERVE, "engine": "vllm"}, "tp=8", "sglang")
    assert "# note: serving.engine vllm → sglang" in cfg.text


def invoke(*args):
    return runner.invoke(app, list(args))


def test_cli_serving_export_to_stdout(tmp_path):
    serve = tmp_path / "serve.yaml"
    serve.write_text(yaml.safe_dump(SERVE))
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--serve", str(serve), "--deployment",
               "tp=8,batch=64,chunk=2048", "--to", "vllm")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("#!/usr/bin/env bash") and "vllm serve" in r.stdout
    assert "# parplan deployment: tp=8,batch=64,chunk=2048,replicas=8" in r.stdout


def test_cli_serving_export_to_file(tmp_path):
    serve, out = tmp_path / "serve.yaml", tmp_path / "run.sh"
    serve.write_text(yaml.safe_dump(SERVE))
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--serve", str(serve), "--deployment",
               "prefill:2x(tp=4)+decode:1x(tp=8,batch=128)", "--to", "trtllm", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert r.stdout == "" and r.stderr.startswith(f"wrote {out}: TensorRT-LLM launch script")
    assert out.stat().st_mode & 0o100 and "trtllm-serve disaggregated" in out.read_text()


@pytest.mark.parametrize("args,words", [
    (["--deployment", "tp=8", "--to", "vllm"], "needs --serve"),
    (["--serve", "SERVE", "--to", "sglang"], "needs --deployment"),
    (["--serve", "SERVE", "--deployment", "tp=8", "--to", "megatron"], "is a training framework"),
    (["--serve", "SERVE", "--deployment", "tp=8", "--to", "vllm", "--plan", "tp=8"], "--plan is a training plan"),
    (["--serve", "SERVE", "--deployment", "tp=8", "--to", "vllm", "--seq-len", "4096"], "--seq-len sets"),
    (["--serve", "SERVE", "--deployment", "tp=8;spd_drop=0.5", "--to", "vllm"], "vLLM cannot express spd_drop"),
    (["--to", "megatron"], "a training export needs --plan"),
])
def test_cli_usage_errors_are_one_line(tmp_path, args, words):
    serve = tmp_path / "serve.yaml"
    serve.write_text(yaml.safe_dump(SERVE))
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", *[str(serve) if a == "SERVE" else a for a in args])
    assert r.exit_code == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and words in lines[0], r.stderr


def test_cli_training_export_unchanged():
    r = invoke("export", "llama3-70b", "--hw", "dgx-h100-64", "--plan", "tp=8,pp=4,vpp=5,mbs=1,zero=1", "--to",
               "megatron")
    assert r.exit_code == 0, r.output
    assert "--tensor-model-parallel-size 8" in r.stdout
