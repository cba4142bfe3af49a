"""Width-aware tables: every table of the CLI fits the terminal.

The width is rich's own detection (``Console().width``: the ``COLUMNS`` environment variable first, then the
terminal's size, 80 when neither is known — https://rich.readthedocs.io/en/stable/console.html#environment-variables).
A table is built from ``Col`` definitions, each with an importance (``keep``: 0 = never dropped, higher = dropped
sooner).  The table is measured at its natural width (no wrapping); while it is wider than the console, the least
important column still shown is dropped.  Columns marked ``wrap`` (long free text) may then wrap instead of going.
A footer line names the dropped columns and says that ``--format csv`` / ``--format json`` carry them all.

Units are one per column: ``time_unit`` picks s, ms or µs from the column's largest value, and the header carries
the unit (``step ms``), so that numbers in a column compare at a glance.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

if TYPE_CHECKING:  # rich's console and table are imported where a table is drawn with them (not for plain text)
    from rich.console import Console
    from rich.table import Table

WIDE = 400  # width of tables written to a file (-o): no terminal to fit, nothing dropped


def terminal_width() -> Optional[int]:
    """The width to fit: ``COLUMNS`` when set, else the terminal's when stdout is one (rich's detection, which reads
    both); None when there is no terminal to fit (a pipe or a file: nothing is dropped)."""
    if os.environ.get("COLUMNS", "").strip() or _isatty():
        from rich.console import Console

        return Console().width
    return None


def _isatty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def console(width: Optional[int] = None) -> Console:
    """The output console: ``width`` when given (a file), else the terminal's (``terminal_width``), else WIDE."""
    from rich.console import Console

    w = width or terminal_width() or WIDE
    return Console(highlight=False, width=w, soft_wrap=False, color_system=None if w == WIDE or width else "auto")


def fit_lines(lines: Sequence[str], indent: str = "    ") -> str:
    """Plain lines folded to the terminal's width (unchanged without a terminal): at spaces, and long plan strings
    at their commas; continuation lines are indented."""
    w = terminal_width()
    return "\n".join(out for line in lines for out in (fold(line, w, indent) if w else [line]))


def fold(line: str, width: int, indent: str = "    ") -> list[str]:
    if len(line) <= width:
        return [line]
    lead = line[:len(line) - len(line.lstrip())]
    pieces: list[str] = []
    for tok in line.strip().split(" "):
        if len(tok) > width - len(lead + indent):  # a plan string: its comma-separated items
            parts = tok.split(",")
            pieces.extend([p + "," for p in parts[:-1]] + [parts[-1]])
        else:
            pieces.append(tok + " ")
    out, cur = [], lead
    for p in pieces:
        if len(cur.rstrip()) + len(p.rstrip()) > width and cur.strip():
            out.append(cur.rstrip())
            cur = lead + indent
        cur += p
    out.append(cur.rstrip())
    return [x[:width] if len(x) > width else x for x in out]


def escape(text: str) -> str:
    """``rich.markup.escape``, without importing rich's text modules for text it leaves alone (no ``[``, no
    trailing backslash)."""
    if "[" not in text and not text.endswith("\\"):
        return text
    from rich.markup import escape as rich_escape

    return rich_escape(text)


@dataclass(frozen=True)
class Col:
    name: str
    justify: str = "right"
    keep: int = 0  # 0: essential (never dropped); larger: dropped earlier when the table is too wide
    wrap: bool = False  # long free text: may wrap (never dropped for width unless keep > 0)


def time_unit(values: Iterable[float]) -> tuple[float, str]:
    """(scale, unit) for a column of seconds: the unit of its largest finite value (s ≥ 1, ms ≥ 1e-3, else µs)."""
    finite = [abs(v) for v in values if v == v and abs(v) != float("inf")]
    top = max(finite, default=1.0)
    if top >= 1.0:
        return 1.0, "s"
    if top >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


def fmt_time(x: float, scale: float) -> str:
    """A time in a column's unit, with 4 significant digits for the column's largest value."""
    v = x * scale
    if v != v:
        return "—"
    return f"{v:,.3f}" if abs(v) < 10 else (f"{v:,.2f}" if abs(v) < 100 else f"{v:,.1f}")


def _width(con: Console, table: Table) -> int:
    # measured without the console's own limit (Measurement.get clamps to options.max_width)
    from rich.measure import Measurement

    return Measurement.get(con, con.options.update(width=WIDE * 25, max_width=WIDE * 25), table).maximum


def build(con: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], *, title: str | None = None,
          row_styles: Sequence[Optional[str]] | None = None, show_header: bool = True,
          caption: str | None = None) -> tuple[Table, list[str]]:
    """The table that fits ``con``'s width, and the names of the columns dropped to make it fit."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    shown = list(range(len(cols)))

    def make(idx: list[int], allow_wrap: bool) -> Table:
        # light frame: a rule under the header, one space between columns (the box characters of a full grid
        # cost 3 columns per column)
        t = Table(title=title, show_header=show_header, caption=caption, title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
        for i in idx:
            c = cols[i]
            # once free text wraps, the other columns keep their natural width (they are short: keys, numbers)
            keep = allow_wrap and not c.wrap and any(cols[j].wrap for j in idx)
            natural = max([cell_len(c.name)] + [cell_len(Text.from_markup(r[i]).plain) for r in rows]) if keep else None
            t.add_column(c.name, justify=c.justify, no_wrap=not (allow_wrap and c.wrap),
                         overflow="fold" if c.wrap else "ellipsis", min_width=natural)
        for k, r in enumerate(rows):
            t.add_row(*(r[i] for i in idx), style=(row_styles[k] if row_styles else None))
        return t

    t = make(shown, allow_wrap=False)
    while _width(con, t) > con.width:
        droppable = [i for i in shown if cols[i].keep > 0]
        if not droppable:
            break
        worst = max(droppable, key=lambda i: (cols[i].keep, i))
        shown.remove(worst)
        t = make(shown, allow_wrap=False)
    if _width(con, t) > con.width:
        t = make(shown, allow_wrap=True)  # free text wraps in what is left
    dropped = [cols[i].name for i in range(len(cols)) if i not in shown]
    return t, dropped


def dropped_note(dropped: Sequence[str]) -> str | None:
    if not dropped:
        return None
    return f"not shown (terminal too narrow): {', '.join(dropped)}; --format csv or --format json has every column"


def render(cols: Sequence[Col], rows: Sequence[Sequence[str]], *, title: str | None = None,
           width: Optional[int] = None, notes: "Sequence[str] | Callable[[list[str]], Sequence[str]]" = (),
           row_styles=None, show_header: bool = True, con: Console | None = None,
           footer: Callable[[Sequence[str]], Optional[str]] = dropped_note) -> str:
    """One table (plus its notes, then the dropped-columns footer) as text that fits the width.  ``notes`` may be
    a function of the dropped columns' names (a legend of the columns shown); ``footer`` is the line naming the
    dropped columns.  Output without styling (no terminal) is drawn as plain text (``cli/plain_table.py``: the same
    characters, without importing rich's console)."""
    if con is None:
        from parplan.cli.plain_table import render_plain

        text = render_plain(cols, rows, title=title, width=width, wide=WIDE, notes=notes, footer=footer,
                            show_header=show_header, row_styles=row_styles)
        if text is not None:
            return text
    con = con or console(width)
    with con.capture() as cap:
        t, dropped = build(con, cols, rows, title=title, row_styles=row_styles, show_header=show_header)
        con.print(t)
        for n in (notes(dropped) if callable(notes) else notes):
            con.print(n, style="dim", markup=False)
        note = footer(dropped)
        if note:
            con.print(note, style="dim", markup=False)
    return cap.get()
