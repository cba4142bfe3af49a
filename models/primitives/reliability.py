"""Failures, checkpoints and goodput (vectorized over plans): per-component failure rates, system MTBF by scale,
checkpoint stall/write/restore times, Young/Daly intervals, redundancy schemes, and the expected time to train a
token budget with its spread and a named breakdown.  Defaults: ``catalogs/calibration/failures.yaml`` (cited).

The timeline (the executor's Monte Carlo, ``executor/failures.py``, plays exactly this): the job runs segments of
``k`` steps followed by a checkpoint stall ``δ``; an *interrupting* failure during a segment loses the segment so far
and costs a restart ``D`` (relaunch + re-queue + checkpoint read), then the segment is retried.  With success
probability ``p`` of one attempt of length ``T`` and mean failed-attempt time ``x̄`` (renewal argument, as in Daly
2006 §3 and Bougeret et al. SC'11 eq. 1 for the exponential case ``E = (1/λ + D)(e^{λT} − 1)``):

    E[segment] = T + (1/p − 1)·(x̄ + D)

Asynchronous checkpoints make the last one durable only ``ℓ`` (the write) after the snapshot: a failure within
``ℓ`` rolls back one more segment, so every segment is completed ``1/S(ℓ)`` times on average.  Redundancy masks
failures: replication / SPARe interrupt a period only when every one of the ``r`` holders of some shard fails in it
(failed units are replaced at each checkpoint: the "restart strategy" of Benoit et al., SC'19); ABFT only when more
failures than it tolerates fall within one rebuild window.  Masked failures cost a stall each.  ``k`` is chosen
among a fixed geometric grid of step counts to minimize the expected time (so more failures never shorten it);
``young_interval``/``daly_interval`` are the closed forms it agrees with (tests).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError

HOUR = 3600.0
Z90 = 1.2815515655446004  # standard normal 90 % quantile (p10/p90 of the time to train, normal approximation)
K_GRID = 256  # candidate checkpoint intervals (step counts, geometric from 1 to the whole run)
CHUNK = 2048  # plans per block of the (plans × candidates) arrays
MODES = ("sync", "async", "in-memory")
SCHEMES = ("none", "replication", "spare", "abft")
BREAKDOWN = ("useful_s", "redundancy_s", "checkpoint_s", "lost_s", "restart_s")


# --- the catalog -------------------------------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Cause(_Strict):
    count: float = Field(gt=0)
    per: Literal["device", "node"]
    source: str = Field(min_length=8)


class _Profile(_Strict):
    source: str = Field(min_length=8)
    devices: int = Field(gt=0)
    devices_per_node: int = Field(gt=0)
    hours: float = Field(gt=0)
    causes: dict[str, _Cause] = Field(min_length=1)


class _Value(_Strict):
    value: float = Field(ge=0)
    source: str = Field(min_length=8)


class _Checkpoint(_Strict):
    storage_bandwidth_bytes_per_s: _Value
    host_copy_bandwidth_bytes_per_s: _Value
    restart_s: _Value
    requeue_s: _Value
    masked_failure_stall_s: _Value


class _Redundancy(_Strict):
    spare_compute_overhead: _Value
    abft_extra_process_formula: _Value


class FailuresFile(_Strict):
    default_profile: str
    profiles: dict[str, _Profile]
    checkpoint: _Checkpoint
    redundancy: _Redundancy


@lru_cache(maxsize=1)
def failures_file() -> FailuresFile:
    from parplan.models.primitives.calibration import load_calibration

    f = load_calibration("failures.yaml", FailuresFile)
    if f.default_profile not in f.profiles:
        raise SpecError(f"failures.yaml: default_profile {f.default_profile!r} is not a profile",
                        key="default_profile", allowed=list(f.profiles))
    return f


# --- rates -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cause:
    name: str
    per: str  # "device" | "node"
    rate_per_hour: float  # failures per unit (device or node) per hour
    source: str


@dataclass(frozen=True)
class FailureRates:
    """Per-component failure rates; a job on ``n`` devices (``dpn`` per node) fails at the sum of its devices' and
    nodes' rates (independent components in series: MTBF ∝ 1/scale, Kokolis et al. 2025's model)."""

    profile: str
    causes: tuple[Cause, ...]

    @classmethod
    def from_profile(cls, name: str | None = None) -> "FailureRates":
        f = failures_file()
        name = name or f.default_profile
        if name not in f.profiles:
            raise SpecError(f"unknown failure profile {name!r}", key="failure_profile", allowed=list(f.profiles))
        p = f.profiles[name]
        units = {"device": p.devices, "node": p.devices / p.devices_per_node}
        return cls(name, tuple(Cause(k, c.per, c.count / (units[c.per] * p.hours), c.source)
                               for k, c in p.causes.items()))

    def scaled(self, factor: float) -> "FailureRates":
        return replace(self, causes=tuple(replace(c, rate_per_hour=c.rate_per_hour * factor) for c in self.causes))

    @property
    def per_device_per_hour(self) -> float:
        return sum(c.rate_per_hour for c in self.causes if c.per == "device")

    @property
    def per_node_per_hour(self) -> float:
        return sum(c.rate_per_hour for c in self.causes if c.per == "node")

    def unit_rate_per_s(self, devices, devices_per_node: int):
        """Failures per second of a unit of ``devices`` devices (its share of node causes included)."""
        d = np.asarray(devices, dtype=float)
        return (d * self.per_device_per_hour + d / devices_per_node * self.per_node_per_hour) / HOUR

    def system_rate_per_s(self, n_devices, devices_per_node: int):
        return self.unit_rate_per_s(n_devices, devices_per_node)

    def by_cause(self, n_devices: int, devices_per_node: int) -> dict[str, float]:
        """Expected failures per hour of each cause on a job of ``n_devices``."""
        return {c.name: c.rate_per_hour * (n_devices if c.per == "device" else n_devices / devices_per_node)
                for c in self.causes}


def system_mtbf_s(rates: FailureRates, n_devices, devices_per_node: int):
    """Mean time between failures of the whole job (s): 1 / (devices × per-device + nodes × per-node rate)."""
    return 1.0 / rates.system_rate_per_s(n_devices, devices_per_node)


def young_interval(delta_s, mtbf_s):
    """Young (CACM 17(9), 1974): τ = sqrt(2·δ·M), the compute time between checkpoints."""
    return np.sqrt(2.0 * np.asarray(delta_s, dtype=float) * np.asarray(mtbf_s, dtype=float))


def daly_interval(delta_s, mtbf_s):
    """Daly (FGCS 22(3), 2006, eq. 37): τ = sqrt(2δM)·[1 + (1/3)·sqrt(δ/2M) + (1/9)·(δ/2M)] − δ for δ < 2M, else M."""
    d, m = np.asarray(delta_s, dtype=float), np.asarray(mtbf_s, dtype=float)
    x = d / (2.0 * m)
    return np.where(d < 2.0 * m, np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d, m)


# --- configuration -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Redundancy:
    """``none``: checkpoint/restart only.  ``replication``: ``degree`` copies of every unit (compute ×degree).
    ``spare``: SPARe's stacked redundancy of ``degree`` with adaptive reordering — masking like replication of
    that degree at ``compute_overhead`` (default the cited 2.5, at most ``degree``).  ``abft``: checksum processes
    (``2/sqrt(p)`` extra), a stall ``abft_stall_s`` per failure, ``abft_tolerated`` failures per rebuild window
    ``abft_rebuild_s``; ``abft_background`` of the compute rebuilds redundancy (the non-stop scheme)."""

    scheme: str = "none"
    degree: int = 1
    unit_devices: Optional[int] = None  # devices of one redundancy unit (default: a node)
    compute_overhead: Optional[float] = None
    abft_stall_s: float = 1.0
    abft_tolerated: int = 1
    abft_rebuild_s: float = 60.0
    abft_background: float = 0.0
    abft_grid: bool = True  # a later failure is fatal only in the same checksum row or column (≈ 2/sqrt(p) of them)

    def validate(self) -> None:
        if self.scheme not in SCHEMES:
            raise SpecError(f"unknown redundancy scheme {self.scheme!r}", key="redundancy", allowed=list(SCHEMES))
        if self.scheme in ("replication", "spare") and not (isinstance(self.degree, int) and self.degree >= 2):
            raise SpecError(f"{self.scheme} needs a degree ≥ 2, not {self.degree!r}", key="degree")
        if not (0.0 <= self.abft_background < 1.0) or self.abft_tolerated < 1 or self.abft_rebuild_s < 0:
            raise SpecError("abft needs 0 ≤ background < 1, tolerated ≥ 1 and rebuild ≥ 0 s", key="redundancy")

    def overhead(self, n_devices) -> np.ndarray:
        """Compute-time factor c ≥ 1 (the redundant work)."""
        n = np.asarray(n_devices, dtype=float)
        if self.scheme == "replication":
            return np.full_like(n, float(self.degree))
        if self.scheme == "spare":
            c = self.compute_overhead or failures_file().redundancy.spare_compute_overhead.value
            return np.full_like(n, min(float(c), float(self.degree)))
        if self.scheme == "abft":
            e = np.minimum(failures_file().redundancy.abft_extra_process_formula.value / np.sqrt(n), 0.5)
            return 1.0 / ((1.0 - e) * (1.0 - self.abft_background))
        return np.ones_like(n)


@dataclass(frozen=True)
class Reliability:
    """Everything the goodput model needs besides the plans (defaults: failures.yaml)."""

    rates: FailureRates = field(default_factory=FailureRates.from_profile)
    mode: str = "sync"  # sync | async | in-memory checkpoints
    storage_bandwidth: Optional[float] = None  # bytes/s, aggregate to durable storage
    host_copy_bandwidth: Optional[float] = None  # bytes/s per device (GPU → host snapshot)
    restart_s: Optional[float] = None
    requeue_s: Optional[float] = None
    masked_stall_s: Optional[float] = None
    redundancy: Redundancy = field(default_factory=Redundancy)

    def resolved(self) -> "Reliability":
        c = failures_file().checkpoint
        out = replace(self, storage_bandwidth=_pick(self.storage_bandwidth, c.storage_bandwidth_bytes_per_s),
                      host_copy_bandwidth=_pick(self.host_copy_bandwidth, c.host_copy_bandwidth_bytes_per_s),
                      restart_s=_pick(self.restart_s, c.restart_s), requeue_s=_pick(self.requeue_s, c.requeue_s),
                      masked_stall_s=_pick(self.masked_stall_s, c.masked_failure_stall_s))
        if out.mode not in MODES:
            raise SpecError(f"unknown checkpoint mode {out.mode!r}", key="checkpoint_mode", allowed=list(MODES))
        for k in ("storage_bandwidth", "host_copy_bandwidth"):
            v = getattr(out, k)
            if not (math.isfinite(v) and v > 0):
                raise SpecError(f"bad value {v!r}: {k} must be a finite number of bytes/s > 0", key=k)
        for k in ("restart_s", "requeue_s", "masked_stall_s"):
            v = getattr(out, k)
            if not (math.isfinite(v) and v >= 0):
                raise SpecError(f"bad value {v!r}: {k} must be a finite time ≥ 0", key=k)
        out.redundancy.validate()
        return out


def _pick(v, default: _Value) -> float:
    return float(default.value) if v is None else float(v)


# --- checkpoints -------------------------------------------------------------------------------------------------
def checkpoint_times(per_device_bytes, total_bytes, cfg: Reliability) -> dict[str, np.ndarray]:
    """Per checkpoint: ``stall_s`` (training stops), ``lag_s`` (snapshot → durable), ``write_s`` (to storage) and
    ``read_s`` (restore on restart).  The write is bound by the aggregate storage bandwidth and by each device's
    own host link; async and in-memory checkpoints stall only for the device → host snapshot (Check-N-Run /
    Gemini style), async then writes in the background, in-memory restores from host memory."""
    cfg = cfg.resolved() if cfg.storage_bandwidth is None else cfg
    dev = np.asarray(per_device_bytes, dtype=float)
    tot = np.asarray(total_bytes, dtype=float)
    snap = dev / cfg.host_copy_bandwidth
    write = np.maximum(tot / cfg.storage_bandwidth, snap)
    zero = np.zeros(np.broadcast(dev, tot).shape)
    if cfg.mode == "sync":
        return {"stall_s": write + zero, "lag_s": zero, "write_s": write + zero, "read_s": write + zero}
    if cfg.mode == "async":
        return {"stall_s": snap + zero, "lag_s": write + zero, "write_s": write + zero, "read_s": write + zero}
    return {"stall_s": snap + zero, "lag_s": zero, "write_s": snap + zero, "read_s": snap + zero}


# --- interruption model ------------------------------------------------------------------------------------------
def _poisson_tail(mu, k: int):
    """P(N ≥ k) for N ~ Poisson(mu)."""
    mu = np.asarray(mu, dtype=float)
    term, cdf = np.exp(-mu), np.zeros_like(mu)
    for i in range(k):
        cdf = cdf + term
        term = term * mu / (i + 1)
    return np.clip(1.0 - cdf, 0.0, 1.0)


@dataclass(frozen=True)
class Interrupts:
    """How failures reach the job: the raw rate (/s), the masked-failure rate (/s, each a stall), and for the
    interrupting ones either an exponential rate (``r == 1``) or ``groups`` groups of ``r`` units of rate ``unit``."""

    raw: np.ndarray
    masked: np.ndarray
    rate: np.ndarray  # exponential interrupt rate (r == 1)
    r: int
    groups: np.ndarray
    unit: np.ndarray
    stall: float = 0.0  # seconds each masked failure costs

    def log_survival(self, t):
        if self.r == 1:
            return -self.rate * t
        q = -np.expm1(-self.unit * t)  # one unit down within t
        return self.groups * np.log1p(-np.minimum(q ** self.r, 1.0 - 1e-16))

    def mean_failed_time(self, t, p):
        """Mean time into an attempt of length ``t`` of its interruption, given one (``p``: success probability)."""
        if self.r == 1:
            lt = self.rate * t
            with np.errstate(divide="ignore", invalid="ignore"):
                x = np.where(lt > 1e-9, 1.0 / np.maximum(self.rate, 1e-300) - t * p / np.maximum(1.0 - p, 1e-300),
                             t / 2.0)
            return np.clip(x, 0.0, t)
        return t * self.r / (self.r + 1.0)  # interrupt CDF ∝ t^r when every holder must fail (small unit·t)


def interrupts(cfg: Reliability, n_devices, devices_per_node: int) -> Interrupts:
    n = np.asarray(n_devices, dtype=float)
    raw = cfg.rates.system_rate_per_s(n, devices_per_node)
    red = cfg.redundancy
    zero = np.zeros_like(raw)
    if red.scheme in ("replication", "spare"):
        u = float(red.unit_devices or devices_per_node)
        groups = np.maximum(n / (u * red.degree), 1.0)
        return Interrupts(raw, raw, zero, red.degree, groups, cfg.rates.unit_rate_per_s(u, devices_per_node) + zero,
                          cfg.masked_stall_s)
    if red.scheme == "abft":
        q = np.maximum(np.rint(np.sqrt(n)), 1.0)  # a q × q process grid, one checksum row and column
        share = np.minimum((2.0 * q - 1.0) / (q * q), 1.0) if red.abft_grid else 1.0
        p_unmasked = _poisson_tail(raw * red.abft_rebuild_s * share, red.abft_tolerated)
        return Interrupts(raw, raw * (1.0 - p_unmasked), raw * p_unmasked, 1, zero, zero, red.abft_stall_s)
    return Interrupts(raw, zero, raw, 1, zero, zero, 0.0)


# --- goodput -----------------------------------------------------------------------------------------------------
def k_grid(n_steps: int, size: int = K_GRID) -> np.ndarray:
    """Candidate steps per checkpoint: geometric from 1 to the whole run (fixed for a run: independent of rates)."""
    return np.unique(np.rint(np.geomspace(1.0, max(float(n_steps), 1.0), size))).astype(float)


def goodput(step_time_s, n_steps, per_device_bytes, total_bytes, n_devices, devices_per_node: int,
            cfg: Reliability | None = None, steps_per_checkpoint=None) -> dict[str, np.ndarray]:
    """Expected time to run ``n_steps`` steps of ``step_time_s`` (arrays over plans) under failures, with the
    breakdown ``BREAKDOWN`` (seconds, summing to ``time_to_train_s``), ``goodput`` (useful / total), the chosen
    ``checkpoint_interval_s`` (compute between checkpoints) and ``steps_per_checkpoint``, the checkpoint stall /
    write times, MTBF and MTTI, expected failures and interruptions, and ``time_p10_s`` / ``time_p90_s``.
    ``steps_per_checkpoint`` pins the interval (else the best of ``k_grid``)."""
    cfg = (cfg or Reliability()).resolved()
    s = np.atleast_1d(np.asarray(step_time_s, dtype=float))
    shape = np.broadcast(s, np.asarray(per_device_bytes), np.asarray(total_bytes), np.asarray(n_devices)).shape
    s = np.broadcast_to(s, shape).astype(float)
    n = np.broadcast_to(np.asarray(n_devices, dtype=float), shape)
    if not (np.all(np.isfinite(s) & (s > 0)) and np.all(n >= 1)):
        raise SpecError("goodput needs finite step times > 0 and at least one device", key="step_time_s")
    n_steps = int(n_steps)
    if n_steps < 1:
        raise SpecError(f"bad value {n_steps!r}: the run needs at least one step", key="--token-budget")
    ck = {k: np.broadcast_to(v, shape) for k, v in checkpoint_times(per_device_bytes, total_bytes, cfg).items()}
    c = np.broadcast_to(cfg.redundancy.overhead(n), shape)
    it = interrupts(cfg, n, devices_per_node)
    it = Interrupts(*(np.broadcast_to(getattr(it, f), shape) if f not in ("r", "stall") else getattr(it, f)
                      for f in ("raw", "masked", "rate", "r", "groups", "unit", "stall")))
    D = cfg.restart_s + cfg.requeue_s + ck["read_s"]
    grid = k_grid(n_steps)
    pinned = (None if steps_per_checkpoint is None
              else np.broadcast_to(np.clip(np.asarray(steps_per_checkpoint, dtype=float), 1, n_steps), shape))
    out = {k: np.empty(shape) for k in ("time_to_train_s", "steps_per_checkpoint", "var")}
    for a in range(0, shape[0], CHUNK):
        sl = slice(a, a + CHUNK)
        m = s[sl].size
        kk = np.broadcast_to(grid[None, :], (m, grid.size)) if pinned is None else pinned[sl, None]
        e, var = _segments(kk, (s * c)[sl, None], ck["stall_s"][sl, None], ck["lag_s"][sl, None], D[sl, None],
                           it, sl, n_steps)
        j = np.argmin(e, axis=1)
        rows = np.arange(m)
        out["time_to_train_s"][sl] = e[rows, j]
        out["steps_per_checkpoint"][sl] = kk[rows, j]
        out["var"][sl] = var[rows, j]
    return _breakdown(out, s, c, ck, it, D, n_steps)


def _segments(k, work, stall, lag, D, it: Interrupts, sl, n_steps):
    """Expected total time (and its variance) for segments of ``k`` steps of ``work`` seconds each."""
    tau = k * work
    stall_eff = stall + np.maximum(lag - tau, 0.0)  # the next snapshot waits for the previous write
    lag_eff = np.minimum(lag, tau)
    sub = Interrupts(it.raw[sl, None], it.masked[sl, None], it.rate[sl, None], it.r, it.groups[sl, None],
                     it.unit[sl, None], it.stall)
    T = (tau + stall_eff) * (1.0 + sub.masked * sub.stall)
    p = np.exp(sub.log_survival(T))
    with np.errstate(over="ignore", divide="ignore"):
        fails = np.where(p > 0, 1.0 / p - 1.0, np.inf)  # failed attempts per segment (geometric)
        x = sub.mean_failed_time(T, p)
        seg = T + fails * (x + D)
        redo = np.exp(-sub.log_survival(lag_eff))  # async: completions per durable segment
        n_seg = n_steps / k
        total = n_seg * seg * redo
        var_x = x * x / 3.0  # failed-attempt time ~ spread of order its mean (uniform-like)
        var_seg = fails * var_x + fails / np.maximum(p, 1e-300) * (x + D) ** 2
        var = n_seg * redo * var_seg
    return np.where(np.isfinite(total), total, np.inf), var


def _breakdown(out, s, c, ck, it: Interrupts, D, n_steps) -> dict[str, np.ndarray]:
    total, k = out["time_to_train_s"], out["steps_per_checkpoint"]
    useful = n_steps * s
    tau = k * s * c
    stall_eff = ck["stall_s"] + np.maximum(ck["lag_s"] - tau, 0.0)
    n_seg = n_steps / k
    T = tau + stall_eff
    masked_s = n_seg * T * it.masked * it.stall
    T_eff = T * (1.0 + it.masked * it.stall)
    p = np.exp(it.log_survival(T_eff))
    redo = np.exp(-it.log_survival(np.minimum(ck["lag_s"], tau)))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        n_int = n_seg * redo * (1.0 / p - 1.0)
        restarts = n_int * D
        red = (c - 1.0) * useful + masked_s
        ckpt = n_seg * stall_eff
        lost = np.maximum(total - useful - red - ckpt - restarts, 0.0)
        sd = np.sqrt(np.maximum(out["var"], 0.0))
        floor = useful + red + ckpt
        return {"time_to_train_s": total, "goodput": useful / total, "useful_s": useful, "redundancy_s": red,
                "checkpoint_s": ckpt, "lost_s": lost, "restart_s": restarts,
                "time_p10_s": np.maximum(total - Z90 * sd, floor), "time_p90_s": total + Z90 * sd,
                "checkpoint_interval_s": tau, "steps_per_checkpoint": k, "checkpoint_stall_s": ck["stall_s"],
                "checkpoint_write_s": ck["write_s"], "restart_each_s": D, "mtbf_s": 1.0 / it.raw,
                "mtti_s": total / np.maximum(n_int, 1e-300), "expected_failures": it.raw * total,
                "expected_interrupts": n_int, "compute_overhead": c}
