"""Errors shared by every parplan package.

Bad input is an exception (``SpecError``) that renders as one line naming the file, the key path, the bad
value, what is allowed and a hint.  Infeasible plans are *not* errors: they are estimates with ``fits=False``.
"""
from __future__ import annotations

import difflib
from typing import Iterable, Sequence


class ParplanError(Exception):
    """Base class of every error parplan raises on purpose."""


class SpecError(ParplanError, ValueError):
    """Invalid user input: a file, key, value or catalog id that parplan cannot use.

    ``str(err)`` is one line: ``FILE:LINE:COL: KEY: MESSAGE (allowed: …) — HINT``.
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
            where = str(self.file)
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        key = f"{self.key}: " if self.key else ""
        text = f"{where}{key}{self.message}"
        if self.allowed is not None:
            text += f" (allowed: {', '.join(self.allowed)})"
        if self.hint:
            text += f"; {self.hint}"
        return text

    def __str__(self) -> str:  # keep str() in sync if attributes are edited after construction
        return self.render()


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Closest catalog ids / keys to a misspelled ``word`` (difflib ratio ≥ 0.5)."""
    return difflib.get_close_matches(str(word), list(choices), n=n, cutoff=0.5)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    best = closest(word, choices, n=3)
    if not best:
        return None
    return "did you mean " + " or ".join(f"'{b}'" for b in best) + "?"
