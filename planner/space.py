"""The search space: every valid parallel plan of a dense training job on a homogeneous cluster, built with numpy.

Axes: every (dp, tp, pp, cp) factorization of the device count, the micro-batch size ``mbs``, the interleaving
degree ``vpp``, ``zero`` 0–3, ``recompute`` none/selective/full and sequence parallelism ``sp``.  A family adds
its own axes and rules through ``row_axes`` / ``cell_rules`` (``planner/spaces/<family>.py``: the MoE family adds
``ep`` and ``etp``); the dense family keeps ``ep = etp = 1``.  The rules below are the constraints real frameworks (Megatron-LM, NeMo, DeepSpeed, FSDP) impose;
every plan they let through passes ``parplan.models.estimate.validate_plan`` (a test checks it), so the search and
``parplan estimate`` accept the same plans.

Factorization rules (counted per factorization in ``Space.excluded``):

* ``tp`` divides ``heads`` and ``kv_heads`` (each rank owns whole attention heads and whole KV groups);
* ``tp`` ≤ devices per node (tensor parallelism stays on NVLink) unless ``allow_cross_node_tp``; then a ``tp`` larger
  than a node must be a multiple of the node size (no node is shared unevenly);
* ``pp`` ≤ layers.  **Uneven layer split:** ``pp`` need not divide ``layers`` when ``vpp = 1``: every stage gets
  ⌊L/pp⌋ layers and the ``L mod pp`` extra layers go to the first stages (what the cost model prices; Megatron-LM's
  ``--decoder-first-pipeline-num-layers`` and NeMo's uneven split do the same); interleaving (``vpp > 1``) needs
  ``L % (pp·vpp) == 0`` (equal model chunks);
* ``cp > 1`` needs ``seq_len`` divisible by ``2·cp`` (load-balanced causal context parallelism);
* ``global_batch`` divisible by ``dp`` (and, below, by ``dp·mbs``).

Knob rules (counted per plan):

* ``mbs`` ≤ ``max_mbs`` (default 32; a pinned ``--fix mbs=…`` is searched whatever its size) and
  ``global_batch % (dp·mbs) == 0``;
* ``vpp > 1`` only with ``pp > 1``, ``L % (pp·vpp) == 0`` and micro-batches per pipeline ``m % pp == 0``;
* ``zero > 0`` only when the gradient group ``dp·cp`` has more than one rank (sharding over one rank is plain data
  parallelism; the cost model would otherwise credit ZeRO-2's 16-bit gradients for free);
* ``sp = true`` only with ``tp > 1`` (sequence parallelism splits over the TP ranks);
* the workload's framework (``training.framework``, default ``megatron-core``; ``suggest --framework``) can launch
  the plan: ``FrameworkProfile.plan_mask`` (parplan.models.framework) — its ZeRO levels, parallelisms, sequence
  parallelism mode, recompute modes, layer split and the framework's own rules, each cited in
  ``catalogs/frameworks/<id>.yaml``; the excluded plans are counted under ``framework`` per failed check.

``fix`` pins any plan key to one value (``--fix tp=8``); a pinned value that no rule admits leaves an empty space.
The contract-v2 knobs ``helix``, ``rotate`` and ``reshard`` are held at a pinned value with their own rules, the
other v2 knobs are not search axes and a pin of one is refused (``planner/space_axes.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import gcd
from types import SimpleNamespace
from typing import Optional

import numpy as np

from parplan.errors import SpecError
from parplan.models.plan import PLAN_KEYS, RECOMPUTE, parse_plan_values, split_pairs
from parplan.models.training import PlanArrays
from parplan.planner.space_axes import (PINNED_KNOBS, SEARCHED_CP_KINDS,  # noqa: F401  (re-exported)
                                        _cp_layouts, _pinned_cells, _pinned_rows, check_pins)
from parplan.workloads.transformer import Workload

DEFAULT_MAX_MBS = 32
ZERO_LEVELS = (0, 1, 2, 3)

# names of the exclusion reasons, in the order they are attributed (the first rule a plan breaks is counted)
FACTOR_RULES = ("tp_heads", "tp_node", "pp_layers", "cp_seq", "batch_dp", "fixed")
KNOB_RULES = ("mbs_batch", "vpp", "zero_dp1", "sp_tp1", "cp_heads", "framework", "fixed")


@dataclass
class Space:
    """Valid plans and what the rules excluded.

    Layout: ``rows`` (one per valid factorization × mbs × vpp) × a dense block of knob values (``zero_vals`` ×
    ``rc_vals`` × ``sp_vals``), ``mask`` (rows, zero, recompute, sp) marking the valid cells.  ``plans`` is the flat
    struct of arrays of the valid cells in row-major order (deterministic: ascending tp, pp, cp, then mbs, vpp,
    zero, recompute, sp); ``row_of`` maps each plan to its row.  ``grid()`` gives broadcastable ``PlanArrays``
    (rows along axis 0, knobs along axes 1–3) so that the cost model computes row-only terms once per row.
    """

    plans: Optional[PlanArrays]
    n_devices: int
    factorizations: int  # (dp, tp, pp, cp) factorizations of the device count before any rule
    excluded_factorizations: dict[str, int] = field(default_factory=dict)
    excluded_plans: dict[str, int] = field(default_factory=dict)
    rule_text: dict[str, str] = field(default_factory=dict)
    rows: Optional[PlanArrays] = None
    zero_vals: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rc_vals: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sp_vals: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    mask: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0, 0), dtype=bool))
    row_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.plans)

    @property
    def n_rows(self) -> int:
        return int(self.mask.shape[0])

    def grid(self, rows=slice(None)) -> PlanArrays:
        """Broadcastable plans of the given rows: row axes shaped (n, 1, 1, 1), knobs (1, Z, 1, 1) etc."""
        R = self.rows

        def col(a):
            return a[rows].reshape(-1, 1, 1, 1)

        return PlanArrays(dp=col(R.dp), tp=col(R.tp), pp=col(R.pp), cp=col(R.cp), mbs=col(R.mbs), vpp=col(R.vpp),
                          zero=self.zero_vals.reshape(1, -1, 1, 1), recompute=self.rc_vals.reshape(1, 1, -1, 1),
                          sp=self.sp_vals.reshape(1, 1, 1, -1), ep=col(R.ep), etp=col(R.etp),
                          cp_kind=col(R.cp_kind), **{k: col(getattr(R, k)) for k in PINNED_KNOBS})

    def valid_cells(self, rows=slice(None)) -> np.ndarray:
        """Flat indices of the valid cells in the grid of ``rows`` (row-major)."""
        return np.flatnonzero(self.mask[rows])

    def flat(self, G: PlanArrays, rows=slice(None), nz: np.ndarray | None = None) -> PlanArrays:
        """The valid cells of a grid (or of any array broadcastable to it) as flat arrays, in plan order."""
        nz = self.valid_cells(rows) if nz is None else nz
        return PlanArrays(**{k: self.cells(getattr(G, k), rows, nz) for k in PlanArrays.__dataclass_fields__})

    def cells(self, a, rows=slice(None), nz: np.ndarray | None = None) -> np.ndarray:
        """Flat valid cells of one array broadcastable to the grid of ``rows``."""
        shape = self.mask[rows].shape
        nz = self.valid_cells(rows) if nz is None else nz
        return np.broadcast_to(np.asarray(a), shape).reshape(-1)[nz]


def divisors(n: int) -> np.ndarray:
    n = int(n)
    small = np.arange(1, int(np.sqrt(n)) + 1, dtype=np.int64)
    small = small[n % small == 0]
    # sorted and de-duplicated in Python: np.unique would import numpy.ma (~8 ms of every command's start-up)
    return np.array(sorted(set(small.tolist()) | set((n // small).tolist())), dtype=np.int64)


def parse_fix(items) -> dict:
    """``["tp=8", "pp=4"]``, ``"tp=8,pp=4"`` or a mapping → ``{"tp": 8, "pp": 4}`` (typed like ``Plan``, recompute as
    its index); the same parsing and checks as plan strings (which family admits ep / etp is the space's business)."""
    if items is None:
        return {}
    out = parse_plan_values(split_pairs(items, "--fix"), "--fix")
    if "recompute" in out:
        out["recompute"] = RECOMPUTE.index(out["recompute"])
    return out


def fix_string(fix: dict) -> str:
    parts = []
    for k in PLAN_KEYS:
        if k in fix:
            v = fix[k]
            if k == "recompute":
                v = RECOMPUTE[v]
            elif k == "sp":
                v = "true" if v else "false"
            parts.append(f"{k}={v}")
    return ",".join(parts)


def factorizations(workload: Workload, n_devices: int, devices_per_node: int, *, fix: dict | None = None,
                   allow_cross_node_tp: bool = False):
    """Valid (tp, pp, cp, dp) factorizations of the device count (arrays, ascending tp, pp, cp), the number before
    any rule, and how many each rule excluded."""
    fix = fix or {}
    mdl, job = workload.model, workload.training
    L, B, s = int(mdl.layers), int(job.global_batch), int(job.seq_len)
    N, dpn = int(n_devices), int(devices_per_node)
    head_g = gcd(int(mdl.heads), int(mdl.kv_heads))
    d = divisors(N)
    # (tp, pp) pairs dividing N, then cp dividing N/(tp·pp): ascending (tp, pp, cp) without a d³ grid
    tp2, pp2 = (a.ravel() for a in np.meshgrid(d, d, indexing="ij"))
    keep2 = (N % (tp2 * pp2)) == 0
    tp2, pp2 = tp2[keep2], pp2[keep2]
    ok3 = ((N // (tp2 * pp2))[:, None] % d[None, :]) == 0
    i, j = np.nonzero(ok3)
    tp, pp, cp = tp2[i], pp2[i], d[j]
    dp = N // (tp * pp * cp)
    n_fact = int(tp.shape[0])
    rules = [
        ("tp_heads", (head_g % tp) == 0),
        ("tp_node", ((tp <= dpn) | ((tp % dpn) == 0)) if allow_cross_node_tp else (tp <= dpn)),
        ("pp_layers", pp <= L),
        ("cp_seq", (cp == 1) | ((s % (2 * cp)) == 0)),
        ("batch_dp", (B % dp) == 0),
    ]
    fmask = np.ones(n_fact, dtype=bool)
    for key, arr in (("dp", dp), ("tp", tp), ("pp", pp), ("cp", cp)):
        if key in fix:
            fmask &= arr == fix[key]
    rules.append(("fixed", fmask))
    alive = np.ones(n_fact, dtype=bool)
    excl_f: dict[str, int] = {}
    for key, ok in rules:
        excl_f[key] = int((alive & ~ok).sum())
        alive &= ok
    return tp[alive], pp[alive], cp[alive], dp[alive], n_fact, excl_f


# rows (factorization × mbs × vpp) enumerated per chunk of factorizations: bounds the intermediate arrays
CHUNK_ROWS = 1 << 16
COUNT_ON = 4  # a space over its budget is counted on up to this many times the budget (~20 M plans/s)


class _Acc:
    """Exclusion counts and framework labels summed over the chunks of one enumeration."""

    def __init__(self):
        self.excl_p = {k: 0 for k in KNOB_RULES}
        self.fw_counts: dict[str, int] = {}


def _rows_and_mask(workload, fw, fix: dict, tp, pp, cp, dp, mbs_vals, vpp_vals, dpn: int, row_axes, cell_rules,
                   recompute_levels, rule_text: dict, acc: _Acc):
    """The rows (factorization × mbs × vpp, then the family's row axes) of some factorizations and the mask of their
    valid knob cells (zero × recompute × sp), with the exclusions counted in ``acc``; rows with no valid cell are
    dropped."""
    mdl, job = workload.model, workload.training
    L, B = int(mdl.layers), int(job.global_batch)
    excl_p = acc.excl_p
    # mbs: (rows, values) masks, then the surviving pairs in row-major order (= repeat/tile order)
    ok = (B % (dp[:, None] * mbs_vals[None, :])) == 0
    # the excluded count is over (factorization × mbs value); count it like every knob rule
    excl_p["mbs_batch"] += int((~ok).sum())
    if "mbs" in fix:
        okf = np.broadcast_to((mbs_vals == fix["mbs"])[None, :], ok.shape)
        excl_p["fixed"] += int((ok & ~okf).sum())
        ok &= okf
    i, j = np.nonzero(ok)
    cols = {"tp": tp[i], "pp": pp[i], "cp": cp[i], "dp": dp[i], "mbs": mbs_vals[j]}
    # vpp
    m = B // (cols["dp"] * cols["mbs"])
    ok = (vpp_vals == 1)[None, :] | ((cols["pp"] > 1)[:, None] & ((L % (cols["pp"][:, None] * vpp_vals[None, :])) == 0)
                                     & ((m % cols["pp"]) == 0)[:, None])
    excl_p["vpp"] += int((~ok).sum())
    if "vpp" in fix:
        okf = np.broadcast_to((vpp_vals == fix["vpp"])[None, :], ok.shape)
        excl_p["fixed"] += int((ok & ~okf).sum())
        ok &= okf
    i, j = np.nonzero(ok)
    cols = {k: a[i] for k, a in cols.items()}
    cols["vpp"] = vpp_vals[j]
    if row_axes is not None:
        cols = row_axes(cols, fix, fw, excl_p, rule_text)
    cols = _cp_layouts(workload, fw, fix, cols, excl_p)
    cols = _pinned_rows(workload, fix, cols, excl_p, rule_text)
    # zero × recompute × sp: a dense block per row (the row: factorization, mbs, vpp), masked
    nrow = cols["tp"].shape[0]
    Z = np.array(ZERO_LEVELS, dtype=np.int64).reshape(1, -1, 1, 1)
    R = np.array(recompute_levels, dtype=np.int64).reshape(1, 1, -1, 1)  # the family's recompute modes
    S = np.array([False, True]).reshape(1, 1, 1, -1)
    shape = (nrow, Z.size, R.size, S.size)
    alive = np.ones(shape, dtype=bool)
    builtin = [("zero_dp1", (Z == 0) | ((cols["dp"] * cols["cp"]) > 1).reshape(-1, 1, 1, 1)),
               ("sp_tp1", (~S) | (cols["tp"] > 1).reshape(-1, 1, 1, 1))]
    for name, text, fn in (*cell_rules, *_pinned_cells(fix)):
        rule_text.setdefault(name, text)
        excl_p.setdefault(name, 0)
        builtin.append((name, fn(cols, Z, R, S)))
    for key, ok in builtin:
        ok = np.broadcast_to(ok, shape)
        excl_p[key] += int((alive & ~ok).sum())
        alive &= ok
    # the framework: each cell is counted under the first check it fails
    grid = SimpleNamespace(**{k: cols[k].reshape(-1, 1, 1, 1) for k in ("dp", "tp", "pp", "cp", "mbs", "vpp")
                              if k in cols}, zero=Z, recompute=R, sp=S,
                           **{k: cols[k].reshape(-1, 1, 1, 1) for k in ("ep", "etp", "cp_kind", *PINNED_KNOBS)
                              if k in cols})
    for label, ok in fw.plan_masks(grid, n_devices_per_node=dpn, workload=workload):
        ok = np.broadcast_to(ok, shape)
        n_out = int((alive & ~ok).sum())
        if n_out:
            acc.fw_counts[label] = acc.fw_counts.get(label, 0) + n_out
            excl_p["framework"] += n_out
            alive &= ok
    zsel = np.ones(Z.size, dtype=bool) if "zero" not in fix else (Z.ravel() == fix["zero"])
    rsel = np.ones(R.size, dtype=bool) if "recompute" not in fix else (R.ravel() == fix["recompute"])
    ssel = np.ones(S.size, dtype=bool) if "sp" not in fix else (S.ravel() == bool(fix["sp"]))
    fixed_ok = zsel.reshape(1, -1, 1, 1) & rsel.reshape(1, 1, -1, 1) & ssel.reshape(1, 1, 1, -1)
    excl_p["fixed"] += int((alive & ~fixed_ok).sum())
    mask = alive[:, zsel][:, :, rsel][:, :, :, ssel]
    # rows whose knob block is empty (e.g. every allowed zero level needs dp·cp > 1) are dropped
    keep = mask.reshape(nrow, int(np.prod(mask.shape[1:]))).any(axis=1)
    cols = {k: a[keep] for k, a in cols.items()}
    return cols, mask[keep], (Z.ravel()[zsel], R.ravel()[rsel], S.ravel()[ssel])


def build_space(workload: Workload, n_devices: int, devices_per_node: int, *, fix: dict | None = None,
                allow_cross_node_tp: bool = False, max_mbs: int = DEFAULT_MAX_MBS,
                framework: str | None = None, row_axes=None, cell_rules=(),
                recompute_levels: tuple = (0, 1, 2), max_plans: int | None = None,
                count_only: bool = False) -> "Space | int":
    """Enumerate every valid plan (see the module docstring for the rules).  ``framework`` (a catalog id) replaces
    the workload's ``training.framework`` for the launchability rule.  A family adds its own axes and rules:
    ``row_axes(cols, fix, fw, excl, rule_text) -> cols`` expands the rows (factorization × mbs × vpp) by further
    per-row axes (e.g. ep, etp), counting what it excludes in ``excl``/``rule_text``; ``cell_rules`` are
    ``(name, text, f(cols, Z, R, S) -> bool array)`` applied to the knob block like the built-in cell rules.

    Work budget: the rows and knob masks are enumerated per chunk of factorizations and the valid plans counted
    before any per-plan array is made; above ``max_plans`` a ``BudgetError`` is raised (the count goes on, without
    keeping the chunks, up to ``COUNT_ON`` × the budget, so that the message says by how much).  ``count_only``:
    return the exact number of valid plans instead of the space."""
    from parplan.models.framework import DEFAULT_FRAMEWORK, get_framework
    from parplan.planner.budget import MAX_DEVICES, over_budget

    fw = get_framework(framework or getattr(workload.training, "framework", None) or DEFAULT_FRAMEWORK)
    fix = dict(fix or {})
    check_pins(fix)
    mdl, job = workload.model, workload.training
    L, B, s = int(mdl.layers), int(job.global_batch), int(job.seq_len)
    N, dpn = int(n_devices), int(devices_per_node)
    if N > MAX_DEVICES:
        raise SpecError(f"{N:,} devices: the planner enumerates the factorizations of at most {MAX_DEVICES:,} devices",
                        key="devices", hint="plan a smaller cluster (fewer nodes)")
    rule_text = {
        "tp_heads": f"tp does not divide heads={mdl.heads} and kv_heads={mdl.kv_heads}",
        "tp_node": (f"tp spans nodes unevenly ({dpn} devices per node)" if allow_cross_node_tp
                    else f"tp > {dpn} devices per node (allow with --allow-cross-node-tp)"),
        "pp_layers": f"pp > {L} layers",
        "cp_seq": f"seq_len={s} not divisible by 2·cp",
        "cp_heads": "cp_kind=ulysses with cp not dividing the heads and K,V heads of a TP rank",
        "batch_dp": f"global_batch={B} not divisible by dp",
        "mbs_batch": f"global_batch={B} not divisible by dp·mbs",
        "vpp": f"vpp>1 needs pp>1, layers={L} divisible by pp·vpp and micro-batches divisible by pp",
        "zero_dp1": "zero>0 with a single data-parallel rank (dp·cp = 1)",
        "sp_tp1": "sp=true with tp=1",
        "framework": f"{fw.name} cannot launch them",
        "fixed": "excluded by --fix",
    }

    tp, pp, cp, dp, n_fact, excl_f = factorizations(workload, N, dpn, fix=fix, allow_cross_node_tp=allow_cross_node_tp)

    # knob values of the rows: micro-batch sizes 1..max_mbs dividing the global batch (a pinned size is searched
    # even above max_mbs), interleaving degrees dividing the layers
    if "mbs" in fix:  # (a pin above the global batch divides nothing: an empty space, like any non-divisor)
        mbs_vals = np.array([fix["mbs"]] if 0 < fix["mbs"] <= B else [], dtype=np.int64)
    else:
        mbs_vals = np.arange(1, max(1, min(int(max_mbs), B)) + 1, dtype=np.int64)
    mbs_vals = mbs_vals[(B % mbs_vals) == 0]
    vpp_vals = divisors(L)
    acc = _Acc()
    per_fact = max(1, mbs_vals.size * vpp_vals.size)
    step = max(1, CHUNK_ROWS // per_fact)
    chunks, counted, complete = [], 0, True
    knob_vals = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool))
    for a in range(0, max(tp.size, 1), step):
        sl = slice(a, a + step)
        cols, mask, knob_vals = _rows_and_mask(workload, fw, fix, tp[sl], pp[sl], cp[sl], dp[sl], mbs_vals, vpp_vals,
                                               dpn, row_axes, cell_rules, recompute_levels, rule_text, acc)
        counted += int(mask.sum())
        if max_plans is not None and not count_only and counted > max_plans:
            count_only, chunks = True, []  # refused: count on (up to COUNT_ON × the budget) for the message
        if max_plans is not None and count_only and counted > COUNT_ON * max_plans and a + step < tp.size:
            complete = False
            break
        if not count_only:
            chunks.append((cols, mask))
    if max_plans is not None and counted > max_plans:
        raise over_budget(f"the search space of {workload.name} on {N:,} devices", counted, int(max_plans),
                          exact=complete)
    if count_only:
        return counted
    excl_p = acc.excl_p
    if acc.fw_counts:
        rule_text["framework"] += " (" + ", ".join(f"{label} ×{n:,}" for label, n in
                                                    sorted(acc.fw_counts.items(), key=lambda kv: -kv[1])) + ")"
    if len(chunks) == 1:
        cols, mask = chunks[0]
    else:
        cols = {k: np.concatenate([c[k] for c, _ in chunks]) for k in chunks[0][0]}
        mask = np.concatenate([m_ for _, m_ in chunks], axis=0)
    zero_vals, rc_vals, sp_vals = knob_vals
    nr = cols["tp"].shape[0]
    rows = PlanArrays(dp=cols["dp"], tp=cols["tp"], pp=cols["pp"], cp=cols["cp"], mbs=cols["mbs"], vpp=cols["vpp"],
                      zero=np.zeros(nr, dtype=np.int64), recompute=np.zeros(nr, dtype=np.int64),
                      sp=np.zeros(nr, dtype=bool), ep=cols.get("ep"), etp=cols.get("etp"),
                      cp_kind=cols.get("cp_kind"), **{k: cols.get(k) for k in PINNED_KNOBS})
    space = Space(plans=None, n_devices=N, factorizations=n_fact, excluded_factorizations=excl_f,
                  excluded_plans=excl_p, rule_text=rule_text, rows=rows, zero_vals=zero_vals, rc_vals=rc_vals,
                  sp_vals=sp_vals, mask=mask)
    space.plans = space.flat(space.grid())
    space.row_of = np.repeat(np.arange(nr), mask.reshape(nr, int(np.prod(mask.shape[1:]))).sum(axis=1))
    return space
