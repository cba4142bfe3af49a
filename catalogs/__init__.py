"""Catalog YAML shipped with parplan: hardware/ (devices, links), workloads/, clusters/, calibration/."""
from __future__ import annotations

from importlib import resources
from pathlib import Path


def catalog_dir(*parts: str) -> Path:
    """Folder of a catalog section inside the installed package."""
    return Path(str(resources.files("parplan.catalogs").joinpath(*parts)))


def entries(*parts: str) -> dict[str, Path]:
    """``{id: path}`` of the YAML files in a catalog section (the id is the file stem)."""
    folder = catalog_dir(*parts)
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}
