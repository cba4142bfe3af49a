"""The bounded reader of user YAML and JSON: line numbers for every key, and limits that no input can exceed.

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

Shared by ``parplan.hardware`` and ``parplan.workloads`` (like ``errors`` and ``units``); imports nothing else of ours.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from parplan.errors import SpecError, clip, escape_controls, short

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


if getattr(yaml, "__with_libyaml__", False):
    class _PackageLoader(yaml.CSafeLoader):
        """libyaml's parser and composer (C) with this module's constructors (marks, duplicate keys, merges): for
        the package's own catalog files only — trusted, small and checked by the tests with the bounded loader
        (``tests/hardware``: both loaders read every catalog file alike); the compose-time limits need the Python
        composer, so user files always take ``_Loader``."""

    _PackageLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
else:  # no libyaml: the bounded loader reads the catalogs too
    _PackageLoader = None


_CATALOG_DIR: list = []  # the folder of parplan.catalogs, once known


def _package_catalog(path: Path) -> bool:
    """True when ``path`` lies in the installed package's catalogs folder."""
    if not _CATALOG_DIR:
        import importlib.util

        spec = importlib.util.find_spec("parplan.catalogs")
        origin = spec.origin if spec is not None else None
        _CATALOG_DIR.append(Path(origin).resolve().parent if origin else None)
    root = _CATALOG_DIR[0]
    if root is None:
        return False
    try:
        return Path(path).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


def load_yaml_text(text: str, file: str, *, package: bool = False) -> Any:
    """The YAML document of ``text`` (``file`` names it in errors); ``package``: a catalog file of the package
    itself, read with libyaml (``_PackageLoader``) where available."""
    if len(text) > MAX_FILE_BYTES:
        raise SpecError(f"input of {len(text):,} characters: at most {MAX_FILE_BYTES // 2**20} MiB are read",
                        file=file)
    try:
        loader = _PackageLoader(text) if package and _PackageLoader is not None else _Loader(text)
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
    return load_yaml_text(read_text_file(path), str(path), package=_package_catalog(Path(path)))


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


