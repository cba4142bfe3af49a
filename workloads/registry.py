"""The model families: every module of ``parplan.workloads`` that defines a module-level ``FAMILY: FamilyInfo``.

Full discovery imports each module of the package once (``pkgutil.iter_modules`` + ``importlib``) and caches the
result, so adding a family is adding a module; nothing here names one.  A lookup by name first reads an index of the
modules' sources (``FAMILY = FamilyInfo(name="…"`` at the start of a line) and imports only the module that names
the family — a transformer job does not import the task-graph, edge or replication families — and falls back to
full discovery for anything the index does not settle (``tests/workloads``: the index equals full discovery).
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache

from parplan.errors import SpecError, did_you_mean
from parplan.workloads.family import FamilyInfo

_SKIP = {"registry", "family"}  # this module and the dataclass module define no family


@lru_cache(maxsize=1)
def _families() -> dict[str, FamilyInfo]:
    import parplan.workloads as pkg

    found: dict[str, FamilyInfo] = {}
    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if mod.name in _SKIP or mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{mod.name}")
        info = getattr(module, "FAMILY", None)
        if isinstance(info, FamilyInfo):
            if info.name in found:
                raise RuntimeError(f"family {info.name!r} is defined twice ({module.__name__})")
            found[info.name] = info
    return found


_FAMILY_LINE = re.compile(r'^FAMILY\s*=\s*FamilyInfo\(\s*name\s*=\s*"([^"]+)"', re.MULTILINE)


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """Family name → module name, read from the package's sources without importing them ({} without sources)."""
    from pathlib import Path

    import parplan.workloads as pkg

    out: dict[str, str] = {}
    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name in _SKIP or mod.name.startswith("_"):
            continue
        for folder in pkg.__path__:
            src = Path(folder) / f"{mod.name}.py"
            try:
                text = src.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for name in _FAMILY_LINE.findall(text):
                out.setdefault(name, f"{pkg.__name__}.{mod.name}")
            break
    return out


def _indexed(name: str) -> FamilyInfo | None:
    """The family ``name`` through the source index: only its module is imported (None: not settled here)."""
    modname = _index().get(name)
    if modname is None:
        return None
    info = getattr(importlib.import_module(modname), "FAMILY", None)
    return info if isinstance(info, FamilyInfo) and info.name == name else None


def family_names() -> list[str]:
    """Every registered family name, sorted."""
    return sorted(_families())


def _suggestion(name: str, names: list[str]) -> str | None:
    """A 'did you mean' only among families of the same kind (same first word: 'moe-…' never suggests 'dense-…')."""
    head = name.split("-", 1)[0].lower()
    same_kind = [n for n in names if n.split("-", 1)[0] == head]
    return did_you_mean(name, same_kind) if same_kind else None


def family_info(name: object, *, file: str | None = None, key: str = "architecture.family") -> FamilyInfo:
    """The family called ``name``; an unknown name is a :class:`SpecError` listing the families."""
    if isinstance(name, str):
        info = _indexed(name)
        if info is not None:
            return info
    fams = _families()
    if isinstance(name, str) and name in fams:
        return fams[name]
    # families with their own verbs are top-level ``family:`` files, never an ``architecture.family`` value
    names = sorted(n for n, i in fams.items() if key != "architecture.family" or not i.verbs)
    what = f"unknown family {name!r}" if isinstance(name, str) else f"bad value {name!r}: must be a family name"
    raise SpecError(what, file=file, key=key, allowed=names,
                    hint=_suggestion(name, names) if isinstance(name, str) else None)


def family_of(spec: object) -> FamilyInfo:
    """The family of a spec object: the family whose spec_type is the most derived class of ``spec``'s type
    (an MoESpec is a TransformerSpec too, but resolves to the MoE family)."""
    cls = type(spec)
    own = getattr(importlib.import_module(cls.__module__), "FAMILY", None) if cls.__module__.startswith(
        "parplan.workloads.") else None
    if isinstance(own, FamilyInfo) and own.spec_type is cls:  # the type's own module names it: the most derived
        return own
    mro = cls.__mro__
    best: tuple[int, FamilyInfo] | None = None
    for info in _families().values():
        if info.spec_type in mro:
            depth = mro.index(info.spec_type)
            if best is None or depth < best[0]:
                best = (depth, info)
    if best is None:
        raise SpecError(f"{type(spec).__name__} belongs to no registered family", allowed=family_names())
    return best[1]


def verbs_for(model_ref: object):
    """The verb-handler module of the family of the workload file ``model_ref`` when that family brings its own
    verbs (``FamilyInfo.verbs``), else None.  Cheap: only a file whose name ends in .yaml/.yml is read (with the
    bounded loader) and only its top-level ``family:`` key is looked at; catalog ids, Hugging Face configs and
    transformer files (whose family sits under ``architecture:``) return None without importing any family."""
    import importlib
    from pathlib import Path

    text = str(model_ref)
    if not text.endswith((".yaml", ".yml")):
        return None
    path = Path(text)
    try:
        if not path.is_file():
            return None
    except (OSError, ValueError):
        return None
    from parplan.spec import load_yaml_file

    data = load_yaml_file(path)
    name = data.get("family") if isinstance(data, dict) else None
    if not isinstance(name, str):
        return None
    info = family_info(name, file=text, key="family")
    return importlib.import_module(info.verbs) if info.verbs else None
