"""The measured-here path of the task-graph family: the C/OpenMP kernels build with the system compiler and run, the
calibration writes socket + machine files that --hw accepts, and the model predicts the direction of fib's
fine-grain collapse on this machine (times are never asserted).  Everything skips cleanly without a compiler."""
from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from parplan.cli.calibrate_cmd import register
from parplan.hardware.cpu_probe import NoOpenMP, build_kernels, run_kernel
from parplan.hardware.cpu import load_cpu_machine, machine_from_dict
from parplan.models.tasks import estimate_plan
from parplan.workloads.taskgraph import _fib_calls, load_taskgraph


@pytest.fixture(scope="module")
def exes(tmp_path_factory):
    try:
        return build_kernels(tmp_path_factory.mktemp("omp"), ("fib", "nqueens", "sort", "stencil", "deps"))
    except NoOpenMP as e:
        pytest.skip(f"no C compiler with OpenMP here: {e}")


def test_kernels_compute_the_right_answers(exes):
    assert run_kernel(exes["fib"], [16, 8, 1], 2)["result"] == 987
    assert run_kernel(exes["nqueens"], [8, 2, 1], 2)["result"] == 92 and run_kernel(exes["nqueens"], [8, 2, 1], 1)["ok"]
    assert run_kernel(exes["sort"], [20000, 256, 1], 2)["ok"]
    assert run_kernel(exes["stencil"], [66, 8, 2, 1], 2)["ok"]  # tasks in dependence order = the serial sweeps
    d = run_kernel(exes["deps"], [2000, 1], 1)
    assert d["tasks"] == 2000 and d["deps_per_task_s"] > 0


def test_fib_collapse_direction_is_predicted(exes):
    """Fine grain (cutoff 2) is slower than coarse (cutoff 16) in the measurement and in the prediction for it, with
    the calibrated per-task cost of this machine (a generous, honest check: direction, not magnitude)."""
    from parplan.hardware.cpu_probe import task_costs

    c = task_costs({"fib": exes["fib"]}, 1, reps=1)
    sock = {"id": "here", "name": "here", "kind": "cpu-socket", "vendor": "x", "cores": 1, "base_clock_ghz": 2.0,
            "fp64_flops_per_cycle": {"scalar": 4}, "l1d_per_core": "32 KiB", "l2_per_core": "1 MiB",
            "stream_bandwidth": "10 GB/s", "core_bandwidth": "10 GB/s", "dram_latency": "100 ns",
            "task_overhead": f"{c['task_overhead_s'] * 1e9:.3f} ns", "task_runtime": "libgomp",
            "source": "test: measured fib slope"}
    m = machine_from_dict(sock)
    meas, pred = {}, {}
    for cut in (2, 16):
        d = run_kernel(exes["fib"], [22, cut, 3], 1)
        spec = load_taskgraph({"family": "task-graph", "name": "f", "grain": [cut],
                               "kernel": {"name": "fib", "n": 22, "unit_s": d["serial_s"] / _fib_calls(22)}})
        meas[cut] = d["time_s"]
        pred[cut] = estimate_plan(spec, m, {"runtime": "libgomp", "threads": 1, "sockets": 1, "grain": cut,
                                            "ranks": 1}).total_s
    assert (meas[2] > meas[16]) == (pred[2] > pred[16])
    assert pred[2] > pred[16]


def test_calibrate_writes_files_hw_accepts(tmp_path, monkeypatch):
    """`parplan calibrate cpu -o` writes a cpu-socket file and a cpu-cluster file that load; the measurements are
    replaced by fast stand-ins here (the real ones take seconds), the file writing and the CLI are real."""
    import parplan.hardware.cpu_probe as cc
    import typer

    fake = {"cores": 2, "smt": 1, "sockets": 1, "clock_ghz": 2.5, "clock_known": True, "vendor": "v",
            "model": "Test CPU", "width": "simd256", "l1d": "32 KiB", "l2": "1 MiB", "l3": "16 MiB"}
    monkeypatch.setattr(cc, "machine_facts", lambda: fake)
    monkeypatch.setattr(cc, "gemm_per_core", lambda reps=5: 4.0e10)
    monkeypatch.setattr(cc, "build_kernels", lambda *a, **k: (_ for _ in ()).throw(NoOpenMP("no compiler (test)")))
    monkeypatch.setattr(cc, "stream_numpy", lambda cores, reps=5: {"core_bw": 1e10, "socket_bw": 2e10,
                                                                    "latency_s": None})
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """A group root, so that `calibrate cpu` is a subcommand as in the real app."""

    register(app)
    out = tmp_path / "mycpu.yaml"
    r = CliRunner().invoke(app, ["calibrate", "cpu", "-o", str(out), "--reps", "1"])
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(out.read_text())
    assert doc["kind"] == "cpu-socket" and doc["cores"] == 2 and "task_overhead" not in doc
    m = load_cpu_machine(tmp_path / "mycpu-node.yaml")
    assert m.socket.stream_bytes_per_s == pytest.approx(2e10) and m.sockets_per_node == 1
    bad = CliRunner().invoke(app, ["calibrate", "cpu", "-o", str(tmp_path / "x.txt")])
    assert bad.exit_code == 2


def test_calibrated_dependence_costs_reach_the_profile(tmp_path):
    from parplan.models.tasks_terms import profiles

    sock = {"id": "here", "name": "here", "kind": "cpu-socket", "vendor": "x", "cores": 4, "base_clock_ghz": 2.0,
            "fp64_flops_per_cycle": {"scalar": 4}, "l1d_per_core": "32 KiB", "l2_per_core": "1 MiB",
            "stream_bandwidth": "10 GB/s", "core_bandwidth": "10 GB/s", "dram_latency": "100 ns",
            "task_overhead": "50 ns", "task_contention": "200 ns", "task_dependence": "10 ns",
            "task_dependence_contention": "70 ns", "task_runtime": "libgomp", "source": "test socket file"}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(sock))
    p = profiles(["libgomp", "libomp"], socket=load_cpu_machine(f).socket)
    assert p.values["dep"][0] == pytest.approx(10e-9) and p.values["dep_s1"][0] == pytest.approx(20e-9)
    assert p.values["dep_s1"][1] == 0.0  # only the measured runtime takes the measurement
    # the one-thread cost measured is create + sched + the uncontended lock (at most half of it under the lock), and
    # the lock at every core is the contention measured
    v = p.values
    assert v["create"][0] + v["sched"][0] + v["lock_s0"][0] == pytest.approx(50e-9)
    assert v["lock_s0"][0] == pytest.approx(25e-9) and v["lock_s0"][0] + 3 * v["lock_s1"][0] == pytest.approx(200e-9)
