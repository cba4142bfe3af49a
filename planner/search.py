"""Vectorized search: price every plan of the space with the cost model's own ``evaluate`` — on the space's grid
(row terms once per factorization × mbs × vpp, broadcast over zero × recompute × sp), in cache-sized chunks, after
skipping the plans whose model state alone cannot fit — and rank them deterministically.

Ranking (``rank``): a stable lexicographic sort on

1. the objective (``throughput``: tokens/s descending; ``memory``: peak bytes per device ascending; ``cost``: USD
   per token ascending; ``time-to-train``: the goodput-aware expected time to train the token budget ascending —
   failures, checkpoints and restarts included, ``plan_goodput``), quantized to 1e-12 of the best value so that plans equal up to rounding tie;
2. then peak memory per device ascending (the same speed for less memory is the safer plan);
3. then the plan axes ascending in the order ``tp, pp, cp, dp, mbs, vpp, zero, recompute, sp`` (the simpler plan
   first: less model parallelism, smaller micro-batches, less sharding, less recompute, sp=false).

(For ``memory`` step 2 is tokens/s descending.)  Only plans whose peak memory is at most ``(1 − headroom)`` of the
device memory are ranked.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.families import cost_model
from parplan.models.hardware_context import HardwareContext, framework_of, hardware_context
from parplan.models.plan_arrays import PlanArrays
from parplan.models.training_memory import (FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES, OPTIMIZER_STATE_BYTES,
                                            allocator_overheads)
from parplan.planner.budget import (DEFAULT_MAX_PLANS, DEFAULT_MEMORY_HEADROOM, HEADROOM_HELP, MAX_MBS,  # noqa: F401
                                    check_max_plans, check_number)
from parplan.planner.search_grid import column_groups, rows_last, take_cols
from parplan.planner.space import DEFAULT_MAX_MBS, Space
from parplan.planner.spaces import build_space
from parplan.workloads.transformer import Workload

OBJECTIVES = ("throughput", "memory", "cost", "devices", "time-to-train")
# below this fraction of (row, zero level) slices surviving the memory bound, zero levels are priced separately
SPLIT_BELOW = 0.6
CHUNK = 16384  # plans per evaluate call: keeps the intermediate arrays in cache (≈ 2–3× faster than one big call)
# plans per evaluate call on the space's grid (rows last: long inner loops; larger calls amortize the row terms)
GRID_CHUNK = 65536
# metrics kept for every plan of the space (the full result is recomputed for the plans that are reported)
KEEP = ("step_time_s", "tokens_per_s", "mfu", "memory_peak_bytes", "heaviest_memory_stage", "params_bytes",
        "grads_bytes", "optimizer_bytes", "activations_bytes")
TIE_AXES = ("tp", "pp", "cp", "dp", "mbs", "vpp", "cp_kind", "zero", "recompute", "sp")  # the space's order

ProgressFn = Callable[[int, int], None]


@dataclass
class SearchOptions:
    fix: dict = field(default_factory=dict)
    memory_headroom: float = DEFAULT_MEMORY_HEADROOM  # fraction of device memory kept free
    allow_cross_node_tp: bool = False
    max_mbs: int = DEFAULT_MAX_MBS
    prune: bool = True  # skip the full evaluation of plans whose model state alone exceeds the memory limit
    max_plans: int = DEFAULT_MAX_PLANS  # work budget: the most plans a search may price (planner.budget)

    def validate(self) -> None:
        check_number(self.memory_headroom, "--memory-headroom", lo=0.0, hi=0.5,
                     hint="a fraction of device memory kept free, e.g. 0.1")
        check_number(self.max_mbs, "--max-mbs", lo=1, hi=MAX_MBS, integer=True,
                     what=f"micro-batch sizes 1..max-mbs are searched; at most {MAX_MBS:,}",
                     hint="pin a larger one with --fix mbs=N")
        check_max_plans(self.max_plans)


@dataclass
class Evaluated:
    """Every plan of a space with its key metrics (NaN where pruned) and whether it fits the memory limit."""

    workload: Workload
    cluster: Cluster
    space: Space
    hw: HardwareContext
    eff: Efficiency
    options: SearchOptions
    limit_bytes: float  # (1 − headroom) × device memory
    metrics: dict[str, np.ndarray]
    evaluated: np.ndarray  # bool: priced by the full cost model (False on rows skipped by the memory bound)
    memory_lower_bound: np.ndarray  # bytes; above limit_bytes: the plan cannot fit on model state alone
    fits: np.ndarray  # bool: memory_peak_bytes ≤ limit_bytes (False where pruned)
    wall_s: float = 0.0

    @property
    def n_valid(self) -> int:
        return len(self.space)

    @property
    def n_evaluated(self) -> int:
        return int(self.evaluated.sum())

    @property
    def n_fitting(self) -> int:
        return int(self.fits.sum())

    @property
    def state_alone_over(self) -> np.ndarray:
        """Plans whose model state alone (memory lower bound) exceeds the limit."""
        return self.memory_lower_bound > self.limit_bytes * (1.0 + 1e-9)


def check_cluster(cluster: Cluster) -> None:
    if not cluster.is_homogeneous:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups; the planner searches "
                        "homogeneous clusters", key="groups", hint="use a single-group cluster file")


def memory_lower_bound(workload: Workload, P: PlanArrays, hw: HardwareContext | None = None) -> np.ndarray:
    """A cheap lower bound of ``evaluate``'s ``memory_peak_bytes``: the first stage's weights, gradients and
    optimizer states (ZeRO-sharded) plus the ZeRO-3 gather buffer, with fragmentation and the framework reserve —
    the parts of the first stage's dynamic memory that do not depend on activations (fragmentation and reserve of
    ``hw``'s runtime: ``training_memory.allocator_overheads``; without ``hw``, a caching allocator's).  (tests check
    bound ≤ peak on whole spaces.)"""
    mdl, job = workload.model, workload.training
    f64 = np.float64
    tp, pp = P.tp.astype(f64), P.pp.astype(f64)
    zd = (P.dp * P.cp).astype(f64)
    zero = P.zero
    L = float(mdl.layers)
    base = np.floor(L / pp)
    n_first = base + ((L - base * pp) > 0)
    P_layer = float(cost_model(workload).layer_params_lower_bound(mdl))
    params_first = (n_first * P_layer + float(mdl.embedding_params)
                    + np.where(pp == 1, float(mdl.output_params), 0.0)) / tp
    mixed = job.precision != "fp32"
    e = 2.0 if mixed else 4.0
    grad_b = np.where(zero >= 2, e, 4.0) if mixed else 4.0
    opt_b = OPTIMIZER_STATE_BYTES[(job.optimizer, mixed)]
    per_param = (e / np.where(zero >= 3, zd, 1.0) + grad_b / np.where(zero >= 2, zd, 1.0)
                 + opt_b / np.where(zero >= 1, zd, 1.0))
    # ZeRO-3's two gathered layers; RTP's two rotating shards (``models/rtp_terms.py``)
    z3 = np.where(zero >= 3, 2.0 * P_layer * e / tp / np.where(P.rotate, zd, 1.0), 0.0)
    frag, reserved = (FRAGMENTATION_FRACTION, FRAMEWORK_RESERVED_BYTES) if hw is None else \
        allocator_overheads(hw.framework, hw.launches_kernels)
    return (1.0 + frag) * (params_first * per_param + z3) + reserved


def evaluate_plans(workload: Workload, hw: HardwareContext, P: PlanArrays, keys=None, chunk: int = CHUNK,
                   progress: Optional[Callable[[int], None]] = None) -> dict[str, np.ndarray]:
    """``evaluate`` over ``P`` in chunks; ``keys`` selects the outputs kept (all when None)."""
    n = len(P)
    out: dict[str, list] = {}
    for i in range(0, max(n, 1), chunk):
        sub = P.subset(slice(i, i + chunk)) if n > chunk else P
        res = cost_model(workload).evaluate(workload.model, workload.training, hw, sub)
        for k in (keys or res.keys()):
            out.setdefault(k, []).append(np.asarray(res[k]))
        if progress is not None:
            progress(min(i + chunk, n))
        if n <= chunk:
            break
    return {k: (v[0] if len(v) == 1 else np.concatenate(v)) for k, v in out.items()}


def evaluate_space(workload: Workload, hw: HardwareContext, space: Space, keys, keep: np.ndarray | None = None,
                   chunk: int = GRID_CHUNK, progress: Optional[Callable[[int, int], None]] = None
                   ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``evaluate`` on the space's grid: the row terms (everything that depends on dp, tp, pp, cp, mbs, vpp only) are
    computed once per row and broadcast over the knob block — element for element the same arithmetic as on flat
    arrays.  Rows are priced in groups of the same knob columns (zero levels × recompute modes × sp values) holding
    a plan to price — e.g. tp = 1 rows have no sp=true plan — on the grid of those columns only.  ``keep`` (bool per
    plan, constant over each (row, zero level) slice, e.g. "not excluded by the memory bound") restricts the work to
    the slices it marks — unless most slices are kept, where every plan is priced.  Returns flat arrays over all
    plans (NaN where not priced) and the bool array of the plans priced."""
    n = len(space)
    # one block for all outputs: a single large allocation (huge pages where numpy advises them) instead of one
    # page-faulting allocation per output
    block = np.full((len(keys), n), np.nan)
    out = {k: block[i] for i, k in enumerate(keys)}
    priced = np.zeros(n, dtype=bool)
    if n == 0:
        return out, priced
    target = space.mask
    if keep is not None:
        kept = np.zeros(space.mask.shape, dtype=bool)
        kept[space.mask] = keep
        slab = kept.any(axis=(2, 3))  # (rows, zero levels)
        if slab.mean() <= SPLIT_BELOW:
            target = space.mask & slab[:, :, None, None]
    groups = column_groups(target, chunk // 4)
    if not groups:
        return out, priced
    whole = (target is space.mask and len(groups) == 1 and groups[0][0].size == space.n_rows
             and all(c.all() for c in groups[0][1:]))  # every plan, in order
    pos = None
    if not whole:
        pos = np.full(space.mask.shape, -1, dtype=np.int64)
        pos[space.mask] = np.arange(n)
    total = sum(g[0].size for g in groups)
    done = 0
    start = 0
    for rows, *cols in groups:
        idx = [slice(None) if c.all() else np.flatnonzero(c) for c in cols]
        cells = int(np.prod([c.sum() for c in cols]))
        step = max(1, chunk // max(cells, 1))
        for i in range(0, rows.size, step):
            sel = rows[i:i + step]
            if sel[-1] - sel[0] + 1 == sel.size:
                sel = slice(int(sel[0]), int(sel[-1]) + 1)
            G = space.grid(sel)
            G.zero, G.recompute, G.sp = G.zero[:, idx[0]], G.recompute[:, :, idx[1]], G.sp[:, :, :, idx[2]]
            m = take_cols(target[sel], idx)
            res = cost_model(workload).evaluate(workload.model, workload.training, hw, rows_last(G))
            nz = np.flatnonzero(m)
            if pos is None:  # whole grid in row order: the cells are the next plans in order
                p = slice(start, start + nz.size)
                start += nz.size
            else:
                p = take_cols(pos[sel], idx).reshape(-1)[nz]
            shape_t = m.shape[1:] + m.shape[:1]  # the results' rows-last layout, read back row-major at the cells
            for k in keys:
                out[k][p] = np.broadcast_to(np.asarray(res[k]), shape_t).transpose(3, 0, 1, 2)[m]
            priced[p] = True
            done += m.shape[0]
            if progress is not None:
                progress(done, total)
    return out, priced


def run_search(workload: Workload, cluster: Cluster, options: SearchOptions | None = None,
               progress: Optional[ProgressFn] = None, eff: Efficiency | None = None, *,
               max_plans: int | None = None) -> Evaluated:
    """Build the space and evaluate it.  Plans whose model state alone (``memory_lower_bound``, which depends on
    the row and the zero level only) exceeds the memory limit are not priced: they cannot fit.  A space of more
    than ``max_plans`` plans (default ``options.max_plans``) is refused before any plan is priced
    (``BudgetError``)."""
    t0 = time.perf_counter()
    options = options or SearchOptions()
    options.validate()
    check_cluster(cluster)
    g = cluster.group
    eff = eff or efficiency_for(g.device)
    hw = hardware_context(g, workload.training.precision, eff, framework=framework_of(workload))
    space = build_space(workload, cluster.n_devices, g.devices_per_node, fix=options.fix,
                        allow_cross_node_tp=options.allow_cross_node_tp, max_mbs=options.max_mbs,
                        max_plans=options.max_plans if max_plans is None else max_plans)
    n = len(space)
    limit = (1.0 - float(options.memory_headroom)) * hw.memory_capacity_bytes
    lb = space.cells(memory_lower_bound(workload, space.grid(), hw)) if n else np.zeros(0)
    keep = ~(lb > limit * (1.0 + 1e-9)) if options.prune else None
    metrics, priced = evaluate_space(workload, hw, space, KEEP, keep=keep, progress=progress)
    if progress is not None and not priced.any():
        progress(0, 0)
    with np.errstate(invalid="ignore"):
        fits = priced & (metrics["memory_peak_bytes"] <= limit)
    return Evaluated(workload=workload, cluster=cluster, space=space, hw=hw, eff=eff, options=options,
                     limit_bytes=limit, metrics=metrics, evaluated=priced, memory_lower_bound=lb, fits=fits,
                     wall_s=time.perf_counter() - t0)


def cost_per_token(ev: Evaluated, price_per_hour: float) -> np.ndarray:
    """USD per token: devices × price per device-hour / 3600 / tokens per second."""
    return ev.cluster.n_devices * float(price_per_hour) / 3600.0 / ev.metrics["tokens_per_s"]


def _quantize(x: np.ndarray) -> np.ndarray:
    ref = float(np.max(np.abs(x))) if x.size else 1.0
    if not ref > 0:
        return x
    return np.round(x * (1e12 / ref))


# bytes per parameter of the weights a checkpoint saves beside the optimizer states (training dtype: 2 for bf16/fp16
# and fp8 recipes, which keep bf16 weights — Megatron-LM's distributed checkpoint saves the model's parameters and
# the fp32 master weights + Adam moments, ZeRO paper Sec. 3.1: K = 12)
CHECKPOINT_WEIGHT_BYTES = {True: 2.0, False: 4.0}


def checkpoint_bytes(ev: Evaluated, idx: np.ndarray) -> tuple[np.ndarray, float]:
    """Checkpoint size of the plans ``idx``: per device (its weights + optimizer states, the memory model's parts
    of the heaviest stage) and in total (every parameter's weights + optimizer states, once)."""
    job = ev.workload.training
    mixed = job.precision != "fp32"
    per_device = ev.metrics["params_bytes"][idx] + ev.metrics["optimizer_bytes"][idx]
    total = float(ev.workload.model.total_params) * (CHECKPOINT_WEIGHT_BYTES[mixed]
                                                     + OPTIMIZER_STATE_BYTES[(job.optimizer, mixed)])
    return per_device, total


def training_steps(ev: Evaluated, token_budget: float) -> int:
    return max(1, int(np.ceil(float(token_budget) / float(ev.workload.training.tokens_per_step))))


def plan_goodput(ev: Evaluated, idx: np.ndarray, token_budget: float, reliability=None) -> dict[str, np.ndarray]:
    """The goodput model (``models/primitives/reliability.goodput``) for the plans ``idx`` training ``token_budget``
    tokens on this cluster: expected time to train, its spread and breakdown, per plan."""
    from parplan.models.primitives.reliability import goodput

    idx = np.asarray(idx, dtype=np.int64)
    per_device, total = checkpoint_bytes(ev, idx)
    g = ev.cluster.group
    return goodput(ev.metrics["step_time_s"][idx], training_steps(ev, token_budget), per_device, total,
                   ev.cluster.n_devices, g.devices_per_node, reliability)


def goodput_summary(ev: Evaluated, goodput: dict, token_budget: float, tokens_per_s: float,
                    reliability=None) -> dict:
    """The first plan's failure model in JSON form: goodput, expected time with its p10/p90, the named breakdown,
    the checkpoint interval, MTBF, expected failures and each cause's failures per hour on this cluster."""
    from parplan.models.primitives.reliability import BREAKDOWN, Reliability

    g = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in goodput.items()}
    rates = (reliability or Reliability()).rates
    return {"goodput": g["goodput"], "time_to_train_s": g["time_to_train_s"],
            "time_to_train_p10_s": g["time_p10_s"], "time_to_train_p90_s": g["time_p90_s"],
            "failure_free_time_s": float(token_budget) / float(tokens_per_s),
            "breakdown_s": {k: g[k] for k in BREAKDOWN}, "checkpoint_interval_s": g["checkpoint_interval_s"],
            "checkpoint_stall_s": g["checkpoint_stall_s"], "mtbf_s": g["mtbf_s"],
            "expected_failures": g["expected_failures"], "expected_interruptions": g["expected_interrupts"],
            "failure_profile": rates.profile,
            "failures_per_hour_by_cause": rates.by_cause(ev.cluster.n_devices, ev.cluster.group.devices_per_node)}


def rank(ev: Evaluated, objective: str = "throughput", price_per_hour: float | None = None,
         candidates: np.ndarray | None = None, token_budget: float | None = None, reliability=None) -> np.ndarray:
    """Indices (into the space) of the fitting plans — or of ``candidates`` — best first (see module docstring).
    ``token_budget`` (tokens) and ``reliability`` (a ``Reliability``, default failures.yaml): ``time-to-train``."""
    idx = np.flatnonzero(ev.fits) if candidates is None else np.sort(np.asarray(candidates, dtype=np.int64))
    if idx.size == 0:
        return idx
    tps = ev.metrics["tokens_per_s"][idx]
    mem = ev.metrics["memory_peak_bytes"][idx]
    if objective in ("throughput", "devices"):
        primary, secondary = _quantize(-tps), mem
    elif objective == "memory":
        primary, secondary = _quantize(mem), -tps
    elif objective == "cost":
        if price_per_hour is None:
            raise SpecError("the cost objective needs a price", key="--objective")
        primary, secondary = _quantize(cost_per_token(ev, price_per_hour)[idx]), mem
    elif objective == "time-to-train":
        if token_budget is None:
            raise SpecError("the time-to-train objective needs a token budget", key="--token-budget",
                            hint='add --token-budget, e.g. 15T')
        t = np.asarray(plan_goodput(ev, idx, token_budget, reliability)["time_to_train_s"], dtype=float)
        ok = np.isfinite(t)  # a plan whose expected time diverges (failures faster than its checkpoints) ranks last
        primary = np.full(t.shape, np.inf)
        primary[ok] = _quantize(t[ok])
        secondary = mem
    else:
        raise SpecError(f"unknown objective {objective!r}", key="--objective", allowed=list(OBJECTIVES))
    # the space is built in ascending TIE_AXES order, so a stable sort on (primary, secondary) of ascending plan
    # indices breaks the remaining ties by the plan axes
    order = np.lexsort((secondary, primary))
    return idx[order]
