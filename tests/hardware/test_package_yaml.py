"""The package's own catalog files are read with libyaml (parplan.reading._PackageLoader) where it is available:
the same documents, the same key marks and the same errors as the bounded Python loader; user files always take
the bounded loader (its compose-time limits)."""
from __future__ import annotations

from pathlib import Path

import pytest

import parplan.reading as R
from parplan.errors import SpecError


def _marks(d):
    if isinstance(d, dict):
        return (getattr(d, "marks", None), {k: _marks(v) for k, v in d.items()})
    if isinstance(d, list):
        return [_marks(x) for x in d]
    return d


def _catalog_files(root: Path) -> list[Path]:
    return sorted((root / "catalogs").rglob("*.yaml"))


def test_every_catalog_file_reads_alike_with_both_loaders(root):
    if R._PackageLoader is None:
        pytest.skip("PyYAML without libyaml: the bounded loader reads the catalogs")
    files = _catalog_files(root)
    assert len(files) > 100
    for f in files:
        text = R.read_text_file(f)
        a, b = R.load_yaml_text(text, str(f)), R.load_yaml_text(text, str(f), package=True)
        assert a == b and _marks(a) == _marks(b), f


def test_package_files_take_the_fast_loader_and_user_files_the_bounded_one(root, tmp_path):
    import parplan.catalogs

    pkg = Path(parplan.catalogs.__file__).parent
    some = next(pkg.rglob("*.yaml"))
    assert R._package_catalog(some)
    user = tmp_path / "c.yaml"
    user.write_text("a: &x [1, 2]\nb: *x\n")
    assert not R._package_catalog(user)
    bomb = "a: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6))
    user.write_text(bomb)
    with pytest.raises(SpecError, match="expands to more than"):
        R.load_yaml_file(user)


def test_duplicate_keys_are_errors_with_either_loader():
    for package in (False, True):
        with pytest.raises(SpecError, match="duplicate key"):
            R.load_yaml_text("a: 1\na: 2\n", "x.yaml", package=package)
