"""The sweep table on disk: column types against a real export frame, CSV and parquet round trips (integers stay
integers, empty values stay empty), atomic writes, files that are not sweep tables."""
from __future__ import annotations

import pandas as pd
import pytest

from parplan.api import suggest
from parplan.errors import SpecError
from parplan.planner.export import EXPORT_COLUMNS
from parplan.planner.sweep import sweep
from parplan.planner.sweep_io import SWEEP_COLUMNS, column_kind, normalize, read_table, write_table


def test_column_kinds_match_the_export_frame():
    df = suggest("llama2-7b", "dgx-a100-8", top=2).to_frame()
    for c in EXPORT_COLUMNS:
        kind = df[c].dtype.kind
        want = {"i": "int", "u": "int", "b": "bool", "f": "float", "O": "text"}[kind]
        assert column_kind(c) == want, c


@pytest.fixture(scope="module")
def mixed_table():
    """ok rows (top 2), an infeasible cell and an error cell."""
    a = sweep(["llama2-7b", "llama3-70b"], ["dgx-a100-8"], top=2, workers=1)
    b = sweep(["llama2-7b"], ["dgx-a100-8"], precision="fp8", workers=1)
    return normalize(pd.concat([a, b], ignore_index=True))


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip(tmp_path, mixed_table, suffix):
    path = tmp_path / f"sweep{suffix}"
    write_table(mixed_table, path)
    back = read_table(path)
    pd.testing.assert_frame_equal(back, mixed_table)
    assert list(back["status"]) == ["ok", "ok", "infeasible", "error"]
    assert str(back["rank"].dtype) == "Int64" and pd.isna(back["rank"].iloc[2])
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left beside it


def test_csv_integers_are_written_as_integers(tmp_path, mixed_table):
    path = tmp_path / "sweep.csv"
    write_table(mixed_table, path)
    plain = pd.read_csv(path)
    assert plain["size"].dtype.kind == "i" and plain["n_devices"].dtype.kind == "i"
    first = path.read_text().splitlines()[1]
    assert ",1," in first and ",1.0," not in first


def test_not_a_sweep_table(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(SpecError, match="is not a sweep table: it lacks the columns model, hw, size"):
        read_table(path)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(SpecError, match="is not a sweep table: it cannot be read"):
        read_table(bad)


def test_bad_status_refused(tmp_path, mixed_table):
    df = mixed_table.copy()
    df.loc[0, "status"] = "maybe"
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    with pytest.raises(SpecError, match="its status column holds 'maybe'"):
        read_table(path)


def test_unknown_suffix(tmp_path, mixed_table):
    with pytest.raises(SpecError, match=r"--output: cannot tell the format .*allowed: \.csv, \.parquet, \.pq"):
        write_table(mixed_table, tmp_path / "sweep.xlsx")


def test_columns_in_order(mixed_table):
    assert list(mixed_table.columns) == list(SWEEP_COLUMNS)


def test_empty_cell_key_refused(tmp_path, mixed_table):
    df = mixed_table.copy()
    df["size"] = df["size"].astype(object)
    df.loc[1, "size"] = None
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    with pytest.raises(SpecError, match="its size column has empty values"):
        read_table(path)
