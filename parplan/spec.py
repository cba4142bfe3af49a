"""Reading user YAML and JSON through one bounded door: line numbers for every key, pydantic validation errors
turned into one clear line, and limits that no input can exceed.

Limits (each exceeded one is a ``SpecError`` naming the file, the line and the limit):

* ``MAX_FILE_BYTES`` — size of one input file;
* ``MAX_NODES`` — nodes of the document *after* alias expansion (every alias counts the whole subtree it
  names), so a kilobyte "billion laughs" bomb is refused while it is read, before anything expands or echoes it;
  a recursive alias (a node containing itself) is refused too;
* ``MAX_DEPTH`` — nesting of mappings and sequences (no RecursionError, however deep the input);
* ``MAX_SCALAR_CHARS`` — length of one scalar; ``MAX_NUMBER_CHARS`` — length of one number.

YAML mappings: keys are scalars (a sequence or mapping as key is an error), a key given twice is an error, and
merge keys (``<<: *anchor``, ``<<: [*a, *b]``) work as the YAML merge spec says: keys written in the mapping
override merged ones, and an earlier merged mapping overrides a later one.

Names and ids (``Name``) are checked at the door: no control characters (C0/C1, DEL, line separators, bidi
overrides: an escape sequence in a name could rewrite the terminal) and at most ``MAX_NAME_CHARS`` characters.

Shared by ``parplan.hardware`` and ``parplan.workloads`` (like ``errors`` and ``units``); imports nothing else of ours.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Mapping

import yaml
from pydantic import AfterValidator, BaseModel, Field, ValidationError
from pydantic_core import PydanticCustomError
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from parplan.errors import SpecError, clip, control_char, did_you_mean, escape_controls, short

MAX_FILE_BYTES = 8 * 2**20  # 8 MiB: the largest catalog file is 16 KiB, a Hugging Face config.json ~5 KiB
MAX_NODES = 200_000  # expanded nodes: a plan file of 10,000 stages is ~80,000; catalog files hold < 1,000
MAX_DEPTH = 64  # nesting levels: catalog files nest ≤ 6, a cluster file 5 (groups → device → peak_flops → bf16)
MAX_SCALAR_CHARS = 65_536  # one string: longer than any id, name, unit string or source note
MAX_NUMBER_CHARS = 100  # one number: every allowed value has fewer than 20 digits
MAX_NAME_CHARS = 200  # a name or id: the longest catalog name has ~60 characters

_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"


class MarkedDict(dict):
    """A dict that remembers the (line, col) of each key, 1-based, as read from YAML."""

    marks: dict

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.marks = {}
        self.start: tuple[int, int] | None = None


def _at(mark: Any) -> dict:
    return {"line": mark.line + 1, "col": mark.column + 1} if mark is not None else {}


class _Loader(yaml.SafeLoader):
    """SafeLoader with the limits of this module enforced while the document is composed."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded = 0  # nodes of the document so far, every alias counted as the subtree it names
        self._sizes: dict[int, int] = {}  # id(node) -> expanded size of its subtree
        self._open: set[str] = set()  # anchors of the collections being composed (an alias to one is recursive)
        self._anchor_marks: dict[str, Any] = {}

    def _count(self, n: int, mark: Any) -> None:
        self._expanded += n
        if self._expanded > MAX_NODES:
            raise SpecError(f"the document expands to more than {MAX_NODES:,} nodes (YAML aliases are counted "
                            "as the nodes they repeat)", **_at(mark),
                            hint="an alias bomb? write the values out, or use fewer aliases")

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            if event.anchor in self._open:
                raise SpecError(f"alias *{_anchor(event.anchor)} refers to a node that contains it "
                                "(a recursive structure)", **_at(event.start_mark))
            node = super().compose_node(parent, index)  # the anchored node (an undefined one raises)
            self._count(self._sizes.get(id(node), 1), event.start_mark)
            return node
        event = self.peek_event()
        anchor = event.anchor
        if anchor is not None and anchor in self.anchors:
            first = self._anchor_marks.get(anchor)
            raise SpecError(f"duplicate anchor &{_anchor(anchor)}" + (f" (first defined on line {first.line + 1})"
                                                                    if first is not None else ""),
                            **_at(event.start_mark))
        if anchor is not None:
            self._anchor_marks[anchor] = event.start_mark
        if isinstance(event, ScalarEvent):
            if len(event.value) > MAX_SCALAR_CHARS:
                raise SpecError(f"a value of {len(event.value):,} characters: at most {MAX_SCALAR_CHARS:,} are "
                                "read", **_at(event.start_mark))
            self._count(1, event.start_mark)
            node = super().compose_node(parent, index)
            self._sizes[id(node)] = 1
            return node
        if isinstance(event, (SequenceStartEvent, MappingStartEvent)):
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise SpecError(f"nested deeper than {MAX_DEPTH} levels", **_at(event.start_mark))
            self._count(1, event.start_mark)
            if anchor is not None:
                self._open.add(anchor)
            node = super().compose_node(parent, index)
            if anchor is not None:
                self._open.discard(anchor)
            self._depth -= 1
            if isinstance(node, SequenceNode):
                children = node.value
            else:
                children = [n for pair in node.value for n in pair]
            self._sizes[id(node)] = 1 + sum(self._sizes.get(id(c), 1) for c in children)
            return node
        return super().compose_node(parent, index)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (SpecError, yaml.YAMLError):
            raise
        except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:  # e.g. !!timestamp 2024-13-45
            raise SpecError(f"cannot read value {short(getattr(node, 'value', ''))}: {clip(escape_controls(str(exc)), 120)}",
                            **_at(node.start_mark)) from None


def _anchor(name: str) -> str:
    return clip(escape_controls(str(name)))


def _construct_number(kind: str):
    base = getattr(yaml.SafeLoader, f"construct_yaml_{kind}")

    def construct(loader: _Loader, node: ScalarNode) -> Any:
        if len(node.value) > MAX_NUMBER_CHARS:
            raise SpecError(f"a number of {len(node.value):,} characters: at most {MAX_NUMBER_CHARS} are read",
                            **_at(node.start_mark))
        return base(loader, node)

    return construct


def _merge_sources(loader: _Loader, value_node: Any) -> list[MarkedDict]:
    """The mappings a merge key (``<<``) brings in, earliest (highest precedence) first."""
    nodes = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
    out = []
    for n in nodes:
        if not isinstance(n, MappingNode):
            raise SpecError("the merge key '<<' takes a mapping or a list of mappings (e.g. <<: *defaults)",
                            **_at(n.start_mark))
        out.append(loader.construct_object(n, deep=True))
    return out


def _construct_mapping(loader: _Loader, node: MappingNode, deep: bool = False) -> MarkedDict:
    out = MarkedDict()
    out.start = (node.start_mark.line + 1, node.start_mark.column + 1)
    merged: list[MarkedDict] | None = None
    explicit: list[tuple[Any, Any, tuple[int, int]]] = []
    seen: set = set()
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            if merged is not None:
                raise SpecError("duplicate key '<<'", **_at(key_node.start_mark),
                                hint="merge several mappings with one key: <<: [*a, *b]")
            merged = _merge_sources(loader, value_node)
            continue
        if not isinstance(key_node, ScalarNode):
            kind = "sequence" if isinstance(key_node, SequenceNode) else "mapping"
            raise SpecError(f"a key must be a plain value (a name), not a {kind}", **_at(key_node.start_mark))
        if key_node.tag == _VALUE_TAG:  # the YAML 1.1 '=' key is a plain string here
            key_node.tag = "tag:yaml.org,2002:str"
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise SpecError(f"duplicate key {short(key)}", **_at(key_node.start_mark))
        seen.add(key)
        value = loader.construct_object(value_node, deep=True)
        explicit.append((key, value, (key_node.start_mark.line + 1, key_node.start_mark.column + 1)))
    for src in reversed(merged or []):  # later sources first, so earlier ones override them
        for k, v in src.items():
            out[k] = v
            if k in src.marks:
                out.marks[k] = src.marks[k]
    for key, value, mark in explicit:  # keys written here override merged ones
        out[key] = value
        out.marks[key] = mark
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_number("int"))
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_number("float"))


def load_yaml_text(text: str, file: str) -> Any:
    if len(text) > MAX_FILE_BYTES:
        raise SpecError(f"input of {len(text):,} characters: at most {MAX_FILE_BYTES // 2**20} MiB are read",
                        file=file)
    try:
        loader = _Loader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except SpecError as err:
        raise SpecError(err.message, file=file, line=err.line, col=err.col, hint=err.hint) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        where = {"line": mark.line + 1, "col": mark.column + 1} if mark else {}
        if isinstance(err, yaml.reader.ReaderError):  # a character YAML does not allow, at a text offset
            where = _line_col(text, err.position) if isinstance(err.position, int) else {}
        raise SpecError(f"malformed YAML: {problem}", file=file, **where) from None
    except RecursionError:  # not reached with MAX_DEPTH, kept as a guard
        raise SpecError(f"nested deeper than {MAX_DEPTH} levels", file=file) from None


def read_text_file(path: str | Path, file: str | None = None, *, what: str = "a YAML file") -> str:
    """The UTF-8 text of ``path``, at most ``MAX_FILE_BYTES`` (read no further: /dev/zero is refused too)."""
    p = Path(path)
    file = str(path) if file is None else file
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise SpecError("file not found", file=file) from None
    except IsADirectoryError:
        raise SpecError(f"is a directory, expected {what}", file=file) from None
    except ValueError:  # an embedded NUL byte in the path
        raise SpecError("bad file name (it holds a NUL character)", file=file) from None
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(f"file is larger than {MAX_FILE_BYTES // 2**20} MiB, the limit for an input file",
                        file=file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError("not a UTF-8 text file", file=file) from None


def load_yaml_file(path: str | Path) -> Any:
    return load_yaml_text(read_text_file(path), str(path))


# --- JSON (Hugging Face config.json) --------------------------------------------------------------------------
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?\d[\d.eE+-]*')


def _line_col(text: str, pos: int) -> dict:
    line = text.count("\n", 0, pos) + 1
    return {"line": line, "col": pos - (text.rfind("\n", 0, pos) + 1) + 1}


def load_json_text(text: str, file: str) -> Any:
    """``json.loads`` within the limits of this module (size, nesting depth, number and string length); JSON's
    own error messages are kept (``malformed JSON: …`` with line and column)."""
    if len(text) > MAX_FILE_BYTES:
        raise SpecError(f"input of {len(text):,} characters: at most {MAX_FILE_BYTES // 2**20} MiB are read",
                        file=file)
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        tok = m.group()
        c = tok[0]
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError(f"nested deeper than {MAX_DEPTH} levels", file=file, **_line_col(text, m.start()))
        elif c in "]}":
            depth -= 1
        elif c == '"':
            if len(tok) - 2 > MAX_SCALAR_CHARS:
                raise SpecError(f"a value of {len(tok) - 2:,} characters: at most {MAX_SCALAR_CHARS:,} are read",
                                file=file, **_line_col(text, m.start()))
        elif len(tok) > MAX_NUMBER_CHARS:
            raise SpecError(f"a number of {len(tok):,} characters: at most {MAX_NUMBER_CHARS} are read",
                            file=file, **_line_col(text, m.start()))
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"malformed JSON: {err.msg}", file=file, line=err.lineno, col=err.colno) from None
    except (ValueError, RecursionError) as err:  # guards: the scan above keeps numbers and depth in range
        raise SpecError(f"malformed JSON: {clip(escape_controls(str(err)), 120)}", file=file) from None


def load_json_file(path: str | Path, file: str | None = None) -> Any:
    file = str(path) if file is None else file
    return load_json_text(read_text_file(path, file, what="a JSON file"), file)


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
