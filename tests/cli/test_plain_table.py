"""The plain-text tables (cli/plain_table.py) are rich's tables character for character: generated tables drawn
both ways (columns dropped to fit, titles and notes wrapped, wide and accented characters), and the fallbacks to rich
where only rich can tell (markup, emoji codes, a terminal, free text that must wrap)."""
from __future__ import annotations

import io
import random
import sys

import pytest

from parplan.cli import tables
from parplan.cli.plain_table import plain_console_width, render_plain
from parplan.cli.tables import Col

_CHARS = "abcdefghij klmnop0123456789.,%/-()µ—×≥é表ü"


@pytest.fixture(autouse=True)
def _piped(monkeypatch):
    """Output to a pipe (no terminal: no styling), also under ``pytest -s``."""
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)


def _word(r: random.Random) -> str:
    return "".join(r.choice(_CHARS) for _ in range(r.randint(0, 12))).strip()


def _case(r: random.Random):
    cols = [Col(_word(r) or f"c{i}", r.choice(["left", "right"]), keep=r.choice([0, 0, 1, 2, 3, 5]),
                wrap=r.random() < 0.2) for i in range(r.randint(1, 10))]
    rows = [[_word(r) for _ in cols] for _ in range(r.randint(0, 6))]
    title = r.choice([None, _word(r), " ".join(_word(r) for _ in range(r.randint(1, 30)))])
    notes = [" ".join(_word(r) for _ in range(r.randint(0, 60))) for _ in range(r.randint(0, 2))]
    return cols, rows, (title or "").strip() or None, notes, r.choice([None, None, r.randint(5, 200)])


def _both(cols, rows, title, notes, width, show_header=True):
    plain = render_plain(cols, rows, title=title, width=width, wide=tables.WIDE, notes=notes,
                         footer=tables.dropped_note, show_header=show_header)
    drawn = tables.render(cols, rows, title=title, width=width, notes=notes, show_header=show_header,
                          con=tables.console(width))  # a console given: rich draws
    return plain, drawn


@pytest.mark.parametrize("seed", range(4))
def test_plain_tables_are_richs_tables(seed, monkeypatch):
    r = random.Random(seed)
    plain_count = 0
    for _ in range(150):
        cols, rows, title, notes, width = _case(r)
        monkeypatch.setenv("COLUMNS", str(r.randint(10, 200)))
        show_header = r.random() < 0.9
        plain, drawn = _both(cols, rows, title, notes, width, show_header)
        if plain is not None:
            plain_count += 1
            assert plain == drawn, (cols, rows, title, notes, width)
    assert plain_count > 100  # most generated tables take the plain path (the rest need rich: wrapping)


def test_render_takes_the_plain_path_and_the_same_text(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    cols = [Col("id", "left"), Col("name", "left", wrap=True), Col("step ms"), Col("share", keep=2)]
    rows = [["a100", "NVIDIA A100 SXM4 80GB", "1.234", "12%"], ["h100", "NVIDIA H100 SXM5 80GB", "0.987", "9%"]]
    text = tables.render(cols, rows, title="devices", notes=["shares of the step time"])
    assert text == tables.render(cols, rows, title="devices", notes=["shares of the step time"],
                                 con=tables.console())
    assert render_plain(cols, rows, title="devices", width=None, wide=tables.WIDE, notes=["shares of the step time"],
                        footer=tables.dropped_note) == text


@pytest.mark.parametrize("cell", ["[bold]x[/bold]", "a :smile: b", "tab\there", " padded", "x\ny"])
def test_markup_emoji_and_control_characters_go_to_rich(cell, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert render_plain([Col("a", "left"), Col("b")], [["k", cell]], title=None, width=None, wide=tables.WIDE,
                        notes=(), footer=tables.dropped_note) is None


def test_a_table_that_must_wrap_goes_to_rich(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    cols = [Col("id", "left"), Col("name", "left", wrap=True)]
    rows = [["x", "a long free-text name that cannot fit in thirty columns"]]
    assert render_plain(cols, rows, title=None, width=None, wide=tables.WIDE, notes=(),
                        footer=tables.dropped_note) is None
    assert "a long" in tables.render(cols, rows)  # rich wraps it


def test_terminal_and_forced_colour_go_to_rich(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert plain_console_width(None, tables.WIDE) == 120
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain_console_width(None, tables.WIDE) is None
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("COLUMNS", "abc")  # rich asks the terminal then
    assert plain_console_width(None, tables.WIDE) is None
    monkeypatch.delenv("COLUMNS")
    assert plain_console_width(None, tables.WIDE) == tables.WIDE  # no terminal to fit
    assert plain_console_width(77, tables.WIDE) == 77


def test_escape_is_richs_escape():
    from rich.markup import escape as rich_escape

    for s in ["plain", "x[bold]y", "ends with \\", "a\\[b]", "[/]", "no brackets: 1.0"]:
        assert tables.escape(s) == rich_escape(s)
