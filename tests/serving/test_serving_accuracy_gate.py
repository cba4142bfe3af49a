"""Regression gate of the serving model's accuracy against the published inference runs (benchmarks/
serving_accuracy.py, leave-one-source-out): today's figures are ceilings it may not exceed; the issue-12 target of
15 % MAPE is asserted where met and a strict xfail where not yet (it must start failing the day it is met, so the
xfail is then turned into an assertion)."""
from __future__ import annotations

import io

import pytest
from rich.console import Console

TARGET = 15.0  # issue 12: MAPE ≤ 15 % on throughput and first-token latency
# ceilings: the figures of the commit that added this gate (throughput LOSO 12.5 %, balanced 12.7 %; TTFT 15.9 %),
# TTFT re-based once to 16.6 % when the collective curves were made monotone in message size (a physics invariant:
# the interpolation had priced some small all-reduces below smaller ones, which the 128-token prompts' TP
# all-reduces had benefited from) — a correction of the kernel layer, not of the serving model
CEILING = {"throughput": {"mape_pct": 12.6, "balanced_mape_pct": 12.8},
           "ttft": {"mape_pct": 16.7, "balanced_mape_pct": 16.7}}


@pytest.fixture(scope="module")
def acc():
    from serving_accuracy import run

    return run([], console=Console(file=io.StringIO(), width=200))


@pytest.mark.parametrize("metric", ["throughput", "ttft"])
def test_leave_one_source_out_mape_never_exceeds_todays(acc, metric):
    s = acc["summary"][metric]
    for k, ceiling in CEILING[metric].items():
        assert s[k] <= ceiling, f"{metric} {k} {s[k]:.2f} % > {ceiling} %"


def test_every_row_predicted_and_the_catalog_holds_the_all_source_fit(acc):
    assert acc["coverage"] == 1.0 and not acc["skipped"]
    assert acc["terms_match_catalog"], f"serving.yaml trtllm-0.6 differs from the fit {acc['terms']}"
    # the fit may not be per source: one value per term, and the held-out fits are separate values
    assert set(acc["loso_terms"]) == {"I01", "I02"}
    assert all(set(t) == set(acc["terms"]) for t in acc["loso_terms"].values())


def test_throughput_meets_the_target(acc):
    s = acc["summary"]["throughput"]
    assert s["mape_pct"] <= TARGET and s["balanced_mape_pct"] <= TARGET


@pytest.mark.xfail(strict=True, reason="TTFT LOSO MAPE 16.6 %: H100 fp8 prompts of 128 tokens run 28-44 % slower "
                   "than priced (see the harness's worst rows)")
def test_first_token_latency_meets_the_target(acc):
    s = acc["summary"]["ttft"]
    assert s["mape_pct"] <= TARGET and s["balanced_mape_pct"] <= TARGET


def test_worst_rows_are_explained(acc):
    for m in ("throughput", "ttft"):
        for t in acc["summary"][m]["ranked"][:4]:
            assert t["why"] != "no known omission", t["row_id"]
