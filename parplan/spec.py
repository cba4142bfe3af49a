"""Validating what the bounded reader (``parplan/reading.py``) read: pydantic errors turned into one clear line
located at the key's file position, and names and ids checked at the door (``Name``: no control characters — C0/C1,
DEL, line separators, bidi overrides: an escape sequence in a name could rewrite the terminal — and at most
``MAX_NAME_CHARS`` characters).

Shared by ``parplan.hardware`` and ``parplan.workloads`` (like ``errors`` and ``units``); imports nothing else of ours.
"""
from __future__ import annotations

from typing import Annotated, Any, Mapping

from pydantic import AfterValidator, BaseModel, Field, ValidationError
from pydantic_core import PydanticCustomError

from parplan.errors import SpecError, control_char, did_you_mean, short
# the reader's entry points and limits, importable from here as before the split
from parplan.reading import (MAX_DEPTH, MAX_FILE_BYTES, MAX_NAME_CHARS, MAX_NODES, MAX_NUMBER_CHARS,  # noqa: F401
                             MAX_SCALAR_CHARS, MarkedDict, load_json_file, load_json_text, load_yaml_file,
                             load_yaml_text, read_text_file)


# --- names and ids ---------------------------------------------------------------------------------------------
def name_problem(value: str) -> str | None:
    """Why ``value`` is not acceptable as a name or id (None when it is)."""
    char = control_char(value)
    if char is not None:
        return f"control character {char} is not allowed in a name"
    if len(value) > MAX_NAME_CHARS:
        return f"a name has at most {MAX_NAME_CHARS} characters, got {len(value):,}"
    return None


def check_name(value: str, *, key: str | None = None, file: str | None = None) -> str:
    """``value`` when it is a usable name or id; else a ``SpecError`` naming the key."""
    problem = name_problem(value)
    if problem is not None:
        raise SpecError(f"bad value {short(value)}: {problem}", key=key, file=file,
                        hint="names are printed in tables and terminals: use printable characters")
    return value


def _name_validator(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise PydanticCustomError("bad_name", problem)
    return value


# a name or id in a schema: printable, at most MAX_NAME_CHARS characters
Name = Annotated[str, Field(min_length=1), AfterValidator(_name_validator)]


# --- validation -------------------------------------------------------------------------------------------------
def _mark_of(data: Any, loc: tuple) -> tuple[int | None, int | None]:
    """Line/col of the deepest key of ``loc`` found in the marked data."""
    line = col = None
    node = data
    for part in loc:
        if isinstance(node, MarkedDict) and _has(node, part):
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


def _has(d: dict, key: Any) -> bool:
    try:
        return key in d
    except TypeError:
        return False


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
    for k in data:
        if not isinstance(k, str):
            line, col = _mark_of(data, (k,))
            raise SpecError(f"unknown key {short(k)}: keys are names", file=file, key=prefix or None,
                            allowed=sorted(model.model_fields), line=line, col=col)
    _no_bool_numbers(model, data, file, prefix, ())
    try:
        return model.model_validate(dict(data) if not isinstance(data, dict) else data)
    except ValidationError as exc:
        raise _to_spec_error(exc, model, data, file, prefix) from None


def _numeric_only(ann: Any) -> bool:
    """A float field (alone or optional, not one that also takes a bool or a string)."""
    args = [a for a in (getattr(ann, "__args__", None) or (ann,)) if a is not type(None)]
    return float in args and not any(a in (bool, str) for a in args)


def _no_bool_numbers(model: Any, data: Any, file, prefix: str, path: tuple) -> None:
    """A YAML true/yes/on where a number belongs is an error: the lax float fields (which read "1e9", a string to
    YAML) turned it into 1.0 (slo tpot_s: true was a 1 s SLO, spd_drop_budget: on let every sync drop)."""
    fields = getattr(model, "model_fields", None)
    if not fields or not isinstance(data, Mapping):
        return
    for k, v in data.items():
        f = fields.get(k) if isinstance(k, str) else None
        if f is None:
            continue
        if isinstance(v, bool) and _numeric_only(f.annotation):
            line, col = _mark_of(data, (k,))
            where = ".".join(str(x) for x in (*path, k)).replace(".[", "[")
            raise SpecError(f"bad value {v!r}: expected a number", file=file,
                            key=f"{prefix}.{where}" if prefix else where, line=line, col=col)
        sub = _unwrap_model(f.annotation)
        if sub is None:
            continue
        if isinstance(v, Mapping):
            _no_bool_numbers(sub, v, file, prefix, (*path, k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                _no_bool_numbers(sub, x, file, prefix, (*path, f"{k}[{i}]"))


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


def _first_lower(text: str) -> str:
    return text[:1].lower() + text[1:]


_TYPE_TAGS = ("str", "float", "int", "bool", "list[...]", "constrained-str", "constrained-float", "constrained-int")


def _model_names(model: Any, seen: set | None = None) -> set[str]:
    """Class names of every pydantic model reachable from ``model``'s fields (pydantic's union branch tags)."""
    seen = set() if seen is None else seen
    todo = [model]
    while todo:
        ann = todo.pop()
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if ann.__name__ in seen:
                continue
            seen.add(ann.__name__)
            todo.extend(f.annotation for f in ann.model_fields.values())
        else:
            todo.extend(getattr(ann, "__args__", ()) or ())
    return seen


def _branch_tag(loc: tuple) -> str | None:
    """The scalar type of a union branch an error belongs to ('str', 'int' …), from the last part of its loc."""
    if not loc or not isinstance(loc[-1], str):
        return None
    last = loc[-1]
    if last in _TYPE_TAGS:
        return last.removeprefix("constrained-")
    if last.startswith("function-"):  # e.g. 'function-after[_name_validator(), constrained-str]'
        inner = last.rstrip("]").rsplit(", ", 1)[-1].rsplit("[", 1)[-1]
        return inner.removeprefix("constrained-") if inner in _TYPE_TAGS else None
    return None


def _fits_branch(tag: str | None, value: Any) -> bool:
    """Whether ``value`` has the type of union branch ``tag`` (a branch of another type says nothing useful)."""
    if tag is None:
        return True
    if tag == "str":
        return isinstance(value, str)
    if tag == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if tag == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tag == "bool":
        return isinstance(value, bool)
    return True


def _value_at(data: Any, parts: list) -> Any:
    node = data
    for p in parts:
        if isinstance(node, Mapping) and _has(node, p):
            node = node[p]
        elif isinstance(node, list) and isinstance(p, int) and 0 <= p < len(node):
            node = node[p]
        else:
            return None
    return node


def _first_mismatch(loc: tuple, data: Any, models: set[str]) -> int | None:
    """Index in ``loc`` of the first union branch whose type the input there does not have (None: all fit)."""
    parts: list = []
    for i, p in enumerate(loc):
        if isinstance(p, str) and p in models:
            if not isinstance(_value_at(data, parts), Mapping):
                return i
            continue
        tag = _branch_tag(loc[: i + 1])
        if tag is not None:
            if not _fits_branch(tag, _value_at(data, parts)):
                return i
            continue
        if isinstance(p, str) and p.startswith(("function-", "union[")):
            continue
        parts.append(p)
    return None


def _pick_error(errors: list[dict], data: Any, models: set[str]) -> dict:
    """The error to report: a misspelled key before the "missing" error it causes; of a union's branches, the one
    of the input's own type, else the one that went deepest (a mapping given for an inline link: the link's
    error, not "should be a valid string"; a string name: the name's error, not "should be a valid integer")."""
    def rank(e: dict) -> tuple[int, int, int]:
        miss = _first_mismatch(e["loc"], data, models)
        return (0 if e["type"] == "extra_forbidden" else 1, 0 if miss is None else 1, -(miss or 0))
    return min(errors, key=rank)


_AS_TEXT = {"str": "a string", "int": "an integer", "float": "a number", "bool": "true or false"}


def _to_spec_error(exc: ValidationError, model: type[BaseModel], data: Any, file: str | None,
                   prefix: str) -> SpecError:
    errors = exc.errors()
    # pydantic reports union branches as extra loc parts: type tags ('str', 'float' …) and model class names
    tags = _model_names(model) - set(getattr(model, "model_fields", {}))
    err = _pick_error(errors, data, tags)
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (
        p.startswith(("function-", "union[")) or p in _TYPE_TAGS or p in tags)))
    line, col = _mark_of(data, loc)
    key = _keypath(prefix, loc) or None
    kind = err["type"]
    value = err.get("input")
    if loc and loc[-1] == "[key]":  # a key of a free-form mapping (e.g. architecture:) that is not a string
        where = loc[:-2]
        line, col = _mark_of(data, loc[:-1])
        return SpecError(f"unknown key {short(loc[-2])}: keys are names", file=file,
                         key=_keypath(prefix, where) or None, line=line, col=col)
    if kind == "extra_forbidden":
        owner = _model_at(model, loc)
        allowed = sorted(owner.model_fields) if owner else None
        hint = did_you_mean(str(loc[-1]), allowed or [])
        return SpecError(f"unknown key {short(loc[-1])}", file=file, key=_keypath(prefix, loc[:-1]) or None,
                         allowed=allowed, hint=hint, line=line, col=col)
    if kind == "missing":
        return SpecError("required key is missing", file=file, key=key, line=line, col=col)
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        allowed = [a.strip().strip("'") for a in expected.replace(" or ", ",").split(",") if a.strip()]
        return SpecError(f"bad value {short(value)}", file=file, key=key, allowed=allowed,
                         hint=did_you_mean(str(value), allowed) if isinstance(value, str) else None,
                         line=line, col=col)
    msg = _first_lower(err["msg"])
    if kind == "value_error":
        msg = err["msg"].removeprefix("Value error, ")
    elif kind in ("too_long", "too_short") and isinstance(value, (list, tuple, dict)):
        ctx = err.get("ctx", {})
        bound = (f"at most {ctx.get('max_length')} are allowed" if kind == "too_long"
                 else f"at least {ctx.get('min_length')} are needed")
        n = len(value)
        return SpecError(f"{n:,} {'entry' if n == 1 else 'entries'}: {bound}", file=file, key=key, line=line, col=col)
    tag = _branch_tag(err["loc"])
    if tag is not None and not _fits_branch(tag, value):
        # every branch of the union refused the input's type: name them all ("a number or a string")
        tags = {_branch_tag(e["loc"]) for e in errors if e["loc"][:-1] == err["loc"][:-1]} - {None}
        if len(tags) > 1:
            if {"str", "float"} <= tags:
                msg = "expected a number or a string with a unit, e.g. \"300 GB/s\""
            else:
                msg = "expected " + " or ".join(_AS_TEXT.get(t, t) for t in sorted(tags))
    return SpecError(f"bad value {short(value)}: {msg}", file=file, key=key, line=line, col=col)


def locate(err: SpecError, data: Any, file: str | None) -> SpecError:
    """Add the file and the line/col of ``err.key`` (looked up in the marked YAML data) when they are missing."""
    if err.file is None and file is not None:
        err.file = file
    if err.line is None and err.key and isinstance(data, MarkedDict):
        parts: list = []
        for part in err.key.split("."):
            if "[" in part:
                name, _, idx = part.partition("[")
                try:
                    parts += [name, int(idx.rstrip("]"))]
                except ValueError:
                    parts.append(part)
            else:
                parts.append(part)
        err.line, err.col = _mark_of(data, tuple(parts))
    return err
