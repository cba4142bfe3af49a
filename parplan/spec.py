"""Reading user YAML: line numbers for every key, and pydantic validation errors turned into one clear line.

Shared by ``parplan.hardware`` and ``parplan.workloads`` (like ``errors`` and ``units``); imports nothing else of ours.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ValidationError

from parplan.errors import SpecError, did_you_mean


class MarkedDict(dict):
    """A dict that remembers the (line, col) of each key, 1-based, as read from YAML."""

    marks: dict

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.marks = {}
        self.start: tuple[int, int] | None = None


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> MarkedDict:
    loader.flatten_mapping(node)
    out = MarkedDict()
    out.start = (node.start_mark.line + 1, node.start_mark.column + 1)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise SpecError(f"duplicate key {key!r}", line=key_node.start_mark.line + 1,
                            col=key_node.start_mark.column + 1)
        out[key] = loader.construct_object(value_node, deep=True)
        out.marks[key] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml_text(text: str, file: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except SpecError as err:
        err.file = file
        raise SpecError(err.message, file=file, line=err.line, col=err.col) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SpecError(f"malformed YAML: {problem}", file=file,
                        line=mark.line + 1 if mark else None,
                        col=mark.column + 1 if mark else None) from None


def load_yaml_file(path: str | Path) -> Any:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("file not found", file=str(path)) from None
    except IsADirectoryError:
        raise SpecError("is a directory, expected a YAML file", file=str(path)) from None
    except UnicodeDecodeError:
        raise SpecError("not a UTF-8 text file", file=str(path)) from None
    return load_yaml_text(text, str(path))


def _mark_of(data: Any, loc: tuple) -> tuple[int | None, int | None]:
    """Line/col of the deepest key of ``loc`` found in the marked data."""
    line = col = None
    node = data
    for part in loc:
        if isinstance(node, MarkedDict) and part in node:
            line, col = node.marks.get(part, (line, col))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            if isinstance(node, MarkedDict) and node.start:
                line, col = node.start
        else:
            if isinstance(node, MarkedDict) and node.start and line is None:
                line, col = node.start
            break
    return line, col


def _keypath(prefix: str, loc: tuple) -> str:
    parts = [prefix] if prefix else []
    for p in loc:
        if isinstance(p, int):
            parts[-1:] = [f"{parts[-1]}[{p}]"] if parts else [f"[{p}]"]
        else:
            parts.append(str(p))
    return ".".join(parts)


def validate(model: type[BaseModel], data: Any, *, file: str | None, prefix: str = "") -> BaseModel:
    """Validate ``data`` against a pydantic ``model``; the first problem becomes a one-line ``SpecError``."""
    if not isinstance(data, Mapping):
        got = "an empty document" if data is None else f"a {type(data).__name__}"
        raise SpecError(f"expected a mapping of keys, got {got}", file=file, key=prefix or None,
                        allowed=list(model.model_fields))
    try:
        return model.model_validate(dict(data) if not isinstance(data, dict) else data)
    except ValidationError as exc:
        raise _to_spec_error(exc, model, data, file, prefix) from None


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The pydantic model owning the last key of ``loc`` (for listing allowed keys)."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return None
        ann = field.annotation
        current = _unwrap_model(ann)
        if current is None:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap_model(ann: Any) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        got = _unwrap_model(arg)
        if got is not None:
            return got
    return None


def _to_spec_error(exc: ValidationError, model: type[BaseModel], data: Any, file: str | None,
                   prefix: str) -> SpecError:
    errors = exc.errors()
    # report a misspelled key before the "missing" error it causes
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "union["))))
    # pydantic reports union branches as extra loc parts like 'str' / 'float'; drop type tags
    loc = tuple(p for p in loc if p not in ("str", "float", "int", "bool", "list[...]"))
    line, col = _mark_of(data, loc)
    key = _keypath(prefix, loc) or None
    kind = err["type"]
    value = err.get("input")
    if kind == "extra_forbidden":
        owner = _model_at(model, loc)
        allowed = sorted(owner.model_fields) if owner else None
        hint = did_you_mean(str(loc[-1]), allowed or [])
        return SpecError(f"unknown key {loc[-1]!r}", file=file, key=_keypath(prefix, loc[:-1]) or None,
                         allowed=allowed, hint=hint, line=line, col=col)
    if kind == "missing":
        return SpecError("required key is missing", file=file, key=key, line=line, col=col)
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        allowed = [a.strip().strip("'") for a in expected.replace(" or ", ",").split(",") if a.strip()]
        return SpecError(f"bad value {value!r}", file=file, key=key, allowed=allowed,
                         hint=did_you_mean(str(value), allowed), line=line, col=col)
    if kind in ("greater_than", "greater_than_equal", "less_than_equal", "less_than"):
        return SpecError(f"bad value {value!r}: {err['msg'].lower()}", file=file, key=key, line=line, col=col)
    return SpecError(f"bad value {value!r}: {err['msg'].lower()}", file=file, key=key, line=line, col=col)


def locate(err: SpecError, data: Any, file: str | None) -> SpecError:
    """Add the file and the line/col of ``err.key`` (looked up in the marked YAML data) when they are missing."""
    if err.file is None and file is not None:
        err.file = file
    if err.line is None and err.key and isinstance(data, MarkedDict):
        parts: list = []
        for part in err.key.split("."):
            if "[" in part:
                name, _, idx = part.partition("[")
                parts += [name, int(idx.rstrip("]"))]
            else:
                parts.append(part)
        err.line, err.col = _mark_of(data, tuple(parts))
    return err
