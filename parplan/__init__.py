"""parplan — plan, predict and validate parallel configurations for large-model training.

Public API (imported lazily so that ``parplan.hardware`` and ``parplan.workloads`` stay light):
``estimate``, ``suggest``, ``check``, ``load_workload``, ``load_cluster``, ``parse_plan``, ``SpecError``.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

_SUBPACKAGES = ("cli", "hardware", "workloads", "models", "planner", "executor", "catalogs")


def _map_source_tree() -> None:
    """Importing ``parplan`` straight from a source checkout (``python -m pytest`` in the repo root puts the
    checkout first on ``sys.path``): map ``parplan.cli`` … to the top-level folders, as ``pyproject.toml``'s
    package-dir does for an install.  Installed copies have the subpackages inside ``parplan/`` and skip this."""
    import importlib.abc
    import importlib.util

    here = Path(__file__).resolve().parent
    root = here.parent
    if (here / "models").is_dir() or not (root / "pyproject.toml").is_file():
        return
    if 'name = "parplan"' not in (root / "pyproject.toml").read_text(encoding="utf-8"):
        return
    folders = {name: root / name for name in _SUBPACKAGES if (root / name / "__init__.py").is_file()}

    class _SourceTree(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            name = fullname[len("parplan."):] if fullname.startswith("parplan.") else ""
            if name in folders:
                return importlib.util.spec_from_file_location(
                    fullname, folders[name] / "__init__.py", submodule_search_locations=[str(folders[name])])
            return None

    if not any(type(f).__name__ == "_SourceTree" for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceTree())


_map_source_tree()

from parplan.errors import ParplanError, SpecError  # noqa: E402

__version__ = "0.1.0"

_LAZY = {
    "estimate": "parplan.api",
    "load_workload": "parplan.workloads.loader",
    "load_cluster": "parplan.hardware.catalog",
    "parse_plan": "parplan.models.plan",
    "Plan": "parplan.models.plan",
    "Estimate": "parplan.models.estimate",
    "suggest": "parplan.api",
    "check": "parplan.api",
    "simulate": "parplan.api",
    "plan_hetero": "parplan.planner.hetero",
}

__all__ = ["ParplanError", "SpecError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'parplan' has no attribute {name!r}")
