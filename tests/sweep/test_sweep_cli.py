"""``parplan sweep`` on the command line: the table and the summary on stderr, and every bad input refused before
any cell runs as one `error:` line with exit code 2."""
from __future__ import annotations

import pytest

from parplan.planner.sweep_io import SWEEP_COLUMNS, read_table

from sweep_helpers import invoke, one_line_error

BASE = ("--models", "llama2-7b", "--hw", "dgx-h100-64")


def test_table_and_summary(tmp_path):
    out = tmp_path / "s.parquet"
    r = invoke("sweep", "--models", "llama2-7b,llama3-70b", "--hw", "dgx-a100-8,dgx-h100-64", "--top", "2",
               "-o", out)
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("sweep: 4 cells (4 computed locally) in ")
    assert lines[0].endswith(": 3 ok, 1 infeasible, 0 error")
    assert lines[1] == f"wrote {out} (7 rows)"
    df = read_table(out)
    assert list(df.columns) == list(SWEEP_COLUMNS)
    assert list(zip(df["model"], df["hw"], df["status"])) == [
        ("llama2-7b", "dgx-a100-8", "ok"), ("llama2-7b", "dgx-a100-8", "ok"),
        ("llama2-7b", "dgx-h100-64", "ok"), ("llama2-7b", "dgx-h100-64", "ok"),
        ("llama3-70b", "dgx-a100-8", "infeasible"),
        ("llama3-70b", "dgx-h100-64", "ok"), ("llama3-70b", "dgx-h100-64", "ok")]


def test_files_as_inputs(tmp_path, root):
    out = tmp_path / "s.csv"
    hw = root / "catalogs" / "clusters" / "dgx-a100-8.yaml"
    r = invoke("sweep", "--models", "llama2-7b", "--hw", hw, "-o", out, "--quiet", "--workers", "1")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    df = read_table(out)
    assert list(df["hw"]) == [str(hw)] and list(df["cluster"]) == ["dgx-a100-8"]


def test_quiet(tmp_path):
    r = invoke("sweep", *BASE, "--sizes", "8", "-o", tmp_path / "s.csv", "--quiet")
    assert r.exit_code == 0 and r.stderr == ""


@pytest.mark.parametrize("args, starts", [
    (("--sizes", "12"), "error: --sizes: size 12 is not a multiple of the 8 devices per node of 'dgx-h100-64'"),
    (("--sizes", "8,0"), "error: --sizes: bad value 0: must be between 1 and"),
    (("--sizes", "8,,16"), "error: --sizes: bad value '8,,16': an empty entry"),
    (("--sizes", "8,8"), "error: --sizes: size 8 is given twice"),
    (("--sizes", "eight"), "error: --sizes: bad value 'eight': expected an integer"),
    (("--top", "0"), "error: --top: bad value 0: must be between 1 and"),
    (("--objective", "devices"), "error: --objective: bad value 'devices' (allowed: throughput, memory, cost)"),
    (("--precision", "fp7"), "error: --precision: bad value 'fp7'"),
    (("--framework", "nope"), "error: --framework:"),
    (("--memory-headroom", "0.9"), "error: --memory-headroom: bad value 0.9"),
    (("--max-cells", "0"), "error: --max-cells: bad value 0"),
    (("--workers", "0"), "error: --workers: bad value 0"),
    (("--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"),
     "error: --workers: sizes the local process pool; a Dask cluster"),
    (("--scheduler", "localhost"), "error: --scheduler: bad value 'localhost': expected a scheduler address"),
    (("--fix", "tp=x"), "error: --fix"),
])
def test_bad_options(tmp_path, args, starts):
    out = tmp_path / "s.csv"
    r = invoke("sweep", *BASE, *args, "-o", out)
    one_line_error(r, starts=starts)
    assert not out.exists()


def test_bad_lists(tmp_path):
    out = tmp_path / "s.csv"
    one_line_error(invoke("sweep", "--models", "llama2-7b,,llama3-8b", "--hw", "dgx-h100-64", "-o", out),
                   starts="error: --models: bad value 'llama2-7b,,llama3-8b': an empty entry")
    one_line_error(invoke("sweep", "--models", "llama2-7b,llama2-7b", "--hw", "dgx-h100-64", "-o", out),
                   starts="error: --models: 'llama2-7b' is given twice")
    line = one_line_error(invoke("sweep", "--models", "llama2-7x", "--hw", "dgx-h100-64", "-o", out))
    assert "no workload file or catalog id 'llama2-7x'" in line and "llama2-7b" in line
    line = one_line_error(invoke("sweep", "--models", "llama2-7b", "--hw", "dgx-h100-65", "-o", out))
    assert "no cluster file or catalog id 'dgx-h100-65'" in line
    one_line_error(invoke("sweep", "--hw", "dgx-h100-64", "-o", out), starts="error: --models: required option")
    assert not out.exists()


def test_multi_group_cluster_with_sizes_refused(tmp_path):
    line = one_line_error(invoke("sweep", *BASE, "--hw", "mixed-h100-a100-64", "--sizes", "8", "-o",
                                 tmp_path / "s.csv"))
    assert "cluster 'mixed-h100-a100-64' has 2 device groups: --sizes resizes single-group clusters only" in line
    line = one_line_error(invoke("sweep", *BASE, "--hw", "mixed-h100-a100-64", "--objective", "memory", "-o",
                                 tmp_path / "s.csv"))
    assert "--objective not supported on the multi-group cluster 'mixed-h100-a100-64'" in line


def test_cell_cap(tmp_path):
    line = one_line_error(invoke("sweep", "--models", "llama2-7b,llama3-8b", "--hw", "dgx-h100-64",
                                 "--sizes", "8,16", "--max-cells", "3", "-o", tmp_path / "s.csv"))
    assert line == ("error: --max-cells: the sweep has 4 cells (2 models × 1 cluster × 2 sizes), above the cap of 3 "
                    "cells; raise --max-cells, or sweep fewer models, clusters or sizes")
    sizes = ",".join(str(8 * i) for i in range(1, 10_002))
    line = one_line_error(invoke("sweep", *BASE, "--sizes", sizes, "-o", tmp_path / "s.csv"))
    assert "above the cap of 10,000 cells" in line


def test_bad_output(tmp_path):
    one_line_error(invoke("sweep", *BASE, "-o", tmp_path / "s.xlsx"),
                   starts="error: --output: cannot tell the format of")
    one_line_error(invoke("sweep", *BASE, "-o", tmp_path / "nowhere" / "s.csv"),
                   starts="error: --output: folder")
    one_line_error(invoke("sweep", *BASE), starts="error: --output: required option is missing")
