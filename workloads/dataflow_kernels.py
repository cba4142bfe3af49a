"""The inductive loop nests of the dataflow family's kernels, in closed form from the algorithms.

Per outer iteration k a nest gives (numpy arrays of length K):

* vector **loop groups** — ``count[k]`` vector loops whose lengths are ``hi[k], hi[k]−1, …`` (triangular: the
  columns of a shrinking trailing matrix) or all ``hi[k]`` (rectangular); ``carried`` loops are reductions whose
  accumulator is a loop-carried dependence (dot products);
* the **dependence chain** that iteration k+1 waits on: counts of dependent ``mac``, ``div``, ``sqrt`` and
  cross-lane ``reduce`` steps (REVEL's L_dep,k, SEEDS S06(b));
* **hand-offs** (producer → consumer exchanges between cores or lanes) and **bytes** of the matrix touched.

Right-looking Cholesky (Golub & Van Loan alg. 4.2.1 outer-product form): column k: sqrt of the pivot, scale the
m_k = n−k−1 entries below it, rank-1 update of the trailing lower triangle (columns of lengths m_k … 1).
Column-oriented forward substitution (TRSV, GvL alg. 3.1.3): x_k = b_k / L_kk, then an axpy of length m_k.
Householder QR (GvL alg. 5.2.1): norm of the length-(n−k) column, scale into v, then for each of the n−k−1
trailing columns a dot product and an axpy of length n−k.  TRSM (L X = B, r right-hand sides): TRSV with rows of r.
Radix-2 FFT: log2 n stages of n/2 butterflies (a complex multiply + two complex adds ≈ 5 MAC slots per butterfly).
GEMM / FIR / conv: outer-product / per-tap axpy forms without a dependence chain (one hand-off at the end).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError

DTYPE_BYTES = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "int32": 4, "int16": 2, "int8": 1}
MAX_N = 4096  # inductive kernels: matrix side (the nest has n iterations of up to n loops)
MAX_ITERATIONS = 1 << 17  # outer iterations of any nest (bounded: the executor plays one op per core per iteration)


@dataclass(frozen=True)
class LoopGroup:
    name: str
    count: np.ndarray  # vector loops in iteration k
    hi: np.ndarray  # length of the longest loop
    triangular: bool  # lengths hi, hi−1, …, hi−count+1 (else all hi)
    carried: bool  # a reduction: the accumulator is loop-carried

    @property
    def elements(self) -> np.ndarray:
        c, h = self.count.astype(float), self.hi.astype(float)
        return c * h - c * (c - 1) / 2 if self.triangular else c * h


@dataclass(frozen=True)
class Nest:
    kernel: str
    n: int
    iterations: int
    groups: tuple  # LoopGroup
    dep_mac: np.ndarray  # dependent multiply-adds on iteration k's chain
    dep_div: np.ndarray
    dep_sqrt: np.ndarray
    dep_reduce: np.ndarray  # cross-lane reductions on the chain (each log2(lanes) adds deep)
    handoffs: np.ndarray  # producer/consumer exchanges in iteration k
    bytes: np.ndarray  # bytes of matrix/vector data read + written in iteration k
    working_set_bytes: float
    macs: float  # useful multiply-adds of the whole kernel (scalar ops on the chain included)

    @property
    def elements(self) -> np.ndarray:
        return sum(g.elements for g in self.groups)


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _nest(kernel, n, K, groups, mac=0, div=0, sqrt=0, reduce=0, hand=0, bytes_=0, ws=0.0) -> Nest:
    z = np.zeros(K)
    arr = [z + _f(v) for v in (mac, div, sqrt, reduce, hand, bytes_)]
    nest = Nest(kernel, n, K, tuple(groups), *arr, float(ws), 0.0)
    macs = float(nest.elements.sum() + arr[0].sum() + arr[1].sum() + arr[2].sum())
    return Nest(kernel, n, K, tuple(groups), *arr, float(ws), macs)


def build_nest(name: str, dims: dict, dtype: str) -> Nest:
    """The inductive nest of kernel ``name`` with sizes ``dims`` (validated by the workload schema)."""
    b = DTYPE_BYTES[dtype]
    if name in ("cholesky", "trsv", "qr", "trsm"):
        n = dims["n"]
        if n > MAX_N:
            raise SpecError(f"n = {n} is above {MAX_N} for an inductive kernel", key="kernel.n",
                            hint="the nest has n iterations of up to n vector loops")
        k = np.arange(n, dtype=float)
        m = n - k - 1  # entries below the diagonal in column k
        if name == "cholesky":
            g = (LoopGroup("scale", (m > 0).astype(float), m, False, False),
                 LoopGroup("update", m, m, True, False))
            return _nest(name, n, n, g, mac=2 * (m > 0), div=1, sqrt=1, hand=2 * (m > 0),
                         bytes_=b * (m * (m + 1) + m), ws=b * n * (n + 1) / 2)
        if name == "trsv":
            g = (LoopGroup("axpy", (m > 0).astype(float), m, False, False),)
            return _nest(name, n, n, g, mac=1 * (m > 0), div=1, hand=(m > 0), bytes_=b * 3 * m,
                         ws=b * (n * (n + 1) / 2 + n))
        if name == "trsm":
            r = dims.get("r") or n
            g = (LoopGroup("scale", np.ones(n), np.full(n, float(r)), False, False),
                 LoopGroup("update", m, np.full(n, float(r)), False, False))
            return _nest(name, n, n, g, mac=1 * (m > 0), div=1, hand=(m > 0), bytes_=b * (m * r * 2 + m + r),
                         ws=b * (n * (n + 1) / 2 + n * r))
        # Householder QR on an n × n matrix: n − 1 reflectors
        K = n - 1
        if K < 1:
            raise SpecError("qr needs n ≥ 2", key="kernel.n")
        L = (n - np.arange(K)).astype(float)  # column length n − k
        t = L - 1  # trailing columns
        g = (LoopGroup("norm", np.ones(K), L, False, True), LoopGroup("scale", np.ones(K), L, False, False),
             LoopGroup("dots", t, L, False, True), LoopGroup("axpys", t, L, False, False))
        return _nest(name, n, K, g, mac=2, div=1, sqrt=1, reduce=1 + (t > 0), hand=3, bytes_=b * 2 * L * (t + 1),
                     ws=b * n * n)
    if name == "fft":
        n = dims["n"]
        s = int(round(math.log2(n)))
        if 2 ** s != n or n < 2:
            raise SpecError(f"fft n = {n} must be a power of two ≥ 2", key="kernel.n")
        half = np.full(s, n / 2.0)
        g = (LoopGroup("butterflies", np.full(s, 5.0), half, False, False),)  # 5 MAC slots per butterfly
        return _nest(name, n, s, g, mac=3, hand=1, bytes_=b * 2 * 2 * n, ws=b * 2 * n)
    # non-inductive kernels as rectangular nests (one hand-off at the end: the result)
    if name == "gemm":
        M, N, Kd = dims["m"], dims["n"], dims["k"]
        K = Kd
        last = np.zeros(K)
        last[-1] = 1
        g = (LoopGroup("rank1", np.full(K, float(M)), np.full(K, float(N)), False, False),)
        return _capped(_nest(name, N, K, g, hand=last, bytes_=b * (M + N + 2 * M * N),
                             ws=b * (M * Kd + Kd * N + M * N)))
    if name in ("fir", "conv1d", "conv2d"):
        P, R = dims["p"], dims["r"]
        C, Kc, Nb = dims.get("c", 1), dims.get("k", 1), dims.get("batch", 1)
        Q, S = dims.get("q", 1), dims.get("s", 1)
        K = C * R * S  # one iteration per (input channel, tap): axpys over the output row
        if K > MAX_ITERATIONS:
            raise SpecError(f"{K:,} outer iterations (c·r·s) is above {MAX_ITERATIONS:,}", key="kernel")
        last = np.zeros(K)
        last[-1] = 1
        loops = float(Kc * Nb * Q)
        g = (LoopGroup("taps", np.full(K, loops), np.full(K, float(P)), False, False),)
        out = Nb * Kc * P * Q
        return _nest(name, P, K, g, hand=last, bytes_=b * (2 * out + loops * P + Kc),
                     ws=b * (2 * out + Nb * C * (P + R - 1) * (Q + S - 1) + Kc * C * R * S))
    raise SpecError(f"unknown kernel {name!r}", key="kernel.name")


def _capped(nest: Nest) -> Nest:
    if nest.iterations > MAX_ITERATIONS:
        raise SpecError(f"{nest.iterations:,} outer iterations is above {MAX_ITERATIONS:,}", key="kernel")
    return nest
