"""The ``key=value`` items of a family's ``--plan`` string (task graphs, dataflow kernels, layer chains, layer
training, replicated services, offload): one reading, one set of errors, for every family's plan parser."""
from __future__ import annotations

from parplan.errors import SpecError, did_you_mean, short


def plan_pairs(text, keys) -> list:
    """``[(key, value), …]`` in order (values stripped, empty items skipped); an item without ``=`` or a key not in
    ``keys`` is a one-line ``SpecError`` at ``--plan`` naming the allowed keys, and so is a key given twice (the
    last one silently won)."""
    out = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise SpecError(f"bad plan item {short(part)}: write key=value", key="--plan", allowed=keys)
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in keys:
            raise SpecError(f"unknown plan key {short(k)}", key="--plan", allowed=keys, hint=did_you_mean(k, keys))
        if not v.isascii():  # int() reads Arabic-Indic and full-width digits: "threads=٣" was 3 threads
            raise SpecError(f"bad value {short(v)}: plan values are ASCII", key=f"--plan {k}")
        if any(k == k0 for k0, _ in out):
            raise SpecError(f"plan key {short(k)} is given twice", key=f"--plan {k}", hint="give each key once")
        out.append((k, v))
    return out
