"""What the plots read: a workload and a cluster (with training overrides), the planner's search options, and a
sweep table (CSV or parquet).  Every bad input is a ``SpecError``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from parplan.errors import SpecError, did_you_mean, short

# training keys a caller may override (parplan.workloads.loader.load_workload, its docstring lists them)
TRAINING_OVERRIDES = ("seq_len", "global_batch", "precision", "optimizer", "framework", "expert_imbalance",
                      "mtp_layers")
# search options of the pareto / breakdown plots (parplan.api.suggest's, same names and meanings)
SEARCH_KEYS = ("fix", "memory_headroom", "allow_cross_node_tp", "max_mbs", "max_plans")


def split_options(opts: dict, allowed: tuple, what: str) -> dict:
    """``opts`` restricted to ``allowed`` keys; an unknown key is a ``SpecError`` (with a did-you-mean)."""
    for k in opts:
        if k not in allowed:
            raise SpecError(f"unknown {what} option {short(k)}", key=str(k), allowed=list(allowed),
                            hint=did_you_mean(str(k), allowed))
    return dict(opts)


def split_search(opts: dict) -> tuple[dict, dict]:
    """``(search options, training overrides)`` of a plot's keyword options; an unknown key is a ``SpecError``."""
    split_options(opts, SEARCH_KEYS + TRAINING_OVERRIDES, "plot")
    return ({k: v for k, v in opts.items() if k in SEARCH_KEYS},
            {k: v for k, v in opts.items() if k in TRAINING_OVERRIDES})


def load(workload: Any, cluster: Any, overrides: dict):
    """``(Workload, Cluster)`` from refs (a YAML path, a catalog id, a mapping or the object) and training
    overrides (``None`` values are left out)."""
    from parplan.hardware.catalog import load_cluster
    from parplan.workloads.loader import load_workload

    split_options(overrides, TRAINING_OVERRIDES, "training")
    return load_workload(workload, **{k: v for k, v in overrides.items() if v is not None}), load_cluster(cluster)


def search_options(fix: Any = None, memory_headroom: float | None = None, allow_cross_node_tp: bool = False,
                   max_mbs: int | None = None, max_plans: int | None = None):
    """``SearchOptions`` checked as ``parplan suggest`` checks them (``memory_headroom`` None: the planner's
    default, ``DEFAULT_MEMORY_HEADROOM``)."""
    from parplan.planner.budget import DEFAULT_MAX_PLANS, check_max_plans
    from parplan.planner.search import DEFAULT_MEMORY_HEADROOM, SearchOptions
    from parplan.planner.space import DEFAULT_MAX_MBS, parse_fix

    headroom = DEFAULT_MEMORY_HEADROOM if memory_headroom is None else memory_headroom
    opts = SearchOptions(fix=parse_fix(fix), memory_headroom=headroom,
                         allow_cross_node_tp=bool(allow_cross_node_tp),
                         max_mbs=DEFAULT_MAX_MBS if max_mbs is None else max_mbs,
                         max_plans=DEFAULT_MAX_PLANS if max_plans is None else check_max_plans(max_plans))
    opts.validate()
    opts.memory_headroom, opts.max_mbs = float(opts.memory_headroom), int(opts.max_mbs)
    return opts


def homogeneous(cluster) -> None:
    """The planner and these plots handle single-group clusters."""
    from parplan.planner.search import check_cluster

    check_cluster(cluster)


# --- sweep tables ------------------------------------------------------------------------------------------------
SWEEP_FORMATS = (".csv", ".parquet")
# the columns the scaling plot needs of a `parplan sweep` table (one row per cell × plan; rank 1 = best plan of
# its cell); a `status` column, when present, marks the cells that ran ("ok") and the others
SWEEP_REQUIRED = ("workload", "cluster", "n_devices", "tokens_per_s", "rank")


def read_sweep(path: "str | Path"):
    """A sweep table as a pandas ``DataFrame`` (CSV, or parquet with pyarrow: the ``parquet`` extra)."""
    import pandas as pd

    p = Path(str(path))
    suffix = p.suffix.lower()
    if suffix not in SWEEP_FORMATS:
        raise SpecError(f"bad sweep file name {short(str(path))}: the suffix sets the format", key="SWEEP_FILE",
                        allowed=list(SWEEP_FORMATS))
    if not p.is_file():
        raise SpecError(f"no sweep file {short(str(path))}", key="SWEEP_FILE")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise SpecError("reading parquet needs pyarrow", key="SWEEP_FILE",
                            hint='pip install "parplan[parquet]", or give the sweep as CSV') from None
        try:
            return pd.read_parquet(p)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise SpecError(f"not a readable parquet file: {short(str(exc), 200)}", file=str(p)) from None
    try:
        return pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise SpecError("empty sweep file (no header row)", file=str(p)) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SpecError(f"not a readable CSV file: {short(str(exc), 200)}", file=str(p)) from None
