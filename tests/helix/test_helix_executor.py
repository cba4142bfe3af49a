"""HelixPipe in the reference executor (``executor/helix.py``): compute-only makespans derived by hand, the closed
form against the played step on plans across models, clusters, lengths and batches (time within 5 %, memory
within 1 %), the CLI, and the work budget."""
from __future__ import annotations

import random

import pytest
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.executor.agreement import compare_plan
from parplan.executor.helix import HelixCosts, build_tasks, list_schedule, simulate_helix
from parplan.hardware import load_cluster
from parplan.models.estimate import validate_plan
from parplan.models.plan import parse_plan
from parplan.workloads import load_workload


def makespan(p, m, L, F=1.0, B=2.0):
    c = HelixCosts(pp=p, micro_batches=m, layers=L, fwd=F, bwd=B, rc=0.0, tp_f=0.0, tp_b=0.0, emb_f=0.0, emb_b=0.0,
                   out_fb=0.0, x_bytes=0.0, link_bw=1e30, link_lat=0.0, kept=0.0, working=0.0, kept_last=0.0,
                   logits=0.0)
    tasks = build_tasks(c, [1.0] * p)
    start = list_schedule(tasks)
    return max(s + t.dur for s, t in zip(start, tasks))


@pytest.mark.parametrize("p, m", [(2, 2), (2, 8), (4, 4), (4, 16), (8, 8), (8, 32), (16, 16)])
def test_full_pipeline_idles_one_layer_per_stage(p, m):
    """m ≥ p, no transfers: every stage's work m·(L/p)·(F + B) plus (p − 1) layer slots of fill and drain."""
    L = 32
    assert makespan(p, m, L) == pytest.approx(m * (L // p) * 3.0 + (p - 1) * 3.0)


@pytest.mark.parametrize("p, m", [(4, 2), (8, 4), (16, 8), (8, 1)])
def test_few_micro_batches_follow_the_chain(p, m):
    """m < p: the first micro-batch's chain through all L layers and back, the others one pass behind it."""
    L = 32
    assert makespan(p, m, L) == pytest.approx(L * 1.0 + L * 2.0 + (m - 1) * 3.0)


def _random_plans(n, seed):
    rng = random.Random(seed)
    clusters = {k: load_cluster(k) for k in ("dgx-h100-64", "a100-40gb-roce-128", "mi300x-64", "h20-64")}
    out = []
    while len(out) < n:
        model = rng.choice(["llama2-7b", "llama2-13b", "llama3-8b", "mpt-7b"])
        c = clusters[rng.choice(sorted(clusters))]
        s, gb = rng.choice([2048, 8192, 32768, 131072]), rng.choice([8, 16, 32, 64])
        tp, pp = rng.choice([1, 2, 4, 8]), rng.choice([2, 4, 8, 16])
        if c.n_devices % (tp * pp):
            continue
        dp = c.n_devices // (tp * pp)
        zero = rng.choice([0, 1]) if dp > 1 else 0
        sp = tp > 1 and rng.random() < 0.7
        plan = (f"dp={dp},tp={tp},pp={pp},mbs={rng.choice([1, 2])},zero={zero},"
                f"recompute={rng.choice(['none', 'full'])},sp={'true' if sp else 'false'},helix=true")
        w = load_workload(model, seq_len=s, global_batch=gb)
        try:
            p = parse_plan(plan)
            validate_plan(w, c, p)
        except SpecError:
            continue
        out.append((w, c, p))
    return out


def test_model_agrees_with_the_executor():
    rows = [compare_plan(w, c, p) for w, c, p in _random_plans(40, seed=3)]
    worst = max(rows, key=lambda a: abs(a.step_diff))
    assert abs(worst.step_diff) <= 0.05, (worst.plan.to_string(), worst.step_diff)
    assert sum(abs(a.step_diff) <= 0.01 for a in rows) >= 0.8 * len(rows)
    assert all(abs(a.memory_diff) <= 0.01 for a in rows)


def test_cli_simulate_plays_the_helix_schedule():
    args = ["simulate", "llama2-7b", "--hw", "h20-64", "--seq-len", "65536", "--global-batch", "16",
            "--plan", "tp=8,pp=8,mbs=1,recompute=full,sp=true,helix=true"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    bad = CliRunner().invoke(app, [*args, "--schedule", "1f1b"])
    assert bad.exit_code == 2 and "helix" in bad.output and "Traceback" not in bad.output


def test_event_budget():
    w = load_workload("llama2-7b", seq_len=2048, global_batch=4096)
    c = load_cluster("dgx-h100-64")
    p = parse_plan("dp=1,tp=8,pp=8,mbs=1,helix=true")
    from parplan.executor.helix import helix_costs

    costs, _ = helix_costs(w, c, p)
    with pytest.raises(SpecError, match="budget"):
        simulate_helix(costs, limit=10_000)


def test_cli_validate_and_check_on_helix_plans():
    base = ["llama2-7b", "--hw", "h20-64", "--seq-len", "65536", "--global-batch", "16"]
    plan = "tp=8,pp=8,mbs=1,recompute=full,sp=true,helix=true"
    r = CliRunner().invoke(app, ["validate", *base, "--plan", plan])
    assert r.exit_code == 0, r.output
    assert "helix=true" in r.output and "0 differ by more than 5 %" in r.output
    r = CliRunner().invoke(app, ["check", *base, "--plan", plan, "--max-step-time-s", "100"])
    assert r.exit_code == 0 and "PASS" in r.output
