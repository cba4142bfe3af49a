"""``parplan sweep``: the best plans of many workloads × clusters (× device counts) as one table file.

Exit codes: 0 the table was written (cells where nothing fits, or the planner refused, are rows with status
``infeasible`` / ``error`` and their reason — data, not failures); 2 bad input (a list, a size, a file, an option,
more cells than --max-cells, an unreachable Dask scheduler), before any cell is searched, or every cell an ``error``
(the table is still written, the first message printed); 130 interrupted (the
finished cells are in the output: the same command resumes).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from parplan.cli.common import (check_framework, check_precision, DebugOpt, FrameworkOpt, GlobalBatchOpt,
                                handle_errors, ImbalanceOpt, one_line, PrecisionOpt, SeqLenOpt)
from parplan.cli.progress import LazyProgress, _Err
from parplan.errors import SpecError
from parplan.planner.budget import (DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_MAX_CELLS, DEFAULT_MEMORY_HEADROOM, HEADROOM_HELP,
                                    MAX_PLANS_HELP, MAX_TOP)

EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell's convention for a command stopped by Ctrl-C


def _split(text: str, key: str) -> list[str]:
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise SpecError(f"bad value {text!r}: an empty entry", key=key,
                        hint="entries separated by single commas, e.g. llama2-7b,llama3-8b")
    return parts


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    @handle_errors
    def sweep_cmd(
        models: str = typer.Option(..., "--models", help="workloads, comma-separated: YAML files, Hugging Face "
                                                         "config.json files or catalog ids"),
        hw: str = typer.Option(..., "--hw", help="clusters, comma-separated: YAML files or catalog ids"),
        output: Path = typer.Option(..., "-o", "--output", help="the table: FILE.parquet or FILE.csv (resumed when "
                                                                "it holds cells of the same sweep)"),
        sizes: Optional[str] = typer.Option(None, "--sizes", help="device counts, e.g. 8,16,64: each (single-group) "
                                                                  "cluster resized to size / devices-per-node nodes"),
        top: int = typer.Option(1, "--top", help=f"plans per cell (1 = the best; at most {MAX_TOP:,}), ranked in "
                                                 "the rank column"),
        global_batch: GlobalBatchOpt = None,
        seq_len: SeqLenOpt = None,
        precision: PrecisionOpt = None,
        framework: FrameworkOpt = None,
        expert_imbalance: ImbalanceOpt = None,
        objective: Optional[str] = typer.Option(None, "--objective", help="throughput (default) | memory | cost"),
        fix: Optional[List[str]] = typer.Option(None, "--fix", help="pin a plan key in every cell, e.g. --fix tp=8 "
                                                                    "(repeatable)"),
        memory_headroom: float = typer.Option(DEFAULT_MEMORY_HEADROOM, "--memory-headroom", help=HEADROOM_HELP),
        allow_cross_node_tp: bool = typer.Option(False, "--allow-cross-node-tp",
                                                 help="let tensor parallelism span nodes"),
        max_mbs: Optional[int] = typer.Option(None, "--max-mbs", show_default=False,
                                              help="largest micro-batch size searched (default 32)"),
        price_per_hour: Optional[float] = typer.Option(None, "--price-per-hour",
                                                       help="USD per device-hour (your own figure) for --objective "
                                                            "cost and the usd_per_million_tokens column"),
        max_plans: Optional[int] = typer.Option(None, "--max-plans", show_default=False,
                                                help=MAX_PLANS_HELP + " (per cell)"),
        max_cells: int = typer.Option(DEFAULT_MAX_CELLS, "--max-cells",
                                      help="work budget: the most cells (models × clusters × sizes) searched"),
        workers: Optional[int] = typer.Option(None, "--workers", show_default=False,
                                              help="local processes (default: the CPU count; 1 = in this process)"),
        scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                                help="run the cells on a Dask cluster, e.g. tcp://10.0.0.5:8786 "
                                                     "(needs parplan[dask])"),
        connect_timeout: float = typer.Option(DEFAULT_CONNECT_TIMEOUT_S, "--connect-timeout",
                                              help="seconds to wait for the Dask scheduler and a worker"),
        restart: bool = typer.Option(False, "--restart", help="ignore an existing output file: compute every cell"),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar, no summary line"),
        debug: DebugOpt = False,
    ) -> None:
        """Search every model × cluster (× size) and write the best plans of each as one tidy table (resumable;
        locally in parallel, or on a Dask cluster)."""
        from parplan.planner.sweep import prepare, sweep_options
        from parplan.planner.sweep_run import run_sweep

        check_precision(precision)
        check_framework(framework)
        opts = sweep_options(top=top, objective=objective, memory_headroom=memory_headroom, fix=fix,
                             allow_cross_node_tp=allow_cross_node_tp, max_mbs=max_mbs, max_plans=max_plans,
                             price_per_hour=price_per_hour, seq_len=seq_len, global_batch=global_batch,
                             precision=precision, framework=framework, expert_imbalance=expert_imbalance)
        tasks = prepare(_split(models, "--models"), _split(hw, "--hw"), sizes, opts, max_cells=max_cells)
        bar = LazyProgress(not quiet, "sweeping cells")
        try:
            df, st = run_sweep(tasks, output=output, restart=restart, scheduler=scheduler, workers=workers,
                               progress=bar, connect_timeout=connect_timeout)
        except KeyboardInterrupt:
            bar.close()
            _Err().print(f"interrupted: the finished cells are in {one_line(output)}; run the same command again to "
                         "resume")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        finally:
            bar.close()
        err = _Err()
        if st.dropped_rows:
            err.print(f"note: {st.dropped_rows:,} rows of {one_line(output)} belong to no cell of this sweep (other "
                      "inputs, sizes or options) and were not kept")
        if not quiet:
            reused = f"{st.reused:,} reused from {one_line(output)}, " if st.reused else ""
            where = f"on the Dask cluster at {one_line(scheduler)}" if scheduler else "locally"
            err.print(f"sweep: {st.cells:,} cells ({reused}{st.computed:,} computed {where}) in {st.wall_s:.2f} s: "
                      f"{st.ok:,} ok, {st.infeasible:,} infeasible, {st.error:,} error")
            err.print(f"wrote {one_line(output)} ({st.rows:,} rows)")
        if st.cells and st.error == st.cells:  # every cell failed: the table holds no answer (it exited 0)
            first = df.loc[df["status"] == "error", "message"].iloc[0] if "status" in df else "see the table"
            raise SpecError(f"every cell of the sweep failed; the first: {one_line(str(first))}", key="sweep",
                            hint=f"the messages are in {one_line(output)}") from None

