"""Struct-of-arrays view of many plans (the vectorized form of ``Plan``), shared by the cost models, the planner
and the executor."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Optional

import numpy as np

from parplan.models.plan import CP_KINDS, RECOMPUTE, V2_DEFAULTS, Plan

_V2 = tuple(V2_DEFAULTS)
_BOOL = ("sp", "reshard", "embed_as_layer", "loss_as_layer", "helix", "rotate")


@dataclass
class PlanArrays:
    """One array per plan field; the contract-v2 knobs may be left out (their defaults are filled in)."""

    dp: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    mbs: np.ndarray
    vpp: np.ndarray
    zero: np.ndarray
    recompute: np.ndarray  # 0 none, 1 selective, 2 full
    sp: np.ndarray  # bool
    reshard: Optional[np.ndarray] = None  # bool
    shard: Optional[np.ndarray] = None  # 0 = the whole dp×cp group
    first_layers: Optional[np.ndarray] = None  # 0 = default split
    last_layers: Optional[np.ndarray] = None
    embed_as_layer: Optional[np.ndarray] = None  # bool
    loss_as_layer: Optional[np.ndarray] = None  # bool
    etp: Optional[np.ndarray] = None  # expert tensor parallelism (MoE)
    ep: Optional[np.ndarray] = None  # expert parallelism (MoE; 1 for dense workloads)
    cp_kind: Optional[np.ndarray] = None  # index into CP_KINDS (0 = ring)
    helix: Optional[np.ndarray] = None  # bool: HelixPipe's attention-parallel pipeline
    rotate: Optional[np.ndarray] = None  # bool: RTP's rotated ZeRO-3 shards

    def __post_init__(self) -> None:
        n = np.shape(self.dp)
        if self.ep is None:
            self.ep = np.ones(n, dtype=np.int64)
        if self.cp_kind is None:
            self.cp_kind = np.zeros(n, dtype=np.int64)
        for k in _V2:
            if getattr(self, k) is None:
                d = V2_DEFAULTS[k]
                setattr(self, k, np.full(n, d, dtype=bool if isinstance(d, bool) else np.int64))

    @classmethod
    def from_plans(cls, plans: "list[Plan]") -> "PlanArrays":
        def col(name: str) -> np.ndarray:
            dt = bool if name in _BOOL else np.int64
            return np.array([getattr(p, name) for p in plans], dtype=dt)

        return cls(dp=col("dp"), tp=col("tp"), pp=col("pp"), cp=col("cp"), mbs=col("mbs"), vpp=col("vpp"),
                   zero=col("zero"), recompute=np.array([RECOMPUTE.index(p.recompute) for p in plans], dtype=np.int64),
                   sp=col("sp"), ep=col("ep"), **{k: col(k) for k in _V2},
                   cp_kind=np.array([CP_KINDS.index(p.cp_kind) for p in plans], dtype=np.int64))

    def __len__(self) -> int:
        return int(np.shape(self.dp)[0])

    def plan(self, i: int) -> Plan:
        extra = {k: (bool(getattr(self, k)[i]) if k in _BOOL else int(getattr(self, k)[i])) for k in _V2}
        return Plan(dp=int(self.dp[i]), tp=int(self.tp[i]), pp=int(self.pp[i]), cp=int(self.cp[i]), ep=int(self.ep[i]),
                    mbs=int(self.mbs[i]), vpp=int(self.vpp[i]), zero=int(self.zero[i]),
                    recompute=RECOMPUTE[int(self.recompute[i])], sp=bool(self.sp[i]),
                    cp_kind=CP_KINDS[int(self.cp_kind[i])], **extra)

    def subset(self, idx: np.ndarray) -> "PlanArrays":
        return PlanArrays(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})
