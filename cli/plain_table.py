"""Tables as plain text without building rich objects, for output that carries no styling (a pipe, a file, a test
runner): the same characters rich prints, at a fraction of the start-up (rich's console, table and text modules are
not imported; ``benchmarks/startup.py``).

``render_plain`` returns None, and ``cli/tables.py`` lets rich draw, wherever the result could differ from rich's:
a terminal (rich styles the title, header and notes there), ``FORCE_COLOR`` / ``TTY_COMPATIBLE``, Windows, Jupyter
or IDLE, a stream that is not UTF-8 (rich draws an ASCII frame), a ``COLUMNS`` that is not a plain number, markup
(``[``), emoji codes (``:name:``), control characters, cells with surrounding spaces, row styles, a justification
other than left/right, or a table that still does not fit once the droppable columns are gone (rich then wraps free
text).  Within those bounds the layout is rich's (``rich.table``, ``rich.text``; box ``SIMPLE_HEAD``, no edge,
padding (0, 1, 0, 0), ``pad_edge=False``): each column as wide as its widest cell (``rich.cells.cell_len``), one
space of padding and one of divider between columns, a rule of ``─`` under the header, the title left-justified and
padded to the table's width, notes word-wrapped to the console's width (``rich._wrap.divide_line``).
``tests/cli/test_plain_table.py`` compares both on generated tables.
"""
from __future__ import annotations

import builtins
import os
import re
import sys
from typing import Callable, Optional, Sequence

_EMOJI = re.compile(r":\S*:")  # rich replaces :name: codes (rich._emoji_replace), with markup or without
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # newlines, tabs, escapes: rich expands or strips them
_TRAILING_SPACE = re.compile(r"\s+$")


def plain_console_width(width: Optional[int], wide: int) -> Optional[int]:
    """The width ``tables.console(width)`` has when its output carries no styling, else None (rich must draw).

    As rich decides it (``rich.console.Console``): colour only on a terminal (stdout a tty, or ``FORCE_COLOR`` /
    ``TTY_COMPATIBLE`` set), the ``COLUMNS`` environment variable first for the width, box characters on UTF-8."""
    if sys.platform == "win32" or hasattr(builtins, "get_ipython") or "idlelib" in sys.modules:
        return None
    env = os.environ
    if "FORCE_COLOR" in env or "TTY_COMPATIBLE" in env:
        return None
    out = sys.stdout
    if out is None:
        return None
    for stream in (out, getattr(out, "rich_proxied_file", out)):
        isatty = getattr(stream, "isatty", None)
        try:
            if isatty is not None and isatty():
                return None
        except ValueError:
            pass
    encoding = (getattr(getattr(out, "rich_proxied_file", out), "encoding", "utf-8") or "utf-8").lower()
    if not encoding.startswith("utf"):
        return None
    if width:
        return width
    columns = env.get("COLUMNS", "")
    if not columns.strip():
        return wide  # terminal_width() is None: nothing to fit
    if not columns.isdigit():
        return None  # rich then asks the terminal
    return int(columns) or wide


def _plain(text: str, markup: bool = True) -> bool:
    """True when rich prints ``text`` as it is (no markup, emoji code or control character)."""
    return not ((markup and "[" in text) or _EMOJI.search(text) or _CONTROL.search(text))


def wrap_lines(text: str, width: int, pad: bool) -> list[str]:
    """``text`` word-wrapped to ``width`` cells as ``rich.text.Text.wrap`` does it (overflow "fold"): left-justified
    and padded to ``width`` (``pad``, a table title) or as is (justify "default", a printed line)."""
    from rich._wrap import divide_line
    from rich.cells import cell_len, set_cell_size

    bounds = [0, *divide_line(text, width, fold=True), len(text)]
    out = []
    for line in (text[a:b] for a, b in zip(bounds, bounds[1:])):
        if len(line) > width:  # Text.rstrip_end: whitespace beyond the width goes
            m = _TRAILING_SPACE.search(line)
            if m is not None:
                line = line[:len(line) - min(len(m.group(0)), len(line) - width)]
        length = cell_len(line)  # Text.truncate (and pad, for Lines.justify "left")
        if length > width:
            line = set_cell_size(line, width)
        if pad and length < width:
            line += " " * (width - length)
        out.append(line)
    return out


def render_plain(cols: Sequence, rows: Sequence[Sequence[str]], *, title: Optional[str], width: Optional[int],
                 wide: int, notes: "Sequence[str] | Callable[[list[str]], Sequence[str]]",
                 footer: Callable[[list[str]], Optional[str]], show_header: bool = True,
                 row_styles=None) -> Optional[str]:
    """The text ``tables.render`` would print, or None where rich must draw it (see the module's docstring)."""
    w = plain_console_width(width, wide)
    if w is None or not cols or (row_styles and any(s is not None for s in row_styles)):
        return None
    if any(c.justify not in ("left", "right") for c in cols):
        return None
    cells = [c.name for c in cols] + [s for r in rows for s in r] + ([title] if title else [])
    if any(not isinstance(s, str) or not _plain(s) or s != s.strip() for s in cells):
        return None
    if any(len(r) != len(cols) for r in rows) or not (rows or show_header):
        return None
    from rich.cells import cell_len

    natural = [max([cell_len(c.name)] * show_header + [cell_len(r[i]) for r in rows]) for i, c in enumerate(cols)]

    def table_width(idx: list[int]) -> int:  # columns + right padding (not the last) + dividers
        return sum(natural[i] for i in idx) + 2 * (len(idx) - 1)

    shown = list(range(len(cols)))
    while table_width(shown) > w:  # tables.build: the least important column still shown goes first
        droppable = [i for i in shown if cols[i].keep > 0]
        if not droppable:
            break
        shown.remove(max(droppable, key=lambda i: (cols[i].keep, i)))
    total = table_width(shown)
    if not shown or total > w or natural[shown[-1]] == 0:  # free text would wrap (rich's job); a zero-width last column
        return None
    dropped = [cols[i].name for i in range(len(cols)) if i not in shown]
    extra = notes(dropped) if callable(notes) else notes
    note = footer(dropped)
    lines_out = [*(extra or ()), *([note] if note else [])]
    if any(not isinstance(n, str) or not _plain(n, markup=False) for n in lines_out):
        return None

    def row_line(values: Sequence[str]) -> str:
        parts = []
        for i in shown:
            s, gap = values[i], natural[i] - cell_len(values[i])
            parts.append(s + " " * gap if cols[i].justify == "left" else " " * gap + s)
        return "  ".join(parts)  # one space of padding, one of divider

    out = wrap_lines(title, total, pad=True) if title else []
    if show_header:
        out += [row_line([c.name for c in cols]), "─" * total]
    out += [row_line(r) for r in rows]
    for n in lines_out:
        out += wrap_lines(n, w, pad=False)
    return "".join(line + "\n" for line in out)
