"""Serving workloads: the request mix, the latency SLOs, the precisions and the engine of an inference deployment
(contract v2: a ``serving:`` block instead of ``training:``), loaded from a ``serve.yaml`` or the ``serving:`` block
of a model file with the strict errors of every other input (unknown keys are errors).

A ``serve.yaml`` (SI units: seconds, requests per second)::

    isl: 2048                      # prompt tokens: a whole number, or {dist: lognormal, mean: 2048, p99: 8192},
    osl: 256                       #   {dist: uniform, min: 128, max: 512} or {dist: fixed, mean: 256}
    concurrency: 64                # closed loop: users each sending the next request when one finishes, or
    # arrival_rate_per_s: 4.0      #   open loop: Poisson arrivals (neither: saturated, offline max throughput)
    slo: {ttft_p99_s: 1.0, tpot_s: 0.05}      # ttft_p50_s, ttft_p99_s, tpot_s (mean inter-token), min_tokens_per_s
    precision: {weights: bf16, activations: bf16, kv_cache: bf16}
    engine: vllm                   # vllm | sglang | trtllm (per-iteration host overheads)
    spd_drop_budget: 0.0           # fraction of blocks whose TP sync the accuracy budget lets SPD drop (S07)
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from parplan.errors import SpecError, short
from parplan.spec import load_yaml_file, locate, validate

ENGINES = ("vllm", "sglang", "trtllm")
WEIGHT_PRECISIONS = ("bf16", "fp8", "int8", "int4", "nvfp4")
ACT_PRECISIONS = ("bf16", "fp8")
MAX_TOKENS = 1 << 24  # tokens of one prompt or answer (16× the longest published contexts, 1M)
MAX_RATE = 1e7  # requests per second (a typo, not a workload)
MAX_CONCURRENCY = 1 << 24
Z99 = 2.3263478740408408  # standard normal 0.99 quantile (lognormal p99 = exp(μ + z·σ))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class _Dist(_Strict):
    dist: Literal["lognormal", "uniform", "fixed"]
    mean: Optional[float] = Field(default=None, ge=1, le=MAX_TOKENS, strict=False)  # tokens (0.5 was priced as 0)
    p99: Optional[float] = Field(default=None, ge=1, le=MAX_TOKENS, strict=False)
    min: Optional[int] = Field(default=None, ge=1, le=MAX_TOKENS)
    max: Optional[int] = Field(default=None, ge=1, le=MAX_TOKENS)


class _Slo(_Strict):
    ttft_p50_s: Optional[float] = Field(default=None, gt=0, le=3600, strict=False)
    ttft_p99_s: Optional[float] = Field(default=None, gt=0, le=3600, strict=False)
    tpot_s: Optional[float] = Field(default=None, gt=0, le=60, strict=False)
    min_tokens_per_s: Optional[float] = Field(default=None, gt=0, le=1e12, strict=False)


class _Precision(_Strict):
    weights: Literal["bf16", "fp8", "int8", "int4", "nvfp4"] = "bf16"
    activations: Literal["bf16", "fp8"] = "bf16"
    kv_cache: Literal["bf16", "fp8"] = "bf16"


class ServeFile(_Strict):
    isl: Union[int, _Dist]
    osl: Union[int, _Dist]
    arrival_rate_per_s: Optional[float] = Field(default=None, ge=1e-6, le=MAX_RATE, strict=False)  # (1e-300: the
    # arrival clock absorbed every latency, 0.0 µs)
    concurrency: Optional[int] = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    slo: _Slo = Field(default_factory=_Slo)
    precision: _Precision = Field(default_factory=_Precision)
    engine: Literal["vllm", "sglang", "trtllm"] = "vllm"
    spd_drop_budget: float = Field(default=0.0, ge=0.0, le=1.0, strict=False)


@dataclass(frozen=True)
class LengthDist:
    """Tokens of a prompt or an answer: fixed, lognormal (from its mean and p99) or uniform (min–max)."""

    dist: str
    mean: float
    p99: float
    lo: int = 1
    hi: int = MAX_TOKENS

    @property
    def sigma(self) -> float:
        """Lognormal σ from mean and p99: ln(p99/mean) = z·σ − σ²/2, the smaller root (derived)."""
        if self.dist != "lognormal":
            return 0.0
        r = math.log(self.p99 / self.mean)
        return Z99 - math.sqrt(max(Z99 * Z99 - 2.0 * r, 0.0))

    @property
    def cv2(self) -> float:
        """Squared coefficient of variation (variance / mean²)."""
        if self.dist == "lognormal":
            return math.expm1(self.sigma ** 2)
        if self.dist == "uniform":
            return ((self.hi - self.lo) ** 2 / 12.0) / self.mean ** 2
        return 0.0

    def quantile(self, q: float) -> float:
        if self.dist == "fixed":
            return self.mean
        if self.dist == "uniform":
            return self.lo + q * (self.hi - self.lo)
        from statistics import NormalDist

        s = self.sigma
        mu = math.log(self.mean) - s * s / 2.0
        return min(math.exp(mu + NormalDist().inv_cdf(q) * s), float(MAX_TOKENS))

    def sample(self, rng, n: int):
        """``n`` whole token counts ≥ 1 drawn with a numpy Generator (the executor's request mix)."""
        import numpy as np

        if self.dist == "fixed":
            return np.full(n, int(round(self.mean)), dtype=np.int64)
        if self.dist == "uniform":
            return rng.integers(self.lo, self.hi + 1, size=n, dtype=np.int64)
        s = self.sigma
        x = rng.lognormal(math.log(self.mean) - s * s / 2.0, s, size=n)
        return np.clip(np.rint(x), 1, MAX_TOKENS).astype(np.int64)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ServingSpec:
    """What a deployment must serve and how fast (SI units).  Neither ``arrival_rate_per_s`` nor ``concurrency``:
    saturated (every replica runs its full batch: offline maximum throughput)."""

    isl: LengthDist
    osl: LengthDist
    arrival_rate_per_s: float | None = None
    concurrency: int | None = None
    ttft_p50_s: float | None = None
    ttft_p99_s: float | None = None
    tpot_s: float | None = None
    min_tokens_per_s: float | None = None
    weights: str = "bf16"
    activations: str = "bf16"
    kv_cache: str = "bf16"
    engine: str = "vllm"
    spd_drop_budget: float = 0.0
    source_file: str | None = field(default=None, compare=False)

    @property
    def isl_mean(self) -> float:
        return self.isl.mean

    @property
    def osl_mean(self) -> float:
        return self.osl.mean

    @property
    def load(self) -> str:
        return "open" if self.arrival_rate_per_s is not None else "closed" if self.concurrency else "saturated"

    def slos(self) -> dict[str, float]:
        return {k: v for k, v in (("ttft_p50_s", self.ttft_p50_s), ("ttft_p99_s", self.ttft_p99_s),
                                  ("tpot_s", self.tpot_s), ("min_tokens_per_s", self.min_tokens_per_s))
                if v is not None}

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("source_file")
        return d


def _length(v: Union[int, _Dist], key: str, file: str | None) -> LengthDist:
    if isinstance(v, int):
        if not 1 <= v <= MAX_TOKENS:
            raise SpecError(f"bad value {short(v)}: tokens must be 1–{MAX_TOKENS:,}", key=key, file=file)
        return LengthDist("fixed", float(v), float(v), v, v)
    if v.dist == "fixed":
        if v.mean is None or v.p99 is not None or v.min is not None or v.max is not None:
            raise SpecError("a fixed length has only 'mean'", key=key, file=file)
        return LengthDist("fixed", v.mean, v.mean, int(v.mean), int(v.mean))
    if v.dist == "uniform":
        if v.min is None or v.max is None or v.mean is not None or v.p99 is not None:
            raise SpecError("a uniform length has 'min' and 'max' (only)", key=key, file=file)
        if v.min > v.max:
            raise SpecError(f"min={v.min} > max={v.max}", key=key, file=file)
        return LengthDist("uniform", (v.min + v.max) / 2.0, v.min + 0.99 * (v.max - v.min), v.min, v.max)
    if v.mean is None or v.p99 is None or v.min is not None or v.max is not None:
        raise SpecError("a lognormal length has 'mean' and 'p99' (only)", key=key, file=file)
    if v.p99 <= v.mean:  # (the request simulator draws from p99 > mean; equal was priced, then refused there)
        raise SpecError(f"p99={v.p99:g} must be above mean={v.mean:g}", key=key, file=file,
                        hint="a fixed length: {dist: fixed, mean: …}")
    if math.log(v.p99 / v.mean) > Z99 * Z99 / 2.0:  # no lognormal has a larger p99/mean (derived from σ's root)
        raise SpecError(f"p99/mean = {v.p99 / v.mean:.1f} exceeds {math.exp(Z99 * Z99 / 2):.1f}, the largest a "
                        "lognormal has", key=key, file=file, hint="lower p99 or raise mean")
    return LengthDist("lognormal", v.mean, v.p99)


def serving_from_dict(data: Any, file: str | None = None, prefix: str = "") -> ServingSpec:
    """A ``ServingSpec`` from a parsed mapping (errors carry the file, ``prefix.key`` and the line)."""
    try:
        f = validate(ServeFile, data, file=file, prefix=prefix)
        if f.arrival_rate_per_s is not None and f.concurrency is not None:
            raise SpecError("give arrival_rate_per_s (open loop) or concurrency (closed loop), not both",
                            key=(prefix + "." if prefix else "") + "concurrency", file=file)
        p = prefix + "." if prefix else ""
        return ServingSpec(isl=_length(f.isl, p + "isl", file), osl=_length(f.osl, p + "osl", file),
                           arrival_rate_per_s=f.arrival_rate_per_s, concurrency=f.concurrency,
                           ttft_p50_s=f.slo.ttft_p50_s, ttft_p99_s=f.slo.ttft_p99_s, tpot_s=f.slo.tpot_s,
                           min_tokens_per_s=f.slo.min_tokens_per_s, weights=f.precision.weights,
                           activations=f.precision.activations, kv_cache=f.precision.kv_cache, engine=f.engine,
                           spd_drop_budget=float(f.spd_drop_budget), source_file=file)
    except SpecError as err:
        if err.file in (None, file) and isinstance(data, dict):
            raise locate(err, data, file) from None
        raise


def load_serving(ref: "str | Path | dict | ServingSpec") -> ServingSpec:
    """A ``ServingSpec`` from a serve.yaml, the ``serving:`` block of a model file, a mapping, or itself."""
    if isinstance(ref, ServingSpec):
        return ref
    if isinstance(ref, dict):
        return serving_from_dict(ref["serving"], None, "serving") if "serving" in ref else serving_from_dict(ref)
    path = str(ref)
    if "\x00" in path:
        raise SpecError(f"no serve file {short(path)}", key="--serve", hint="a path holds no NUL character")
    p = Path(path)
    try:
        exists = p.is_file()
    except (OSError, ValueError):
        exists = False
    if not exists:
        raise SpecError(f"no serve file {short(path)}", key="--serve", hint="give a serve.yaml (see examples/)")
    data = load_yaml_file(p)
    if isinstance(data, dict) and "serving" in data:
        return serving_from_dict(data["serving"], path, "serving")
    return serving_from_dict(data, path)


__all__ = ["LengthDist", "ServingSpec", "load_serving", "serving_from_dict", "ENGINES", "WEIGHT_PRECISIONS"]
