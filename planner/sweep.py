"""Sweeps: the best plans of every workload × cluster (× device count) in one tidy table.

A *cell* is one workload on one cluster at one size (devices).  Its search is ``suggest``'s
(``planner.planset.suggest_plans``; multi-group clusters: the family's heterogeneous planner), its rows the
``planner.export`` columns of its best ``top`` plans, after the cell keys, a ``status`` — ``ok``, ``infeasible``
(nothing fits, or no valid plan: ``message`` is the planner's explanation and what would fit) or ``error`` (the
search refused: a budget, a precision the device lacks …; ``message`` says why) — and ``message``.

Everything a user can get wrong is checked before any search runs (``prepare``): the lists, the sizes (device
counts, multiples of the node's devices; single-group clusters only), every workload and cluster is loaded, the
number of cells is within ``max_cells``.  Cells run in a local process pool or on a Dask cluster
(``planner.sweep_run``); the table is resumable (``planner.sweep_io`` and ``run_sweep``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from parplan.errors import SpecError, short
from parplan.hardware.types import MAX_DEVICES, Cluster  # MAX_DEVICES: devices a cluster may have
from parplan.planner.budget import (DEFAULT_MAX_CELLS, DEFAULT_MEMORY_HEADROOM, MAX_MBS, MAX_TOP,  # noqa: F401
                                    MAX_PRICE_PER_HOUR, check_max_plans, check_number)
from parplan.workloads.transformer import Workload

# Work budgets of a sweep: cells searched (planner/budget.py DEFAULT_MAX_CELLS) and rows reported (cells × top; a
# row is ~1 kB in memory)
MAX_ROWS = 1_000_000
# training keys a sweep may override, as parplan.workloads.loader.load_workload takes them
TRAINING_KEYS = ("seq_len", "global_batch", "precision", "optimizer", "framework", "expert_imbalance", "mtp_layers")
# objectives of planner.search.OBJECTIVES that rank plans on a given cluster ("devices" sizes the cluster itself,
# which is what --sizes does in a sweep)
SWEEP_OBJECTIVES = ("throughput", "memory", "cost")


@dataclass(frozen=True)
class SweepOptions:
    """The search options shared by every cell (``key()``: the ``options`` column, part of a cell's identity)."""

    top: int = 1
    objective: str = "throughput"
    memory_headroom: float = DEFAULT_MEMORY_HEADROOM
    fix: str = ""  # canonical pins, ``planner.space.fix_string``
    allow_cross_node_tp: bool = False
    max_mbs: int | None = None
    max_plans: int | None = None
    price_per_hour: float | None = None
    training: tuple = ()  # (key, value) overrides, sorted

    def key(self) -> str:
        """Canonical JSON of the options that differ from the defaults (plus ``top``): equal options, equal key."""
        d: dict[str, Any] = {"top": self.top}
        if self.objective != "throughput":
            d["objective"] = self.objective
        if self.memory_headroom != DEFAULT_MEMORY_HEADROOM:
            d["memory_headroom"] = self.memory_headroom
        if self.fix:
            d["fix"] = self.fix
        if self.allow_cross_node_tp:
            d["allow_cross_node_tp"] = True
        for k in ("max_mbs", "max_plans", "price_per_hour"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        d.update(dict(self.training))
        return json.dumps(dict(sorted(d.items())), separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class CellTask:
    """One cell, ready to run anywhere (loaded objects, not file names: a Dask worker may not see the files)."""

    index: int
    model: str  # the input as given
    hw: str
    size: int  # devices
    workload: Workload = field(compare=False)
    cluster: Cluster = field(compare=False)  # resized to ``size``
    options: SweepOptions = field(compare=False)

    @property
    def key(self) -> tuple:
        return (self.model, self.hw, self.size, self.options.key())


def label(ref: Any) -> str:
    """The ``model`` / ``hw`` value of an input: a file name or id as given, a loaded object's name."""
    if isinstance(ref, (str, Path)):
        return str(ref)
    name = getattr(ref, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(ref, dict):
        n = ref.get("name")
        if isinstance(n, str):
            return n
        model = ref.get("model")
        if isinstance(model, str):
            return model
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            return model["name"]
    return short(ref)


def _refs(values: Any, key: str) -> list:
    if isinstance(values, (str, Path, dict, Workload, Cluster)):
        values = [values]
    try:
        out = list(values)
    except TypeError:
        raise SpecError(f"bad value {short(values)}: expected a list", key=key) from None
    if not out:
        raise SpecError("needs at least one entry", key=key)
    seen: dict[str, int] = {}
    for i, v in enumerate(out):
        if isinstance(v, str) and not v.strip():
            raise SpecError(f"entry {i + 1} is empty", key=key, hint="separate entries by single commas")
        name = label(v)
        if name in seen:
            raise SpecError(f"{short(name)} is given twice", key=key)
        seen[name] = i
    return out


def parse_sizes(sizes: Any) -> list[int] | None:
    """``[8, 16]`` or ``"8,16"`` → device counts (positive integers, each once); None: clusters as they are."""
    if sizes is None:
        return None
    if isinstance(sizes, str):
        parts = [p.strip() for p in sizes.split(",")]
        if any(not p for p in parts):
            raise SpecError(f"bad value {short(sizes)}: an empty entry", key="--sizes",
                            hint="device counts separated by commas, e.g. 8,16,64")
        sizes = parts
    elif isinstance(sizes, (int, float)) and not isinstance(sizes, bool):
        sizes = [sizes]
    try:
        sizes = list(sizes)
    except TypeError:
        raise SpecError(f"bad value {short(sizes)}: expected device counts", key="--sizes") from None
    out: list[int] = []
    for s in sizes:
        n = check_number(s, "--sizes", lo=1, hi=MAX_DEVICES, integer=True, what="device counts",
                         hint="device counts separated by commas, e.g. 8,16,64")
        if n in out:
            raise SpecError(f"size {n} is given twice", key="--sizes")
        out.append(n)
    if not out:
        raise SpecError("needs at least one device count", key="--sizes", hint="e.g. --sizes 8,16,64")
    return out


def sweep_options(top: int = 1, objective: str | None = None, memory_headroom: float = DEFAULT_MEMORY_HEADROOM,
                  fix: Any = None, allow_cross_node_tp: bool = False, max_mbs: int | None = None,
                  max_plans: int | None = None, price_per_hour: float | None = None, **training: Any) -> SweepOptions:
    """The options, checked (one-line errors naming the option)."""
    from parplan.errors import did_you_mean
    from parplan.planner.space import fix_string, parse_fix

    unknown = sorted(set(training) - set(TRAINING_KEYS))
    if unknown:
        raise SpecError(f"unknown training override {short(unknown[0])}", key="training", allowed=list(TRAINING_KEYS),
                        hint=did_you_mean(unknown[0], TRAINING_KEYS))
    top = check_number(top, "--top", lo=1, hi=MAX_TOP, integer=True, what="plans per cell")
    objective = "throughput" if objective is None else objective
    if objective not in SWEEP_OBJECTIVES:
        raise SpecError(f"bad value {short(objective)}", key="--objective", allowed=list(SWEEP_OBJECTIVES),
                        hint=did_you_mean(str(objective), SWEEP_OBJECTIVES)
                        or ("a sweep sizes clusters with --sizes" if objective == "devices" else None))
    memory_headroom = float(check_number(memory_headroom, "--memory-headroom", lo=0.0, hi=0.5,
                                         hint="a fraction of device memory kept free, e.g. 0.1"))
    check_number(max_mbs, "--max-mbs", lo=1, hi=MAX_MBS, integer=True)
    if max_plans is not None:
        max_plans = check_max_plans(max_plans)
    check_number(price_per_hour, "--price-per-hour", lo=0, hi=MAX_PRICE_PER_HOUR, lo_open=True,
                 hint="USD per device-hour, e.g. 2.5")
    precision = training.get("precision")
    if precision is not None:
        from parplan.workloads.transformer import BYTES_PER_VALUE  # the training precisions the loader knows

        if precision not in BYTES_PER_VALUE:
            raise SpecError(f"bad value {short(precision)}", key="--precision", allowed=list(BYTES_PER_VALUE),
                            hint=did_you_mean(str(precision), list(BYTES_PER_VALUE)))
    if training.get("framework") is not None:
        from parplan.models.framework import check_framework_id

        check_framework_id(training["framework"], key="--framework")
    return SweepOptions(top=int(top), objective=objective, memory_headroom=memory_headroom,
                        fix=fix_string(parse_fix(fix)), allow_cross_node_tp=bool(allow_cross_node_tp),
                        max_mbs=None if max_mbs is None else int(max_mbs), max_plans=max_plans,
                        price_per_hour=None if price_per_hour is None else float(price_per_hour),
                        training=tuple(sorted((k, v) for k, v in training.items() if v is not None)))


def prepare(models: Any, clusters: Any, sizes: Any = None, options: SweepOptions | None = None,
            max_cells: int = DEFAULT_MAX_CELLS) -> list[CellTask]:
    """Every cell of the sweep, in order (models × clusters × sizes), each input loaded and checked once."""
    from parplan.hardware.catalog import load_cluster
    from parplan.planner.sizing import scale_cluster
    from parplan.workloads.loader import load_workload

    options = options or SweepOptions()
    max_cells = check_number(max_cells, "--max-cells", lo=1, integer=True, what="cells a sweep may search")
    models, clusters, sizes = _refs(models, "--models"), _refs(clusters, "--hw"), parse_sizes(sizes)
    n_cells = len(models) * len(clusters) * (len(sizes) if sizes else 1)
    if n_cells > max_cells:
        parts = [_count(len(models), "model"), _count(len(clusters), "cluster")] + ([_count(len(sizes), "size")]
                                                                                    if sizes else [])
        raise SpecError(f"the sweep has {n_cells:,} cells ({' × '.join(parts)}), above the cap of {max_cells:,} cells",
                        key="--max-cells", hint="raise --max-cells, or sweep fewer models, clusters or sizes")
    if n_cells * options.top > MAX_ROWS:
        raise SpecError(f"{n_cells:,} cells × --top {options.top:,} is {n_cells * options.top:,} rows, above the cap "
                        f"of {MAX_ROWS:,} rows", key="--top", hint="a smaller --top, or fewer cells")
    training = dict(options.training)
    workloads = [load_workload(m, **training) for m in models]
    placed: list[tuple[str, int, Cluster]] = []
    for ref in clusters:
        c = load_cluster(ref)
        name = label(ref)
        if sizes is None:
            if not c.is_homogeneous:
                _check_hetero_options(name, c, options)
            placed.append((name, c.n_devices, c))
            continue
        if not c.is_homogeneous:
            raise SpecError(f"cluster {short(name)} has {len(c.groups)} device groups: --sizes resizes single-group "
                            "clusters only (a multi-group cluster's mix of devices has no one node to repeat)",
                            key="--sizes", hint="sweep it without --sizes, or give a single-group cluster")
        dpn = c.group.devices_per_node
        for s in sizes:
            if s % dpn:
                raise SpecError(f"size {s} is not a multiple of the {dpn} devices per node of {short(name)}",
                                key="--sizes", hint=f"use multiples of {dpn}, e.g. {max(dpn, s // dpn * dpn)}")
            placed.append((name, s, scale_cluster(c, s // dpn)))
    tasks = []
    for m, w in zip(models, workloads):
        for name, size, c in placed:
            tasks.append(CellTask(index=len(tasks), model=label(m), hw=name, size=size, workload=w, cluster=c,
                                  options=options))
    return tasks


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _check_hetero_options(name: str, c: Cluster, o: SweepOptions) -> None:
    """Multi-group clusters: the heterogeneous planner maximizes throughput and takes no pins (as ``suggest``)."""
    given = {"--objective": o.objective != "throughput", "--fix": bool(o.fix),
             "--allow-cross-node-tp": o.allow_cross_node_tp,
             "--price-per-hour": o.price_per_hour is not None, "--framework": "framework" in dict(o.training)}
    bad = [k for k, v in given.items() if v]
    if bad:
        raise SpecError(f"{', '.join(bad)} not supported on the multi-group cluster {short(name)} "
                        f"({len(c.groups)} device groups)", key=bad[0],
                        hint="the heterogeneous planner maximizes throughput; sweep it separately")


# --- one cell -------------------------------------------------------------------------------------------------
def run_cell(task: CellTask):
    """The rows of one cell (a ``pandas.DataFrame`` of ``sweep_io.SWEEP_COLUMNS``).  Never raises for what the
    planner refuses: that is the cell's ``error`` status."""
    from parplan.planner.sweep_io import normalize

    try:
        if task.cluster.is_homogeneous:
            df = _homogeneous(task)
        else:
            df = _heterogeneous(task)
    except SpecError as exc:
        df = _status_rows(task, "error", str(exc))
    except Exception as exc:  # noqa: BLE001 - one cell's failure must not end a sweep of thousands; it is reported
        df = _status_rows(task, "error", f"internal error: {type(exc).__name__}: {exc}")
    return normalize(df)


def _search_options(o: SweepOptions):
    from parplan.planner.budget import DEFAULT_MAX_PLANS
    from parplan.planner.search import SearchOptions
    from parplan.planner.space import DEFAULT_MAX_MBS, parse_fix

    return SearchOptions(fix=parse_fix(o.fix or None), memory_headroom=o.memory_headroom,
                         allow_cross_node_tp=o.allow_cross_node_tp,
                         max_mbs=DEFAULT_MAX_MBS if o.max_mbs is None else o.max_mbs,
                         max_plans=DEFAULT_MAX_PLANS if o.max_plans is None else o.max_plans)


def _homogeneous(task: CellTask):
    from parplan.planner.advice import advice
    from parplan.planner.planset import suggest_plans

    o = task.options
    opts = _search_options(o)
    try:
        ps = suggest_plans(task.workload, task.cluster, objective=o.objective, top=o.top, options=opts,
                           price_per_hour=o.price_per_hour)
    except SpecError as exc:
        if exc.key == "plan" and str(exc.message).startswith("no valid plan"):
            return _status_rows(task, "infeasible", exc.message)
        raise
    if not len(ps):
        GiB = float(2**30)
        lines = advice(task.workload, ps.cluster, opts)
        why = (f"no plan fits in {ps.evaluated.limit_bytes / GiB:.1f} GiB per device "
               f"({ps.stats.valid_plans:,} valid plans); what would fit: "
               + ("; ".join(lines) if lines else "nothing found: try a larger cluster"))
        return _status_rows(task, "infeasible", why)
    df = ps.to_frame()
    return _with_keys(task, df, "ok", None)


def _heterogeneous(task: CellTask):
    import pandas as pd

    from parplan.planner.spaces import hetero_planner

    o, w, c = task.options, task.workload, task.cluster
    max_mbs = 32 if o.max_mbs is None else o.max_mbs
    hp = hetero_planner(w).plan_hetero(w, c, mbs_options=tuple(b for b in (1, 2, 4, 8) if b <= max_mbs),
                                       max_plans=o.max_plans, memory_headroom=o.memory_headroom)
    if not hp.candidates:
        reasons = "; ".join(f"{why} ({n:,})" for why, n in sorted(hp.infeasible.items(), key=lambda kv: -kv[1])[:3])
        return _status_rows(task, "infeasible", f"no heterogeneous plan fits on {c.name}"
                            + (f": {reasons}" if reasons else "")
                            + "; try more devices or a smaller global batch")
    rows = []
    n_nodes = sum(g.nodes for g in c.groups)
    fw = getattr(w.training, "framework", "megatron-core")
    for rank, cand in enumerate(hp.candidates[:o.top], 1):
        r = cand.result
        p = r.plan
        rows.append({"rank": rank, "workload": w.name, "cluster": c.name, "n_nodes": n_nodes,
                     "n_devices": c.n_devices, "plan": p.describe(c), "tp": p.tp, "mbs": p.mbs, "zero": p.zero,
                     "recompute": p.recompute, "sp": bool(p.sp), "fits": bool(r.fits), "step_time_s": r.step_time_s,
                     "tokens_per_s": r.tokens_per_s, "tokens_per_s_per_device": r.tokens_per_s / c.n_devices,
                     "mfu": r.mfu, "memory_peak_bytes": r.memory_peak_bytes, "optimizer_s": r.optimizer_s,
                     "framework": fw})
    return _with_keys(task, pd.DataFrame(rows), "ok", None)


def _status_rows(task: CellTask, status: str, message: str):
    """The one row of a cell without plans: what is known of the cell (workload, cluster, devices)."""
    import pandas as pd

    w, c = task.workload, task.cluster
    row = {"rank": None, "workload": w.name, "cluster": c.name, "n_nodes": sum(g.nodes for g in c.groups),
           "n_devices": c.n_devices, "framework": getattr(w.training, "framework", "megatron-core")}
    return _with_keys(task, pd.DataFrame([row]), status, message)


def _with_keys(task: CellTask, df, status: str, message: str | None):
    df = df.copy()
    for k, v in (("model", task.model), ("hw", task.hw), ("size", task.size), ("options", task.options.key()),
                 ("status", status), ("message", message)):
        df[k] = [v] * len(df)
    return df


def cell_key(row: Sequence) -> tuple:
    """The identity of the cell of a table row ``(model, hw, size, options)``."""
    model, hw, size, options = row
    return (str(model), str(hw), int(size), str(options))


# --- the public entry point -----------------------------------------------------------------------------------
def sweep(models: Any, clusters: Any, sizes: Any = None, top: int = 1, scheduler: Any = None,
          workers: int | None = None, output: "str | Path | None" = None, *, restart: bool = False,
          max_cells: int = DEFAULT_MAX_CELLS, objective: str | None = None,
          memory_headroom: float = DEFAULT_MEMORY_HEADROOM,
          fix: Any = None, allow_cross_node_tp: bool = False, max_mbs: int | None = None,
          max_plans: int | None = None, price_per_hour: float | None = None, connect_timeout: float | None = None,
          progress: Any = None, **training_overrides: Any):
    """The best ``top`` plans of every model × cluster (× size) as one ``pandas.DataFrame``.

    ``models`` / ``clusters``: lists of what ``suggest`` takes (files, catalog ids, mappings, loaded objects).
    ``sizes``: device counts (``[8, 16, 64]``); each single-group cluster is resized to size / devices-per-node
    nodes (None: the clusters as they are).  Rows: ``sweep_io.SWEEP_COLUMNS`` — ``model``, ``hw``, ``size``,
    ``options``, ``status`` (ok | infeasible | error), ``message``, then ``planner.export.EXPORT_COLUMNS``.
    ``scheduler``: a Dask scheduler address (``"tcp://host:8786"``) or ``Client``; otherwise ``workers`` local
    processes (default: the CPU count; 1 = in this process).  ``output``: a ``.parquet`` or ``.csv`` file, written
    as cells finish; finished cells already in it (same model, hw, size and options) are reused unless
    ``restart``.  ``max_cells``: work budget.  Other keywords: ``suggest``'s search options and training
    overrides (``seq_len``, ``global_batch``, ``precision``, ``framework`` …).  ``df.attrs["sweep"]``: cells
    reused and computed, by status.
    """
    from parplan.planner.sweep_run import DEFAULT_CONNECT_TIMEOUT_S, run_sweep

    opts = sweep_options(top=top, objective=objective, memory_headroom=memory_headroom, fix=fix,
                         allow_cross_node_tp=allow_cross_node_tp, max_mbs=max_mbs, max_plans=max_plans,
                         price_per_hour=price_per_hour, **training_overrides)
    tasks = prepare(models, clusters, sizes, opts, max_cells=max_cells)
    df, stats = run_sweep(tasks, output=None if output is None else Path(output), restart=restart,
                          scheduler=scheduler, workers=workers, progress=progress,
                          connect_timeout=DEFAULT_CONNECT_TIMEOUT_S if connect_timeout is None else connect_timeout)
    df.attrs["sweep"] = stats.to_dict()
    return df
