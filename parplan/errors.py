"""Errors shared by every parplan package.

Bad input is an exception (``SpecError``) that renders as one line naming the file, the key path, the bad
value, what is allowed and a hint.  Infeasible plans are *not* errors: they are estimates with ``fits=False``.

Echoed user values are bounded (``short``: at most ``ECHO_MAX`` characters, cheap even for a huge nested value)
and terminal-safe (``escape_controls``: C0/C1 controls, DEL, line separators and bidi overrides are written as
``\\xNN`` / ``\\uNNNN``, so an ANSI escape sequence in user data is printed as text, never interpreted).
"""
from __future__ import annotations

import difflib
import re
import reprlib
from typing import Iterable, Sequence

ECHO_MAX = 80  # characters of one user value quoted in an error message (longer values end with "…")
_TOKEN_MAX = 300  # a run of non-blank characters longer than this in a message is cut to ECHO_MAX (safety net)
_MESSAGE_MAX = 1000  # characters of one message part (safety net for messages built elsewhere)

# C0 controls, DEL, C1 controls, U+2028/2029 (line/paragraph separators), bidi embeddings/overrides/isolates
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_LONG_TOKEN = re.compile(r"\S{%d,}" % (_TOKEN_MAX + 1))


def _escape_char(m: "re.Match[str]") -> str:
    o = ord(m.group())
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1, line separators, bidi controls) escaped."""
    return _CONTROL.sub(_escape_char, text)


def control_char(text: str) -> str | None:
    """The first control character of ``text`` written as its code point (``U+001B`` for ESC), or None."""
    m = _CONTROL.search(text)
    return f"U+{ord(m.group()):04X}" if m else None


def clip(text: str, limit: int = ECHO_MAX) -> str:
    """``text`` cut to ``limit`` characters, the last one "…" when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _ShortRepr(reprlib.Repr):
    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxdict, self.maxset = 3, 6, 6, 6, 6
        self.maxstring = self.maxother = self.maxlong = ECHO_MAX + 8

    def repr_str(self, x: str, level: int) -> str:
        return repr(x) if len(x) <= ECHO_MAX else repr(x[:ECHO_MAX]) + "…"

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 1000:  # repr() of an int of more than 4300 digits raises; ~300 digits say enough
            return f"<an integer of about {int(x.bit_length() * 0.30103) + 1:,} digits>"
        return repr(x)


_short_repr = _ShortRepr()


def short(value: object, limit: int = ECHO_MAX) -> str:
    """A bounded, terminal-safe ``repr`` of a user value: at most ``limit`` characters (then "…"), computed in
    time independent of the value's size (a huge nested list or a 1 MB string is not expanded)."""
    try:
        text = _short_repr.repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still reported
        text = f"<{type(value).__name__}>"
    return clip(escape_controls(text), limit)


def tame(text: str, limit: int = _MESSAGE_MAX, *, cut_tokens: bool = True) -> str:
    """A message part made safe to print on one terminal line: controls escaped, any run of more than 300
    non-blank characters cut to 80 (a value echoed whole by code that did not use ``short``), at most
    ``limit`` characters."""
    text = escape_controls(str(text))
    if cut_tokens:
        text = _LONG_TOKEN.sub(_cut_token, text)
    return clip(text, limit)


def _cut_token(m: "re.Match[str]") -> str:
    token = m.group()
    tail = re.search(r"[^\w…]{1,3}$", token)  # keep a closing quote / colon / parenthesis
    return token[: ECHO_MAX - 1] + "…" + (tail.group() if tail else "")


class ParplanError(Exception):
    """Base class of every error parplan raises on purpose."""


class SpecError(ParplanError, ValueError):
    """Invalid user input: a file, key, value or catalog id that parplan cannot use.

    ``str(err)`` is one line: ``FILE:LINE:COL: KEY: MESSAGE (allowed: …) — HINT``; every part is ``tame``d
    (controls escaped, over-long values cut).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        value: object = None,
        allowed: Sequence[str] | None = None,
        hint: str | None = None,
        line: int | None = None,
        col: int | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.key = key
        self.value = value
        self.allowed = list(allowed) if allowed is not None else None
        self.hint = hint
        self.line = line
        self.col = col
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file:
            where = tame(str(self.file), 1000, cut_tokens=False)
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        key = f"{tame(self.key, 200)}: " if self.key else ""
        text = f"{where}{key}{tame(self.message)}"
        if self.allowed is not None:
            text += f" (allowed: {tame(', '.join(clip(str(a)) for a in self.allowed))})"
        if self.hint:
            text += f"; {tame(self.hint)}"
        return text

    def __str__(self) -> str:  # keep str() in sync if attributes are edited after construction
        return self.render()


class NothingFits(SpecError):
    """The input is valid, but no plan of its space fits the hardware: ``check`` FAILs on it (exit 1, as when no
    plan meets a bound), the other verbs report it like bad input (exit 2)."""


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Closest catalog ids / keys to a misspelled ``word`` (difflib ratio ≥ 0.5)."""
    word = str(word)
    if len(word) > 200:  # no id is that long; difflib on a huge word is wasted time
        return []
    return difflib.get_close_matches(word, list(choices), n=n, cutoff=0.5)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    best = closest(word, choices, n=3)
    if not best:
        return None
    return "did you mean " + " or ".join(f"'{b}'" for b in best) + "?"
