"""The installed package holds everything the source tree has (modules, every catalog YAML), the version is one
value everywhere, and ``python -m parplan`` works.  CI (``.ci/run``) runs the suite against a wheel installed in a
fresh venv with ``PARPLAN_TEST_INSTALLED=1``: then ``parplan`` must not be imported from this checkout."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import parplan

ROOT = Path(__file__).resolve().parents[1]
INSTALLED = os.environ.get("PARPLAN_TEST_INSTALLED") == "1"


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python ≥ 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _package_dirs() -> dict[str, str]:
    """``{package: source folder}`` as pyproject.toml's package-dir maps them (``parplan.cli`` → ``cli``)."""
    return _pyproject()["tool"]["setuptools"]["package-dir"]


def _installed_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    return Path(list(spec.submodule_search_locations)[0])


def test_every_source_package_is_declared():
    """Each folder with an ``__init__.py`` under a mapped folder is a package listed in ``packages``."""
    declared = set(_pyproject()["tool"]["setuptools"]["packages"])
    for package, folder in _package_dirs().items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder).parts
            name = ".".join((package, *rel))
            assert name in declared, f"{name} ({init.parent}) is not in pyproject.toml [tool.setuptools] packages"


def test_every_source_file_is_installed():
    """Every module and catalog file of the source tree is in the installed package (a wheel that forgot one
    fails here when CI runs against it)."""
    missing = []
    for package, folder in _package_dirs().items():
        src, dst = ROOT / folder, _installed_dir(package)
        for f in sorted(src.rglob("*")):
            if f.suffix in (".py", ".yaml", ".c") and "__pycache__" not in f.parts:
                if not (dst / f.relative_to(src)).is_file():
                    missing.append(f"{package}: {f.relative_to(ROOT)}")
    assert not missing, missing


def test_every_catalog_section_ships():
    from parplan.catalogs import catalog_dir

    src = ROOT / "catalogs"
    sections = sorted({p.parent.relative_to(src) for p in src.rglob("*.yaml")})
    assert {str(s) for s in sections} >= {"hardware/devices", "hardware/links", "clusters", "workloads",
                                          "calibration", "frameworks"}
    for section in sections:
        shipped = sorted(p.name for p in catalog_dir(*section.parts).glob("*.yaml"))
        assert shipped == sorted(p.name for p in (src / section).glob("*.yaml")), section


def test_installed_package_is_not_the_checkout():
    if not INSTALLED:
        pytest.skip("PARPLAN_TEST_INSTALLED is not 1 (an editable or source run)")
    from parplan.catalogs import catalog_dir

    for where in (Path(parplan.__file__), catalog_dir(), _installed_dir("parplan.cli")):
        assert ROOT not in where.resolve().parents, f"{where} is inside the checkout {ROOT}"


def test_version_is_one_value():
    from parplan.cli.app import app

    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"parplan {parplan.__version__}"
    assert importlib.metadata.version("parplan") == parplan.__version__
    project = _pyproject()["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert _pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "parplan.__version__"}


def test_metadata():
    meta = importlib.metadata.metadata("parplan")
    assert meta["License-Expression"] == "Apache-2.0"
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    assert meta["Keywords"]


def test_python_m_parplan(tmp_path):
    """``python -m parplan`` runs the CLI (from a folder that is not the checkout)."""
    r = subprocess.run([sys.executable, "-m", "parplan", "--version"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"parplan {parplan.__version__}"


def test_dir_lists_the_lazy_api():
    names = dir(parplan)
    for name in ("estimate", "suggest", "check", "simulate", "load_workload", "load_cluster", "parse_plan",
                 "plan_hetero", "SpecError", "__version__"):
        assert name in names
    assert set(parplan.__all__) <= set(names)


def test_no_source_tree_import_hook():
    """Development uses the editable install; ``parplan`` no longer maps the source folders itself."""
    assert not hasattr(parplan, "_map_source_tree")
    assert not any(type(f).__name__ == "_SourceTree" for f in sys.meta_path)
