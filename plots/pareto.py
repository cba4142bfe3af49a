"""``pareto``: throughput against peak memory per device for every plan of one search, the Pareto front
highlighted and a few of its plans labelled, the device memory limit as a vertical line.

The points are the planner's own vectorized search (``parplan.planner.search.run_search``): every valid plan the
cost model priced, not just the top K.  Plans skipped by the memory bound (their model state alone exceeds the
limit, so they are never priced) are counted in the legend, not drawn.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from parplan.errors import SpecError
from parplan.plots.inputs import homogeneous, load, search_options, split_search
from parplan.plots.style import GiB, check_positive_int, new_figure, plan_label

DEFAULT_LABELS = 5  # plans of the front named on the plot (more overlap on a figure this size)
MAX_LABELS = 20
X_SPAN_CAPACITIES = 1.5  # the memory axis ends at 1.5× the device memory: the plans far beyond it are counted


def pareto_front(tokens_per_s: np.ndarray, memory_bytes: np.ndarray) -> np.ndarray:
    """Positions of the Pareto-optimal points — no other point has at least the throughput with at most the
    memory, one of them strictly — in ascending memory (so ascending throughput)."""
    tps = np.asarray(tokens_per_s, dtype=float)
    mem = np.asarray(memory_bytes, dtype=float)
    if tps.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((-tps, mem))  # memory ascending, the fastest first among equal memory
    t = tps[order]
    best_before = np.concatenate(([-np.inf], np.maximum.accumulate(t)[:-1]))
    return order[t > best_before]


def label_positions(tokens_per_s: np.ndarray, k: int) -> list[int]:
    """Up to ``k`` positions of a front (ascending throughput) spread evenly in throughput: the points nearest to
    ``k`` evenly spaced levels from the slowest to the fastest (so their labels do not stack)."""
    t = np.asarray(tokens_per_s, dtype=float)
    if t.size <= k:
        return list(range(t.size))
    levels = np.linspace(t[0], t[-1], k) if k > 1 else np.array([t[-1]])
    return sorted({int(np.argmin(np.abs(t - y))) for y in levels})


def pareto(workload: Any, cluster: Any, *, labels: int = DEFAULT_LABELS, **opts: Any):
    """The figure of every priced plan of ``workload`` on ``cluster``: tokens/s against peak memory per device.

    ``opts``: the search options of ``parplan.suggest`` (``fix``, ``memory_headroom``, ``allow_cross_node_tp``,
    ``max_mbs``, ``max_plans``) and training overrides (``seq_len``, ``global_batch``, ``precision``,
    ``framework``, ``expert_imbalance``, …).  ``labels``: how many plans of the front are named.
    """
    from parplan.planner.advice import no_valid_plan_message
    from parplan.planner.search import run_search

    labels = check_positive_int(labels, "--labels", hi=MAX_LABELS)
    search, training = split_search(opts)
    options = search_options(**search)
    w, c = load(workload, cluster, training)
    homogeneous(c)
    ev = run_search(w, c, options)
    if len(ev.space) == 0:
        raise SpecError(no_valid_plan_message(ev), key="plan")
    tps, mem = ev.metrics["tokens_per_s"], ev.metrics["memory_peak_bytes"]
    priced, fits = ev.evaluated, ev.fits
    over = priced & ~fits
    capacity = float(ev.hw.memory_capacity_bytes)
    x_max = float(np.nanmax(mem[priced])) if priced.any() else capacity
    x_hi = max(min(x_max, X_SPAN_CAPACITIES * capacity), capacity) * 1.04
    beyond = int((over & (mem > x_hi)).sum())
    shown_over = over & (mem <= x_hi)

    fig, ax = new_figure(10, 6)
    pruned = ev.n_valid - ev.n_evaluated
    over_label = f"does not fit ({int(over.sum()):,}"
    over_label += f"; {beyond:,} beyond the axis)" if beyond else ")"
    ax.scatter(mem[shown_over] / GiB, tps[shown_over], s=5, color="tab:gray", alpha=0.35, linewidths=0,
               rasterized=True, label=over_label)
    ax.scatter(mem[fits] / GiB, tps[fits], s=6, color="tab:blue", alpha=0.5, linewidths=0, rasterized=True,
               label=f"fits ({ev.n_fitting:,})")
    fit_idx = np.flatnonzero(fits)
    front = fit_idx[pareto_front(tps[fit_idx], mem[fit_idx])]
    if front.size:
        ax.plot(mem[front] / GiB, tps[front], drawstyle="steps-post", color="tab:red", marker="o", markersize=4,
                linewidth=1.5, label=f"Pareto front ({front.size} plans)", zorder=3)
        _label_front(ax, ev, front, labels, x_hi)
    ax.axvline(capacity / GiB, color="black", linestyle="--", linewidth=1.2,
               label=f"device memory ({capacity / GiB:.0f} GiB)")
    if ev.limit_bytes < capacity:
        ax.axvline(ev.limit_bytes / GiB, color="black", linestyle=":", linewidth=1.2,
                   label=f"limit with {100 * ev.options.memory_headroom:g} % headroom ({ev.limit_bytes / GiB:.0f} GiB)")
    ax.set_xlim(0, x_hi / GiB)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("peak memory per device (GiB)")
    ax.set_ylabel("throughput (tokens/s)")
    ax.yaxis.set_major_formatter("{x:,.0f}")
    ax.set_title(f"{w.name} on {c.name} ({c.n_devices:,} devices): {ev.n_valid:,} valid plans, "
                 f"{ev.n_fitting:,} fit")
    ax.grid(True, alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    if pruned:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], linestyle="none"))
        names.append(f"not priced: {pruned:,} plans whose model state alone exceeds the limit")
    fig.legend(handles, names, loc="outside lower center", ncols=2, fontsize=8, frameon=False)  # below the axes (matplotlib ≥ 3.7)
    return fig


LABEL_PT = 7  # label font size (points)
AXIS_WIDTH_IN = 8.9  # the axes' width on the 10-in figure (inches)
DIGIT_EM = 0.6  # mean advance width of a label character in DejaVu Sans, matplotlib's default font (ems)


def _label_front(ax, ev, front: np.ndarray, k: int, x_hi: float) -> None:
    """Name ``k`` plans of the front (spread in throughput) to the right of their points — to the left where the
    text would run past the axes."""
    tps, mem = ev.metrics["tokens_per_s"], ev.metrics["memory_peak_bytes"]
    for pos in label_positions(tps[front], k):
        i = int(front[pos])
        text = plan_label(ev.space.plans.plan(i))
        width = (14 + len(text) * DIGIT_EM * LABEL_PT) / 72.0 / AXIS_WIDTH_IN  # axes fraction
        left = mem[i] / x_hi + width > 1.0
        ax.annotate(text, (mem[i] / GiB, tps[i]), xytext=(-14 if left else 14, -6), textcoords="offset points",
                    ha="right" if left else "left", va="center", fontsize=LABEL_PT, color="darkred",
                    arrowprops={"arrowstyle": "-", "color": "darkred", "linewidth": 0.6,
                                "relpos": (1.0 if left else 0.0, 0.5)},
                    bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
                    zorder=4)
