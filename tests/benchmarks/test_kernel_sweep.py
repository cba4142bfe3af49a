"""benchmarks/kernel_sweep.py without a GPU: the plan (--dry-run), the time estimate, the missing-torch/CUDA exits,
and the CSV writing driven by a stand-in torch module (the real measurement needs an NVIDIA GPU)."""
from __future__ import annotations

import csv
import importlib.util
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "kernel_sweep.py"


def _load():
    spec = importlib.util.spec_from_file_location("kernel_sweep_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # dataclasses look the module up while the class is built
    spec.loader.exec_module(mod)
    return mod


ks = _load()


def _summary(out: str) -> tuple[dict[str, int], float]:
    m = re.search(r"^points: gemm=(\d+) attention=(\d+) hbm_copy=(\d+) total=(\d+)$", out, re.M)
    assert m, out[-2000:]
    counts = {"gemm": int(m[1]), "attention": int(m[2]), "hbm_copy": int(m[3]), "total": int(m[4])}
    e = re.search(r"^estimated total: ([\d.]+) min", out, re.M)
    assert e
    return counts, float(e[1])


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)     # `import torch` raises ImportError


# ------------------------------------------------------------------------------------------------- the plan
def test_dry_run_default_counts_and_budget(no_torch, capsys):
    assert ks.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    counts, minutes = _summary(out)
    # 3 hidden x 4 tp x 4 layer GEMMs x 5 M = 240 distinct shapes, bf16 + fp8
    assert counts["gemm"] == 240 * 2
    # 4 kernels x 2 head dims x 6 seqs x 2 causal x 2 directions, + FA3 fp8 forward (2 x 6 x 2)
    assert counts["attention"] == 4 * 2 * 6 * 2 * 2 + 2 * 6 * 2
    assert counts["hbm_copy"] == 5
    assert counts["total"] == 480 + 216 + 5
    assert minutes < ks.TIME_BUDGET_MINUTES
    assert ks.DEFAULT_MAX_MINUTES <= ks.TIME_BUDGET_MINUTES
    # one listed line per point, and the FLOP convention is stated
    assert len(re.findall(r"^\s+\d+\s+(gemm|attention|hbm_copy)\s", out, re.M)) == counts["total"]
    assert "2.5 x forward" in out and "halved when causal" in out
    assert "torch" not in sys.modules or sys.modules["torch"] is None


@pytest.mark.parametrize("extra", [["--flush-l2"], ["--gemm-passes", "fwd,dgrad,wgrad"]])
def test_dry_run_variants_within_budget(no_torch, capsys, extra):
    assert ks.main(["--dry-run", *extra]) == 0
    counts, minutes = _summary(capsys.readouterr().out)
    assert minutes < ks.TIME_BUDGET_MINUTES
    if "--gemm-passes" in extra:
        assert counts["gemm"] == 3 * 480


def test_quick_is_small(no_torch, capsys):
    assert ks.main(["--dry-run", "--quick"]) == 0
    counts, minutes = _summary(capsys.readouterr().out)
    assert counts == {"gemm": 16, "attention": 36, "hbm_copy": 1, "total": 53}
    assert minutes < 1.0


def test_gemm_shapes_are_the_transformer_layer():
    pts = ks.plan_gemm(dtypes=("bf16",))
    shapes = {(p.M, p.N, p.K) for p in pts}
    assert len(shapes) == len(pts) == 240
    assert {p.M for p in pts} == set(ks.M_TOKENS)
    # QKV h8192 tp8: (8192 + 2*8*128)/8 = 1280; out proj h4096 tp2: K = 2048; Llama-405B MLP up tp1; down tp8
    assert (4096, 1280, 8192) in shapes
    assert (1024, 4096, 2048) in shapes
    assert (16384, 2 * 53248, 16384) in shapes
    assert (2048, 16384, 53248 // 8) in shapes
    tags = {t for p in pts for t in p.shape_tags.split(";")}
    assert len(tags) == 3 * 4 * 4 * 5 // 5          # every (h, tp, gemm) appears
    # fp8 (_scaled_mm) needs every dimension divisible by 16
    assert all(d % 16 == 0 for s in shapes for d in s)
    assert all(p.flops == 2 * p.M * p.N * p.K for p in pts)


def test_attention_points_and_flops():
    pts = ks.plan_attention(kernels=("sdpa_flash",))
    assert len(pts) == 2 * 6 * 2 * 2
    for p in pts:
        assert p.batch * p.seq_len == ks.ATTN_TOKENS
        assert p.heads * p.head_dim == ks.ATTN_WIDTH and p.heads in (16, 32)
    fwd = next(p for p in pts if p.seq_len == 4096 and p.head_dim == 128 and not p.causal and p.direction == "fwd")
    assert fwd.flops == 4 * 8 * 16 * 4096 ** 2 * 128
    causal_bwd = next(p for p in pts if p.seq_len == 4096 and p.head_dim == 128 and p.causal
                      and p.direction == "bwd")
    assert causal_bwd.flops == pytest.approx(fwd.flops / 2 * 2.5)
    copy = ks.plan_copy()
    assert [p.nbytes for p in copy] == [s * 2**20 for s in (256, 512, 1024, 2048, 4096)]
    assert all(p.bytes_moved == 2 * p.nbytes for p in copy)


def test_unknown_kind_is_rejected():
    with pytest.raises(SystemExit, match="unknown kind"):
        ks.main(["--dry-run", "--kinds", "gemm,conv"])


# ------------------------------------------------------------------------------ torch or CUDA missing: exit 2
def test_missing_torch_exits_2_with_one_line(no_torch, capsys):
    assert ks.main([]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernel_sweep: error:") and "torch" in lines[0]


def test_missing_cuda_exits_2(monkeypatch, capsys):
    fake = types.ModuleType("torch")
    fake.__version__ = "0.0+cpu"
    fake.version = types.SimpleNamespace(cuda=None)
    fake.cuda = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert ks.main(["--quick"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "CUDA" in lines[0]


def test_script_subprocess(tmp_path):
    # a `torch` that fails to import, whatever this interpreter has installed
    (tmp_path / "torch.py").write_text("raise ImportError('no torch here (test stand-in)')\n")
    env = {"PYTHONPATH": str(tmp_path), "PATH": ""}
    r = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--quick"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert _summary(r.stdout)[0]["total"] == 53
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "no torch here" in r.stderr


# ------------------------------------------------------------------ the CSV, driven by a stand-in torch module
class _T:
    """A tensor stand-in: every tensor operation returns a tensor."""

    def __getattr__(self, name):
        return lambda *a, **k: _T()

    def __mul__(self, other):
        return _T()


def _fake_cuda_torch() -> types.ModuleType:
    t = types.ModuleType("torch")
    t.__version__ = "9.9.9"
    t.version = types.SimpleNamespace(cuda="12.4")
    for name in ("bfloat16", "float32", "uint8", "float8_e4m3fn"):
        setattr(t, name, name)

    class Event:  # a CUDA event that records nothing: the sweep's timing code runs, its numbers are fakes
        def __init__(self, enable_timing=False):
            self.enable_timing = enable_timing

        def record(self):
            return None

        def elapsed_time(self, other):
            return 2.0                       # ms

    t.cuda = types.SimpleNamespace(
        is_available=lambda: True, get_device_name=lambda d=None: "Fake GPU X100", set_device=lambda d: None,
        synchronize=lambda: None, empty_cache=lambda: None, Event=Event, get_device_capability=lambda d=None: (9, 0))
    t.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 90100))
    t.device = lambda *a: a
    for name in ("randn", "empty", "ones", "empty_like", "randn_like", "mm", "_scaled_mm"):
        setattr(t, name, lambda *a, **k: _T())
    t.autograd = types.SimpleNamespace(grad=lambda *a, **k: (_T(),) * 3)
    return t


def _read_rows(path: Path) -> tuple[list[str], list[dict]]:
    lines = path.read_text().splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    rows = list(csv.DictReader(ln for ln in lines if not ln.startswith("#")))
    return comments, rows


def test_run_writes_the_csv(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "torch", _fake_cuda_torch())
    monkeypatch.setitem(sys.modules, "flash_attn", None)
    monkeypatch.setitem(sys.modules, "flash_attn_interface", None)
    out = tmp_path / "sweep.csv"
    assert ks.main(["--quick", "--out", str(out), "--peak-tflops", "1000", "--peak-gbps", "4000"]) == 0
    comments, rows = _read_rows(out)
    assert list(rows[0]) == ks.CSV_COLUMNS
    assert len(rows) == 53
    assert any("2.5 x forward" in c for c in comments) and comments[-1].startswith("# finished")
    gemm = [r for r in rows if r["kind"] == "gemm"]
    assert {r["status"] for r in gemm} == {"ok"} and {r["dtype"] for r in gemm} == {"bf16", "fp8"}
    g = gemm[0]
    flops = 2 * int(g["M"]) * int(g["N"]) * int(g["K"])
    assert float(g["median_s"]) == pytest.approx(2e-3)
    assert float(g["tflops_per_s"]) == pytest.approx(flops / 2e-3 / 1e12, rel=1e-3)
    peak = 2000 if g["dtype"] == "fp8" else 1000
    assert float(g["fraction_of_peak"]) == pytest.approx(float(g["tflops_per_s"]) / peak, abs=1e-4)
    copy = next(r for r in rows if r["kind"] == "hbm_copy")
    assert int(copy["bytes"]) == 2 * 2**30
    assert float(copy["gb_per_s"]) == pytest.approx(2 * 2**30 / 2e-3 / 1e9, rel=1e-3)
    # no importable attention implementation here: every attention point is recorded as skipped, not dropped
    attn = [r for r in rows if r["kind"] == "attention"]
    assert len(attn) == 36 and all(r["status"].startswith("skipped:") for r in attn)
    assert {r["device_name"] for r in rows} == {"Fake GPU X100"} and {r["cudnn_version"] for r in rows} == {"90100"}
    assert all(r["timestamp"] for r in rows)


def test_max_minutes_cap_is_recorded(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "torch", _fake_cuda_torch())
    out = tmp_path / "capped.csv"
    assert ks.main(["--quick", "--kinds", "gemm", "--out", str(out), "--max-minutes", "0"]) == 0
    comments, rows = _read_rows(out)
    assert len(rows) == 16 and all("max-minutes" in r["status"] for r in rows)
    assert "skipped_by_max_minutes=16" in comments[-1]
