"""The plan of benchmarks/kernel_sweep.py: which GEMM, attention and HBM-copy points it measures, how long they
are expected to take, the command line and the dry run.  Needs no torch (this is what runs without a GPU)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data"

# ---------------------------------------------------------------------------------------------- the sweep grid
M_TOKENS = (1024, 2048, 4096, 8192, 16384)          # tokens per micro-batch (rows of the activation)
HIDDEN_FFN = {4096: 14336, 8192: 28672, 16384: 53248}  # Llama 3 8B / 70B / 405B hidden -> SwiGLU ffn
TP_DEGREES = (1, 2, 4, 8)
LAYER_HEAD_DIM = 128
LAYER_KV_HEADS = 8                                   # GQA
GEMM_DTYPES = ("bf16", "fp8")
GEMM_PASSES = ("fwd", "dgrad", "wgrad")              # default: fwd only (the nn.Linear forward layout)

ATTN_HEAD_DIMS = (64, 128)
ATTN_SEQ = (1024, 2048, 4096, 8192, 16384, 32768)
ATTN_TOKENS = 32768                                  # batch * seq
ATTN_WIDTH = 2048                                    # heads * head_dim (as in the FlashAttention-2 paper)
ATTN_KERNELS = ("sdpa_flash", "sdpa_cudnn", "fa2", "fa3")
ATTN_BWD_FACTOR = 2.5                                # backward FLOPs = 2.5 x forward (FlashAttention convention)

COPY_SIZES_MIB = (256, 512, 1024, 2048, 4096)
L2_FLUSH_BYTES = 256 * 2**20

# --------------------------------------------------------------------------------- run-time estimate constants
ASSUMED_GEMM_TFLOPS = 700.0       # bf16 and fp8 alike (fp8 runs faster: the estimate is an upper bound for it)
ASSUMED_ATTN_TFLOPS = 300.0
ASSUMED_HBM_GBPS = 2500.0
MIN_REGION_S = 1e-3               # without --flush-l2 a timed region holds >= 1 ms of work (inner repeats)
POINT_OVERHEAD_S = {"gemm": 0.05, "attention": 0.10, "hbm_copy": 0.10}   # allocation, fill, first call, sync
STARTUP_S = 30.0                  # import torch, CUDA context, cuBLAS/cuDNN handles, flash_attn imports
DEFAULT_MAX_MINUTES = 7.5
TIME_BUDGET_MINUTES = 8.0

FLOP_CONVENTION = ("gemm flops = 2*M*N*K (every pass); attention forward flops = 4*batch*heads*seq^2*head_dim, "
                   "halved when causal; attention backward flops = 2.5 x forward; hbm_copy bytes moved = 2 x size")

CSV_COLUMNS = [
    "kind", "dtype", "M", "N", "K", "shape_tags", "batch", "heads", "head_dim", "seq_len", "causal", "direction",
    "bytes", "flops", "median_s", "min_s", "reps", "inner", "tflops_per_s", "gb_per_s", "fraction_of_peak",
    "kernel", "kernel_version", "fp8_fast_accum", "l2_flush", "status", "device_name", "torch_version",
    "cuda_version", "cudnn_version", "driver", "timestamp",
]


@dataclass(frozen=True)
class Point:
    kind: str                   # gemm | attention | hbm_copy
    dtype: str = ""
    M: int = 0
    N: int = 0
    K: int = 0
    shape_tags: str = ""        # e.g. "h8192/tp4/qkv;h..." (every layer GEMM that has this shape)
    batch: int = 0
    heads: int = 0
    head_dim: int = 0
    seq_len: int = 0
    causal: bool = False
    direction: str = ""         # gemm: fwd|dgrad|wgrad; attention: fwd|bwd
    kernel: str = ""            # attention implementation id
    nbytes: int = 0             # hbm_copy: size of the copied buffer (bytes moved = 2x)

    @property
    def flops(self) -> float:
        if self.kind == "gemm":
            return 2.0 * self.M * self.N * self.K
        if self.kind == "attention":
            fwd = 4.0 * self.batch * self.heads * self.seq_len ** 2 * self.head_dim
            if self.causal:
                fwd /= 2
            return fwd * (ATTN_BWD_FACTOR if self.direction == "bwd" else 1.0)
        return 0.0

    @property
    def bytes_moved(self) -> int:
        return 2 * self.nbytes if self.kind == "hbm_copy" else 0

    def describe(self) -> str:
        if self.kind == "gemm":
            return (f"gemm      {self.dtype:<4} {self.direction:<5} M={self.M:<6} N={self.N:<6} K={self.K:<6} "
                    f"{self.flops / 1e12:8.3f} TFLOP  [{self.shape_tags}]")
        if self.kind == "attention":
            return (f"attention {self.dtype:<4} {self.direction:<5} {self.kernel:<10} b={self.batch:<3} "
                    f"h={self.heads:<3} d={self.head_dim:<4} s={self.seq_len:<6} "
                    f"{'causal' if self.causal else 'full  '} {self.flops / 1e12:8.3f} TFLOP")
        return f"hbm_copy  {self.nbytes / 2**20:7.0f} MiB  (moves {self.bytes_moved / 1e9:.2f} GB)"


# -------------------------------------------------------------------------------------------------- planning
def layer_gemms(hidden: int, tp: int) -> list[tuple[str, int, int]]:
    """(tag, K, N) of the four GEMMs of one transformer layer on one tensor-parallel rank."""
    ffn = HIDDEN_FFN[hidden]
    q = hidden                                   # query width = heads * head_dim = hidden
    kv = LAYER_KV_HEADS * LAYER_HEAD_DIM
    return [
        ("qkv", hidden, (q + 2 * kv) // tp),
        ("out", q // tp, hidden),
        ("mlp_up", hidden, 2 * ffn // tp),       # SwiGLU gate and up projections fused
        ("mlp_down", ffn // tp, hidden),
    ]


def plan_gemm(m_values=M_TOKENS, hiddens=tuple(HIDDEN_FFN), tps=TP_DEGREES, dtypes=GEMM_DTYPES,
              passes=("fwd",)) -> list[Point]:
    """Distinct (M, N, K) GEMM shapes; the shape_tags column names every layer GEMM with that shape.

    Ordered by shape with the dtypes (and passes) interleaved, so that a --max-minutes cap drops whole shapes
    at the end of the list rather than a whole dtype."""
    tags: dict[tuple[int, int, int], list[str]] = {}
    for hidden in hiddens:
        for tp in tps:
            for tag, k, n in layer_gemms(hidden, tp):
                for m in m_values:
                    tags.setdefault((m, n, k), []).append(f"h{hidden}/tp{tp}/{tag}")
    points = []
    for (m, n, k), t in sorted(tags.items()):
        for direction in passes:
            for dtype in dtypes:
                points.append(Point("gemm", dtype=dtype, M=m, N=n, K=k, shape_tags=";".join(t),
                                    direction=direction))
    return points


def plan_attention(head_dims=ATTN_HEAD_DIMS, seqs=ATTN_SEQ, kernels=ATTN_KERNELS,
                   fa3_fp8: bool = True, tokens: int = ATTN_TOKENS) -> list[Point]:
    points = []
    for kernel in kernels:
        for d in head_dims:
            heads = ATTN_WIDTH // d
            for s in seqs:
                batch = max(1, tokens // s)
                for causal in (False, True):
                    for direction in ("fwd", "bwd"):
                        points.append(Point("attention", dtype="bf16", batch=batch, heads=heads, head_dim=d,
                                            seq_len=s, causal=causal, direction=direction, kernel=kernel))
                    if kernel == "fa3" and fa3_fp8:     # FA3's fp8 e4m3 forward (no fp8 backward exists)
                        points.append(Point("attention", dtype="fp8", batch=batch, heads=heads, head_dim=d,
                                            seq_len=s, causal=causal, direction="fwd", kernel=kernel))
    return points


def plan_copy(sizes_mib=COPY_SIZES_MIB) -> list[Point]:
    return [Point("hbm_copy", dtype="uint8", nbytes=s * 2**20) for s in sizes_mib]


def _csv_list(text: str, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in items if x not in allowed]
    if bad:
        raise SystemExit(f"kernel_sweep: error: unknown {what} {', '.join(bad)} (choose from {', '.join(allowed)})")
    return items


def plan(args: argparse.Namespace) -> list[Point]:
    """The points of the sweep, in run order: HBM copy, attention, GEMM."""
    kinds = _csv_list(args.kinds, ("gemm", "attention", "hbm_copy"), "kind")
    dtypes = _csv_list(args.gemm_dtypes, GEMM_DTYPES, "GEMM dtype")
    passes = _csv_list(args.gemm_passes, GEMM_PASSES, "GEMM pass")
    kernels = _csv_list(args.attn_kernels, ATTN_KERNELS, "attention kernel")
    points: list[Point] = []
    if args.quick:
        if "hbm_copy" in kinds:
            points += plan_copy((1024,))
        if "attention" in kinds:
            points += plan_attention(head_dims=(128,), seqs=(2048, 8192), kernels=kernels,
                                     fa3_fp8=not args.no_fa3_fp8, tokens=args.attn_tokens)
        if "gemm" in kinds:
            points += plan_gemm(m_values=(4096,), hiddens=(8192,), tps=(1, 8), dtypes=dtypes, passes=passes)
        return points
    if "hbm_copy" in kinds:
        points += plan_copy()
    if "attention" in kinds:
        points += plan_attention(kernels=kernels, fa3_fp8=not args.no_fa3_fp8, tokens=args.attn_tokens)
    if "gemm" in kinds:
        points += plan_gemm(dtypes=dtypes, passes=passes)
    return points


def estimate_point_s(p: Point, warmup: int, reps: int, flush_l2: bool) -> float:
    """Upper-bound-ish wall time of one point from its FLOPs (bytes) at the assumed rates."""
    if p.kind == "gemm":
        t = p.flops / (ASSUMED_GEMM_TFLOPS * 1e12)
    elif p.kind == "attention":
        t = p.flops / (ASSUMED_ATTN_TFLOPS * 1e12)
    else:
        t = p.bytes_moved / (ASSUMED_HBM_GBPS * 1e9)
    extra = 0.0
    if p.kind == "attention" and p.direction == "bwd":          # the forward that builds the graph
        extra += p.flops / ATTN_BWD_FACTOR / (ASSUMED_ATTN_TFLOPS * 1e12)
    if flush_l2 and p.kind == "gemm":
        region = t
        extra += reps * 2 * L2_FLUSH_BYTES / (ASSUMED_HBM_GBPS * 1e9)
    else:
        region = max(t, MIN_REGION_S)
    return warmup * t + reps * region + 2 * t + extra + POINT_OVERHEAD_S[p.kind]   # + 2t: choose_inner's calls


def estimate_total_s(points: list[Point], warmup: int, reps: int, flush_l2: bool) -> float:
    return STARTUP_S + sum(estimate_point_s(p, warmup, reps, flush_l2) for p in points)


def count_by_kind(points: list[Point]) -> dict[str, int]:
    counts = {"gemm": 0, "attention": 0, "hbm_copy": 0}
    for p in points:
        counts[p.kind] += 1
    return counts


# ----------------------------------------------------------------------------------------------- arguments
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kernel_sweep.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None,
                    help="CSV path (default benchmarks/data/kernel_sweep_<device>.csv)")
    ap.add_argument("--dry-run", action="store_true", help="print the planned points and the estimated time; "
                                                           "does not import torch")
    ap.add_argument("--quick", action="store_true", help="a tiny subset of every kind (smoke test)")
    ap.add_argument("--kinds", default="gemm,attention,hbm_copy", help="comma list of gemm,attention,hbm_copy")
    ap.add_argument("--gemm-dtypes", default="bf16,fp8", help="comma list of bf16,fp8")
    ap.add_argument("--gemm-passes", default="fwd",
                    help="comma list of fwd (x.W^T), dgrad (dy.W), wgrad (dy^T.x); default fwd")
    ap.add_argument("--attn-kernels", default=",".join(ATTN_KERNELS),
                    help="comma list of sdpa_flash,sdpa_cudnn,fa2,fa3 (unavailable ones are skipped)")
    ap.add_argument("--no-fa3-fp8", action="store_true", help="leave out FA3's fp8 forward points")
    ap.add_argument("--attn-tokens", type=int, default=ATTN_TOKENS,
                    help="attention batch*seq (default 32768; the FA2/FA3 papers use 16384)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up calls per point (default 5, quick 2)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions per point (default 25, quick 5)")
    ap.add_argument("--flush-l2", action="store_true",
                    help="zero a 256 MiB buffer before every GEMM repetition (cold L2; one call per timed region)")
    ap.add_argument("--fp8-fast-accum", choices=("te", "on", "off"), default="te",
                    help="fp8 use_fast_accum: te = on for fwd, off for dgrad/wgrad (Transformer Engine's choice)")
    ap.add_argument("--max-minutes", type=float, default=DEFAULT_MAX_MINUTES,
                    help="wall-clock cap from start; points that would pass it are skipped and recorded as such")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="dense bf16 peak of the device (TFLOP/s) for fraction_of_peak")
    ap.add_argument("--peak-tflops-fp8", type=float, default=None,
                    help="dense fp8 peak (TFLOP/s); default 2 x --peak-tflops")
    ap.add_argument("--peak-gbps", type=float, default=None, help="HBM peak (GB/s) for hbm_copy fraction_of_peak")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index")
    return ap


def _finish_args(args: argparse.Namespace) -> argparse.Namespace:
    if args.warmup is None:
        args.warmup = 2 if args.quick else 5
    if args.reps is None:
        args.reps = 5 if args.quick else 25
    if args.warmup < 0 or args.reps < 1:
        raise SystemExit("kernel_sweep: error: --warmup must be >= 0 and --reps >= 1")
    if args.peak_tflops is not None and args.peak_tflops_fp8 is None:
        args.peak_tflops_fp8 = 2 * args.peak_tflops
    return args


def dry_run(args: argparse.Namespace, points: list[Point]) -> int:
    print("kernel_sweep plan (dry run: torch not imported; attention kernels that are not importable at run time "
          "are skipped)")
    for i, p in enumerate(points, 1):
        print(f"{i:5d}  {p.describe():<110} est {estimate_point_s(p, args.warmup, args.reps, args.flush_l2):7.3f} s")
    counts = count_by_kind(points)
    total = estimate_total_s(points, args.warmup, args.reps, args.flush_l2)
    print(f"flop convention: {FLOP_CONVENTION}")
    print(f"timing: warmup={args.warmup} reps={args.reps} l2_flush={'on' if args.flush_l2 else 'off'}; estimate at "
          f"{ASSUMED_GEMM_TFLOPS:.0f} TFLOP/s GEMM, {ASSUMED_ATTN_TFLOPS:.0f} TFLOP/s attention, "
          f"{ASSUMED_HBM_GBPS:.0f} GB/s copy, {STARTUP_S:.0f} s start-up")
    print("points: " + " ".join(f"{k}={v}" for k, v in counts.items()) + f" total={len(points)}")
    print(f"estimated total: {total / 60:.2f} min ({total:.0f} s); cap --max-minutes {args.max_minutes:g}")
    return 0
