"""Resumable output: a second run computes nothing, a partial file only the missing cells, other options or
--restart recompute, an interrupted sweep keeps the cells that finished."""
from __future__ import annotations

import pandas as pd
import pytest

from parplan.planner import sweep_run
from parplan.planner.sweep import sweep
from parplan.planner.sweep_io import read_table, write_table

from sweep_helpers import MODELS, SIZES, invoke, small_sweep  # noqa: F401  (small_sweep: a fixture)

ARGS = ("--models", ",".join(MODELS), "--hw", "dgx-h100-64", "--sizes", ",".join(map(str, SIZES)), "--workers", "1")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_second_run_computes_nothing(tmp_path, small_sweep, suffix):
    out = tmp_path / f"s{suffix}"
    r = invoke("sweep", *ARGS, "-o", out)
    assert r.exit_code == 0, r.output
    assert "sweep: 4 cells (4 computed locally)" in r.stderr and f"wrote {out} (4 rows)" in r.stderr
    pd.testing.assert_frame_equal(read_table(out), small_sweep)
    r = invoke("sweep", *ARGS, "-o", out)
    assert r.exit_code == 0, r.output
    assert f"sweep: 4 cells (4 reused from {out}, 0 computed locally)" in r.stderr
    pd.testing.assert_frame_equal(read_table(out), small_sweep)


def test_partial_file_computes_only_the_missing_cells(tmp_path, small_sweep):
    out = tmp_path / "s.csv"
    write_table(small_sweep.iloc[[0, 3]], out)  # two of the four cells finished
    df = sweep(list(MODELS), ["dgx-h100-64"], sizes=list(SIZES), workers=1, output=out)
    assert df.attrs["sweep"]["reused"] == 2 and df.attrs["sweep"]["computed"] == 2
    pd.testing.assert_frame_equal(df, small_sweep)
    pd.testing.assert_frame_equal(read_table(out), small_sweep)  # in cell order again


def test_other_options_and_restart_recompute(tmp_path, small_sweep):
    out = tmp_path / "s.parquet"
    write_table(small_sweep, out)
    r = invoke("sweep", *ARGS, "--seq-len", "2048", "-o", out)
    assert r.exit_code == 0, r.output
    assert "note: 4 rows of" in r.stderr and "(4 computed locally)" in r.stderr
    assert set(read_table(out)["options"]) == {'{"seq_len":2048,"top":1}'}
    r = invoke("sweep", *ARGS, "--seq-len", "2048", "-o", out, "--restart")
    assert r.exit_code == 0 and "(4 computed locally)" in r.stderr and "reused" not in r.stderr


def test_top_k_cells_keep_all_their_rows(tmp_path):
    out = tmp_path / "s.csv"
    first = sweep(["llama2-7b"], ["dgx-h100-64"], sizes=[8, 16], top=2, workers=1, output=out)
    again = sweep(["llama2-7b"], ["dgx-h100-64"], sizes=[8, 16, 32], top=2, workers=1, output=out)
    assert again.attrs["sweep"]["reused"] == 2 and again.attrs["sweep"]["computed"] == 1
    assert list(again["rank"]) == [1, 2, 1, 2, 1, 2]
    pd.testing.assert_frame_equal(again.iloc[:4], first)


def test_interrupted_sweep_keeps_finished_cells(tmp_path, monkeypatch, small_sweep):
    out = tmp_path / "s.csv"
    real = sweep_run.run_cell
    calls = []

    def stop_at_third(task):
        calls.append(task.index)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(sweep_run, "run_cell", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        sweep(list(MODELS), ["dgx-h100-64"], sizes=list(SIZES), workers=1, output=out)
    kept = read_table(out)
    pd.testing.assert_frame_equal(kept, small_sweep.iloc[:2])
    monkeypatch.setattr(sweep_run, "run_cell", real)
    df = sweep(list(MODELS), ["dgx-h100-64"], sizes=list(SIZES), workers=1, output=out)
    assert df.attrs["sweep"]["reused"] == 2 and df.attrs["sweep"]["computed"] == 2
    pd.testing.assert_frame_equal(df, small_sweep)


def test_interrupted_cli_says_how_to_resume(tmp_path, monkeypatch):
    def interrupt(task):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run, "run_cell", interrupt)
    out = tmp_path / "s.csv"
    r = invoke("sweep", *ARGS, "-o", out)
    assert r.exit_code == 130
    assert "interrupted: the finished cells are in" in r.stderr and "run the same command again" in r.stderr


def test_a_file_of_something_else_is_not_overwritten(tmp_path):
    out = tmp_path / "s.csv"
    out.write_text("name,value\nx,1\n")
    r = invoke("sweep", *ARGS, "-o", out)
    assert r.exit_code == 2 and "is not a sweep table" in r.stderr and "--restart" in r.stderr
    assert out.read_text() == "name,value\nx,1\n"
    r = invoke("sweep", *ARGS, "-o", out, "--restart", "--quiet")
    assert r.exit_code == 0 and len(read_table(out)) == 4
