"""Running a sweep: the cells still to do in a local process pool or on a Dask cluster, the rows of finished cells
kept from an earlier run of the same sweep (resume), and the table checkpointed as cells finish.

``run_sweep`` is the driver; ``run_local`` / ``run_dask`` run ``planner.sweep.run_cell`` on each task and hand
every finished cell to a callback in the calling thread.  Checkpoints: the whole table is rewritten atomically
(``sweep_io.write_table``) after a cell finishes, unless writing would take more than a tenth of the time (then
it waits: at most ~10 % of a sweep is spent writing), and always at the end — also when the sweep is interrupted
(Ctrl-C) or a runner fails, so only cells in flight are lost.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from parplan.errors import SpecError, short
from parplan.planner.budget import DEFAULT_CONNECT_TIMEOUT_S
from parplan.planner.sweep import CellTask, cell_key, run_cell

# Checkpoint pacing: write when the time since the last write is at least this many times the last write's duration
_WRITE_RATIO = 9.0

Done = Callable[[CellTask, Any], None]


@dataclass
class SweepStats:
    cells: int = 0
    reused: int = 0  # cells whose rows came from the existing output
    computed: int = 0
    ok: int = 0
    infeasible: int = 0
    error: int = 0
    rows: int = 0
    dropped_rows: int = 0  # rows of the existing output that belong to no cell of this sweep (other options, inputs)
    output: str | None = None
    wall_s: float = 0.0
    runner: str = "local"

    def to_dict(self) -> dict:
        return asdict(self)


def default_workers() -> int:
    return os.cpu_count() or 1


# --- runners --------------------------------------------------------------------------------------------------
def run_local(tasks: list[CellTask], workers: int, on_done: Done) -> None:
    """``workers`` processes (1: in this process, one cell after the other)."""
    if workers <= 1 or len(tasks) <= 1:
        for t in tasks:
            on_done(t, run_cell(t))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # fork on Linux (workers start in milliseconds and need no importable __main__); elsewhere the platform's default
    ctx = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx, initializer=_ignore_sigint)
    try:
        futures = {pool.submit(run_cell, t): t for t in tasks}
        for f in as_completed(futures):
            try:
                rows = f.result()
            except BrokenProcessPool as exc:
                raise SpecError(f"a worker process died ({exc or 'killed'}); finished cells are kept in the output",
                                key="--workers", hint="run again to resume, with fewer --workers if memory ran out")
            on_done(futures[f], rows)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which saves the finished cells and stops the pool (no tracebacks from
    every worker); a worker finishes the cell it has, then exits."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _client(scheduler: Any, connect_timeout: float):
    """A ``dask.distributed.Client`` for an address (owned: closed by the caller) or the given client itself."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise SpecError("needs dask.distributed, which is not installed", key="--scheduler",
                        hint="pip install 'parplan[dask]', or drop --scheduler to run on this machine") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    address = str(scheduler)
    if "://" not in address or not address.split("://", 1)[1]:
        raise SpecError(f"bad value {short(address)}: expected a scheduler address", key="--scheduler",
                        hint="e.g. tcp://10.0.0.5:8786")
    try:
        client = Client(address, timeout=connect_timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise SpecError(f"cannot reach the Dask scheduler at {short(address)} within {connect_timeout:g} s "
                        f"({type(exc).__name__})", key="--scheduler",
                        hint="start one (`dask scheduler`, then `dask worker ADDRESS`), or drop --scheduler") from None
    except ValueError as exc:  # an unknown protocol, a malformed address
        raise SpecError(f"bad value {short(address)}: {exc}", key="--scheduler", hint="e.g. tcp://10.0.0.5:8786") \
            from None
    return client, True


def run_dask(tasks: list[CellTask], scheduler: Any, on_done: Done,
             connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
    """One Dask task per cell on the cluster behind ``scheduler`` (an address such as ``tcp://host:8786``, or a
    ``Client``).  No scheduler within ``connect_timeout`` s, or a scheduler without workers, is a one-line error."""
    client, owned = _client(scheduler, connect_timeout)
    futures = []
    try:
        if not tasks:
            return
        try:
            client.wait_for_workers(1, timeout=connect_timeout)
        except (TimeoutError, OSError):
            raise SpecError(f"the Dask scheduler at {short(str(client.scheduler.address))} has no workers (waited "
                            f"{connect_timeout:g} s)", key="--scheduler",
                            hint="start workers with `dask worker ADDRESS`") from None
        from dask.distributed import as_completed

        futures = [client.submit(run_cell, t, pure=False) for t in tasks]
        by_key = {f.key: t for f, t in zip(futures, tasks)}
        for f in as_completed(futures, loop=client.loop):  # this client, not a default one
            try:
                rows = f.result()
            except Exception as exc:  # noqa: BLE001 - run_cell never raises: this is the cluster (a lost worker, …)
                raise SpecError(f"a Dask task failed on the cluster: {type(exc).__name__}: {exc}", key="--scheduler",
                                hint="do the workers have parplan installed? finished cells are kept; run again to "
                                     "resume") from None
            on_done(by_key[f.key], rows)
    finally:
        if futures:
            try:
                client.cancel(futures)
            except Exception:  # noqa: BLE001 - closing down; the scheduler may be gone already
                pass
        if owned:
            client.close(timeout=connect_timeout)


# --- the driver: resume, run, checkpoint ----------------------------------------------------------------------
def _existing(output: Path, tasks: list[CellTask]) -> tuple[dict, int]:
    """Rows of the existing ``output`` by cell key (cells of this sweep only) and the number of rows dropped."""
    from parplan.planner.sweep_io import KEY_COLUMNS, read_table

    old = read_table(output)
    wanted = {t.key for t in tasks}
    keys = [cell_key(r) for r in old[list(KEY_COLUMNS)].itertuples(index=False, name=None)]
    found: dict[tuple, list[int]] = {}
    dropped = 0
    for i, k in enumerate(keys):
        if k in wanted:
            found.setdefault(k, []).append(i)
        else:
            dropped += 1
    return {k: old.iloc[ix].reset_index(drop=True) for k, ix in found.items()}, dropped


def _assemble(tasks: list[CellTask], results: dict):
    import pandas as pd

    from parplan.planner.sweep_io import SWEEP_COLUMNS, normalize

    parts = [results[t.key] for t in tasks if t.key in results]
    parts = [p for p in parts if len(p)]
    if not parts:
        return normalize(pd.DataFrame(columns=list(SWEEP_COLUMNS)))
    return normalize(pd.concat(parts, ignore_index=True))


def run_sweep(tasks: list[CellTask], *, output: Path | None = None, restart: bool = False, scheduler: Any = None,
              workers: int | None = None, progress: Any = None,
              connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> tuple[Any, SweepStats]:
    """Run ``tasks`` (``planner.sweep.prepare``), reusing the finished cells of ``output`` unless ``restart``; the
    table in cell order and what was done.  ``progress``: ``f(done, total)`` in cells."""
    from parplan.planner.budget import check_number
    from parplan.planner.sweep_io import file_format, write_table

    t0 = time.perf_counter()
    if scheduler is not None and workers is not None:
        raise SpecError("sizes the local process pool; a Dask cluster has its own workers",
                        key="--workers", hint="drop --workers, or drop --scheduler to run on this machine")
    workers = default_workers() if workers is None else check_number(workers, "--workers", lo=1, hi=4096,
                                                                      integer=True, what="local processes")
    connect_timeout = float(check_number(connect_timeout, "--connect-timeout", lo=0, lo_open=True, hi=3600))
    stats = SweepStats(cells=len(tasks), runner="dask" if scheduler is not None else "local")
    results: dict = {}
    if output is not None:
        output = Path(output)
        file_format(output)
        parent = output.parent if str(output.parent) else Path(".")
        if not parent.is_dir():
            raise SpecError(f"folder {short(str(parent))} does not exist", key="--output")
        if output.is_dir():
            raise SpecError(f"{short(str(output))} is a folder", key="--output", hint="give a file name")
        stats.output = str(output)
        if output.exists() and not restart:
            results, stats.dropped_rows = _existing(output, tasks)
    stats.reused = len(results)
    todo = [t for t in tasks if t.key not in results]
    state = {"last_write": time.perf_counter(), "write_s": 0.0}

    def checkpoint(force: bool = False) -> None:
        if output is None:
            return
        now = time.perf_counter()
        if not force and now - state["last_write"] < _WRITE_RATIO * state["write_s"]:
            return
        write_table(_assemble(tasks, results), output)
        state["last_write"] = time.perf_counter()
        state["write_s"] = state["last_write"] - now

    def on_done(task: CellTask, rows) -> None:
        results[task.key] = rows
        stats.computed += 1
        if progress is not None:
            progress(stats.reused + stats.computed, len(tasks))
        checkpoint()

    if progress is not None:
        progress(stats.reused, len(tasks))
    finished = False
    try:
        if scheduler is not None:
            run_dask(todo, scheduler, on_done, connect_timeout)
        else:
            run_local(todo, workers, on_done)
        finished = True
    finally:
        if finished or stats.computed:  # a failed start (no scheduler …) leaves the output as it was
            checkpoint(force=True)
    df = _assemble(tasks, results)
    first = df.drop_duplicates(subset=["model", "hw", "size", "options"])
    for s in ("ok", "infeasible", "error"):
        setattr(stats, s, int((first["status"] == s).sum()))
    stats.rows = len(df)
    stats.wall_s = time.perf_counter() - t0
    return df, stats
