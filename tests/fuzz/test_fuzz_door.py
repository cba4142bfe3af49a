"""The guarded door below the CLI: the bounded YAML/JSON loader, merge keys, names, quantities, bounded echoes,
and the CLI group's handling of usage errors and numpy warnings."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from parplan.cli.common import GuardedGroup
from parplan.errors import SpecError, escape_controls, short
from parplan.spec import (MAX_DEPTH, MAX_FILE_BYTES, MAX_NAME_CHARS, MAX_NODES, MAX_NUMBER_CHARS,
                          MAX_SCALAR_CHARS, check_name, load_json_text, load_yaml_text)
from parplan.units import MAXIMA, parse_quantity


def load(text: str):
    return load_yaml_text(text, "f.yaml")


def error_of(fn, *args) -> str:
    with pytest.raises(SpecError) as e:
        fn(*args)
    return str(e.value)


# --- merge keys ---------------------------------------------------------------------------------------------------
def test_merge_key_explicit_keys_override_merged_ones():
    d = load("base: &b {a: 1, b: 1}\nm:\n  <<: *b\n  b: 2\n  c: 3\n")
    assert d["m"] == {"a": 1, "b": 2, "c": 3}
    assert d["base"] == {"a": 1, "b": 1}  # the anchored mapping itself is untouched
    assert d["m"].marks["b"] == (4, 3) and d["m"].marks["a"] == (1, 11)  # marks: where each key was written


def test_merge_key_list_earlier_mappings_win():
    d = load("x: &x {k: x, only_x: 1}\ny: &y {k: y, only_y: 1}\nm:\n  <<: [*x, *y]\n")
    assert d["m"] == {"k": "x", "only_x": 1, "only_y": 1}


def test_merge_key_explicit_key_before_merge_still_wins():
    assert load("b: &b {k: merged}\nm:\n  k: mine\n  <<: *b\n")["m"]["k"] == "mine"


def test_merge_key_nested_merges():
    d = load("a: &a {k: 1, j: 1}\nb: &b {<<: *a, j: 2}\nm: {<<: *b, i: 3}\n")
    assert d["m"] == {"k": 1, "j": 2, "i": 3}


@pytest.mark.parametrize("text,expected", [
    ("m:\n  k: 1\n  k: 2\n", "f.yaml:3:3: duplicate key 'k'"),
    ("b: &b {k: 1}\nm:\n  <<: *b\n  k: 2\n  k: 3\n", "f.yaml:5:3: duplicate key 'k'"),
    ("b: &b {k: 1}\nm:\n  <<: *b\n  <<: *b\n", "f.yaml:4:3: duplicate key '<<'; merge several mappings with one key: "
                                               "<<: [*a, *b]"),
    ("m:\n  <<: [1]\n", "f.yaml:2:8: the merge key '<<' takes a mapping or a list of mappings (e.g. <<: *defaults)"),
])
def test_real_duplicates_and_bad_merges_stay_errors(text, expected):
    assert error_of(load, text) == expected


# --- limits ---------------------------------------------------------------------------------------------------------
def test_limits_are_stated():
    assert (MAX_FILE_BYTES, MAX_NODES, MAX_DEPTH, MAX_SCALAR_CHARS, MAX_NUMBER_CHARS, MAX_NAME_CHARS) == (
        8 * 2**20, 200_000, 64, 65_536, 100, 200)


def test_alias_bomb_is_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 12)]  # 10^12 nodes
    t0 = time.perf_counter()
    msg = error_of(load, "\n".join(lines) + "\n")
    assert time.perf_counter() - t0 < 1.0
    assert msg.startswith("f.yaml:6:") and "200,000 nodes" in msg


def test_aliases_within_budget_are_fine():
    doc = "a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 150) + "]\n"  # 151,000 nodes
    assert len(load(doc)["b"]) == 150


def test_node_budget_counts_plain_nodes_too(monkeypatch):
    import parplan.reading

    monkeypatch.setattr(parplan.reading, "MAX_NODES", 1000)  # the budget is read at load time; 200,000 takes seconds
    assert error_of(load, "a: [" + ", ".join(["1"] * 1000) + "]\n").startswith(
        "f.yaml:1:2996: the document expands to more than 1,000 nodes")  # the 998th item
    assert len(load("a: [" + ", ".join(["1"] * 997) + "]\n")["a"]) == 997  # 1 mapping + 1 key + 1 list + 997


@pytest.mark.parametrize("text,expected", [
    ("a: &a [*a]\n", "f.yaml:1:8: alias *a refers to a node that contains it (a recursive structure)"),
    # the document's own mapping is the first level: the 64th sequence inside it is one too many
    ("a: " + "[" * 64 + "]" * 64 + "\n", "f.yaml:1:67: nested deeper than 64 levels"),
    ("a: '" + "x" * (MAX_SCALAR_CHARS + 1) + "'\n", "f.yaml:1:4: a value of 65,537 characters: at most 65,536 are read"),
    ("a: " + "1" * 101 + "\n", "f.yaml:1:4: a number of 101 characters: at most 100 are read"),
    ("a: &x 1\nb: &x 2\n", "f.yaml:2:4: duplicate anchor &x (first defined on line 1)"),
    ("? [1]\n: 2\n", "f.yaml:1:3: a key must be a plain value (a name), not a sequence"),
    ("a: 2024-02-30\n", "f.yaml:1:4: cannot read value '2024-02-30': day is out of range for month"),
    ("a: b\x1bc\n", "f.yaml:1:5: malformed YAML: unacceptable character #x001b: special characters are not allowed"),
])
def test_each_limit_names_file_line_and_limit(text, expected):
    assert error_of(load, text) == expected


def test_nesting_at_the_limit_is_fine():
    assert load("a: " + "[" * 63 + "]" * 63 + "\n")["a"] is not None


def test_too_large_text():
    assert "8 MiB" in error_of(load, "#" * (MAX_FILE_BYTES + 1))


@pytest.mark.parametrize("text,expected", [
    ("[" * 65 + "]" * 65, "c.json:1:65: nested deeper than 64 levels"),
    ('{"a": "[[[[", "b": ' + "[" * 64 + "]" * 64 + "}", "c.json:1:83: nested deeper than 64 levels"),
    ('{"a": ' + "9" * 5000 + "}", "c.json:1:7: a number of 5,000 characters: at most 100 are read"),
    ('{"a": "' + "x" * 70_000 + '"}', "c.json:1:7: a value of 70,000 characters: at most 65,536 are read"),
    ('{"a": 1,}', "c.json:1:9: malformed JSON: Expecting property name enclosed in double quotes"),
])
def test_json_limits(text, expected):
    assert error_of(load_json_text, text, "c.json") == expected


def test_json_brackets_inside_strings_do_not_count():
    assert load_json_text('{"a": "' + "[" * 1000 + '"}', "c.json") == {"a": "[" * 1000}


# --- names --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,char", [("a\x1b[31m", "U+001B"), ("a\x9b", "U+009B"), ("a\u202e", "U+202E"),
                                       ("a\nb", "U+000A"), ("a\x00", "U+0000"), ("a\x7f", "U+007F"),
                                       ("a\u2028", "U+2028")])
def test_control_characters_in_names_are_refused(name, char):
    msg = error_of(lambda: check_name(name, key="name", file="f.yaml"))
    assert msg.startswith("f.yaml: name: bad value ") and char in msg
    assert not any(c in msg for c in "\x1b\x9b\u202e\n\x00\x7f\u2028")


@pytest.mark.parametrize("name", ["模型-α", "Ünïcødé GPU", "🚀 rocket", "a" * MAX_NAME_CHARS, "tab-free name"])
def test_printable_unicode_names_are_fine(name):
    assert check_name(name) == name


# --- bounded echoes -------------------------------------------------------------------------------------------------
def test_short_is_bounded_and_cheap_for_huge_values():
    nested: list = ["lol"] * 10
    for _ in range(7):
        nested = [nested] * 10  # 10^8 leaves, shared
    t0 = time.perf_counter()
    for value in (nested, "x" * 10**7, 10**5000, {"k" * 10**6: 1}):
        text = short(value)
        assert len(text) <= 80
    assert time.perf_counter() - t0 < 0.5
    assert short("x" * 100).endswith("…") and short(10**5000) == "<an integer of about 5,001 digits>"


def test_spec_error_escapes_controls_and_cuts_values_echoed_whole_by_others():
    err = SpecError("bad value '" + "9" * 5000 + "': expected a whole number", key="plan.tp\x1b[2J",
                    file="f\x1b.yaml", hint="try \x1b[31mred")
    text = str(err)
    assert "\x1b" not in text and "\\x1b" in text
    assert len(text) < 250 and "…': expected a whole number" in text
    assert escape_controls("a\x07\x9b\u202eb") == "a\\x07\\x9b\\u202eb"


# --- quantities ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value,kind,expected", [
    (math.nan, "seconds", "k: bad value nan: must be a finite number"),
    (math.inf, "bytes", "k: bad value inf: must be a finite number"),
    ("1e999 GB", "bytes", "k: bad value '1e999 GB': must be a finite number"),
    (-1, "bytes_per_s", "k: must be > 0, got -1"),
    ("2e18 B", "bytes", "k: bad value '2e18 B': must be ≤ 1e15 B"),
    ("1e30 FLOP/s", "flops_per_s", "k: bad value '1e30 FLOP/s': must be ≤ 1e18 FLOP/s"),
    (10**400, "bytes", "k: bad value <an integer of about 401 digits>: must be a finite number"),
    ("nan GB", "bytes", "k: cannot read quantity 'nan GB'"),
])
def test_quantities_are_finite_positive_and_bounded(value, kind, expected):
    assert error_of(lambda: parse_quantity(value, kind, key="k")).startswith(expected)


def test_latency_bounds():
    assert parse_quantity("-0 us", "seconds", positive=False, maximum=1.0) == 0.0
    assert parse_quantity("1 s", "seconds", positive=False, maximum=1.0) == 1.0
    assert "must be ≥ 0" in error_of(lambda: parse_quantity("-2 us", "seconds", positive=False))
    assert "must be ≤ 1 s" in error_of(lambda: parse_quantity("1.5 s", "seconds", positive=False, maximum=1.0))
    assert MAXIMA["bytes_per_s"] == 1e15 and MAXIMA["flops_per_s"] == 1e18


# --- the CLI group --------------------------------------------------------------------------------------------------
demo = typer.Typer(cls=GuardedGroup, add_completion=False)


@demo.command("overflow")
def _overflow(n: int = typer.Option(1, "--n")) -> None:
    x = np.array([1e308]) * 10  # RuntimeWarning: overflow encountered in multiply
    typer.echo(f"{n} {x[0]}")


@demo.command("other")
def _other() -> None:
    """A second command, so that an unknown one is told the list of allowed commands."""
    typer.echo("other")


def test_group_silences_numpy_warnings_but_not_the_result():
    r = CliRunner().invoke(demo, ["overflow"])
    assert r.exit_code == 0 and r.stdout == "1 inf\n"
    assert "Warning" not in r.stderr


@pytest.mark.parametrize("args,expected", [
    (["overflow", "--n", "x"], "error: --n: bad value 'x': expected a whole number\n"),
    (["overflow", "--m"], "error: --m: no such option of 'root overflow' (allowed: --n, --help); did you mean "
                          "'--n'?\n"),
    (["overflow", "--n"], "error: --n: needs a value; see 'root overflow --help'\n"),
    (["nope"], "error: nope: no such command of 'root' (allowed: other, overflow)\n"),
])
def test_group_usage_errors_are_one_line(args, expected):
    r = CliRunner().invoke(demo, args)
    assert r.exit_code == 2 and r.stderr == expected and r.stdout == ""
