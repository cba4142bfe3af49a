"""``--scheduler``: a 5 models × 4 sizes sweep on a local Dask cluster started here equals the local run; an
unreachable scheduler, or one without workers, is a one-line error after the connect timeout, never a hang."""
from __future__ import annotations

import socket

import pandas as pd
import pytest

from parplan.planner.sweep import sweep
from parplan.planner.sweep_io import read_table

from sweep_helpers import invoke, one_line_error

distributed = pytest.importorskip("distributed")

# five small catalog workloads, four device counts of H100 nodes
FIVE = ("mpt-1b", "mpt-3b", "mpt-7b", "llama2-7b", "llama3-8b")
FOUR = (8, 16, 32, 64)


@pytest.fixture(scope="module")
def dask_cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        yield cluster


def test_five_by_four_on_a_local_dask_cluster(tmp_path, dask_cluster):
    out = tmp_path / "s.parquet"
    r = invoke("sweep", "--models", ",".join(FIVE), "--hw", "dgx-h100-64", "--sizes", ",".join(map(str, FOUR)),
               "--top", "1", "--scheduler", dask_cluster.scheduler_address, "-o", out)
    assert r.exit_code == 0, r.output
    assert f"sweep: 20 cells (20 computed on the Dask cluster at {dask_cluster.scheduler_address})" in r.stderr
    df = read_table(out)
    assert list(zip(df["model"], df["size"])) == [(m, s) for m in FIVE for s in FOUR]
    assert (df["status"] == "ok").all() and (df["n_devices"] == df["size"]).all()
    local = sweep(list(FIVE), ["dgx-h100-64"], sizes=list(FOUR), workers=1)
    pd.testing.assert_frame_equal(df, local)
    # resumed on the cluster: nothing left to compute
    r = invoke("sweep", "--models", ",".join(FIVE), "--hw", "dgx-h100-64", "--sizes", ",".join(map(str, FOUR)),
               "--scheduler", dask_cluster.scheduler_address, "-o", out)
    assert r.exit_code == 0 and "(20 reused from" in r.stderr and "0 computed" in r.stderr


def test_api_takes_a_client(dask_cluster):
    with distributed.Client(dask_cluster, set_as_default=False) as client:
        df = sweep(["llama2-7b"], ["dgx-h100-64"], sizes=[8, 16], scheduler=client)
        assert df.attrs["sweep"]["runner"] == "dask" and list(df["status"]) == ["ok", "ok"]
        assert client.status == "running"  # a client the caller gave stays open


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler(tmp_path):
    out = tmp_path / "s.csv"
    address = f"tcp://127.0.0.1:{_closed_port()}"
    line = one_line_error(invoke("sweep", "--models", "llama2-7b", "--hw", "dgx-h100-64", "--scheduler", address,
                                 "--connect-timeout", "1", "-o", out))
    assert line.startswith(f"error: --scheduler: cannot reach the Dask scheduler at '{address}' within 1 s")
    assert not out.exists()


def test_scheduler_without_workers(tmp_path):
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty:
        line = one_line_error(invoke("sweep", "--models", "llama2-7b", "--hw", "dgx-h100-64", "--scheduler",
                                     empty.scheduler_address, "--connect-timeout", "1", "-o", tmp_path / "s.csv"))
    assert "has no workers (waited 1 s)" in line


def test_without_dask_installed(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # `import dask.distributed` raises ImportError
    line = one_line_error(invoke("sweep", "--models", "llama2-7b", "--hw", "dgx-h100-64", "--scheduler",
                                 "tcp://127.0.0.1:8786", "-o", tmp_path / "s.csv"))
    assert line == ("error: --scheduler: needs dask.distributed, which is not installed; "
                    "pip install 'parplan[dask]', or drop --scheduler to run on this machine")
