"""Family inputs inside their types that the models could not price are refused at load, naming the key: they
printed negative or infinite results that check PASSed, divided by zero, allocated gigabytes, or validated nothing."""
from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
CLUSTER = {"name": "cecpa-50", "kind": "edge-cluster", "source": "test: three boards and a server over a WAN",
           "devices": [{"device": "jetson-nano", "count": 3, "ids": ["edge-0", "edge-1", "edge-2"], "network": "gige"},
                       {"device": "cloud-server-t4", "ids": ["cloud"], "network": "gige"}],
           "links": [{"between": ["jetson-nano", "cloud-server-t4"],
                      "network": {"name": "wan-50", "bandwidth": "50 Mb/s", "rtt": "20 ms"}}]}


def _dag(prior_nano_s: float, others_nano_s: float = 0.008) -> dict:
    mods = [{"name": "prior", "flops": 1e6, "out_elements": 12288, "after": [], "time_s": {"jetson-nano": prior_nano_s}}]
    mods += [{"name": f"cls{i}", "flops": 1e6, "out_elements": 8, "after": ["prior"],
              "time_s": {"jetson-nano": others_nano_s, "cloud-server-t4": 0.002}} for i in range(2)]
    return {"family": "layer-chain", "name": "dag", "modules": mods, "input_elements": 1000,
            "inference": {"microbatch": 1, "requests": 10}}


def _files(tmp_path, workload, hw=CLUSTER):
    w, h = tmp_path / "w.yaml", tmp_path / "hw.yaml"
    w.write_text(yaml.safe_dump(workload), encoding="utf-8")
    h.write_text(yaml.safe_dump(hw), encoding="utf-8")
    return w, h


@pytest.mark.parametrize("doc, needle", [
    (_dag(-1.0), "modules[0].time_s"),  # check PASSed --max-step-time-s 0.05 at a total of −903 s
    (_dag(0.0, 0.0), "is 0 s"),  # a ZeroDivisionError in every verb
])
def test_module_dag_times_are_checked(tmp_path, doc, needle):
    w, h = _files(tmp_path, doc)
    for verb in ("estimate", "check"):
        r = runner.invoke(app, [verb, str(w), "--hw", str(h)])
        assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output, r.output


def test_the_valid_module_dag_still_prices(tmp_path):
    w, h = _files(tmp_path, _dag(0.01))
    assert runner.invoke(app, ["estimate", str(w), "--hw", str(h)]).exit_code == 0


def test_a_network_without_parameters_exits_2(tmp_path):
    doc = {"family": "layer-training", "name": "lt-zero", "layers": [
        {"name": "fc1", "kind": "fc", "params": 0, "flops_per_sample": 0, "in_elems": 1e-300, "out_elems": 1e-300,
         "act_elems": 0}]}
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = runner.invoke(app, ["estimate", str(w), "--hw", "v100-pcie3-8"])
    assert r.exit_code == 2 and "nothing to train" in r.output, r.output


@pytest.mark.parametrize("modes", ["99999999999D", "0D16D", "9" * 4400 + "D"])
def test_run_lengths_are_counted_before_they_are_spelled(root, modes):
    # 99999999999D allocated gigabytes then died with a MemoryError; 4,400 digits a ValueError
    r = runner.invoke(app, ["estimate", str(root / "examples/vgg16-splitbrain.yaml"), "--hw", "v100-eth10-4",
                            "--plan", f"method=hybrid,workers=4,modes={modes}"])
    assert r.exit_code == 2 and "--plan modes" in r.output, r.output


def test_a_stage_faster_than_a_nanosecond_exits_2(root, tmp_path):
    doc = yaml.safe_load((root / "examples/subtitling.yaml").read_text(encoding="utf-8"))
    doc["stages"][0]["alternatives"][0]["time"] = "5e-324 s"  # inf items/s, a negative simulated latency
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = runner.invoke(app, ["check", str(w), "--hw", "odroid-xu4"])
    assert r.exit_code == 2 and "alternatives[0].time" in r.output, r.output


def test_validate_with_nothing_simulated_is_not_a_pass(root, tmp_path):
    doc = {"family": "task-graph", "name": "big-tmfg", "kernel": {"name": "tmfg", "n": 1000000, "variant": "approx"},
           "grain": [1]}
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = runner.invoke(app, ["validate", str(w), "--hw", str(root / "examples/epyc-2s.yaml")])
    assert r.exit_code == 2 and "no case could be simulated" in r.output, r.output


def test_check_fails_when_no_plan_fits(tmp_path):
    # exit 2 said "bad input" for a valid file whose every plan overflows the hardware: a CI gate could not tell
    doc = {"family": "layer-training", "name": "lt-huge", "layers": [
        {"name": "fc1", "kind": "fc", "params": 1e9, "flops_per_sample": 2e9, "in_elems": 1e5, "out_elems": 1e4}],
        "job": {"batch_per_worker": 1000000000}}
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = runner.invoke(app, ["check", str(w), "--hw", "v100-pcie3-8"])
    assert r.exit_code == 1 and r.stdout.startswith("FAIL  no plan fits"), r.output


def test_plan_file_rule_errors_name_the_file_and_the_fault(tmp_path):
    # "stage starts at 0, expected 0" for an empty stage, and no file name
    pf = tmp_path / "pf.yaml"
    pf.write_text(yaml.safe_dump({"tp": 8, "zero": 1, "sp": True, "pipelines": [{
        "micro_batches": 128, "replicas": 1, "stages": [{"device": "a100-sxm-80gb", "layers": [0, 0]},
                                                        {"device": "h100-sxm-80gb", "layers": [0, 80]}]}]}))
    r = runner.invoke(app, ["estimate", "llama3-70b", "--hw", "mixed-h100-a100-64", "--plan-file", str(pf)])
    assert r.exit_code == 2 and "pf.yaml" in r.stderr and "hold no layer" in r.stderr, r.output


@pytest.mark.parametrize("fix, needle", [("method=admm", "not convolutional"), ("bits=8", "bits applies")])
def test_layer_training_pins_the_estimate_would_refuse_exit_2(root, fix, needle):
    # suggest recommended ADMM plans for VGG-16 that estimate then refused; bits=8 on a hybrid search held nothing
    r = runner.invoke(app, ["suggest", str(root / "examples/vgg16-splitbrain.yaml"), "--hw", "v100-eth10-4",
                            "--fix", fix])
    assert r.exit_code == 2 and needle in r.output, r.output
