"""Axes of the search space beyond the factorization grid (``planner/space.py``): the context-parallel layouts
(one row per layout a framework launches) and the contract-v2 knobs a ``--fix`` pin holds for every plan
(HelixPipe's ``helix``, RTP's ``rotate``, FSDP's ``reshard``), each with its own row and cell rules; a pin of a
knob the search does not enumerate is refused, never dropped."""
from __future__ import annotations

import numpy as np

from parplan.errors import SpecError
from parplan.models.plan import PLAN_KEYS


# context-parallel layouts the search enumerates: those a catalog framework launches (FrameworkProfile.cp_kinds; a
# test holds them equal); hybrid and DCP are priced when a plan names them but no framework flag selects them
SEARCHED_CP_KINDS = ("ring", "ulysses")  # = models.plan.CP_KINDS without RESEARCH_CP_KINDS


def _cp_layouts(workload, fw, fix: dict, cols: dict, excl_p: dict) -> dict:
    """Rows with cp > 1 once per searched context-parallel layout (``SEARCHED_CP_KINDS``, or the pinned one; cp = 1
    rows keep the default) — the framework check then drops the layouts it does not launch, so every framework's
    space stays a filter of one enumeration; Ulysses needs cp to divide the heads and K,V heads of a TP rank."""
    from parplan.models.plan import CP_KINDS

    names = (fix["cp_kind"],) if "cp_kind" in fix else SEARCHED_CP_KINDS
    kinds = np.array([CP_KINDS.index(k) for k in names], dtype=np.int64)
    reps = np.where(cols["cp"] > 1, kinds.size, 1)
    out = {k: np.repeat(a, reps) for k, a in cols.items()}
    kind = np.zeros(int(reps.sum()), dtype=np.int64)
    multi = np.repeat(cols["cp"] > 1, reps)
    kind[multi] = np.tile(kinds, int((cols["cp"] > 1).sum()))
    cp, tp = out["cp"], out["tp"]
    mdl = workload.model
    ok = (kind != CP_KINDS.index("ulysses")) | (((int(mdl.heads) // tp) % cp == 0) & ((int(mdl.kv_heads) // tp) % cp == 0))
    excl_p["cp_heads"] = excl_p.get("cp_heads", 0) + int((~ok).sum())
    out = {k: a[ok] for k, a in out.items()}
    out["cp_kind"] = kind[ok]
    return out


# contract-v2 knobs a --fix pin holds for every searched plan (each with its own rules below); the others are not
# searched: a pin of one of them is refused rather than dropped
PINNED_KNOBS = ("helix", "rotate", "reshard")
UNSEARCHED_KNOBS = ("shard", "first_layers", "last_layers", "embed_as_layer", "loss_as_layer")


def check_pins(fix: dict) -> None:
    """A --fix pin the search cannot hold is an error naming it (nothing pinned is silently dropped)."""
    for key in UNSEARCHED_KNOBS:
        if key in fix:
            raise SpecError(f"--fix {key}=… is not a search axis (the search keeps {key} at its default)",
                            key="--fix", allowed=[k for k in PLAN_KEYS if k not in UNSEARCHED_KNOBS],
                            hint=f"estimate a plan with {key} set: parplan estimate … --plan …,{key}=…")


def _pinned_rows(workload, fix: dict, cols: dict, excl_p: dict, rule_text: dict) -> dict:
    """The pinned contract-v2 knobs as row columns; HelixPipe's rows (pp ≥ 2 dividing the layers, cp = vpp = 1)."""
    if fix.get("helix"):
        L = int(workload.model.layers)
        ok = (cols["pp"] >= 2) & (cols["cp"] == 1) & (cols["vpp"] == 1) & ((L % cols["pp"]) == 0)
        rule_text.setdefault("helix_rows", f"helix=true needs pp ≥ 2 dividing layers={L}, cp = 1 and vpp = 1")
        excl_p["helix_rows"] = excl_p.get("helix_rows", 0) + int((~ok).sum())
        cols = {k: a[ok] for k, a in cols.items()}
    n = cols["tp"].shape[0]
    for key in PINNED_KNOBS:
        if key in fix:
            cols[key] = np.full(n, bool(fix[key]))
    return cols


def _pinned_cells(fix: dict) -> list:
    """Cell rules of the pinned knobs: (name, text, f(cols, Z, R, S) -> bool)."""
    rules = []
    if fix.get("helix"):
        rules.append(("helix_cells", "helix=true needs zero ≤ 1 and recompute none or full",
                      lambda cols, Z, R, S: (Z <= 1) & ((R == 0) | (R == 2))))
    if fix.get("rotate"):
        rules.append(("rotate_zero3", "rotate=true needs zero=3", lambda cols, Z, R, S: Z == 3))
    if "reshard" in fix and not fix["reshard"]:
        rules.append(("reshard_zero3", "reshard=false needs zero=3", lambda cols, Z, R, S: Z == 3))
    return rules
