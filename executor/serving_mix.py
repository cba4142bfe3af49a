"""Requests of a serving simulation: prompt (ISL) and output (OSL) lengths and arrival times, seeded.

A ``RequestMix`` holds the two length laws and the load: an open loop (Poisson arrivals at
``arrival_rate_per_s``: exponential inter-arrival times, the arrival process of vLLM's ``benchmark_serving.py
--request-rate`` — https://github.com/vllm-project/vllm/blob/main/benchmarks/benchmark_serving.py, ``get_request``
draws ``np.random.exponential(1 / request_rate)`` when ``--burstiness`` is 1) or a closed loop of ``concurrency``
clients that each send their next request the moment their previous one completes (``--max-concurrency`` with an
infinite rate; no think time).  Neither: **saturated** (offline maximum throughput), which the simulation plays as
a closed loop of twice the sequences its decoding replicas batch at most (``simulate_pools``).

Length laws (``Length``): ``fixed`` (one value), ``uniform`` (integers ``min..max``, both included) and
``lognormal`` given by its ``mean`` and ``p99``: with ``z = Φ⁻¹(0.99) = 2.3263``, ``mean = exp(μ + σ²/2)``
and ``p99 = exp(μ + zσ)`` give ``σ = z − √(z² − 2·ln(p99/mean))`` (the smaller root) and
``μ = ln(mean) − σ²/2`` (https://en.wikipedia.org/wiki/Log-normal_distribution#Arithmetic_moments);
samples are rounded to integers ≥ 1.

``mix_from_serving`` reads the request mix of a ``ServingSpec`` (workloads/serving.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError

Z99 = 2.3263478740408408  # Φ⁻¹(0.99), the standard normal 99th percentile (scipy.stats.norm.ppf(0.99))
DISTS = ("fixed", "uniform", "lognormal")


@dataclass(frozen=True)
class Length:
    """A law of token counts: ``fixed`` (``value``), ``uniform`` (``lo..hi``) or ``lognormal`` (``mean``, ``p99``)."""

    dist: str
    value: int = 0
    lo: int = 0
    hi: int = 0
    mean: float = 0.0
    p99: float = 0.0

    @staticmethod
    def fixed(v: int) -> "Length":
        return Length("fixed", value=int(v))

    @staticmethod
    def uniform(lo: int, hi: int) -> "Length":
        return Length("uniform", lo=int(lo), hi=int(hi))

    @staticmethod
    def lognormal(mean: float, p99: float) -> "Length":
        return Length("lognormal", mean=float(mean), p99=float(p99))

    def check(self, key: str) -> "Length":
        if self.dist not in DISTS:
            raise SpecError(f"unknown length distribution {self.dist!r}", key=key, allowed=list(DISTS))
        if self.dist == "fixed" and self.value < 1:
            raise SpecError(f"a token count must be ≥ 1, not {self.value}", key=key)
        if self.dist == "uniform" and not (1 <= self.lo <= self.hi):
            raise SpecError(f"uniform lengths need 1 ≤ min ≤ max, not {self.lo}..{self.hi}", key=key)
        if self.dist == "lognormal":
            if not (math.isfinite(self.mean) and math.isfinite(self.p99) and 1.0 <= self.mean < self.p99):
                raise SpecError(f"a lognormal length needs 1 ≤ mean < p99, not mean={self.mean:g}, p99={self.p99:g}",
                                key=key)
            if 2.0 * math.log(self.p99 / self.mean) > Z99 * Z99:
                raise SpecError(f"no lognormal has mean {self.mean:g} and p99 {self.p99:g} (p99/mean ≤ "
                                f"{math.exp(Z99 * Z99 / 2):.2f})", key=key)
        return self

    def params(self) -> tuple[float, float]:
        """(μ, σ) of the lognormal."""
        sigma = Z99 - math.sqrt(Z99 * Z99 - 2.0 * math.log(self.p99 / self.mean))
        return math.log(self.mean) - sigma * sigma / 2.0, sigma

    @property
    def expected(self) -> float:
        if self.dist == "fixed":
            return float(self.value)
        if self.dist == "uniform":
            return (self.lo + self.hi) / 2.0
        return self.mean

    @property
    def largest(self) -> float:
        """The largest value the law gives (lognormal: unbounded, ``inf``)."""
        return {"fixed": self.value, "uniform": self.hi}.get(self.dist, math.inf)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.dist == "fixed":
            return np.full(n, self.value, dtype=np.int64)
        if self.dist == "uniform":
            return rng.integers(self.lo, self.hi + 1, size=n, dtype=np.int64)
        mu, sigma = self.params()
        return np.maximum(1, np.rint(rng.lognormal(mu, sigma, size=n))).astype(np.int64)

    def describe(self) -> str:
        if self.dist == "fixed":
            return str(self.value)
        if self.dist == "uniform":
            return f"uniform {self.lo}..{self.hi}"
        return f"lognormal mean {self.mean:g}, p99 {self.p99:g}"


@dataclass(frozen=True)
class RequestMix:
    isl: Length
    osl: Length
    arrival_rate_per_s: float | None = None
    concurrency: int | None = None

    def check(self) -> "RequestMix":
        self.isl.check("isl")
        self.osl.check("osl")
        if self.arrival_rate_per_s is not None and self.concurrency is not None:
            raise SpecError("give one of arrival_rate_per_s (open loop) or concurrency (closed loop), not both",
                            key="serving")
        if self.arrival_rate_per_s is not None and not (math.isfinite(self.arrival_rate_per_s)
                                                        and self.arrival_rate_per_s > 0):
            raise SpecError(f"an arrival rate must be > 0 requests/s, not {self.arrival_rate_per_s!r}",
                            key="arrival_rate_per_s")
        if self.concurrency is not None and (isinstance(self.concurrency, bool) or int(self.concurrency) < 1
                                             or int(self.concurrency) != self.concurrency):
            raise SpecError(f"concurrency must be an integer ≥ 1, not {self.concurrency!r}", key="concurrency")
        return self

    @property
    def saturated(self) -> bool:
        return self.arrival_rate_per_s is None and self.concurrency is None

    def describe(self) -> str:
        load = (f"Poisson {self.arrival_rate_per_s:g} req/s" if self.arrival_rate_per_s is not None
                else f"closed loop, concurrency {self.concurrency}" if self.concurrency is not None else "saturated")
        return f"ISL {self.isl.describe()}, OSL {self.osl.describe()}, {load}"


@dataclass(frozen=True)
class Requests:
    isl: np.ndarray  # int64 per request
    osl: np.ndarray
    arrival_s: np.ndarray | None  # open loop: absolute arrival times (sorted); closed loop: None


def draw_requests(mix: RequestMix, n: int, seed: int) -> Requests:
    """``n`` requests of ``mix``: lengths and (open loop) arrival times from one seeded generator."""
    rng = np.random.default_rng(seed)
    isl = mix.isl.sample(rng, n)
    osl = mix.osl.sample(rng, n)
    arr = None
    if mix.arrival_rate_per_s is not None:
        arr = np.cumsum(rng.exponential(1.0 / mix.arrival_rate_per_s, size=n))
    return Requests(isl=isl, osl=osl, arrival_s=arr)


def _length(value, key: str) -> Length:
    """A ServingSpec length: an int, a ``Length``, a mapping ``{dist, mean, p99 | min, max | value}`` or an object
    with those attributes."""
    if isinstance(value, Length):
        return value.check(key)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Length.fixed(int(value)).check(key)
    get = value.get if isinstance(value, dict) else (lambda k, d=None: getattr(value, k, d))
    dist = get("dist", None)
    if dist == "fixed":
        v = get("value", None)
        if v is None:
            v = get("mean", None)
        return Length.fixed(int(v)).check(key)
    if dist == "uniform":
        lo, hi = get("min", None), get("max", None)
        if lo is None:
            lo, hi = get("lo", None), get("hi", None)
        return Length.uniform(int(lo), int(hi)).check(key)
    if dist == "lognormal":
        return Length.lognormal(float(get("mean")), float(get("p99"))).check(key)
    raise SpecError(f"cannot read a length law from {type(value).__name__}", key=key, allowed=list(DISTS))


def mix_from_serving(serving) -> RequestMix:
    """The request mix of a ``ServingSpec``: ``isl``, ``osl``, ``arrival_rate_per_s`` or ``concurrency``."""
    rate = getattr(serving, "arrival_rate_per_s", None)
    conc = getattr(serving, "concurrency", None)
    return RequestMix(isl=_length(serving.isl, "isl"), osl=_length(serving.osl, "osl"),
                      arrival_rate_per_s=None if rate is None else float(rate),
                      concurrency=None if conc is None else int(conc)).check()
