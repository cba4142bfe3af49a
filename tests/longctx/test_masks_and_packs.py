"""Model FLOPs under document masks, the packs' drawing at numpy speed, and the bound on drawn token positions."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.models import longctx

runner = CliRunner()


def _workload(tmp_path, seq_len, sequences):
    doc = {"model": "llama3-8b", "training": {"seq_len": seq_len, "global_batch": 16, "precision": "bf16",
                                              "optimizer": "adam", "sequences": sequences}}
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return f


@pytest.mark.parametrize("mask", ["sliding_window(128)", "document", "block_sparse(0.01)"])
def test_masked_documents_keep_mfu_and_hfu_below_one(tmp_path, mask):
    # model FLOPs counted every (query, key) pair of a dense sample: 272.8 % MFU under a 128-token window
    f = _workload(tmp_path, 131072, {"dist": "lognormal", "median": 8192, "sigma": 1.0, "max": 131072,
                                     "mask": mask, "samples": 4})
    r = runner.invoke(app, ["estimate", str(f), "--hw", "h100-sxm-80gb:4x8", "--plan", "tp=8,cp=4,cp_kind=dcp",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    import json

    e = json.loads(r.stdout)["plans"][0]
    assert 0 < e["mfu"] <= e["hfu"] <= 1.0, (e["mfu"], e["hfu"])


def test_a_causal_mask_keeps_the_megatron_convention():
    from parplan.workloads.transformer import SequenceSpec

    class Job:
        seq_len = 4096
        sequences = SequenceSpec(dist="fixed", params=(("length", 4096),), mask="causal", mask_param=0.0)
    from parplan.models.longctx_terms import model_attention_share

    assert model_attention_share(Job) == 1.0


def _reference_pack(dist, p, rng, S):
    """The definition: 64 lengths a draw, each at least 1 and cut to what is left, the rest of the draw unused."""
    docs, left = [], S
    while left > 0:
        for ln in longctx._draw(dist, p, rng, 64):
            ln = int(min(max(ln, 1), left))
            docs.append(ln)
            left -= ln
            if left == 0:
                break
    return np.array(docs, dtype=np.int64)


@pytest.mark.parametrize("dist, p", [("fixed", {"length": 1}), ("fixed", {"length": 1000}),
                                     ("uniform", {"min": 1, "max": 3}), ("uniform", {"min": 1, "max": 5000}),
                                     ("lognormal", {"median": 800, "sigma": 1.2}),
                                     ("lognormal", {"median": 1, "sigma": 0.0}),
                                     ("empirical", {"lengths": (100, 2000, 9000), "weights": (1, 2, 3)})])
@pytest.mark.parametrize("S", [1, 63, 64, 65, 4096, 1 << 17])
def test_packs_are_those_of_drawing_64_at_a_time(dist, p, S):
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(3):  # the stream is left where the definition leaves it: the next pack is the same too
        assert np.array_equal(longctx._pack(dist, p, a, S), _reference_pack(dist, p, b, S))
    assert a.bit_generator.state == b.bit_generator.state


def test_one_token_documents_fill_a_long_pack_at_numpy_speed(tmp_path):
    # a 16M-token pack of one-token documents took one Python step per document (over 60 s); 1M tokens here
    f = _workload(tmp_path, 1 << 20, {"dist": "fixed", "length": 1})
    r = runner.invoke(app, ["estimate", str(f), "--hw", "h100-sxm-80gb:4x8", "--plan", "tp=8,cp=4,pp=1,dp=1"])
    assert r.exit_code == 0, r.output


def test_drawn_token_positions_are_bounded(tmp_path):
    f = _workload(tmp_path, 1 << 24, {"dist": "lognormal", "median": 1, "sigma": 0.5, "samples": 64})
    r = runner.invoke(app, ["estimate", str(f), "--hw", "h100-sxm-80gb:4x8", "--plan", "tp=8,cp=4,pp=1,dp=1"])
    assert r.exit_code == 2 and "training.sequences.samples" in r.output and "at most 16 samples" in r.output, r.output
