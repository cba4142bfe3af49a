"""The fuzz corpus (``fuzz_cases.py``) through typer's CliRunner.

Malformed and extreme inputs: exit code 2, stderr exactly one line ``error: …`` of at most 300 characters that
names the culprit (key path, option, or file position), no traceback, nothing on stdout, no raw control character.
Edge-but-valid inputs: exit 0, no traceback or warning, strictly finite JSON.  Work-budget inputs (owned by the
planner/executor CLI): the same contract as malformed inputs.
"""
from __future__ import annotations

import contextlib
import json
import re
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fuzz_cases import BAD, BUDGET, GOOD, Case  # tests/fuzz is on sys.path (pytest's rootdir-relative import)
from parplan.cli.app import app

runner = CliRunner()
# every control character but the newline that ends the line
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _write(files: dict) -> None:
    for name, content in files.items():
        p = Path(name)
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8", newline="")


def run(c: Case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(c.files)
    return runner.invoke(app, list(c.argv))


def assert_one_error_line(r, culprit: tuple) -> str:
    assert "Traceback" not in r.output, r.output[-2000:]
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, (r.exit_code, r.output[-1000:])
    assert r.stdout == "", r.stdout[:500]
    assert r.stderr.endswith("\n") and r.stderr.count("\n") == 1, r.stderr[:1000]
    line = r.stderr[:-1]
    assert line.startswith("error: "), line
    assert len(line) <= 300, (len(line), line)
    assert not CONTROL.search(line), line
    for text in culprit:
        assert text in line, (text, line)
    return line


def _no_constant(name: str):
    raise AssertionError(f"{name} in JSON output")


@pytest.mark.parametrize("c", BAD, ids=[c.id for c in BAD])
def test_malformed_input_is_one_error_line(c, tmp_path, monkeypatch):
    assert_one_error_line(run(c, tmp_path, monkeypatch), c.culprit)


# what some valid inputs must have produced (beyond exit 0)
CHECKS = {
    # the explicit global_batch: 8 overrides the merged 4 (4 is not divisible by dp=8: it would be an error)
    "merge-key-with-override": lambda d: d["plans"][0]["micro_batches"] == 1 and d["plans"][0]["dp"] == 8,
    "merge-key-from-anchor": lambda d: d["plans"][0]["micro_batches"] == 1,
    # the explicit nodes: 1 overrides both merged values, the first merged mapping wins over the second
    "merge-list-in-cluster": lambda d: d["n_devices"] == 8,
    "unicode-workload-name": lambda d: d["workload"] == "模型-α 🚀 Ünïcødé",
    "unicode-cluster-name": lambda d: d["cluster"] == "クラスタ-β",
    "one-device-cluster": lambda d: d["n_devices"] == 1,
    "maximum-cluster": lambda d: d["n_devices"] == 1_048_576,
    "maximum-architecture": lambda d: d["plans"][0]["fits"] is False and d["plans"][0]["step_time_s"] > 0,
    "hf-config-via-workload": lambda d: d["workload"] == "via-yaml",
}


@pytest.mark.parametrize("c", GOOD, ids=[c.id for c in GOOD])
def test_edge_but_valid_input_succeeds(c, tmp_path, monkeypatch):
    r = run(c, tmp_path, monkeypatch)
    assert "Traceback" not in r.output, r.output[-2000:]
    assert r.exit_code == 0, (r.exit_code, r.output[-1000:])
    assert "Warning" not in r.stderr, r.stderr
    assert "\x1b" not in r.stdout
    if "json" in c.argv:
        data = json.loads(r.stdout, parse_constant=_no_constant)  # NaN / Infinity are not JSON
        if c.id in CHECKS:
            assert CHECKS[c.id](data), data
    else:
        assert c.id not in CHECKS


@contextlib.contextmanager
def time_limit(seconds: float):
    """Interrupt a run that exceeds ``seconds`` (a missing work budget would otherwise hang the suite)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def _expired(signum, frame):
        raise TimeoutError(f"ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("c", BUDGET, ids=[c.id for c in BUDGET])
def test_work_budget_input_is_one_error_line(c, tmp_path, monkeypatch):
    with time_limit(5.0):
        r = run(c, tmp_path, monkeypatch)
    assert_one_error_line(r, c.culprit)


def test_corpus_size_and_unique_ids():
    ids = [c.id for c in BAD + GOOD + BUDGET]
    assert len(ids) == len(set(ids))
    assert len(BAD) >= 150 and len(GOOD) >= 20
