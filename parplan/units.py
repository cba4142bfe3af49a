"""Unit strings → SI floats, converted once at load time.

Accepted: a bare number (already SI) or ``"<number> <unit>"`` with the units below.  Inside the code every
quantity is a float in SI base units and its name carries the unit (``_s``, ``_bytes``, ``_bytes_per_s`` …).
"""
from __future__ import annotations

import re

from parplan.errors import SpecError

_DEC = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}


def _table(kind: str) -> dict[str, float]:
    t: dict[str, float] = {}
    if kind == "bytes":
        for p, f in {**_DEC, **_BIN}.items():
            t[f"{p}B"] = f
        t["bytes"] = 1.0
    elif kind == "bytes_per_s":
        for p, f in {**_DEC, **_BIN}.items():
            t[f"{p}B/s"] = f
            t[f"{p}b/s"] = f / 8.0  # bits per second
            t[f"{p}bps"] = f / 8.0
        t["Gbps"] = 1e9 / 8.0
    elif kind == "flops_per_s":
        for p, f in _DEC.items():
            t[f"{p}FLOP/s"] = f
            t[f"{p}FLOPS"] = f
            t[f"{p}OP/s"] = f
            t[f"{p}OPS"] = f
    elif kind == "seconds":
        t.update(_TIME)
    elif kind == "watts":
        for p, f in _DEC.items():
            t[f"{p}W"] = f
    elif kind == "dollars_per_hour":
        t.update({"$/h": 1.0, "USD/h": 1.0})
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown unit kind {kind!r}")
    return t


_UNIT_EXAMPLES = {
    "bytes": '"80 GiB", "40 GB"',
    "bytes_per_s": '"900 GB/s", "400 Gb/s"',
    "flops_per_s": '"989 TFLOP/s"',
    "seconds": '"2 us", "5 ms"',
    "watts": '"700 W"',
    "dollars_per_hour": '"2.5 $/h"',
}
_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


def parse_quantity(value: object, kind: str, *, key: str | None = None, file: str | None = None,
                   positive: bool = True) -> float:
    """Convert ``value`` to an SI float of ``kind``; raise ``SpecError`` naming the key on bad input."""
    if isinstance(value, bool):
        raise SpecError(f"expected a quantity, got {value!r}", key=key, file=file,
                        hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str):
        m = _NUM.match(value)
        if not m:
            raise SpecError(f"cannot read quantity {value!r}", key=key, file=file,
                            hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
        number, unit = float(m.group(1)), m.group(2)
        table = _table(kind)
        if unit == "":
            factor = 1.0
        elif unit in table:
            factor = table[unit]
        else:
            raise SpecError(f"unknown unit {unit!r} in {value!r}", key=key, file=file,
                            allowed=sorted(table), hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
        out = number * factor
    else:
        raise SpecError(f"expected a quantity, got {type(value).__name__}", key=key, file=file,
                        hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
    if positive and not out > 0:
        raise SpecError(f"must be > 0, got {value!r}", key=key, file=file)
    return out


GiB = 2.0**30
GB = 1e9
TFLOP = 1e12
