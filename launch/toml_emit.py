"""A small TOML writer for the torchtitan job file: tables of strings, whole numbers, booleans and lists of them
(TOML v1.0.0, https://toml.io/en/v1.0.0: basic strings, integers, booleans, arrays, [table] headers)."""
from __future__ import annotations

from typing import Any


def _string(s: str) -> str:
    # basic string: backslash and double quote escaped, control characters as \uXXXX (toml.io "String")
    out = []
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def dumps(tables: dict[str, dict[str, Any]], comments: dict[str, str] | None = None) -> str:
    """``{"table": {"key": value}}`` → TOML text; ``comments`` puts a ``# …`` line above a table."""
    lines: list[str] = []
    for name, body in tables.items():
        if lines:
            lines.append("")
        if comments and name in comments:
            lines.append(f"# {comments[name]}")
        lines.append(f"[{name}]")
        for k, v in body.items():
            lines.append(f"{k} = {value(v)}")
    return "\n".join(lines) + "\n"
