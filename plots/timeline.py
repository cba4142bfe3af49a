"""``timeline``: one simulated training step of a plan as a Gantt chart — one row per pipeline stage with the ops
of its compute stream (forward, backward, weight-gradient, blocking p2p sends, exposed all-to-all, optimizer),
micro-batch numbers on the bars wide enough to hold them, and the step time marked.

The step is played by the reference executor (``parplan.executor.simulate.simulate_plan``); the intervals are
the ``Schedule``'s device events — the compute-stream tracks that ``parplan.executor.trace`` writes to a Chrome
trace.  The rows are the stages of the replica holding the critical device (every replica runs the same
schedule unless stragglers slow one down).  Pieces of one op (the per-layer parts of a micro-batch's forward,
say) closer than ``MERGE_GAP`` of the step — under a pixel on the figure — are drawn as one bar.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from parplan.errors import SpecError, short
from parplan.plots.inputs import load
from parplan.plots.style import new_figure, plan_label, time_unit

# op kinds of a device's compute stream (parplan.executor.engine.KIND_NAMES) → (legend name, Tableau colour)
CATEGORIES = {
    "forward": ("forward", "tab:blue"),
    "backward": ("backward", "tab:orange"),
    "wgrad": ("weight gradient (W)", "tab:green"),
    "p2p_fwd": ("blocking p2p send", "tab:gray"),
    "p2p_bwd": ("blocking p2p send", "tab:gray"),
    "ep_a2a": ("exposed all-to-all", "tab:purple"),
    "optimizer": ("optimizer", "tab:red"),
}
OTHER = ("other", "tab:brown")
LABELLED_KINDS = ("forward", "backward", "wgrad")  # bars that carry their micro-batch number
LABEL_PT = 7  # bar label font size (points)
# advance width of a digit in DejaVu Sans, matplotlib's default font: 1303 of 2048 units per em (the font's hmtx
# table; https://dejavu-fonts.github.io/, matplotlib's default: https://matplotlib.org/stable/users/explain/text/fonts.html)
DIGIT_EM = 1303 / 2048
FIG_WIDTH_IN, AXIS_MARGIN_IN = 13.0, 1.4  # the figure's width and what the tick labels take of it (inches)
MERGE_GAP = 5e-4  # fraction of the step: about one pixel of the 13-in figure at 150 dpi
MAX_ROWS_HEIGHT_IN = 18.0  # figure height cap: very deep pipelines get thinner rows


def merged_runs(events: list, gap_s: float) -> list[tuple]:
    """``(kind, mb, chunk, start_s, end_s)`` runs of one track's events (sorted by start): consecutive events of
    the same kind, micro-batch and chunk separated by at most ``gap_s`` are one run."""
    runs: list[list] = []
    for e in sorted(events, key=lambda e: (e.start_s, e.end_s)):
        if runs:
            r = runs[-1]
            if r[0] == e.kind and r[1] == e.mb and r[2] == e.chunk and e.start_s - r[4] <= gap_s:
                r[4] = max(r[4], e.end_s)
                continue
        runs.append([e.kind, e.mb, e.chunk, e.start_s, e.end_s])
    return [tuple(r) for r in runs]


def _shade(color: str, chunk: int, vpp: int):
    """Later model chunks (interleaved schedules) in lighter shades of the kind's colour."""
    from matplotlib.colors import to_rgb

    if vpp <= 1 or chunk <= 0:
        return to_rgb(color)
    mix = 0.55 * min(chunk, vpp - 1) / (vpp - 1)
    return tuple(c + (1.0 - c) * mix for c in to_rgb(color))


def simulate(workload: Any, cluster: Any, plan: Any, *, schedule: str | None = None, p2p: str = "blocking",
             slowdown: Any = None, max_events: int | None = None, **training_overrides: Any):
    """The simulated ``Schedule`` of ``plan`` (a plan string, a mapping or a ``Plan``)."""
    from parplan.executor.simulate import simulate_plan
    from parplan.models.plan import Plan, make_plan, parse_plan

    w, c = load(workload, cluster, training_overrides)
    if not c.is_homogeneous:
        raise SpecError(f"cluster {c.name!r} has {len(c.groups)} device groups; the timeline draws a homogeneous "
                        "plan's step", key="--hw", hint="`parplan simulate --plan-file` plays heterogeneous plans")
    if isinstance(plan, Plan):
        p = plan
    elif isinstance(plan, dict):
        p = make_plan(plan, c.n_devices)
    elif isinstance(plan, str):
        p = parse_plan(plan, c.n_devices)
    else:
        raise SpecError(f"bad plan {short(plan)}: expected a plan string such as \"tp=8,pp=4,mbs=1\"", key="--plan")
    return simulate_plan(w, c, p, schedule=schedule, slowdown=slowdown, p2p=p2p, max_events=max_events)


def timeline(workload: Any, cluster: Any, plan: Any, *, schedule: str | None = None, p2p: str = "blocking",
             slowdown: Any = None, max_events: int | None = None, **training_overrides: Any):
    """The figure of one simulated step of ``plan``: one row per pipeline stage.

    ``schedule``, ``p2p``, ``slowdown``, ``max_events``: as for ``parplan.simulate``; ``training_overrides``: as
    for ``pareto``.  A ``Schedule`` already simulated can be drawn with ``timeline_figure``.
    """
    s = simulate(workload, cluster, plan, schedule=schedule, p2p=p2p, slowdown=slowdown, max_events=max_events,
                 **training_overrides)
    return timeline_figure(s)


def timeline_figure(s):
    """The figure of a simulated ``Schedule``."""
    crit = s.devices[s.critical_device]
    rows = sorted((d for d in s.devices if d.replica == crit.replica), key=lambda d: d.stage)
    names = {d.name: i for i, d in enumerate(rows)}
    by_track: dict[str, list] = {d.name: [] for d in rows}
    for e in s.events:
        if e.track in names:
            by_track[e.track].append(e)
    step = float(s.step_time_s)
    unit, scale = time_unit(step)
    row_h = min(0.55, (MAX_ROWS_HEIGHT_IN - 2.2) / max(len(rows), 1))
    fig, ax = new_figure(FIG_WIDTH_IN, 2.2 + row_h * len(rows))
    digit = DIGIT_EM * LABEL_PT / 72.0 / (FIG_WIDTH_IN - AXIS_MARGIN_IN) * step  # seconds of axis per digit
    gap = MERGE_GAP * step
    seen: dict[str, str] = {}
    for name, row in names.items():
        runs = merged_runs(by_track[name], gap)
        groups: dict[str, tuple[list, list]] = {}
        for kind, mb, chunk, t0, t1 in runs:
            label, color = CATEGORIES.get(kind, OTHER)
            seen.setdefault(label, color)
            bars, colors = groups.setdefault(label, ([], []))
            bars.append((t0 * scale, (t1 - t0) * scale))
            colors.append(_shade(color, chunk, s.vpp))
        for label, (bars, colors) in groups.items():
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colors, edgecolor="white", linewidth=0.3)
        for kind, mb, chunk, t0, t1 in runs:
            text = str(mb)
            if kind in LABELLED_KINDS and mb >= 0 and (t1 - t0) >= (len(text) + 0.6) * digit:
                light = s.vpp > 1 and chunk > 0  # lighter shades: dark text
                ax.text(0.5 * (t0 + t1) * scale, row, text, ha="center", va="center", fontsize=LABEL_PT,
                        color="black" if light else "white", clip_on=True)
    ax.axvline(step * scale, color="black", linestyle="--", linewidth=1.2,
               label=f"step time (simulated): {step * scale:,.4g} {unit}")
    analytical = s.analytical.get("step_time_s") if s.analytical else None
    if analytical:
        ax.axvline(float(analytical) * scale, color="black", linestyle=":", linewidth=1.0,
                   label=f"analytical estimate: {float(analytical) * scale:,.4g} {unit}")
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=color, label=label) for label, color in seen.items()]
    handles += ax.get_legend_handles_labels()[0]
    ax.set_yticks(np.arange(len(rows)), [d.name for d in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # stage 0 on top
    ax.set_xlim(0, step * scale * 1.01)
    ax.set_xlabel(f"time in the step ({unit})")
    ax.set_ylabel("pipeline stage")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    chunks = "; lighter shades: later model chunks" if s.vpp > 1 else ""
    title = (f"{s.workload} on {s.cluster}: {plan_label(s.plan)}\n{s.schedule} schedule, {s.micro_batches} "
             f"micro-batches, pp={s.pp}, vpp={s.vpp}; bar labels: micro-batch{chunks}")
    ax.set_title(title, fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize=8, frameon=False)
    return fig
