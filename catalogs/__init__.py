"""Catalog YAML shipped with parplan: hardware/ (devices, links), workloads/, clusters/, calibration/ — and the
user's catalog folders.

User catalog: ``PARPLAN_CATALOG_PATH`` is a list of folders (separated by ``os.pathsep``, like ``PATH``; folders
that do not exist are skipped, like ``PATH``); unset, the one folder is ``default_user_dir()``.  Each folder is
laid out like the shipped catalog (``hardware/devices/*.yaml``, ``hardware/links/*.yaml``, ``clusters/*.yaml``,
``workloads/*.yaml``) and may also hold YAML files directly, whose section is told by their keys (``kind_of``).
User entries extend the shipped ones: an id that is already taken (shipped, or another user file) is an error
naming both files, never a silent shadow.  ``entries`` is the one place the catalog is enumerated; it reads the
user folders only when a section is asked for (``parplan --help`` reads no catalog).
"""
from __future__ import annotations

import os
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

ENV_VAR = "PARPLAN_CATALOG_PATH"

# catalog sections a user folder may hold, by the kind ``parplan catalog add --kind`` names
SECTIONS: dict[str, tuple[str, ...]] = {"device": ("hardware", "devices"), "link": ("hardware", "links"),
                                        "cluster": ("clusters",), "workload": ("workloads",)}
_USER_SECTIONS = {parts: kind for kind, parts in SECTIONS.items()}
_SUFFIXES = (".yaml", ".yml")


def catalog_dir(*parts: str) -> Path:
    """Folder of a catalog section inside the installed package."""
    return Path(str(resources.files("parplan.catalogs").joinpath(*parts)))


@lru_cache(maxsize=None)
def _shipped(parts: tuple[str, ...]) -> dict[str, Path]:
    folder = catalog_dir(*parts)
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def default_user_dir() -> Path:
    """The user catalog folder used when ``PARPLAN_CATALOG_PATH`` is unset (``parplan catalog add`` writes there)."""
    if sys.platform == "win32":  # Windows known folder FOLDERID_RoamingAppData, exposed as %APPDATA%
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":  # Apple File System Programming Guide: ~/Library/Application Support
        base = Path.home() / "Library" / "Application Support"
    else:  # XDG Base Directory Specification: $XDG_CONFIG_HOME, default $HOME/.config (absolute paths only)
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "parplan" / "catalog"


def user_dirs() -> list[Path]:
    """The user catalog folders, in search order (``PARPLAN_CATALOG_PATH``, else ``default_user_dir()``); an empty
    ``PARPLAN_CATALOG_PATH`` means no user folder."""
    raw = os.environ.get(ENV_VAR)
    if raw is None:
        return [default_user_dir()]
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]


def user_write_dir() -> Path:
    """Where ``parplan catalog add`` writes: the first folder of ``PARPLAN_CATALOG_PATH``, else the default."""
    dirs = user_dirs()
    return dirs[0] if dirs else default_user_dir()


def kind_of(data: Any) -> str | None:
    """The catalog kind of a parsed YAML mapping by its keys (device, link, cluster, workload), or None."""
    if not isinstance(data, dict):
        return None
    if "peak_flops" in data:
        return "device"
    if "groups" in data:
        return "cluster"
    if "architecture" in data and "id" in data:
        return "workload"
    if "scope" in data and "bandwidth" in data:
        return "link"
    return None


_KIND_HINT = ("a device has peak_flops, a link scope and bandwidth, a cluster groups, a workload id and "
              "architecture; or put the file under hardware/devices/, hardware/links/, clusters/ or workloads/")


@lru_cache(maxsize=256)
def _flat_kind(path: str, stamp: tuple[int, int]) -> str:
    from parplan.errors import SpecError
    from parplan.reading import load_yaml_file

    kind = kind_of(load_yaml_file(path))
    if kind is None:
        raise SpecError("not a catalog entry of a known kind (user catalog folder)", file=path, hint=_KIND_HINT)
    return kind


def _stamp(p: Path) -> tuple[int, int]:
    st = p.stat()
    return st.st_mtime_ns, st.st_size


def _yaml_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix in _SUFFIXES and p.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _user_files(parts: tuple[str, ...]) -> list[Path]:
    """The user's YAML files of one section: each folder's ``parts`` subfolder, then its flat files of that kind."""
    from parplan.errors import SpecError

    kind = _USER_SECTIONS[parts]
    out: list[Path] = []
    for folder in user_dirs():
        try:
            if not folder.exists():
                continue
            if not folder.is_dir():
                raise SpecError(f"{ENV_VAR} names {str(folder)!r}, which is not a folder",
                                hint=f"{ENV_VAR} is a list of folders separated by {os.pathsep!r}")
        except (OSError, ValueError):  # a name the OS cannot look up (too long, a NUL byte)
            raise SpecError(f"{ENV_VAR} names an unusable folder {str(folder)[:80]!r}") from None
        out += _yaml_files(folder.joinpath(*parts))
        out += [p for p in _yaml_files(folder) if _flat_kind(str(p), _stamp(p)) == kind]
    return out


def entries(*parts: str) -> dict[str, Path]:
    """``{id: path}`` of the YAML files in a catalog section (the id is the file stem): the shipped entries, then
    the user's (sections of ``SECTIONS`` only).  An id found twice is a ``SpecError`` naming both files."""
    out = dict(_shipped(tuple(parts)))
    if tuple(parts) not in _USER_SECTIONS:
        return out
    from parplan.errors import SpecError
    from parplan.spec import check_name

    for p in _user_files(tuple(parts)):
        ident = check_name(p.stem, file=str(p))
        if ident in out:
            first = out[ident]
            what = "the shipped catalog" if not is_user(first) else "another user catalog file"
            raise SpecError(f"catalog id {ident!r} is defined twice: {first} ({what}) and {p} (user catalog)",
                            file=str(p), hint="user entries may not replace others: rename the file and its id")
        out[ident] = p
    return out


def is_user(path: Path) -> bool:
    """Whether a catalog entry's file comes from a user catalog folder (not the shipped catalog)."""
    try:
        Path(path).resolve().relative_to(catalog_dir().resolve())
        return False
    except ValueError:
        return True
