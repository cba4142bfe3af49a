"""Failure injection: a seeded Monte Carlo over the training timeline that checks the analytical goodput model
(``parplan.models.primitives.reliability.goodput``).

One run plays the whole job: segments of ``k`` steps (the interval the model chose) each ending in a checkpoint
stall; failures arrive as a Poisson process per component cause (device causes × devices + node causes × nodes);
each is drawn a cause, and — with redundancy — a unit.  Plain checkpoint/restart: every failure interrupts.
Replication / SPARe: the failed unit is down until the next checkpoint (replaced there, or at a restart); the
period is interrupted when every unit of one redundancy group is down; a masked failure costs a swap-in stall.
ABFT: a failure is masked unless ``tolerated`` others fell within the rebuild window before it; masked ones stall.
An interruption loses the segment so far (and, with async checkpoints, the previous segment if its write had not
finished), costs the restart (relaunch + re-queue + checkpoint read), and the segment is retried.
Nothing here shares code with the analytical model's formulas: only its inputs and the interval it chose.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.primitives.reliability import Reliability, checkpoint_times, goodput

MAX_EVENTS = 5_000_000  # work budget of one simulation (failures + segments over all runs)


@dataclass
class FailureSimulation:
    analytic: dict  # the model's outputs for this scenario (scalars)
    times_s: np.ndarray  # total wall time of each run
    failures: int  # failures drawn over all runs
    interrupts: int  # of them, interruptions
    by_cause: dict  # failures per cause over all runs
    runs: int

    @property
    def mean_s(self) -> float:
        return float(np.mean(self.times_s))

    @property
    def p10_s(self) -> float:
        return float(np.percentile(self.times_s, 10))

    @property
    def p90_s(self) -> float:
        return float(np.percentile(self.times_s, 90))

    @property
    def goodput(self) -> float:
        return float(self.analytic["useful_s"] / self.mean_s)

    @property
    def relative_error(self) -> float:
        """(analytical − simulated) / simulated expected time to train."""
        return float(self.analytic["time_to_train_s"] / self.mean_s - 1.0)


def simulate_failures(step_time_s: float, n_steps: int, per_device_bytes: float, total_bytes: float, n_devices: int,
                      devices_per_node: int, cfg: Reliability | None = None, *, runs: int = 20, seed: int = 0,
                      steps_per_checkpoint: int | None = None, max_events: int = MAX_EVENTS) -> FailureSimulation:
    """Play ``runs`` seeded runs of one scenario (one plan) and return them beside the analytical model."""
    cfg = (cfg or Reliability()).resolved()
    a = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in
         goodput([step_time_s], n_steps, per_device_bytes, total_bytes, n_devices, devices_per_node, cfg,
                 steps_per_checkpoint=steps_per_checkpoint).items()}
    k = int(a["steps_per_checkpoint"])
    ck = {x: float(np.asarray(v).reshape(-1)[0]) for x, v in checkpoint_times(per_device_bytes, total_bytes, cfg).items()}
    red = cfg.redundancy
    work = float(step_time_s) * a["compute_overhead"]
    tau = k * work
    stall = ck["stall_s"] + max(ck["lag_s"] - tau, 0.0)
    lag = min(ck["lag_s"], tau)
    D = cfg.restart_s + cfg.requeue_s + ck["read_s"]
    rates = cfg.rates
    nodes = n_devices / devices_per_node
    cause_rate = np.array([c.rate_per_hour * (n_devices if c.per == "device" else nodes) for c in rates.causes]) / 3600
    raw = float(cause_rate.sum())
    expected_events = runs * (raw * a["time_to_train_s"] * 1.2 + n_steps / k * 1.2)
    if expected_events > max_events:
        raise SpecError(f"failure simulation would play ≈{expected_events:,.0f} events, more than {max_events:,}",
                        key="runs", hint="fewer runs or a shorter run (fewer steps)")
    rng = np.random.default_rng(seed)
    cause_p = cause_rate / raw
    unit = int(red.unit_devices or (1 if red.scheme == "abft" else devices_per_node))  # ABFT: one process each
    n_units = max(int(round(n_devices / unit)), 1)
    stall_masked = red.abft_stall_s if red.scheme == "abft" else cfg.masked_stall_s
    totals = np.empty(runs)
    n_fail = n_int = 0
    draw = _Exponentials(rng, 1.0 / raw)
    for run in range(runs):
        t, done, pending, dead, recent = 0.0, 0, 0, {}, deque()
        while done + pending < n_steps or pending:
            steps = min(k, n_steps - done - pending) if done + pending < n_steps else 0
            length = steps * work + (stall if steps else 0.0)
            window = lag if pending else 0.0  # the previous checkpoint is durable after this much of the attempt
            if steps == 0:  # the last checkpoint's write: wait for it (no compute left)
                length = window
            elapsed, ok = 0.0, True
            while True:
                dt = draw()
                if elapsed + dt >= length:
                    elapsed = length
                    break
                elapsed += dt
                n_fail += 1
                if _interrupts(red, rng, dead, recent, t + elapsed, n_units):
                    ok = False
                    break
                length += stall_masked
            if ok:
                t += elapsed
                done += pending
                pending = steps
                dead.clear()  # failed units are replaced at the checkpoint (restart strategy)
                if steps == 0:
                    break
                if lag == 0.0:
                    done, pending = done + pending, 0
                continue
            n_int += 1
            t += elapsed + D
            if pending and elapsed >= window:
                done, pending = done + pending, 0  # the previous checkpoint had become durable
            pending = 0  # a not-yet-durable checkpoint is lost with the failure
            dead.clear()
            recent.clear()
        totals[run] = t
    by_cause = rng.multinomial(n_fail, cause_p)  # each failure's cause (reporting only: causes act alike)
    names = [c.name for c in rates.causes]
    return FailureSimulation(analytic=a, times_s=totals, failures=n_fail, interrupts=n_int,
                             by_cause={n: int(v) for n, v in zip(names, by_cause)}, runs=runs)


class _Exponentials:
    """Exponential draws in blocks (one numpy call per 4,096 draws)."""

    def __init__(self, rng, scale: float):
        self.rng, self.scale, self.buf, self.i = rng, scale, np.empty(0), 0

    def __call__(self) -> float:
        if self.i >= self.buf.size:
            self.buf, self.i = self.rng.exponential(self.scale, 4096), 0
        self.i += 1
        return float(self.buf[self.i - 1])


def _interrupts(red, rng, dead: dict, recent: deque, now: float, n_units: int) -> bool:
    """Does this failure interrupt the job?  (updates the redundancy state)"""
    if red.scheme in ("replication", "spare"):
        u = int(rng.integers(n_units))
        g = u // red.degree
        members = dead.setdefault(g, set())
        members.add(u)
        return len(members) >= red.degree
    if red.scheme == "abft":
        while recent and recent[0][0] < now - red.abft_rebuild_s:
            recent.popleft()
        q = max(int(round(n_units ** 0.5)), 1)  # one failed process of a q × q grid
        i = int(rng.integers(q * q))
        row, col = divmod(i, q)
        same = sum(1 for _, r, c in recent if not red.abft_grid or r == row or c == col)
        recent.append((now, row, col))
        return same >= red.abft_tolerated
    return True
