#!/usr/bin/env python3
"""Kernel-level sweep on one NVIDIA GPU: GEMM, flash attention and HBM copy throughput, written as a raw CSV.

    python benchmarks/kernel_sweep.py --dry-run            # the planned points and estimated run time (no torch)
    python benchmarks/kernel_sweep.py --quick              # a tiny subset (smoke test on the GPU, < 1 min)
    python benchmarks/kernel_sweep.py --peak-tflops 989.4 --peak-gbps 3350     # the full sweep (< 8 min on H100/H200)

What is measured (benchmarks/data/kernel_sweep_README.md has the method and the FLOP conventions):

* ``gemm``: bf16 ``torch.mm`` and fp8 e4m3 ``torch._scaled_mm`` (per-tensor scales, bf16 output) at the shapes of
  a Llama-style transformer layer, y[M,N] = x[M,K] . W[N,K]^T with M = tokens per micro-batch, for hidden sizes
  4096/8192/16384 and tensor-parallel degrees 1/2/4/8 (QKV with 8 GQA kv heads of dim 128, attention output
  projection, SwiGLU MLP up (gate and up fused) and down).  FLOPs = 2*M*N*K.
* ``attention``: flash attention forward and backward, head dim 64 and 128, sequence 1k..32k, causal and not,
  batch*seq = 32k tokens, heads*head_dim = 2048 (32 heads of 64, 16 heads of 128), through every available
  implementation: torch SDPA flash backend, torch SDPA cuDNN backend, the flash_attn package (FA2) and
  flash_attn_interface (FA3, Hopper).  FLOPs forward = 4*b*h*s^2*d (halved when causal), backward = 2.5x forward.
* ``hbm_copy``: device-to-device ``Tensor.copy_`` of 256 MiB .. 4 GiB; bytes moved = 2 x size.

Timing: CUDA events around each repetition after warm-up, the median over the repetitions is reported.  Short
kernels are repeated ``inner`` times between the two events (so that launch gaps do not count) unless
``--flush-l2`` is given, which zeroes a 256 MiB buffer before every GEMM repetition (outside the timed region).

Torch is imported only when the sweep runs, so ``--dry-run`` works on any machine.  Without torch or without a
CUDA device the script prints one line and exits with status 2.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import math
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_sweep_plan import (  # noqa: E402,F401  (the plan, no torch; re-exported for the tests)
    ATTN_TOKENS, ATTN_WIDTH, CSV_COLUMNS, DATA_DIR, DEFAULT_MAX_MINUTES, FLOP_CONVENTION, L2_FLUSH_BYTES,
    M_TOKENS, MIN_REGION_S, TIME_BUDGET_MINUTES, Point, _finish_args, build_parser, count_by_kind, dry_run,
    estimate_point_s, estimate_total_s, plan, plan_attention, plan_copy, plan_gemm)


# ------------------------------------------------------------------------------------------------- the run
class EnvError(Exception):
    """torch or CUDA missing: one line, exit status 2."""


def _import_torch():
    try:
        import torch  # noqa: PLC0415 (lazy on purpose)
    except Exception as exc:  # ImportError, or a broken install
        raise EnvError(f"PyTorch is not importable ({type(exc).__name__}: {exc}); the sweep needs torch with CUDA "
                       f"on an NVIDIA GPU (use --dry-run to see the plan without it)") from None
    try:
        ok = bool(torch.cuda.is_available()) and getattr(torch.version, "cuda", None) is not None
    except Exception:
        ok = False
    if not ok:
        raise EnvError(f"no CUDA device visible to torch {getattr(torch, '__version__', '?')} "
                       f"(torch.cuda.is_available() is False or torch is not a CUDA build); run on an NVIDIA GPU")
    return torch


def _nvidia_smi(query: str, index: int) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader", "-i", str(index)],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip() if out.returncode == 0 else ""
    except Exception:
        return ""


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def time_cuda(torch, fn, warmup: int, reps: int, flush=None, inner: int = 1) -> tuple[float, float]:
    """(median, min) seconds per call of fn, CUDA events around `inner` calls, `reps` times."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush is not None:
            flush()
        starts[i].record()
        for _ in range(inner):
            fn()
        ends[i].record()
    torch.cuda.synchronize()
    per_call = [s.elapsed_time(e) / 1e3 / inner for s, e in zip(starts, ends)]
    return statistics.median(per_call), min(per_call)


def choose_inner(torch, fn, flush) -> int:
    """How many calls fill MIN_REGION_S (1 when the L2 is flushed before each call)."""
    if flush is not None:
        return 1
    fn()                                  # first call: library heuristics, workspace, lazy module loading
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    t = max(start.elapsed_time(end) / 1e3, 1e-7)
    return max(1, min(200, math.ceil(MIN_REGION_S / t)))


class Runner:
    def __init__(self, torch, args: argparse.Namespace):
        self.torch = torch
        self.args = args
        self.dev = torch.device("cuda", args.device)
        torch.cuda.set_device(self.dev)
        self.env = {
            "device_name": torch.cuda.get_device_name(self.dev),
            "torch_version": torch.__version__,
            "cuda_version": torch.version.cuda or "",
            "cudnn_version": str(torch.backends.cudnn.version() or ""),
            "driver": _nvidia_smi("driver_version", args.device),
        }
        self.flush_buf = None
        self._attn_cache: dict[str, tuple] = {}
        self._fp8_state: tuple[bool, str] | None = None

    # -------------------------------------------------------------------- GEMM
    def fp8_supported(self) -> tuple[bool, str]:
        if self._fp8_state is None:
            torch = self.torch
            if not (hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")):
                self._fp8_state = (False, f"torch {torch.__version__} has no float8_e4m3fn/_scaled_mm")
            elif torch.cuda.get_device_capability(self.dev) < (8, 9):
                self._fp8_state = (False, f"compute capability {torch.cuda.get_device_capability(self.dev)} < 8.9")
            else:
                try:
                    a = torch.ones(32, 32, device=self.dev).to(torch.float8_e4m3fn)
                    b = torch.ones(32, 32, device=self.dev).to(torch.float8_e4m3fn).t()
                    self._scaled_mm(a, b, fast=False)
                    torch.cuda.synchronize()
                    self._fp8_state = (True, "")
                except Exception as exc:
                    self._fp8_state = (False, f"_scaled_mm failed: {type(exc).__name__}: {exc}".splitlines()[0])
        return self._fp8_state

    def _scaled_mm(self, a, b, fast: bool, out=None):
        torch = self.torch
        one = torch.ones((), dtype=torch.float32, device=self.dev)
        kw = dict(scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast)
        if out is not None:
            kw["out"] = out
        r = torch._scaled_mm(a, b, **kw)
        return r[0] if isinstance(r, tuple) else r      # torch < 2.5 returned (out, amax)

    def gemm_fn(self, p: Point):
        """Operands in the layouts nn.Linear's forward/autograd uses; returns (fn, detail, fast_accum)."""
        torch = self.torch
        M, N, K = p.M, p.N, p.K
        if p.direction == "fwd":          # y[M,N] = x[M,K] . W[N,K]^T
            m, n, k = M, N, K
        elif p.direction == "dgrad":      # dx[M,K] = dy[M,N] . W[N,K]
            m, n, k = M, K, N
        else:                             # dW[N,K] = dy^T[N,M] . x[M,K]
            m, n, k = N, K, M
        if p.dtype == "bf16":
            bf = torch.bfloat16
            if p.direction == "fwd":
                a = torch.randn(M, K, device=self.dev, dtype=bf)
                b = torch.randn(N, K, device=self.dev, dtype=bf).t()
            elif p.direction == "dgrad":
                a = torch.randn(M, N, device=self.dev, dtype=bf)
                b = torch.randn(N, K, device=self.dev, dtype=bf)
            else:
                a = torch.randn(M, N, device=self.dev, dtype=bf).t()
                b = torch.randn(M, K, device=self.dev, dtype=bf)
            c = torch.empty(m, n, device=self.dev, dtype=bf)
            return (lambda: torch.mm(a, b, out=c)), "cublas (torch.mm)", ""
        ok, why = self.fp8_supported()
        if not ok:
            raise _Skip(f"fp8 unsupported: {why}")
        mode = self.args.fp8_fast_accum
        fast = (p.direction == "fwd") if mode == "te" else (mode == "on")
        f8 = torch.float8_e4m3fn
        # _scaled_mm needs A row-major [m,k] and B column-major [k,n] (the fp8 "TN" layout; transposes of fp8
        # operands are materialised beforehand, as Transformer Engine does)
        a = (torch.randn(m, k, device=self.dev) * 0.5).to(f8)
        b = (torch.randn(n, k, device=self.dev) * 0.5).to(f8).t()
        c = torch.empty(m, n, device=self.dev, dtype=torch.bfloat16)
        try:
            self._scaled_mm(a, b, fast, out=c)
            fn = lambda: self._scaled_mm(a, b, fast, out=c)  # noqa: E731
        except Exception:                                    # a torch without the out= variant of _scaled_mm
            fn = lambda: self._scaled_mm(a, b, fast)  # noqa: E731
        return fn, "cublasLt (torch._scaled_mm, e4m3, per-tensor scales, bf16 out)", str(fast).lower()

    def flush(self):
        if self.flush_buf is None:
            self.flush_buf = self.torch.empty(L2_FLUSH_BYTES, dtype=self.torch.uint8, device=self.dev)
        self.flush_buf.zero_()

    # --------------------------------------------------------------- attention
    def attn_impl(self, kernel: str):
        """(callable(q, k, v, causal) on [b, s, h, d] tensors, context-manager factory, version) or _Skip."""
        if kernel in self._attn_cache:
            r = self._attn_cache[kernel]
            if isinstance(r, _Skip):
                raise r
            return r
        try:
            r = self._load_attn(kernel)
        except _Skip as s:
            r = s
        except Exception as exc:
            r = _Skip(f"{kernel} unavailable: {type(exc).__name__}: {exc}".splitlines()[0])
        self._attn_cache[kernel] = r
        if isinstance(r, _Skip):
            raise r
        return r

    def _load_attn(self, kernel: str):
        torch = self.torch
        import contextlib  # noqa: PLC0415
        if kernel.startswith("sdpa"):
            import torch.nn.functional as F  # noqa: PLC0415
            want = "FLASH_ATTENTION" if kernel == "sdpa_flash" else "CUDNN_ATTENTION"
            try:
                from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415  (torch >= 2.3)
                if not hasattr(SDPBackend, want):
                    raise _Skip(f"{kernel} unavailable: torch {torch.__version__} has no SDPBackend.{want}")
                ctx = lambda: sdpa_kernel([getattr(SDPBackend, want)])  # noqa: E731
            except ImportError:
                if kernel != "sdpa_flash":
                    raise _Skip(f"{kernel} unavailable: torch {torch.__version__} has no torch.nn.attention")
                ctx = lambda: torch.backends.cuda.sdp_kernel(  # noqa: E731
                    enable_flash=True, enable_math=False, enable_mem_efficient=False)

            def fn(q, k, v, causal):     # SDPA takes [b, h, s, d]: transposed views of [b, s, h, d]
                o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                   is_causal=causal)
                return o.transpose(1, 2)
            version = f"torch {torch.__version__} SDPA {want.lower()} backend"
        elif kernel == "fa2":
            import flash_attn  # noqa: PLC0415
            from flash_attn import flash_attn_func  # noqa: PLC0415
            fn = lambda q, k, v, causal: flash_attn_func(q, k, v, causal=causal)  # noqa: E731
            ctx = contextlib.nullcontext
            version = f"flash_attn {getattr(flash_attn, '__version__', '?')} (FA2)"
        else:
            import flash_attn_interface  # noqa: PLC0415  (FlashAttention-3, hopper/ build)
            f3 = flash_attn_interface.flash_attn_func

            def fn(q, k, v, causal):
                o = f3(q, k, v, causal=causal)
                return o[0] if isinstance(o, tuple) else o   # some FA3 versions return (out, lse)
            ctx = contextlib.nullcontext
            version = f"flash_attn_interface {getattr(flash_attn_interface, '__version__', '')} (FA3)".replace(
                "  ", " ")
        # smoke call: a backend that cannot run here (e.g. cuDNN SDPA on an old cuDNN) is skipped cleanly
        q = torch.randn(1, 256, 2, 64, device=self.dev, dtype=torch.bfloat16)
        with ctx():
            fn(q, q, q, True)
        torch.cuda.synchronize()
        return fn, ctx, version

    def attention_fn(self, p: Point):
        torch = self.torch
        fn, ctx, version = self.attn_impl(p.kernel)
        shape = (p.batch, p.seq_len, p.heads, p.head_dim)
        bf = torch.bfloat16
        if p.dtype == "fp8":
            if not hasattr(torch, "float8_e4m3fn"):
                raise _Skip("fp8 unsupported: torch has no float8_e4m3fn")
            q, k, v = ((torch.randn(shape, device=self.dev, dtype=bf) * 0.5).to(torch.float8_e4m3fn)
                       for _ in range(3))
            return (lambda: fn(q, k, v, p.causal)), ctx, version
        q, k, v = (torch.randn(shape, device=self.dev, dtype=bf, requires_grad=p.direction == "bwd")
                   for _ in range(3))
        if p.direction == "fwd":
            return (lambda: fn(q, k, v, p.causal)), ctx, version
        with ctx():
            out = fn(q, k, v, p.causal)
        dout = torch.randn_like(out)
        return (lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)), ctx, version

    # ---------------------------------------------------------------- one point
    def measure(self, p: Point) -> dict:
        torch, args = self.torch, self.args
        row = _base_row(p)
        flush = None
        if p.kind == "gemm":
            fn, kernel, fast = self.gemm_fn(p)
            row.update(kernel=kernel, kernel_version=f"torch {torch.__version__}", fp8_fast_accum=fast)
            ctx = None
            if args.flush_l2:
                flush = self.flush
                row["l2_flush"] = "true"
        elif p.kind == "attention":
            fn, ctx, version = self.attention_fn(p)
            row.update(kernel=p.kernel, kernel_version=version)
        else:
            n = p.nbytes
            src = torch.empty(n, dtype=torch.uint8, device=self.dev).fill_(1)
            dst = torch.empty_like(src)
            fn = lambda: dst.copy_(src)  # noqa: E731
            ctx = None
            row.update(kernel="torch Tensor.copy_ (device to device)", kernel_version=f"torch {torch.__version__}")
        import contextlib  # noqa: PLC0415
        with (ctx() if ctx is not None else contextlib.nullcontext()):
            inner = choose_inner(torch, fn, flush)
            med, mn = time_cuda(torch, fn, args.warmup, args.reps, flush=flush, inner=inner)
        row.update(median_s=f"{med:.6e}", min_s=f"{mn:.6e}", reps=args.reps, inner=inner, status="ok")
        if p.kind == "hbm_copy":
            gbps = p.bytes_moved / med / 1e9
            row["gb_per_s"] = f"{gbps:.1f}"
            if args.peak_gbps:
                row["fraction_of_peak"] = f"{gbps / args.peak_gbps:.4f}"
        else:
            tf = p.flops / med / 1e12
            row["tflops_per_s"] = f"{tf:.2f}"
            peak = args.peak_tflops_fp8 if p.dtype == "fp8" else args.peak_tflops
            if peak:
                row["fraction_of_peak"] = f"{tf / peak:.4f}"
        return row


class _Skip(Exception):
    """A point that cannot run on this machine (recorded with status 'skipped: ...')."""


def _base_row(p: Point) -> dict:
    row = {c: "" for c in CSV_COLUMNS}
    row.update(kind=p.kind, dtype=p.dtype, direction=p.direction, l2_flush="false")
    if p.kind == "gemm":
        row.update(M=p.M, N=p.N, K=p.K, shape_tags=p.shape_tags, flops=f"{p.flops:.6e}")
    elif p.kind == "attention":
        row.update(batch=p.batch, heads=p.heads, head_dim=p.head_dim, seq_len=p.seq_len,
                   causal=str(p.causal).lower(), kernel=p.kernel, flops=f"{p.flops:.6e}")
    else:
        row.update(bytes=p.bytes_moved)
    return row


def run(args: argparse.Namespace, points: list[Point], t0: float) -> int:
    torch = _import_torch()
    runner = Runner(torch, args)
    env = runner.env
    out = args.out or DATA_DIR / f"kernel_sweep_{_slug(env['device_name'])}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    cap_s = args.max_minutes * 60
    est = estimate_total_s(points, args.warmup, args.reps, args.flush_l2)
    counts = count_by_kind(points)
    print(f"kernel_sweep: {env['device_name']}, torch {env['torch_version']}, CUDA {env['cuda_version']}, "
          f"cuDNN {env['cudnn_version']}, driver {env['driver'] or '?'}")
    print("points: " + " ".join(f"{k}={v}" for k, v in counts.items()) + f" total={len(points)}")
    print(f"estimated total: {est / 60:.2f} min ({est:.0f} s); cap --max-minutes {args.max_minutes:g}; "
          f"writing {out}", flush=True)
    smi = _nvidia_smi("name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,memory.total", args.device)
    n_ok = n_skip_cap = n_skip = n_err = 0
    with open(out, "w", newline="") as fh:
        fh.write(f"# kernel_sweep.py {' '.join(args.argv)}\n")
        fh.write(f"# {FLOP_CONVENTION}\n")
        fh.write(f"# timing: CUDA events, warmup={args.warmup}, median of reps={args.reps} timed regions of "
                 f"'inner' calls each; l2_flush={'on' if args.flush_l2 else 'off'}\n")
        fh.write(f"# nvidia-smi: {smi}\n")
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for i, p in enumerate(points, 1):
            ts = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            elapsed = time.monotonic() - t0
            if elapsed + estimate_point_s(p, args.warmup, args.reps, args.flush_l2) > cap_s:
                row = _base_row(p)
                row["status"] = f"skipped: --max-minutes {args.max_minutes:g} reached"
                n_skip_cap += 1
            else:
                try:
                    row = runner.measure(p)
                    n_ok += 1
                except _Skip as s:
                    row = _base_row(p)
                    row["status"] = f"skipped: {s}"
                    n_skip += 1
                except Exception as exc:   # OOM, unsupported shape, ...: record and go on
                    row = _base_row(p)
                    row["status"] = f"error: {type(exc).__name__}: {exc}".splitlines()[0][:300]
                    n_err += 1
                finally:
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
            row.update(env, timestamp=ts)
            writer.writerow(row)
            fh.flush()
            rate = row.get("tflops_per_s") or row.get("gb_per_s")
            unit = "TFLOP/s" if row.get("tflops_per_s") else "GB/s"
            print(f"[{i:4d}/{len(points)} {time.monotonic() - t0:6.1f}s] {p.describe()[:100]:<100} "
                  f"{(rate + ' ' + unit) if rate else row['status']}", flush=True)
        total = time.monotonic() - t0
        fh.write(f"# finished: {total:.1f} s; ok={n_ok} skipped={n_skip} errors={n_err} "
                 f"skipped_by_max_minutes={n_skip_cap}\n")
    print(f"done in {total:.1f} s: ok={n_ok} skipped={n_skip} errors={n_err} skipped_by_max_minutes={n_skip_cap}; "
          f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _finish_args(build_parser().parse_args(argv))
    args.argv = argv
    points = plan(args)
    if args.dry_run:
        return dry_run(args, points)
    try:
        return run(args, points, t0)
    except EnvError as exc:
        print(f"kernel_sweep: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
