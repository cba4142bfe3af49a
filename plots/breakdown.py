"""``breakdown``: where the step time and the device memory of the top K plans go — two panels of stacked bars.

Left: the time parts of the critical pipeline stage (``TIME_PARTS`` of the cost model, plus the family parts of
``parplan.planner.export.FAMILY_TIME_PARTS`` such as the exposed expert all-to-all); they sum to the step time.
Right: the memory parts of the heaviest stage (``MEMORY_PARTS``); they sum to the peak memory per device.  The
bars come from the planner's export table (``PlanSet.to_frame``), so they match ``parplan suggest --format csv``.
Parts that are zero for every plan shown are left out of the bars and the legend.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from parplan.errors import SpecError
from parplan.plots.inputs import homogeneous, load, search_options, split_search
from parplan.plots.style import GiB, check_positive_int, new_figure, part_colors, plan_label, time_unit

DEFAULT_TOP = 5
MAX_TOP = 30  # bars per panel that stay readable on one figure


def parts_shown(df, parts: tuple) -> list[str]:
    """The parts (columns of ``df``) that are not zero for every row."""
    return [k for k in parts if k in df.columns and bool((np.abs(df[k].to_numpy(dtype=float)) > 0).any())]


def _pretty(part: str) -> str:
    """``tp_comm_exposed_s`` → ``tp comm exposed``."""
    for suffix in ("_bytes", "_s"):
        if part.endswith(suffix):
            part = part[: -len(suffix)]
    return part.replace("_", " ")


def breakdown(workload: Any, cluster: Any, *, top: int = DEFAULT_TOP, objective: str | None = None, **opts: Any):
    """The figure of the time and memory breakdowns of the ``top`` best plans of ``workload`` on ``cluster``.

    ``objective``: the ranking (``throughput``, the default, ``memory`` or ``cost``).  ``opts``: the search options
    of ``parplan.suggest`` and training overrides, as for ``pareto``.
    """
    from parplan.models.training import MEMORY_PARTS, TIME_PARTS
    from parplan.planner.export import FAMILY_TIME_PARTS
    from parplan.planner.planset import suggest_plans

    top = check_positive_int(top, "--top", hi=MAX_TOP)
    if objective == "devices":
        raise SpecError("the devices objective sizes a cluster; the breakdown ranks the plans of one",
                        key="--objective", allowed=["throughput", "memory", "cost"])
    search, training = split_search(opts)
    options = search_options(**search)
    w, c = load(workload, cluster, training)
    homogeneous(c)
    ps = suggest_plans(w, c, objective=objective, top=top, options=options)
    if not len(ps):
        raise SpecError(f"no plan of {w.name} fits in memory on {c.name}: nothing to break down", key="plan",
                        hint="`parplan suggest` says what would fit")
    df = ps.to_frame()
    labels = [f"#{r} {plan_label(p)}" for r, p in zip(df["rank"], df["plan"])]
    t_parts = parts_shown(df, TIME_PARTS + FAMILY_TIME_PARTS)
    m_parts = parts_shown(df, MEMORY_PARTS)
    unit, scale = time_unit(float(df["step_time_s"].max()))

    n = len(df)
    fig, (ax_t, ax_m) = new_figure(15, 2.6 + 0.42 * n, 1, 2, sharey=True)
    y = np.arange(n)
    _stack(ax_t, y, df, t_parts, scale, part_colors(TIME_PARTS + FAMILY_TIME_PARTS, t_parts))
    for yi, total in zip(y, df["step_time_s"].to_numpy(dtype=float) * scale):
        ax_t.annotate(f"{total:,.3g} {unit}", (total, yi), xytext=(3, 0), textcoords="offset points",
                      va="center", fontsize=7)
    ax_t.set_xlabel(f"time per step ({unit}), critical pipeline stage")
    ax_t.set_title("step time breakdown")
    ax_t.set_yticks(y, labels, fontsize=7)
    ax_t.invert_yaxis()  # rank 1 on top
    ax_t.margins(x=0.12)

    _stack(ax_m, y, df, m_parts, 1.0 / GiB, part_colors(MEMORY_PARTS, m_parts))
    for yi, total in zip(y, df["memory_peak_bytes"].to_numpy(dtype=float) / GiB):
        ax_m.annotate(f"{total:.1f} GiB", (total, yi), xytext=(3, 0), textcoords="offset points", va="center",
                      fontsize=7)
    capacity = float(df["memory_capacity_bytes"].iloc[0])
    ax_m.axvline(capacity / GiB, color="black", linestyle="--", linewidth=1.2,
                 label=f"device memory ({capacity / GiB:.0f} GiB)")
    limit = (1.0 - options.memory_headroom) * capacity
    if limit < capacity:
        ax_m.axvline(limit / GiB, color="black", linestyle=":", linewidth=1.2,
                     label=f"limit with {100 * options.memory_headroom:g} % headroom")
    ax_m.set_xlabel("memory per device (GiB), heaviest pipeline stage")
    ax_m.set_title("memory breakdown")
    ax_m.set_xlim(0, max(capacity, float(df["memory_peak_bytes"].max())) / GiB * 1.2)
    for ax in (ax_t, ax_m):
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_axisbelow(True)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=3, fontsize=7,
                  frameon=False)
    fig.suptitle(f"{w.name} on {c.name} ({c.n_devices:,} devices): top {n} plans by {ps.objective}")
    return fig


def _stack(ax, y: np.ndarray, df, parts: list[str], scale: float, colors: list) -> None:
    """Horizontal stacked bars, one segment per part, in ``parts`` order from the left."""
    left = np.zeros(len(y))
    for part, color in zip(parts, colors):
        width = df[part].to_numpy(dtype=float) * scale
        ax.barh(y, width, left=left, height=0.7, color=color, label=_pretty(part), edgecolor="white",
                linewidth=0.4)
        left += width
