"""``scaling``: throughput against cluster size from a sweep table — one line per workload (its best plan at each
size), a log2 size axis, and ideal linear scaling from the smallest size as a dashed reference.

The table is what ``parplan sweep`` writes (CSV or parquet): one row per cell × plan with at least ``workload``,
``cluster``, ``n_devices``, ``tokens_per_s`` and ``rank`` (1 = the best plan of its cell), plus the columns of
``parplan.planner.export.EXPORT_COLUMNS``.  Rows whose ``status`` (when the column is there) is not ``ok`` are
skipped.  When several cells of one workload have the same size (two clusters with as many devices), the faster
best plan is drawn.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from parplan.errors import SpecError, short
from parplan.plots.inputs import SWEEP_REQUIRED, read_sweep
from parplan.plots.style import PALETTE, new_figure

NUMERIC = ("n_devices", "tokens_per_s", "rank")


def best_per_size(table: Any):
    """The rows drawn: for each workload and size, its fastest rank-1 row (``ok`` rows only), sorted by
    workload then size.  ``table``: a ``DataFrame`` or a path (CSV / parquet)."""
    import pandas as pd

    df = table if isinstance(table, pd.DataFrame) else read_sweep(table)
    where = "" if isinstance(table, pd.DataFrame) else str(table)
    missing = [k for k in SWEEP_REQUIRED if k not in df.columns]
    if missing:
        raise SpecError(f"the sweep table lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                        file=where or None, key="columns", allowed=list(SWEEP_REQUIRED),
                        hint="write it with `parplan sweep`")
    if "status" in df.columns:
        df = df[df["status"].astype(str) == "ok"]
    df = df.copy()
    for k in NUMERIC:
        values = pd.to_numeric(df[k], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            idx = df.index[row]
            at = f"data row {idx + 1}" if isinstance(idx, (int, np.integer)) else f"row {short(idx)}"
            raise SpecError(f"bad value {short(df[k].iloc[row])} in {at}: expected a finite number",
                            file=where or None, key=k)
        df[k] = values
    if (df["n_devices"] < 1).any() or (df["tokens_per_s"] <= 0).any():
        raise SpecError("n_devices must be ≥ 1 and tokens_per_s > 0 in every ok row", file=where or None,
                        key="n_devices" if (df["n_devices"] < 1).any() else "tokens_per_s")
    best = df[df["rank"] == 1]
    if best.empty:
        raise SpecError("no ok row of rank 1 in the sweep table: nothing to plot", file=where or None, key="rank",
                        hint="the sweep's cells all failed, or its plans are not ranked")
    best = best.sort_values(["workload", "n_devices", "tokens_per_s"], ascending=[True, True, False])
    best = best.drop_duplicates(["workload", "n_devices"], keep="first")
    return best.reset_index(drop=True)


def scaling(table: Any, *, title: str | None = None):
    """The figure of tokens/s against ``n_devices`` for each workload of the sweep ``table`` (a ``DataFrame`` or
    a CSV / parquet path)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, NullLocator

    best = best_per_size(table)
    fig, ax = new_figure(9, 6)
    sizes = sorted({int(n) for n in best["n_devices"]})
    for i, (name, rows) in enumerate(best.groupby("workload", sort=True)):
        color = PALETTE[i % len(PALETTE)]
        n = rows["n_devices"].to_numpy(dtype=float)
        y = rows["tokens_per_s"].to_numpy(dtype=float)
        ax.plot(n, y, marker="o", color=color, linewidth=1.8, label=str(name))
        ax.plot(n, y[0] * n / n[0], linestyle="--", color=color, linewidth=1.0, alpha=0.7)
        if n.size > 1:  # scaling efficiency at the largest size: tokens/s per device against the smallest size's
            eff = (y[-1] / n[-1]) / (y[0] / n[0])
            ax.annotate(f"{100 * eff:.0f} %", (n[-1], y[-1]), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=8, color=color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
    ax.margins(x=0.08)
    ax.set_xlabel("cluster size (devices, log2 scale)")
    ax.set_ylabel("throughput of the best plan (tokens/s, log scale)")
    ax.set_title(title or "scaling: best plan per cluster size")
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], linestyle="--", color="tab:gray"))
    labels.append("ideal linear scaling from the smallest size")
    ax.legend(handles, labels, loc="upper left", fontsize=8)
    ax.annotate("labels: scaling efficiency at the largest size", (0.99, 0.01), xycoords="axes fraction",
                ha="right", va="bottom", fontsize=7, color="dimgray")
    return fig
