"""Work budgets, option values at the door and exit codes of suggest / check / estimate / simulate / validate
(CliRunner): every refusal and bad value is one `error:` line with exit code 2, an unmet requirement exits 1;
the budgets' estimates against the real counts (plans of a space, ops and transfers of a program, heterogeneous
configurations, a partial plan's completions); `check` never passes a plan that does not fit (its property tests:
tests/planner/test_check_fits.py)."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

runner = CliRunner()
SMALL = ("llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "64")
MIXED = ("llama2-7b", "--hw", "mixed-h100-a100-v100")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(r, code: int = 2, starts: str = "error: ") -> str:
    """The result failed with ``code`` and exactly one `error:` line on stderr, no traceback; returns the line."""
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(starts), lines[0]
    return lines[0]


# --- the cases of the issue ------------------------------------------------------------------------------------------
def test_max_mbs_has_a_hard_cap():
    one_line_error(invoke("suggest", *SMALL, "--max-mbs", "1000000000"),
                   starts="error: --max-mbs: bad value 1000000000: must be between 1 and 1,024")
    assert invoke("suggest", *SMALL, "--max-mbs", "1024", "--quiet").exit_code == 0


def test_simulate_many_micro_batches_is_refused_before_building():
    line = one_line_error(invoke("simulate", "llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "16000000",
                                 "--plan", "tp=1,mbs=1"), starts="error: --max-events: ")
    assert "2,000,000 micro-batches" in line and "raise --max-events" in line
    events = int(line.split("would play ")[1].split(" ")[0].replace(",", ""))
    assert 4_000_000 < events < 4_001_000 and "above the budget of 2,000,000" in line


def test_simulate_deep_interleaving_is_refused(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: deep\narchitecture: {family: dense-transformer, layers: 4096, hidden: 256, heads: 4, "
                    "kv_heads: 4, ffn_hidden: 1024, ffn: gelu, vocab: 50304}\n"
                    "training: {seq_len: 2048, global_batch: 4096, precision: bf16, optimizer: adamw}\n")
    line = one_line_error(invoke("simulate", deep, "--hw", "dgx-h100-64", "--plan", "tp=1,pp=64,vpp=64,mbs=1"),
                          starts="error: --max-events: the interleaved step (4,096 micro-batches, pp=64, vpp=64")
    assert "100,646,976 events" in line


@pytest.mark.parametrize("top", ["1000000000000000000000000000000", "1001"])
def test_validate_top_is_capped(top):
    one_line_error(invoke("validate", *SMALL, "--top", top), starts=f"error: --top: bad value {top}: must be ≤ 1,000")


@pytest.mark.parametrize("args, start", [
    (("--target-tokens-per-s", "inf"), "error: --target-tokens-per-s: bad value inf: must be a finite number"),
    (("--target-tokens-per-s", "nan"), "error: --target-tokens-per-s: bad value nan: must be a finite number"),
    (("--target-tokens-per-s", "-1"), "error: --target-tokens-per-s: bad value -1: must be > 0"),
    (("--target-tokens-per-s", "0"), "error: --target-tokens-per-s: bad value 0: must be > 0"),
    (("--token-budget", "1e999T", "--deadline", "30d"), "error: --token-budget: bad value '1e999T': must be a finite"),
    (("--token-budget", "0", "--deadline", "30d"), "error: --token-budget: bad value '0'"),
    (("--token-budget", "15T", "--deadline", "1e999d"), "error: --deadline: bad value '1e999d': must be a finite"),
    (("--token-budget", "15T", "--deadline", "0"), "error: --deadline: bad value '0'"),
    (("--price-per-hour", "inf", "--objective", "cost"), "error: --price-per-hour: bad value inf"),
    (("--price-per-hour", "0", "--objective", "cost"), "error: --price-per-hour: bad value 0: must be in (0, 1000000.0]"),
    (("--memory-headroom", "nan"), "error: --memory-headroom: bad value nan"),
    (("--memory-headroom", "-0.1"), "error: --memory-headroom: bad value -0.1: must be between 0.0 and 0.5"),
    (("--top", "-1"), "error: --top: bad value -1: must be between 0 and 100,000"),
    (("--top", "100001"), "error: --top: bad value 100001"),
    (("--max-nodes", "0", "--target-tokens-per-s", "1e6"), "error: --max-nodes: bad value 0"),
    (("--max-nodes", "10000000", "--target-tokens-per-s", "1e6"), "error: --max-nodes: bad value 10000000"),
    (("--max-plans", "0"), "error: --max-plans: bad value 0: must be ≥ 1"),
])
def test_suggest_bad_values_at_the_door(args, start):
    one_line_error(invoke("suggest", *SMALL, *args), starts=start)


@pytest.mark.parametrize("args, start", [
    (("--min-tokens-per-s", "inf"), "error: --min-tokens-per-s: bad value inf: must be a finite number"),
    (("--min-tokens-per-s", "nan"), "error: --min-tokens-per-s: bad value nan: must be a finite number"),
    (("--min-tokens-per-s", "0"), "error: --min-tokens-per-s: bad value 0: must be > 0"),
    (("--max-step-time-s", "-1"), "error: --max-step-time-s: bad value -1: must be > 0"),
    (("--max-step-time-s", "inf"), "error: --max-step-time-s: bad value inf"),
    (("--min-mfu", "nan"), "error: --min-mfu: bad value nan"),
    (("--min-mfu", "0"), "error: --min-mfu: bad value 0: must be > 0"),
    (("--max-memory-fraction", "2"), "error: --max-memory-fraction: bad value 2: must be in (0, 1]"),
    (("--max-memory-fraction", "0"), "error: --max-memory-fraction: bad value 0: must be > 0"),
    (("--max-memory-fraction", "inf"), "error: --max-memory-fraction: bad value inf"),
    (("--max-plans", "-3"), "error: --max-plans: bad value -3"),
])
def test_check_bad_values_at_the_door(args, start):
    one_line_error(invoke("check", *SMALL, *args), starts=start)


@pytest.mark.parametrize("value, start", [
    ("nan", "error: --time-limit: bad value nan: must be a finite number"),
    ("-1", "error: --time-limit: bad value -1: must be in (0, 3,600]"),
    ("0", "error: --time-limit: bad value 0: must be in (0, 3,600]"),
    ("4000", "error: --time-limit: bad value 4000: must be in (0, 3,600]"),
])
def test_time_limit_is_checked_not_blamed_on_memory(value, start):
    one_line_error(invoke("suggest", *MIXED, "--time-limit", value), starts=start)


def test_unreachable_sizing_target_exits_1():
    r = invoke("suggest", "llama2-7b", "--hw", "dgx-a100-8", "--objective", "devices", "--target-tokens-per-s",
               "1e15", "--max-nodes", "4", "--quiet")
    assert r.exit_code == 1, r.output
    assert "sizing: no node count up to 4 reaches 1,000,000,000,000,000 tokens/s: even at 100 % MFU it needs at " \
           "least" in r.stderr and "Traceback" not in r.output
    # no node count up to --max-nodes has a valid plan at all (pp=5 needs a multiple of 5 nodes): still 1, not 2
    r = invoke("suggest", "llama2-7b", "--hw", "dgx-a100-8", "--target-tokens-per-s", "1e5", "--max-nodes", "4",
               "--fix", "pp=5", "--quiet", "--format", "json")
    assert r.exit_code == 1, r.output
    assert "sizing: no node count up to 4 reaches 100,000 tokens/s" in r.stderr
    assert json.loads(r.stdout)["plans"] == []


def test_check_never_passes_a_plan_that_does_not_fit_example():
    r = invoke("check", *SMALL, "--plan", "tp=1,mbs=8,zero=0,recompute=none", "--max-memory-fraction", "1")
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.stdout and "memory_fraction" in r.stdout


# --- exit codes, per command -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, code", [
    (("estimate", *SMALL, "--plan", "tp=1,mbs=8,zero=0,recompute=none"), 0),  # does not fit: an estimate, not an error
    (("estimate", *SMALL, "--plan", "tp=3"), 2),
    (("suggest", *SMALL, "--quiet"), 0),
    (("suggest", *SMALL, "--fix", "tp=1", "--fix", "recompute=none", "--fix", "mbs=32", "--quiet"), 1),  # nothing fits
    (("suggest", *SMALL, "--max-plans", "1000"), 2),
    (("check", *SMALL, "--min-tokens-per-s", "1"), 0),
    (("check", *SMALL, "--min-tokens-per-s", "1e12"), 1),
    (("check", *SMALL, "--max-plans", "1000"), 2),
    (("simulate", *SMALL, "--plan", "tp=2,pp=2,mbs=1"), 0),
    (("simulate", *SMALL, "--plan", "tp=2,pp=2,mbs=1", "--max-events", "10"), 2),
    (("validate", *SMALL, "--plan", "tp=2,pp=2,mbs=1"), 0),
    (("validate", *SMALL, "--plan", "tp=2,pp=2,mbs=1", "--tolerance", "1e-12"), 1),
    (("validate", *SMALL, "--plan", "tp=2,pp=2,mbs=1", "--max-events", "10"), 2),
])
def test_exit_codes(args, code):
    r = invoke(*args)
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output
    if code == 2:
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: ")


# --- plan budget -----------------------------------------------------------------------------------------------------
def test_plan_budget_refuses_naming_the_option_and_the_count():
    line = one_line_error(invoke("suggest", *SMALL, "--max-plans", "1000"), starts="error: --max-plans: ")
    from parplan.planner.spaces import build_space
    from parplan.workloads.loader import load_workload

    n = len(build_space(load_workload("llama2-7b", global_batch=64), 8, 8))
    assert f"has {n:,} plans, above the budget of 1,000" in line and "raise --max-plans" in line
    assert invoke("suggest", *SMALL, "--max-plans", str(n), "--quiet").exit_code == 0


@pytest.mark.parametrize("model, n, kw", [
    ("llama2-7b", 8, {}), ("llama3-70b", 64, {"fix": {"tp": 8}}), ("gpt3-175b", 1024, {"max_mbs": 8}),
    ("llama2-7b", 16, {"framework": "torchtitan"}), ("mixtral-8x7b", 64, {}),
])
def test_plan_count_is_exact(model, n, kw):
    import parplan.planner.space as space_mod
    from parplan.planner.budget import BudgetError
    from parplan.planner.spaces import build_space
    from parplan.workloads.loader import load_workload

    w = load_workload(model)
    real = len(build_space(w, n, 8, **kw))
    assert build_space(w, n, 8, count_only=True, **kw) == real
    assert len(build_space(w, n, 8, max_plans=real, **kw)) == real
    if real:
        with pytest.raises(BudgetError) as err:
            build_space(w, n, 8, max_plans=real - 1, **kw)
        assert err.value.key == "--max-plans" and err.value.counted == real and err.value.exact
    # chunked enumeration: the same space, whatever the chunk
    old = space_mod.CHUNK_ROWS
    try:
        space_mod.CHUNK_ROWS = 7
        small = build_space(w, n, 8, **kw)
    finally:
        space_mod.CHUNK_ROWS = old
    big = build_space(w, n, 8, **kw)
    assert np.array_equal(small.mask, big.mask) and small.excluded_plans == big.excluded_plans
    for k in ("dp", "tp", "pp", "cp", "mbs", "vpp", "zero", "recompute", "sp"):
        assert np.array_equal(getattr(small.plans, k), getattr(big.plans, k))


def test_top_zero_is_capped(monkeypatch):
    import parplan.planner.planset as planset

    monkeypatch.setattr(planset, "MAX_TOP", 100)
    one_line_error(invoke("suggest", *SMALL, "--top", "0", "--format", "csv"),
                   starts="error: --top: --top 0 reports every plan that fits")


def test_table_rows_are_capped_with_a_note(monkeypatch):
    import parplan.cli.suggest_cmd as cmd

    monkeypatch.setattr(cmd, "TABLE_ROWS", 3)
    r = invoke("suggest", *SMALL, "--top", "5", "--quiet")
    assert r.exit_code == 0, r.output
    assert "top 3 of" in r.stdout and "note: the table shows the first 3 of 5 plans" in r.stderr


def test_sizing_budget_refuses_or_degrades():
    args = ("suggest", "llama2-7b", "--hw", "dgx-a100-8", "--target-tokens-per-s", "2e7", "--max-nodes", "1000000")
    line = one_line_error(invoke(*args, "--max-plans", "100000"), starts="error: --max-plans: sizing: ")
    assert "would pass the budget of 100,000" in line
    r = invoke(*args, "--max-plans", "200000", "--quiet", "--format", "json")  # the scan below 1024 nodes stops
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)["sizing"]
    assert d["n_nodes"] == 1024 and "upper bound" in d["notes"][0]
    assert "an upper bound of the fewest" in r.stderr


def test_advice_stops_at_the_budget():
    r = invoke("suggest", "llama3-405b", "--hw", "dgx-a100-8", "--quiet", "--max-plans", "30000")
    assert r.exit_code == 1, r.output
    assert "further advice not searched" in r.stderr and "raise --max-plans" in r.stderr


def test_completion_budget_counts_every_completion(monkeypatch):
    import parplan.planner.complete as complete
    from parplan.planner.budget import COMPLETION_COST

    line = one_line_error(invoke("estimate", *SMALL, "--plan", "tp=2", "--max-plans", "100"),
                          starts="error: --max-plans: the partial plan leaves ")
    counted = int(line.split("leaves ")[1].split(" ")[0].replace(",", ""))
    tried = []
    product = itertools.product

    def counting(*grids):
        for combo in product(*grids):
            tried.append(combo)
            yield combo

    monkeypatch.setattr(complete.itertools, "product", counting)
    r = invoke("estimate", *SMALL, "--plan", "tp=2", "--max-plans", str(counted * COMPLETION_COST), "--format", "json")
    assert r.exit_code == 0, r.output
    assert len(tried) == counted


def test_hetero_configurations_are_counted_exactly():
    from parplan.hardware.catalog import load_cluster
    from parplan.planner.hetero import plan_hetero
    from parplan.workloads.loader import load_workload

    hp = plan_hetero(load_workload("llama2-7b"), load_cluster("mixed-h100-a100-v100"), baselines=False,
                     mbs_options=(1, 2, 4, 8))  # as suggest plans it (--max-mbs 32)
    assert hp.stats["configurations_estimated"] == hp.stats["configurations"] > 0
    line = one_line_error(invoke("suggest", *MIXED, "--max-configurations", "10"),
                          starts="error: --max-configurations: ")
    assert f"{hp.stats['configurations']:,} shape × knob configurations" in line


# --- event budget ----------------------------------------------------------------------------------------------------
def _built_counts(costs, schedule, replicas):
    from parplan.executor.engine import DP_GRAD, DP_PARAM, EP_A2A, P2P_BWD, P2P_FWD
    from parplan.executor.program import build_program

    built = build_program(costs, schedule, replicas, [1.0] * (replicas * costs.pp))
    kinds = built.prog.column("kind")
    return len(built.prog), sum(k in (P2P_FWD, P2P_BWD, DP_GRAD, DP_PARAM, EP_A2A) for k in kinds)


@pytest.mark.parametrize("model, hw, plan, schedule", [
    ("llama2-7b", "dgx-a100-8", "tp=2,pp=2,mbs=1,zero=1", None),
    ("llama2-7b", "dgx-a100-8", "tp=1,pp=2,vpp=2,mbs=1,zero=3", None),
    ("llama2-7b", "dgx-a100-8", "tp=1,pp=4,mbs=1,zero=2", "gpipe"),
    ("llama2-7b", "dgx-a100-8", "tp=1,pp=4,mbs=1,zero=1", "zb-h1"),
    ("llama2-70b", "dgx-h100-64", "tp=8,pp=4,mbs=1,zero=0", None),
    ("mixtral-8x7b", "dgx-h100-64", "tp=2,pp=2,ep=8,mbs=1,zero=1,sp=true", None),
    ("mixtral-8x7b", "dgx-h100-64", "tp=1,pp=4,ep=8,mbs=1,zero=1,recompute=full", "zb-h1"),
])
def test_event_estimate_is_the_built_program(model, hw, plan, schedule):
    from parplan.executor.budget import estimate_events
    from parplan.executor.families import model_costs
    from parplan.executor.schedules import default_schedule
    from parplan.hardware.catalog import load_cluster
    from parplan.models.plan import parse_plan
    from parplan.workloads.loader import load_workload

    w, c = load_workload(model, global_batch=64), load_cluster(hw)
    p = parse_plan(plan, c.n_devices)
    costs, _ = model_costs(w, c, p)
    sched = schedule or default_schedule(costs.vpp)
    for replicas in sorted({1, min(p.dp, 4)}):
        est = estimate_events(costs, sched, replicas)
        assert (est.ops, est.transfers) == _built_counts(costs, sched, replicas)
    r = invoke("simulate", model, "--hw", hw, "--global-batch", "64", "--plan", plan, "--format", "json",
               *(("--schedule", schedule) if schedule else ()))
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["totals"]["ops"] == estimate_events(costs, sched, 1).ops


def test_validate_counts_every_plan_before_simulating_any(monkeypatch):
    import importlib

    agreement = importlib.import_module("parplan.executor.agreement")
    calls = []
    monkeypatch.setattr(agreement, "compare_plan", lambda *a, **k: calls.append(a))
    line = one_line_error(invoke("validate", "llama2-7b", "--hw", "dgx-a100-8", "--global-batch", "4096",
                                 "--plan", "tp=2,pp=2,mbs=1", "--plan", "tp=1,pp=1,mbs=1", "--max-events", "5000"),
                          starts="error: --max-events: plan ")
    assert "above the budget of 5,000" in line and calls == []


def test_full_mode_falls_back_to_one_replica_within_the_budget():
    from parplan.executor.simulate import plan_events
    from parplan.hardware.catalog import load_cluster
    from parplan.models.plan import parse_plan
    from parplan.workloads.loader import load_workload

    w, c = load_workload("llama2-7b", global_batch=64), load_cluster("dgx-a100-8")
    p = parse_plan("tp=1,pp=2,mbs=1,zero=1", c.n_devices)
    one, full = plan_events(w, c, p).events, plan_events(w, c, p, replicas=p.dp).events
    assert one < full
    args = ("simulate", *SMALL, "--plan", "tp=1,pp=2,mbs=1,zero=1", "--slowdown", "0=1.5,3=1.5", "--format", "json")
    d = json.loads(invoke(*args).stdout)
    assert d["replicas_simulated"] == p.dp
    r = invoke(*args, "--max-events", str((one + full) // 2))
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["replicas_simulated"] == 1 and any("--max-events" in n for n in d["notes"])
    one_line_error(invoke(*args, "--max-events", str(one - 1)), starts="error: --max-events: ")


def test_trace_halves_the_event_budget(tmp_path):
    from parplan.executor.simulate import plan_events
    from parplan.hardware.catalog import load_cluster
    from parplan.models.plan import parse_plan
    from parplan.workloads.loader import load_workload

    w, c = load_workload("llama2-7b", global_batch=64), load_cluster("dgx-a100-8")
    n = plan_events(w, c, parse_plan("tp=2,pp=2,mbs=1", c.n_devices)).events
    args = ("simulate", *SMALL, "--plan", "tp=2,pp=2,mbs=1", "--max-events", str(n))
    assert invoke(*args).exit_code == 0
    one_line_error(invoke(*args, "--trace", tmp_path / "t.json"), starts="error: --max-events: ")
    assert invoke(*args[:-1], str(2 * n), "--trace", tmp_path / "t.json").exit_code == 0
