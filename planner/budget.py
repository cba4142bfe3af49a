"""Work budgets of the planner, and the checks of numeric option values at the door of a command.

Every search estimates its work before doing it and refuses — a one-line ``BudgetError`` (a ``SpecError``: exit
code 2 on the command line) naming the cap and how to raise it — when the estimate is above the budget:

* **plans in a space** (``build_space``): counted exactly, factorization chunk by factorization chunk, before any
  per-plan array is made (~20 M plans a second; a chunk's rows and knob masks take a few bytes per plan, and a
  refused space is counted on to 4× the budget, without keeping its chunks, so the message says by how much); the
  search then holds ~225 bytes per plan and prices ~1–2 M plans a second.  ``DEFAULT_MAX_PLANS`` = 5·10⁶ keeps a
  search below ~1.2 GB and ~5 s (measured: 4.47·10⁶ plans, 1.06 GB, 5.6 s); the jobs of
  ``benchmarks/planner_speed.py`` have 4,518–149,028 plans, DeepSeek-V3 on 256 H100s 187,308.  ``--max-plans``
  raises it.
* **a partial plan's completions** (``complete_plan``): the product of the free knobs' choices, each tried one by
  one (validated, ~30 µs each); one completion counts ``COMPLETION_COST`` plans of the budget (default: 200,000
  completions, ~6 s).
* **sizing** (``--objective devices``) and the advice printed when nothing fits: the plans of every node count
  searched, summed (``PlanBudget``), within the same ``--max-plans``; where the exact scan of every node count below
  the first power of two that reaches the target would exceed it, the answer is that power of two, with a note.
* **reported plans** (``--top``): at most ``MAX_TOP`` (a JSON record is ~1.7 kB; ``--top 0`` when more plans fit is
  an error); a table shows at most ``TABLE_ROWS`` rows (rich tables render ~1,000 rows a second), with a note.
* **heterogeneous configurations** (``planner.hetero``: shape × knob settings, each up to two rounds of ILPs):
  ``DEFAULT_MAX_CONFIGURATIONS``, counted before any ILP is built, ``--max-configurations`` raises it.

Hard caps (not budgets: beyond them the value itself is refused): ``--max-mbs`` ≤ ``MAX_MBS``, ``--max-nodes`` ≤
``MAX_NODES``, ILP time limits in (0, ``MAX_TIME_LIMIT_S``].
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from parplan.errors import SpecError
from parplan.units import MAXIMA

DEFAULT_MAX_PLANS = 5_000_000
MAX_MBS = 1024  # --max-mbs: micro-batch sizes 1..max-mbs are enumerated
MAX_TOP = 100_000  # --top: plans reported (suggest)
MAX_PRICE_PER_HOUR = MAXIMA["dollars_per_hour"]  # --price-per-hour: the largest price a catalog entry may have
TABLE_ROWS = 1_000  # rows a table shows (the rest: --format csv / json)
MAX_NODES = 1_000_000  # --max-nodes (sizing)
MAX_DEVICES = 100_000_000  # the planner enumerates factorizations of the device count
MAX_TIME_LIMIT_S = 3600  # --time-limit: seconds per ILP solve
COMPLETION_COST = 25  # one completion of a partial plan, tried one by one, counts as this many plans
DEFAULT_MAX_CONFIGURATIONS = 20_000  # heterogeneous planner: shape × knob configurations
MAX_PLANS_HELP = (f"work budget: the most plans a search may price (default {DEFAULT_MAX_PLANS:,}: ~1.2 GB, ~5 s; "
                  "sizing sums the node counts searched; a partial plan's completion counts "
                  f"{COMPLETION_COST}); above it the command refuses (exit 2) before searching")


class BudgetError(SpecError):
    """The estimated work of a command is above its budget (a ``SpecError``: one line, exit code 2)."""


def check_number(value, key: str, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                 hi_open: bool = False, integer: bool = False, hint: str | None = None, what: str = ""):
    """``value`` as a finite number in the range (``lo``/``hi``; open ends with ``lo_open``/``hi_open``), else a
    one-line ``SpecError`` naming ``key`` ("--option: bad value …").  ``None`` passes through (option not given)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SpecError(f"bad value {value!r}: expected a number", key=key, hint=hint)
    if integer and isinstance(value, int):
        x = value
    else:
        try:
            f = float(value)
        except (TypeError, ValueError, OverflowError):
            raise SpecError(f"bad value {value!r}: expected a{'n integer' if integer else ' number'}", key=key,
                            hint=hint) from None
        if not math.isfinite(f):
            raise SpecError(f"bad value {value!r}: must be a finite number", key=key, hint=hint)
        if integer and not f.is_integer():
            raise SpecError(f"bad value {value!r}: expected an integer", key=key, hint=hint)
        x = int(f) if integer else f
    bad = None
    if lo is not None and (x <= lo if lo_open else x < lo):
        bad = f"must be {'>' if lo_open else '≥'} {_bound(lo)}"
    if hi is not None and (x >= hi if hi_open else x > hi):
        bad = f"must be {'<' if hi_open else '≤'} {_bound(hi)}"
    if bad is not None:
        if lo is not None and hi is not None:
            bad = (f"must be between {_bound(lo)} and {_bound(hi)}" if not (lo_open or hi_open) else
                   f"must be in {'(' if lo_open else '['}{_bound(lo)}, {_bound(hi)}{')' if hi_open else ']'}")
        raise SpecError(f"bad value {_value(x)}: {bad}" + (f" ({what})" if what else ""), key=key, hint=hint)
    return x


def _value(x) -> str:
    """A bad value as the user wrote it (integers plain, -5.0 as -5)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return str(x)


def _bound(x) -> str:
    return f"{x:,}" if isinstance(x, int) else repr(float(x))


def check_max_plans(value, key: str = "--max-plans") -> int:
    return check_number(value, key, lo=1, integer=True, hint="a number of plans, e.g. 20000000")


@dataclass
class PlanBudget:
    """A pool of plans shared by several searches (sizing over node counts, advice): each checks ``remaining``
    before it runs and is ``charge``d after."""

    limit: int
    spent: int = 0
    searches: int = 0

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.spent)

    def charge(self, n: int) -> None:
        self.spent += int(n)
        self.searches += 1


def over_budget(what: str, counted: int, limit: int, exact: bool, hint: str | None = None,
                key: str = "--max-plans") -> BudgetError:
    """The one-line refusal of a search whose plans exceed ``limit``."""
    n = f"{counted:,}" if exact else f"more than {counted:,}"
    err = BudgetError(f"{what} has {n} plans, above the budget of {limit:,}", key=key,
                      hint=hint or ((f"raise --max-plans (e.g. --max-plans {_round_up(counted)}; " if exact else
                                     "raise --max-plans (") + "~225 bytes and ~1 µs per plan), or narrow the space "
                                    "with --fix or --max-mbs"))
    err.counted, err.exact = int(counted), bool(exact)
    return err


def _round_up(n: int) -> str:
    """A round number ≥ n (for hints)."""
    e = 10 ** max(0, len(str(int(n))) - 1)
    return f"{(int(n) + e - 1) // e * e}"


# Memory kept free by default when ranking plans (a fraction of device memory).  What it is for: what the memory
# model does not price per plan — NCCL communicator buffers (one set per process group, so more with more
# parallel dimensions), caching-allocator block rounding and peaks of transient buffers beyond the model's
# transients, and the memory estimate's own error.  What it is not: the model already counts a 2 GiB framework
# reserve (CUDA context, cuBLAS/NCCL workspaces) and Megatron-LM's 5 % fragmentation allowance on the dynamic part
# (models/training_memory.py FRAMEWORK_RESERVED_BYTES, FRAGMENTATION_FRACTION), so those are not counted again.
# 5 %: PyTorch's caching allocator reserves whole blocks (2 MiB granularity, large segments up to 20 MiB and more —
# https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf), and
# reserved-minus-allocated of several percent of HBM is what `torch.cuda.memory_summary` shows on long runs.
DEFAULT_MEMORY_HEADROOM = 0.05
HEADROOM_HELP = (f"fraction of device memory kept free, 0.0–0.5 (default {DEFAULT_MEMORY_HEADROOM:g}: NCCL "
                 "communicator buffers, allocator block rounding and the estimate's own error, which no plan's "
                 "estimate prices; the 2 GiB framework reserve and 5 % fragmentation of the dynamic part are "
                 "already in every estimate and not counted twice)")


# sizing without --max-nodes searches up to the cluster's node count or, when larger, this many times the
# 100 %-MFU bound (the bound reached at 1 / DEFAULT_SIZING_REACH MFU: 25 %, below most published dense runs —
# e.g. Megatron-LM's 41–52 % MFU, Narayanan et al. SC'21 Table 1)
DEFAULT_SIZING_REACH = 4
# Work budget of a sweep: cells searched — each one search of up to --max-plans plans, ~0.05–5 s
DEFAULT_MAX_CELLS = 10_000
# Seconds to wait for a Dask scheduler to answer (and for it to have a worker) before giving up; distributed's own
# default is 30 s (distributed.comm.timeouts.connect, https://distributed.dask.org/en/stable/api.html#client)
DEFAULT_CONNECT_TIMEOUT_S = 10.0
