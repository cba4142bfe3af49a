"""Fit parplan's global efficiency constants on the calibration rows of the published training runs.

    python benchmarks/calibrate.py            # fit and print the constants and the resulting MAPE
    python benchmarks/calibrate.py --write    # … and store them in catalogs/calibration/efficiency.yaml

What is fitted (and nothing else): per device, the GEMM efficiency of each dtype the calibration rows use and the
attention-kernel efficiency; globally, the per-kernel overhead and the GEMM half-saturation dimension.  The
objective is the source-balanced MAPE of the step time over the rows marked ``calibration`` in
data/accuracy_setup.csv (every other expressible row of each source).  The ``test`` rows are never seen here;
benchmarks/accuracy.py reports them separately.  Coordinate descent over a multiplicative grid, deterministic.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from published_runs import accuracy_table, load_runs, summarize  # noqa: E402

from parplan.catalogs import catalog_dir  # noqa: E402
from parplan.models.efficiency import Efficiency, efficiency_for  # noqa: E402

# start values of the two global constants (orders of magnitude, see the YAML's *_source keys)
START_KERNEL_OVERHEAD_S = 5e-6
START_GEMM_HALF_DIM = 128.0
# devices that share silicon (and so constants) with a calibrated one
SAME_SILICON = {"a100-sxm-40gb": "a100-sxm-80gb"}


def params_used(runs) -> dict[str, float]:
    """Start values: the defaults, one entry per (device, dtype) GEMM and per device attention in the rows."""
    p: dict[str, float] = {}
    eff = efficiency_for("uncalibrated-device")  # the defaults: the fit starts from them, so it is reproducible
    for run in runs:
        dev = SAME_SILICON.get(run.cluster.group.device.id, run.cluster.group.device.id)
        prec = run.workload.training.precision
        p[f"{dev}.gemm.{prec}"] = eff.gemm[prec]
        if run.workload.training.attention == "flash":
            p[f"{dev}.attention"] = eff.attention
    p["kernel_overhead_s"] = START_KERNEL_OVERHEAD_S
    p["gemm_half_dim"] = START_GEMM_HALF_DIM
    return dict(sorted(p.items()))


def eff_factory(p: dict[str, float]):
    def eff_for(device_id: str) -> Efficiency:
        dev = SAME_SILICON.get(device_id, device_id)
        e = efficiency_for(dev)
        gemm = dict(e.gemm)
        for key, val in p.items():
            parts = key.split(".")
            if parts[0] == dev and parts[1] == "gemm":
                gemm[parts[2]] = val
        return replace(e, gemm=gemm, attention=p.get(f"{dev}.attention", e.attention),
                       kernel_overhead_s=p["kernel_overhead_s"], gemm_half_dim=p["gemm_half_dim"])
    return eff_for


def objective(runs, p) -> float:
    return summarize(accuracy_table(runs, eff_factory(p)))["balanced_mape_pct"]


BOUNDS = {"kernel_overhead_s": (0.0, 50e-6), "gemm_half_dim": (0.0, 1024.0)}


def fit(runs, p, sweeps: int = 4) -> dict[str, float]:
    best = objective(runs, p)
    steps = (0.7, 0.85, 0.93, 0.97, 1.03, 1.07, 1.15, 1.3)
    for sweep in range(sweeps):
        improved = False
        for key in list(p):
            lo, hi = BOUNDS.get(key, (0.05, 1.0))
            cur = p[key]
            cands = [min(hi, max(lo, cur * s)) for s in steps]
            if cur == 0.0:
                cands = [hi * f for f in (0.05, 0.1, 0.2, 0.4)]
            for c in cands:
                trial = {**p, key: c}
                val = objective(runs, trial)
                if val < best - 1e-9:
                    best, p, improved = val, trial, True
        print(f"sweep {sweep + 1}: calibration balanced MAPE {best:.2f} %", file=sys.stderr)
        if not improved:
            break
    return p


def write_yaml(p: dict[str, float], rows: list[str]) -> Path:
    path = catalog_dir("calibration") / "efficiency.yaml"
    text = path.read_text()
    text = re.sub(r'kernel_overhead: "[^"]*"', f'kernel_overhead: "{p["kernel_overhead_s"] * 1e6:.2f} us"', text)
    text = re.sub(r"gemm_half_dim: [0-9.]+", f"gemm_half_dim: {p['gemm_half_dim']:.0f}", text)
    devices: dict[str, dict] = {}
    for key, val in p.items():
        parts = key.split(".")
        if len(parts) >= 2:
            devices.setdefault(parts[0], {"gemm": {}})
            if parts[1] == "gemm":
                devices[parts[0]]["gemm"][parts[2]] = val
            else:
                devices[parts[0]][parts[1]] = val
    for alias, dev in SAME_SILICON.items():
        if dev in devices:
            devices[alias] = {**devices[dev], "alias": dev}
    prov = f"calibrated by benchmarks/calibrate.py on the {len(rows)} calibration rows of benchmarks/data/accuracy_setup.csv"
    lines = ["devices:"]
    for dev, d in sorted(devices.items()):
        lines.append(f"  {dev}:")
        g = d["gemm"]
        if "fp16" not in g and "bf16" in g:
            g = {**g, "fp16": g["bf16"]}  # same tensor-core peak and kernels for fp16 and bf16
        lines.append("    gemm: {" + ", ".join(f"{k}: {v:.3f}" for k, v in sorted(g.items())) + "}")
        if "attention" in d:
            lines.append(f"    attention: {d['attention']:.3f}")
        note = f" (same silicon as {d['alias']})" if "alias" in d else ""
        lines.append(f'    provenance: "{prov}{note}"')
    text = re.sub(r"\ndevices:.*\Z", "\n" + "\n".join(lines) + "\n", text, flags=re.S)
    path.write_text(text)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the fitted constants in the catalog")
    ap.add_argument("--sweeps", type=int, default=4)
    args = ap.parse_args(argv)
    runs, _ = load_runs()
    cal = [r for r in runs if r.split == "calibration"]
    p0 = params_used(cal)
    print(f"calibrating {len(p0)} constants on {len(cal)} rows", file=sys.stderr)
    p = fit(cal, p0, args.sweeps)
    for k, v in p.items():
        print(f"{k:32s} {v:.4g}   (start {p0[k]:.4g})")
    s_cal = summarize(accuracy_table(cal, eff_factory(p)))
    test = [r for r in runs if r.split == "test"]
    s_test = summarize(accuracy_table(test, eff_factory(p)))
    print(f"calibration rows: balanced MAPE {s_cal['balanced_mape_pct']:.1f} %, worst {s_cal['max_ape_pct']:.1f} %")
    print(f"test rows       : balanced MAPE {s_test['balanced_mape_pct']:.1f} %, worst {s_test['max_ape_pct']:.1f} %")
    if args.write:
        path = write_yaml(p, [r.row_id for r in cal])
        print(f"wrote {path.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
