"""Unit strings → SI floats, converted once at load time.

Accepted: a bare number (already SI) or ``"<number> <unit>"`` with the units below.  Inside the code every
quantity is a float in SI base units and its name carries the unit (``_s``, ``_bytes``, ``_bytes_per_s`` …).

Every quantity is finite, positive (or ≥ 0 where ``positive=False``) and at most the maximum of its kind
(``MAXIMA``, or the caller's ``maximum``): NaN, infinities and absurd magnitudes are errors, never numbers.
"""
from __future__ import annotations

import math
import re

from parplan.errors import SpecError, short

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
# Largest accepted value of each kind, in SI units: each is far above any real device or link, so only a typo
# or garbage reaches it.
MAXIMA = {
    "bytes": 1e15,  # 1 PB of memory per device (HBM stacks hold ~10^11 B today)
    "bytes_per_s": 1e15,  # 1 PB/s per device and direction (HBM ~10^13 B/s, NVLink ~10^12 B/s)
    "flops_per_s": 1e18,  # 1 EFLOP/s per device (the fastest FP4 peaks are ~10^16)
    "seconds": 3.2e7,  # a year (a link latency is checked against 1 s by its caller)
    "watts": 1e6,  # 1 MW per device (accelerators draw ~10^3 W)
    "dollars_per_hour": 1e6,  # USD per device-hour (list prices are ~10^0–10^2)
}
# Smallest accepted rate: a device or link below one byte (or one operation) per second is a typo or garbage, and
# rates near the float minimum turn the times they divide into inf (then NaN) instead of a number.
MINIMA = {"bytes_per_s": 1.0, "flops_per_s": 1.0}
_UNIT_NAME = {"bytes": "B", "bytes_per_s": "B/s", "flops_per_s": "FLOP/s", "seconds": "s", "watts": "W",
              "dollars_per_hour": "$/h"}
_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


def parse_quantity(value: object, kind: str, *, key: str | None = None, file: str | None = None,
                   positive: bool = True, maximum: float | None = None) -> float:
    """Convert ``value`` to an SI float of ``kind``; raise ``SpecError`` naming the key on bad input.

    The result is finite, > 0 (``positive``) or ≥ 0 (``positive=False``), ≤ ``maximum`` (default
    ``MAXIMA[kind]``), and a rate of ``MINIMA`` is 0 or at least its minimum."""
    if isinstance(value, bool):
        raise SpecError(f"expected a quantity, got {value!r}", key=key, file=file,
                        hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
    if isinstance(value, (int, float)):
        try:
            out = float(value)
        except OverflowError:  # an int beyond the float range
            out = math.inf
    elif isinstance(value, str):
        m = _NUM.match(value) if len(value) <= 200 else None
        if not m:
            raise SpecError(f"cannot read quantity {short(value)}", key=key, file=file,
                            hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
        number, unit = float(m.group(1)), m.group(2)
        table = _table(kind)
        if unit == "":
            factor = 1.0
        elif unit in table:
            factor = table[unit]
        else:
            allowed, prefixes = _allowed_units(kind, table)
            raise SpecError(f"unknown unit {short(unit)} in {short(value)}", key=key, file=file,
                            allowed=allowed + ([prefixes] if prefixes else []),
                            hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
        out = number * factor
    else:
        raise SpecError(f"expected a quantity, got {type(value).__name__}", key=key, file=file,
                        hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
    unit_name = _UNIT_NAME[kind]
    top = MAXIMA[kind] if maximum is None else maximum
    if not math.isfinite(out):
        raise SpecError(f"bad value {short(value)}: must be a finite number", key=key, file=file,
                        hint=f"write e.g. {_UNIT_EXAMPLES[kind]}")
    if positive and not out > 0:
        raise SpecError(f"must be > 0, got {short(value)}", key=key, file=file)
    if not positive and out < 0:
        raise SpecError(f"must be ≥ 0, got {short(value)}", key=key, file=file)
    if out > top:
        raise SpecError(f"bad value {short(value)}: must be ≤ {_sci(top)} {unit_name}", key=key, file=file)
    low = MINIMA.get(kind)
    if low is not None and out > 0 and out < low:
        raise SpecError(f"bad value {short(value)}: must be ≥ {_sci(low)} {unit_name} (or 0 where 0 is allowed)",
                        key=key, file=file)
    return out + 0.0  # -0.0 → 0.0


_PREFIXED = {"bytes_per_s": ["B/s", "b/s", "bps"], "flops_per_s": ["FLOP/s", "FLOPS", "OP/s", "OPS"]}


def _allowed_units(kind: str, table: dict[str, float]) -> tuple[list[str], str]:
    """The units of ``kind`` for an error message: every unit, or (rates, ~40 units) the base units and their
    prefixes."""
    if kind not in _PREFIXED:
        return sorted(table), ""
    prefixes = [p for p in (*_DEC, *_BIN) if p and any(f"{p}{b}" in table for b in _PREFIXED[kind])]
    return list(_PREFIXED[kind]), "each with a prefix " + " ".join(dict.fromkeys(prefixes))


def _sci(x: float) -> str:
    """1e15 → "1e15", 3.2e7 → "3.2e7", 1.0 → "1"."""
    return f"{x:g}".replace("e+0", "e").replace("e+", "e")


GiB = 2.0**30
GB = 1e9
TFLOP = 1e12
