"""The dense-transformer family's search space: the shared enumeration (``planner/space.py``) with no expert axes."""
from __future__ import annotations

from parplan.errors import SpecError
from parplan.planner.space import build_space as _build


def build_space(workload, n_devices: int, devices_per_node: int, *, fix: dict | None = None, **kw):
    for key in ("ep", "etp"):
        if (fix or {}).get(key, 1) != 1:
            raise SpecError(f"{key}={fix[key]} needs a mixture-of-experts workload; {workload.name} is dense",
                            key=f"--fix {key}", allowed=["1"])
    return _build(workload, n_devices, devices_per_node, fix=fix, **kw)
