"""The sweep table on disk: its columns and their types, reading it back (for resuming), writing it atomically.

A sweep table has one row per workload × cluster × size × plan: the cell keys (``model`` and ``hw`` as the user
gave them, ``size`` = devices, ``options`` = the search options that make cells comparable), ``status`` (ok |
infeasible | error), ``message``, then every column of ``planner.export.EXPORT_COLUMNS``.  Integers stay integers
(pandas' nullable ``Int64``: an infeasible cell has no rank), flags booleans (nullable ``boolean``), text strings.

Files: ``.parquet`` (pyarrow) or ``.csv`` (pandas), chosen by the suffix.  Every write goes to a temporary file in
the same folder and is renamed over the target (``os.replace``: atomic on POSIX and Windows), so a reader — or a
resumed sweep — sees either the previous complete table or the new one, never half a file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from parplan.errors import SpecError, short
from parplan.models.plan import V2_DEFAULTS
from parplan.planner import export as _export
from parplan.planner.export import EXPORT_COLUMNS

if TYPE_CHECKING:  # pandas is imported inside the functions (the CLI's --help stays fast)
    import pandas as pd

KEY_COLUMNS = ("model", "hw", "size", "options")  # one cell of the sweep
SWEEP_COLUMNS = KEY_COLUMNS + ("status", "message") + EXPORT_COLUMNS
STATUSES = ("ok", "infeasible", "error")

# column types of planner/export.py ``frame`` (tests/sweep/test_sweep_io.py checks them against a real frame):
# its integer columns (``INT_COLUMNS``: counts, and byte counts ``*_bytes``), the plan's degrees and integer knobs
_INT = {"size", "rank", "n_nodes", "n_devices", "dp", "tp", "pp", "cp", "ep", "mbs", "vpp", "zero", "micro_batches",
        *getattr(_export, "INT_COLUMNS", ()), *(c for c in EXPORT_COLUMNS if c.endswith("_bytes")),
        *(k for k, d in V2_DEFAULTS.items() if isinstance(d, int) and not isinstance(d, bool))}
_BOOL = {"sp", "fits", "tie_with_best", *(k for k, d in V2_DEFAULTS.items() if isinstance(d, bool))}
_TEXT = {"model", "hw", "options", "status", "message", "workload", "cluster", "plan", "recompute", "critical_stage",
         "framework", "provenance_class", "cp_kind"}
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def column_kind(name: str) -> str:
    """``int``, ``bool``, ``text`` or ``float`` for a sweep column."""
    return "int" if name in _INT else "bool" if name in _BOOL else "text" if name in _TEXT else "float"


def file_format(path: Path) -> str:
    """``parquet`` or ``csv`` from the file's suffix, else a one-line error naming ``--output``."""
    if "\x00" in str(path):
        raise SpecError(f"bad file name {short(str(path))}", key="--output", hint="a name holds no NUL character")
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise SpecError(f"cannot tell the format of {short(str(path))} from its suffix", key="--output",
                        allowed=sorted(FORMATS), hint="name the file sweep.parquet or sweep.csv")
    if fmt == "parquet":
        _pyarrow()
    return fmt


def _pyarrow():
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SpecError("parquet output needs pyarrow, which is not installed", key="--output",
                        hint="pip install 'parplan[parquet]', or write a .csv file") from None


def normalize(df: "pd.DataFrame") -> "pd.DataFrame":
    """``df`` with exactly ``SWEEP_COLUMNS`` (missing ones empty), in order, each of its column's type."""
    import pandas as pd

    out = {}
    n = len(df)
    for c in SWEEP_COLUMNS:
        col = df[c] if c in df.columns else pd.Series([None] * n, index=df.index, dtype=object)
        kind = column_kind(c)
        if kind == "int":
            col = pd.to_numeric(col, errors="raise").astype("Int64")
        elif kind == "bool":
            col = col.map(_to_bool, na_action="ignore").astype("boolean")
        elif kind == "text":
            col = col.astype(object).where(col.notna(), None)
        else:
            col = pd.to_numeric(col, errors="raise").astype("float64")
        out[c] = col
    return pd.DataFrame(out, columns=list(SWEEP_COLUMNS)).reset_index(drop=True)


def _to_bool(v):
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise ValueError(f"not a flag: {v!r}")
    return bool(v)


def read_table(path: Path) -> "pd.DataFrame":
    """A sweep table written by ``write_table`` (for resuming); a file that is not one is a one-line error."""
    import pandas as pd

    path = Path(path)
    fmt = file_format(path)
    try:
        if fmt == "parquet":
            df = pd.read_parquet(path, engine="pyarrow")
        else:
            # only empty fields are missing values: a model called "NA" stays a name
            df = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={c: object for c in _TEXT})
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise _not_a_sweep(path, f"it cannot be read ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow's own errors (ArrowInvalid …) on a damaged file
        raise _not_a_sweep(path, f"it cannot be read ({type(exc).__name__}: {exc})") from None
    missing = [c for c in SWEEP_COLUMNS if c not in df.columns]
    if missing:
        raise _not_a_sweep(path, f"it lacks the column{'s' if len(missing) > 1 else ''} "
                                 f"{', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
    try:
        df = normalize(df)
    except (TypeError, ValueError) as exc:
        raise _not_a_sweep(path, f"a column holds a value of the wrong type ({exc})") from None
    empty = [c for c in KEY_COLUMNS if df[c].isna().any()]
    if empty:
        raise _not_a_sweep(path, f"its {empty[0]} column has empty values")
    bad = sorted(set(df["status"].dropna()) - set(STATUSES))
    if bad or df["status"].isna().any():
        raise _not_a_sweep(path, f"its status column holds {short(bad[0]) if bad else 'empty values'}")
    return df


def _not_a_sweep(path: Path, why: str) -> SpecError:
    return SpecError(f"{short(str(path))} exists but is not a sweep table: {why}", key="--output",
                     hint="pass --restart to overwrite it, or choose another -o file")


def write_table(df: "pd.DataFrame", path: Path) -> None:
    """Write ``df`` (normalized) to ``path`` atomically: a temporary file beside it, renamed over it."""
    path = Path(path)
    fmt = file_format(path)
    df = normalize(df)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if fmt == "parquet":
            df.to_parquet(tmp, engine="pyarrow", index=False)
        else:
            df.to_csv(tmp, index=False, lineterminator="\n")  # full float precision: a resumed table reads back exact
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
