"""Plots of searches, breakdowns, executor timelines and sweeps (matplotlib, the optional ``plot`` extra).

Each function returns a ``matplotlib.figure.Figure`` (on the Agg canvas; no pyplot state); ``save(fig, path)``
writes it as PNG or SVG by the path's suffix.  matplotlib is imported only when a figure is made; without it the
functions raise a ``SpecError`` naming ``pip install "parplan[plot]"``.

* ``pareto(workload, cluster, **opts)`` — tokens/s against peak memory of every plan of a search, the front;
* ``breakdown(workload, cluster, top=K, **opts)`` — time and memory breakdowns of the top K plans;
* ``timeline(workload, cluster, plan, **opts)`` — one simulated step, one row per pipeline stage
  (``timeline_figure(schedule)`` draws a ``Schedule`` already simulated);
* ``scaling(table)`` — tokens/s against cluster size from a ``parplan sweep`` table (path or DataFrame).
"""
from __future__ import annotations

from parplan.plots.breakdown import breakdown
from parplan.plots.pareto import pareto, pareto_front
from parplan.plots.scaling import best_per_size, scaling
from parplan.plots.style import INSTALL_HINT, PLOT_FORMATS, require_matplotlib, save
from parplan.plots.timeline import timeline, timeline_figure

KINDS = ("pareto", "breakdown", "timeline", "scaling")

__all__ = ["INSTALL_HINT", "KINDS", "PLOT_FORMATS", "best_per_size", "breakdown", "pareto", "pareto_front",
           "require_matplotlib", "save", "scaling", "timeline", "timeline_figure"]
