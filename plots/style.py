"""What every plot shares: matplotlib loaded lazily (the optional ``plot`` extra), figures on the Agg canvas, the
colours, plan labels, time units and writing a figure to ``FILE.png`` / ``FILE.svg``.

Figures are ``matplotlib.figure.Figure`` objects attached to an Agg canvas, never created through ``pyplot``: no
global figure registry, no GUI backend, nothing to close — a figure is freed when the last reference goes.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from parplan.errors import SpecError, short

INSTALL_HINT = 'pip install "parplan[plot]"'
# formats of `-o FILE`; matplotlib picks the writer from the format name (Figure.savefig `format`:
# https://matplotlib.org/stable/api/_as_gen/matplotlib.figure.Figure.savefig.html)
PLOT_FORMATS = ("png", "svg")
DPI = 150  # PNG resolution (dots per inch; Figure.savefig `dpi`, same page as above)
GiB = float(2**30)

# Tableau 10, matplotlib's default qualitative cycle ("tab10"):
# https://matplotlib.org/stable/users/explain/colors/colormaps.html#qualitative
PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
           "tab:olive", "tab:cyan")
# more categories than ten (the time breakdown has 13 parts): the 20-colour Tableau map, same page as above
PALETTE_20 = "tab20"

# plan keys left out of a plan label when they hold these values (parplan.models.plan defaults: one-way axes,
# no interleaving, no sequence parallelism); the label stays a plan string `--plan` accepts
_DEFAULT_PAIRS = ("cp=1", "ep=1", "etp=1", "vpp=1", "sp=false")


def require_matplotlib() -> Any:
    """The ``matplotlib`` module, or a ``SpecError`` naming the extra to install (the CLI prints it as one line)."""
    try:
        import matplotlib
    except ImportError:
        raise SpecError("matplotlib is not installed: plots need the optional plot extra", key="plot",
                        hint=INSTALL_HINT) from None
    return matplotlib


def new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **subplots: Any):
    """``(figure, axes)``: a constrained-layout figure on the Agg canvas; ``axes`` as ``Figure.subplots`` returns
    them (one ``Axes`` for 1×1)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **subplots)


def part_colors(parts: "list[str] | tuple", shown: "list[str] | None" = None) -> list:
    """A colour per part of ``shown`` (default: all of ``parts``), fixed by the part's position in ``parts`` so
    that a part keeps its colour whichever parts a figure leaves out: Tableau 10 for up to ten parts, else the
    20-colour map with its ten dark shades first, then the light ones."""
    shown = list(parts) if shown is None else shown
    if len(parts) <= len(PALETTE):
        return [PALETTE[list(parts).index(k)] for k in shown]
    import matplotlib

    cmap = matplotlib.colormaps[PALETTE_20]
    order = list(range(0, cmap.N, 2)) + list(range(1, cmap.N, 2))
    return [cmap(order[list(parts).index(k) % len(order)]) for k in shown]


def plot_format(path: "str | Path") -> str:
    """The format written for ``path``, from its suffix (``png`` or ``svg``); anything else is a ``SpecError``."""
    suffix = Path(str(path)).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise SpecError(f"bad file name {short(str(path))}: the suffix sets the format", key="--output",
                        allowed=[f".{f}" for f in PLOT_FORMATS], hint="e.g. -o pareto.png")
    return suffix


def save(fig: Any, path: "str | Path") -> Path:
    """Write ``fig`` to ``path`` (PNG at ``DPI`` or SVG, by suffix); returns the path."""
    fmt = plot_format(path)
    path = Path(path)
    try:
        fig.savefig(path, format=fmt, dpi=DPI)
    except ValueError as exc:  # a NUL byte in the path
        raise SpecError(f"bad file name {short(str(path))}: {exc}", key="--output") from None
    return path


def plan_label(plan: Any) -> str:
    """A ``Plan`` (or its plan string) without the default-valued keys: ``dp=2,tp=8,pp=4,mbs=1,zero=1,recompute=none``."""
    text = plan if isinstance(plan, str) else plan.to_string()
    return ",".join(kv for kv in text.split(",") if kv not in _DEFAULT_PAIRS)


def time_unit(seconds: float) -> tuple[str, float]:
    """``(unit, scale)`` for an axis spanning ``seconds``: ms below 2 s, else s."""
    if math.isfinite(seconds) and seconds < 2.0:
        return "ms", 1e3
    return "s", 1.0


def check_positive_int(value: Any, key: str, hi: int | None = None) -> int:
    """A whole number ≥ 1 (and ≤ ``hi``), else a ``SpecError`` naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (hi is not None and value > hi):
        raise SpecError(f"bad value {short(value)}: expected a whole number from 1" + (f" to {hi:,}" if hi else ""),
                        key=key)
    return int(value)
