"""The contract between the shared verbs and a family that brings its own (``FamilyInfo.verbs``, e.g. task graphs,
dataflow kernels, layer chains, replicated services, offloads).

The verbs call the family's handlers with the options every family may read::

    estimate(model, hw, *, plan, fmt, output)
    suggest(model, hw, *, fix, top, objective, fmt, output)
    check(model, hw, *, plan, max_time_s, min_throughput, fmt, output)     # --max-step-time-s, --min-tokens-per-s
    simulate(model, hw, *, plan, seed, fmt, output)
    validate(model, hw, *, plan (a list), top, tolerance, fmt, output)

and pass every other option the user set under its own name; a handler hands those to :func:`unread`, which makes
any of them an error naming the option — an option that does not apply is never silently dropped.
"""
from __future__ import annotations

from parplan.errors import SpecError


def _given(value: object) -> bool:
    return not (value is None or value is False or (isinstance(value, (list, tuple)) and not value))


def given(**options) -> dict:
    """The options the user set (not None / False / empty), to pass on to a family handler."""
    return {k: v for k, v in options.items() if _given(v)}


_FLAGS = {"min_throughput": "--min-tokens-per-s", "max_time_s": "--max-step-time-s"}  # handler name → CLI flag


def _flag(name: str) -> str:
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def unread(extra: dict, family: str = "this family") -> None:
    """Options a family handler does not read: an error when any was set (exit 2), naming them."""
    bad = [_flag(k) for k, v in extra.items() if _given(v)]
    if bad:
        raise SpecError(f"{', '.join(bad)} {'does' if len(bad) == 1 else 'do'} not apply to {family} workloads",
                        hint="the family reads --plan, --fix, --top, --objective, --max-step-time-s, "
                             "--min-tokens-per-s (its own throughput unit), --tolerance, --format, --output — "
                             "see docs/families.md")
