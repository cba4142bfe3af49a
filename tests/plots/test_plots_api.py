"""The figure objects of ``parplan.plots``: what each plot draws (series, labels, lines at the right values)."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.errors import SpecError
from parplan.plots import best_per_size, breakdown, pareto, pareto_front, scaling, timeline
from parplan.plots.pareto import label_positions
from parplan.plots.style import GiB

from plot_cases import SMALL, SMALL_OPTS, TIMELINE_OPTS, TIMELINE_PLAN, sweep_frame  # noqa: F401 (fixture)


# --- Pareto front ------------------------------------------------------------------------------------------------
def test_pareto_front_small_case():
    tps = np.array([10.0, 30.0, 20.0, 30.0, 5.0, 40.0])
    mem = np.array([1.0, 3.0, 2.0, 4.0, 0.5, 6.0])
    # (0.5, 5) (1, 10) (2, 20) (3, 30) (6, 40) are optimal; (4, 30) is dominated by (3, 30)
    assert pareto_front(tps, mem).tolist() == [4, 0, 2, 1, 5]
    assert pareto_front(np.zeros(0), np.zeros(0)).size == 0


def test_pareto_front_is_exactly_the_undominated_points():
    rng = np.random.default_rng(7)
    tps = rng.integers(0, 30, 400).astype(float)  # integers: ties on both axes
    mem = rng.integers(0, 30, 400).astype(float)
    front = pareto_front(tps, mem)
    on = np.zeros(tps.size, dtype=bool)
    on[front] = True
    for i in range(tps.size):
        dominated = (tps >= tps[i]) & (mem <= mem[i]) & ((tps > tps[i]) | (mem < mem[i]))
        if on[i]:
            assert not dominated.any()
        else:  # dominated, or a duplicate of a front point
            dup = (tps == tps[i]) & (mem == mem[i]) & on
            assert dominated.any() or dup.any()
    assert np.all(np.diff(mem[front]) > 0) and np.all(np.diff(tps[front]) > 0)


def test_label_positions_spread_and_keep_the_ends():
    t = np.array([1.0, 2.0, 3.0, 50.0, 90.0, 100.0])
    pos = label_positions(t, 3)
    assert pos[0] == 0 and pos[-1] == 5 and len(pos) == 3
    assert label_positions(t[:2], 5) == [0, 1]


def test_pareto_figure_draws_every_priced_plan_and_the_front():
    from parplan.hardware.catalog import load_cluster
    from parplan.planner.search import run_search
    from parplan.workloads.loader import load_workload

    fig = pareto(*SMALL, labels=3, **SMALL_OPTS)
    ev = run_search(load_workload(SMALL[0], **SMALL_OPTS), load_cluster(SMALL[1]))  # default options
    ax = fig.axes[0]
    assert ax.get_xlabel() == "peak memory per device (GiB)"
    assert ax.get_ylabel() == "throughput (tokens/s)"
    assert "Llama 2 7B" in ax.get_title() and f"{ev.n_fitting:,} fit" in ax.get_title()
    fits, over = ax.collections[1], ax.collections[0]  # the two scatter series
    assert len(fits.get_offsets()) == ev.n_fitting
    assert len(over.get_offsets()) <= int((ev.evaluated & ~ev.fits).sum())
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    front = next(ln for name, ln in lines.items() if name.startswith("Pareto front"))
    idx = np.flatnonzero(ev.fits)
    expect = idx[pareto_front(ev.metrics["tokens_per_s"][idx], ev.metrics["memory_peak_bytes"][idx])]
    assert np.allclose(front.get_ydata(), ev.metrics["tokens_per_s"][expect])
    cap = next(ln for name, ln in lines.items() if name.startswith("device memory"))
    assert cap.get_xdata()[0] == pytest.approx(ev.hw.memory_capacity_bytes / GiB)
    names = [t.get_text() for t in ax.texts]
    assert len(names) == min(3, expect.size)
    assert all("tp=" in n and "mbs=" in n for n in names)


def test_pareto_headroom_adds_the_limit_line():
    fig = pareto(*SMALL, memory_headroom=0.2, **SMALL_OPTS)
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert any(x.startswith("limit with 20 % headroom") for x in labels)


@pytest.mark.parametrize("opts, key", [({"labels": 0}, "--labels"), ({"fix": ["tp=3x"]}, "--fix"),
                                       ({"memory_headroom": 0.9}, "--memory-headroom"), ({"colour": "red"}, "colour")])
def test_pareto_bad_options(opts, key):
    with pytest.raises(SpecError) as exc:
        pareto(*SMALL, **opts)
    assert exc.value.key.startswith(key)


# --- breakdown ---------------------------------------------------------------------------------------------------
def test_breakdown_bars_sum_to_step_time_and_peak_memory():
    from parplan.api import suggest
    from parplan.models.training import MEMORY_PARTS

    fig = breakdown(*SMALL, top=4, **SMALL_OPTS)
    df = suggest(*SMALL, top=4, **SMALL_OPTS).to_frame()
    ax_t, ax_m = fig.axes[:2]
    assert ax_t.get_xlabel().startswith("time per step (")
    assert ax_m.get_xlabel().startswith("memory per device (GiB)")
    assert [t.get_text() for t in ax_t.get_yticklabels()][0].startswith("#1 ")
    unit_scale = 1e3 if "(ms)" in ax_t.get_xlabel() else 1.0
    for ax, total, scale in ((ax_t, df["step_time_s"], unit_scale), (ax_m, df["memory_peak_bytes"], 1 / GiB)):
        assert all(len(c) == 4 for c in ax.containers)
        right = np.max([[p.get_x() + p.get_width() for p in c] for c in ax.containers], axis=0)
        assert np.allclose(right, total.to_numpy() * scale, rtol=1e-9)
    shown = [c.get_label() for c in ax_m.containers]
    assert len(shown) == sum(bool((df[k] > 0).any()) for k in MEMORY_PARTS)
    assert "activations" in shown and "params" in shown


def test_breakdown_moe_shows_the_expert_all_to_all():
    fig = breakdown("mixtral-8x7b", "dgx-h100-64", top=2, global_batch=64, fix=["ep=1", "etp=2"])
    assert "ep comm exposed" in [c.get_label() for c in fig.axes[0].containers]


def test_breakdown_bad_top():
    with pytest.raises(SpecError) as exc:
        breakdown(*SMALL, top=31)
    assert exc.value.key == "--top"


# --- timeline ----------------------------------------------------------------------------------------------------
def test_timeline_one_row_per_stage_and_step_marked():
    from parplan.api import simulate

    fig = timeline(*SMALL, TIMELINE_PLAN, **TIMELINE_OPTS)
    s = simulate(*SMALL, TIMELINE_PLAN, **TIMELINE_OPTS)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"stage {i}" for i in range(4)]
    scale = 1e3 if "(ms)" in ax.get_xlabel() else 1.0
    step = next(ln for ln in ax.get_lines() if ln.get_label().startswith("step time"))
    assert step.get_xdata()[0] == pytest.approx(s.step_time_s * scale)
    mbs = {int(t.get_text()) for t in ax.texts}
    assert mbs == set(range(s.micro_batches))  # every micro-batch number is readable at 16 micro-batches
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"forward", "backward", "optimizer"} <= set(legend)
    # one bar collection per (stage, kind drawn); every forward and backward of every stage is there
    bars = sum(len(c.get_paths()) for c in ax.collections)
    assert bars >= 4 * 2 * s.micro_batches


def test_timeline_full_mode_draws_the_critical_replica():
    # stragglers in both replicas: every replica is simulated; the rows are the critical device's replica
    fig = timeline(*SMALL, "tp=1,pp=4,mbs=1,zero=1", slowdown=["1=1.2", "6=1.5"], **TIMELINE_OPTS)
    rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert rows == [f"replica 1 stage {i}" for i in range(4)]


def test_timeline_zero_bubble_has_weight_gradient_bars():
    fig = timeline(*SMALL, TIMELINE_PLAN, schedule="zb-h1", **TIMELINE_OPTS)
    assert "weight gradient (W)" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_timeline_bad_plan():
    with pytest.raises(SpecError):
        timeline(*SMALL, "tp=3,pp=4", **TIMELINE_OPTS)
    with pytest.raises(SpecError) as exc:
        timeline(*SMALL, TIMELINE_PLAN, max_events=10, **TIMELINE_OPTS)
    assert exc.value.key == "--max-events"


# --- scaling -----------------------------------------------------------------------------------------------------
def test_scaling_one_line_per_workload_with_ideal_reference(sweep_frame):
    fig = scaling(sweep_frame)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert ax.get_xlabel().startswith("cluster size")
    lines = ax.get_lines()
    assert len(lines) == 2 * 2  # per workload: best plans and the ideal reference
    best = sweep_frame[sweep_frame["rank"] == 1]
    for data, ideal in zip(lines[0::2], lines[1::2]):
        rows = best[best["workload"] == data.get_label()].sort_values("n_devices")
        assert list(data.get_xdata()) == [8, 16, 32]
        assert np.allclose(data.get_ydata(), rows["tokens_per_s"])
        assert ideal.get_linestyle() == "--"
        y0 = rows["tokens_per_s"].iloc[0]
        assert np.allclose(ideal.get_ydata(), y0 * np.array([1, 2, 4]))


def test_scaling_skips_rows_that_are_not_ok(sweep_frame):
    bad = sweep_frame.head(1).copy()
    bad[["n_devices", "tokens_per_s", "status"]] = [1024, np.nan, "error"]
    best = best_per_size(__import__("pandas").concat([sweep_frame, bad], ignore_index=True))
    assert 1024 not in set(best["n_devices"]) and len(best) == 6
    assert (best["rank"] == 1).all()


def test_scaling_reads_csv_and_parquet(tmp_path, sweep_frame):
    csv, pq = tmp_path / "s.csv", tmp_path / "s.parquet"
    sweep_frame.to_csv(csv, index=False)
    sweep_frame.to_parquet(pq)
    a, b = best_per_size(csv), best_per_size(pq)
    assert np.allclose(a["tokens_per_s"], b["tokens_per_s"])


@pytest.mark.parametrize("edit, key", [(lambda d: d.drop(columns=["rank"]), "columns"),
                                       (lambda d: d.assign(rank=2), "rank"),
                                       (lambda d: d.assign(tokens_per_s="fast"), "tokens_per_s"),
                                       (lambda d: d.assign(status="failed"), "rank"),
                                       (lambda d: d.assign(n_devices=0), "n_devices")])
def test_scaling_bad_tables(sweep_frame, edit, key):
    with pytest.raises(SpecError) as exc:
        best_per_size(edit(sweep_frame.copy()))
    assert exc.value.key == key


def test_scaling_bad_files(tmp_path):
    for name, text in (("s.txt", "x"), ("missing.csv", None), ("empty.csv", "")):
        p = tmp_path / name
        if text is not None:
            p.write_text(text)
        with pytest.raises(SpecError):
            best_per_size(p)


def test_multi_group_clusters_are_refused():
    with pytest.raises(SpecError) as exc:
        timeline("llama2-7b", "mixed-a100-v100-32", "tp=1")
    assert exc.value.key == "--hw"
    with pytest.raises(SpecError, match="device groups"):
        pareto("llama2-7b", "mixed-a100-v100-32")
