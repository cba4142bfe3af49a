"""The search's vectorized evaluation beside its numpy floor: the same count of bare numpy operations, same sizes.

    python benchmarks/numpy_floor.py [--repeat 5]

For each job of ``benchmarks/planner_speed.py``, the evaluation of the whole search space (``evaluate_space``
without pruning, the way the search prices plans) is timed (best of ``--repeat``, one core).  Then, in a separate
counting pass, every numpy operation the evaluation performs on plan arrays is recorded with the size of its
result: the plan arrays are a counting ``ndarray`` subclass whose ``__array_ufunc__`` / ``__array_function__``
log each call, and a numpy function written in Python over several ufuncs (``np.select``, ``np.clip``) logs each
of them too (``np.asarray`` keeps the subclass during that pass only).  The *floor* is the time of replaying
that many operations, of the same result sizes, as bare ``np.multiply(a[:n], b[:n])`` calls from a Python loop
(allocation included, as in the model) — what the same arithmetic would cost with nothing but numpy's per-call
overhead and memory traffic.  The ratio evaluation / floor is the model's overhead beyond numpy (target ≤ 2,
issue 16); the operation count per plan and the share of operations on small arrays (< 64 elements, where the
per-call overhead dominates) say where it comes from.  A second floor replays the recorded ufunc calls themselves
(each ufunc on fresh contiguous arrays of its result size and input dtypes, the functions that are not ufuncs left
out): the evaluation's time beyond it is broadcasting, temporaries and Python between the calls, not the arithmetic.

Operations on Python scalars (per-space constants) are not numpy calls and are not counted; an operation on
arrays derived through a path that drops the subclass (e.g. ``np.frombuffer``) would be missed, which makes the
floor smaller and the ratio larger — the figure errs against the model.
"""
from __future__ import annotations

import argparse
import os
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

from parplan.hardware.catalog import load_cluster  # noqa: E402
from parplan.planner.search import KEEP, evaluate_space, run_search  # noqa: E402
from parplan.workloads.loader import load_workload  # noqa: E402

from planner_speed import CASES, _pin_one_core  # noqa: E402

TARGET_RATIO = 2.0
SMALL = 64


class _Log:
    sizes: list[int] = []
    ops: list = []  # (ufunc, result size, result dtype) of each ufunc call, for the same-operation replay


def _plain(x):
    if isinstance(x, _Counted):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(y) for y in x)
    return x


def _wrap(x):
    if isinstance(x, np.ndarray) and not isinstance(x, _Counted):
        return x.view(_Counted)
    if isinstance(x, tuple):
        return tuple(_wrap(y) for y in x)
    if isinstance(x, list):
        return [_wrap(y) for y in x]
    return x


def _size(x) -> int:
    if isinstance(x, np.ndarray):
        return int(x.size)
    if isinstance(x, (tuple, list)):
        return sum(_size(y) for y in x)
    return 0


class _Counted(np.ndarray):
    """An ndarray that logs the result size of every numpy call it takes part in."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = _plain(kwargs["out"])
        res = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        _Log.sizes.append(max(_size(res), 1))
        if method == "__call__" and isinstance(res, np.ndarray):
            _Log.ops.append((ufunc, res.size, [np.asarray(x).dtype for x in _plain(inputs)]))
        return _wrap(res)

    def __array_function__(self, func, types, args, kwargs):
        # the call itself (np.where, np.interp: one C operation), then numpy's own implementation with the counting
        # arrays, so that a function written in Python over several ufuncs (np.select, np.clip) counts each of them
        res = super().__array_function__(func, types, args, kwargs)
        _Log.sizes.append(max(_size(res), 1))
        return _wrap(res)


def count_ops(w, hw, space) -> list[int]:
    """Result sizes of every numpy operation ``evaluate_space`` performs on plan arrays (the counting pass)."""
    grid = space.grid

    def counted_grid(rows=slice(None)):
        G = grid(rows)
        for k in G.__dataclass_fields__:
            v = getattr(G, k)
            if isinstance(v, np.ndarray):
                setattr(G, k, v.view(_Counted))
        return G

    asarray = np.asarray
    _Log.sizes, _Log.ops = [], []
    try:
        space.grid = counted_grid
        np.asarray = np.asanyarray
        evaluate_space(w, hw, space, KEEP)
    finally:
        np.asarray = asarray
        del space.grid
    return list(_Log.sizes)


def same_ops_s(ops: list, repeat: int) -> float:
    """Wall time of the recorded ufunc calls replayed bare: each ufunc on fresh contiguous operands of its result
    size and its inputs' dtypes (no broadcasting, no Python between them), best of ``repeat``."""
    calls = []
    for uf, n, dts in ops:
        args = []
        for dt in dts:
            a = np.ones(n, dtype=dt) if dt.kind != "b" else np.ones(n, dtype=bool)
            args.append(a)
        calls.append((uf, tuple(args)))
    best = float("inf")
    with np.errstate(all="ignore"):
        for _ in range(repeat):
            t0 = time.perf_counter()
            for uf, args in calls:
                uf(*args)
            best = min(best, time.perf_counter() - t0)
    return best


def floor_s(sizes: list[int], repeat: int) -> float:
    """Wall time of ``len(sizes)`` bare ``np.multiply`` calls with those result sizes (best of ``repeat``)."""
    n = max(sizes) if sizes else 1
    a, b = np.linspace(1.0, 2.0, n), np.linspace(2.0, 3.0, n)
    views = [(a[:k], b[:k]) for k in sizes]
    mul = np.multiply
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for x, y in views:
            mul(x, y)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement; the fastest is reported")
    args = ap.parse_args(argv)
    _pin_one_core()
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"vectorized evaluation vs its numpy floor (one core, best of {args.repeat})")
    for col in ("job", "plans", "numpy ops", "ops / 1k plans", "small-array ops", "evaluation s", "floor s",
                "ratio", f"≤ {TARGET_RATIO:g}×", "same ufuncs bare s", "ratio to them"):
        t.add_column(col, justify="left" if col == "job" else "right")
    ok = True
    for label, wid, cref in CASES:
        w, c = load_workload(wid), load_cluster(cref)
        ev = run_search(w, c)
        space, hw = ev.space, ev.hw
        evaluate_space(w, hw, space, KEEP)  # warm-up
        ev_t = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            evaluate_space(w, hw, space, KEEP)
            ev_t = min(ev_t, time.perf_counter() - t0)
        sizes = count_ops(w, hw, space)
        fl = floor_s(sizes, args.repeat)
        same = same_ops_s(list(_Log.ops), args.repeat)
        ratio = ev_t / fl if fl > 0 else float("inf")
        small = sum(1 for s in sizes if s < SMALL)
        met = ratio <= TARGET_RATIO
        ok &= met
        t.add_row(label, f"{len(space):,}", f"{len(sizes):,}", f"{1000 * len(sizes) / max(len(space), 1):,.1f}",
                  f"{100 * small / max(len(sizes), 1):.0f} %", f"{ev_t:.4f}", f"{fl:.4f}", f"{ratio:.2f}",
                  "met" if met else "NOT met", f"{same:.4f}", f"{ev_t / same:.2f}" if same > 0 else "—")
    Console(width=170).print(t)
    print(f"target: the evaluation within {TARGET_RATIO:g}× of the same count of bare numpy operations: "
          + ("met" if ok else "NOT met"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
