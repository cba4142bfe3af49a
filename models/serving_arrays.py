"""Serving deployments as arrays (struct of arrays): the planner's candidates are built, priced and ranked as
columns, and a ``Deployment`` object is made only for a row that is reported (``DeploymentSet.deployment``).

A ``DeploymentBlock`` holds deployments of one mode — per pool role the replica count and degrees, batch and
chunk of every row, and the cross-pool knobs; a ``DeploymentSet`` is blocks in a global row order (the
planner's enumeration order, or the order of a list of ``Deployment`` objects).  ``unique_rows`` finds the rows
whose inputs to a computation are equal, so that it runs once for each distinct input (its results spread back
are the same floats: every row's value depends on its own inputs alone).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.models.serving_plan import MODE_ROLES, MODES, Deployment, Pool

POOL_FIELDS = ("replicas", "tp", "pp", "ep", "attn_dp", "max_batch", "chunk_tokens")


@dataclass(frozen=True)
class PoolArrays:
    """The pool of one role of every row of a block: ``POOL_FIELDS`` as integer arrays."""

    role: str
    replicas: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    ep: np.ndarray
    attn_dp: np.ndarray
    max_batch: np.ndarray
    chunk_tokens: np.ndarray

    @classmethod
    def of(cls, role: str, n: int, **cols) -> "PoolArrays":
        """Columns broadcast to ``n`` rows (a scalar is every row's value); unnamed fields take Pool's defaults."""
        dflt = {"replicas": 1, "tp": 1, "pp": 1, "ep": 1, "attn_dp": 1, "max_batch": 256, "chunk_tokens": 0}
        return cls(role, **{k: np.broadcast_to(np.asarray(cols.get(k, dflt[k]), dtype=np.int64), (n,))
                            for k in POOL_FIELDS})

    def take(self, idx) -> "PoolArrays":
        return PoolArrays(self.role, *(getattr(self, k)[idx] for k in POOL_FIELDS))

    @property
    def devices_per_replica(self) -> np.ndarray:
        return self.ep * self.tp if self.role == "expert" else self.tp * self.pp * self.attn_dp

    @property
    def n_devices(self) -> np.ndarray:
        return self.replicas * self.devices_per_replica

    def pool(self, j: int) -> Pool:
        return Pool(self.role, *(int(getattr(self, k)[j]) for k in POOL_FIELDS))


@dataclass(frozen=True)
class DeploymentBlock:
    """Deployments of one mode: one ``PoolArrays`` per role of the mode (``MODE_ROLES`` order) and the knobs."""

    mode: str
    pools: tuple
    spd_drop: np.ndarray  # float
    fused: np.ndarray  # bool
    micro_batches: np.ndarray  # int

    @classmethod
    def of(cls, mode: str, pools: tuple, spd_drop=0.0, fused=False, micro_batches=1) -> "DeploymentBlock":
        n = len(pools[0].tp)
        return cls(mode, tuple(pools), np.broadcast_to(np.asarray(spd_drop, dtype=np.float64), (n,)),
                   np.broadcast_to(np.asarray(fused, dtype=bool), (n,)),
                   np.broadcast_to(np.asarray(micro_batches, dtype=np.int64), (n,)))

    def __len__(self) -> int:
        return len(self.spd_drop)

    def pool(self, role: str) -> PoolArrays:
        for p in self.pools:
            if p.role == role:
                return p
        raise KeyError(role)

    def take(self, idx) -> "DeploymentBlock":
        return DeploymentBlock(self.mode, tuple(p.take(idx) for p in self.pools), self.spd_drop[idx],
                               self.fused[idx], self.micro_batches[idx])

    @property
    def n_devices(self) -> np.ndarray:
        return sum(p.n_devices for p in self.pools)

    def simplicity(self) -> np.ndarray:
        """The planner's last tie-break, fewer devices, then smaller batch and chunk: n·10⁶ + Σ (10·batch +
        chunk/10³) over the pools (the same floats as the sum over a ``Deployment``'s pools)."""
        s = 0
        for p in self.pools:
            s = s + (p.max_batch * 10.0 + p.chunk_tokens / 1e3)
        return self.n_devices * 1e6 + s

    def deployment(self, j: int) -> Deployment:
        return Deployment(self.mode, tuple(p.pool(j) for p in self.pools), spd_drop=float(self.spd_drop[j]),
                          fused_ar_a2a=bool(self.fused[j]), micro_batches=int(self.micro_batches[j]))

    @classmethod
    def from_deployments(cls, mode: str, deps: list) -> "DeploymentBlock":
        pools = tuple(PoolArrays(role, *(np.array([getattr(d.pool(role), k) for d in deps], dtype=np.int64)
                                         for k in POOL_FIELDS)) for role in MODE_ROLES[mode])
        return cls(mode, pools, np.array([d.spd_drop for d in deps], dtype=np.float64),
                   np.array([d.fused_ar_a2a for d in deps], dtype=bool),
                   np.array([d.micro_batches for d in deps], dtype=np.int64))


class DeploymentSet:
    """Blocks of deployments in one global row order: ``index[b]`` holds the global rows of block b."""

    def __init__(self, blocks: list, index: "list | None" = None, objects: "list | None" = None):
        self.blocks = [b for b in blocks]
        if index is None:  # blocks one after the other
            offs = np.cumsum([0] + [len(b) for b in self.blocks])
            index = [np.arange(offs[i], offs[i + 1]) for i in range(len(self.blocks))]
        self.index = index
        self.n = int(sum(len(b) for b in self.blocks))
        self._objects = objects
        self.block_of = np.zeros(self.n, dtype=np.int64)
        self.local = np.zeros(self.n, dtype=np.int64)
        for k, ix in enumerate(self.index):
            self.block_of[ix] = k
            self.local[ix] = np.arange(len(ix))

    @classmethod
    def from_deployments(cls, deps) -> "DeploymentSet":
        """A list of ``Deployment`` objects, by mode (each row keeps its place and its object)."""
        deps = list(deps)
        blocks, index = [], []
        for mode in MODES:
            ix = [i for i, d in enumerate(deps) if d.mode == mode]
            if ix:
                blocks.append(DeploymentBlock.from_deployments(mode, [deps[i] for i in ix]))
                index.append(np.array(ix, dtype=np.int64))
        return cls(blocks, index, objects=deps)

    def __len__(self) -> int:
        return self.n

    def deployment(self, i: int) -> Deployment:
        if self._objects is not None:
            return self._objects[i]
        return self.blocks[int(self.block_of[i])].deployment(int(self.local[i]))

    def deployments(self) -> list:
        return [self.deployment(i) for i in range(self.n)]

    def modes(self) -> list[str]:
        return sorted({b.mode for b in self.blocks if len(b)})

    def column(self, fn, dtype=np.float64) -> np.ndarray:
        """``fn(block)`` of every block, laid out in the global row order."""
        out = np.zeros(self.n, dtype=dtype)
        for b, ix in zip(self.blocks, self.index):
            out[ix] = fn(b)
        return out

    def mode_codes(self) -> np.ndarray:
        return self.column(lambda b: MODES.index(b.mode), dtype=np.int64)


def as_deployment_set(deps) -> DeploymentSet:
    return deps if isinstance(deps, DeploymentSet) else DeploymentSet.from_deployments(deps)


def unique_rows(*cols):
    """(first, inverse): one row of each distinct tuple of the columns' values (exact: floats by their bits;
    -0.0 and 0.0 differ) and, for every row, which of those it is (``cols[k][first][inverse] == cols[k]``)."""
    n = max(np.size(c) for c in cols)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys = [np.ascontiguousarray(np.broadcast_to(np.asarray(c), (n,))) for c in cols]
    keys = [k.view(np.int64) if k.dtype == np.float64 else k.astype(np.int64) for k in keys]
    order = np.lexsort(keys[::-1])
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    group = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    return order[new], inverse


class Distinct:
    """The distinct rows of some key columns (``unique_rows``): ``apply(fn)`` prices ``fn(first)`` — arrays over
    one row of each distinct key — and spreads the results back to every row."""

    def __init__(self, *cols):
        self.first, self.inverse = unique_rows(*cols)

    def apply(self, fn):
        out = fn(self.first)
        m = len(self.first)
        if isinstance(out, tuple):
            return tuple(np.broadcast_to(np.asarray(o), (m,))[self.inverse] for o in out)
        return np.broadcast_to(np.asarray(out), (m,))[self.inverse]


def on_distinct(fn, key: tuple, *args):
    """``fn(rows, *args[rows])`` for one row of each distinct (key, args) tuple, spread back to every row (the
    same floats as pricing every row: a row's value depends on its own inputs alone)."""
    n = max(np.size(c) for c in key + args)
    args = tuple(np.broadcast_to(np.asarray(a), (n,)) for a in args)
    return Distinct(*key, *args).apply(lambda g: fn(g, *(a[g] for a in args)))
