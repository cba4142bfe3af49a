"""The README's "From a plan to a launched job", run as written: every `parplan …` line of that block, in order,
through typer's CliRunner in a scratch folder (with the README's examples/), a dask.distributed ``LocalCluster``
standing in for the scheduler the README starts, and the user catalog in the scratch folder.  Each step's output
is checked for what the README says it gives."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from parplan.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## From a plan to a launched job"


def journey_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert HEADING in text, "the README lost its end-to-end section"
    block = text.split(HEADING, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("parplan ")]


def test_the_journey_has_every_step():
    verbs = [shlex.split(c)[1] for c in journey_commands()]
    assert verbs == ["suggest", "export", "suggest", "plot", "sweep", "plot", "suggest", "catalog", "estimate"]


@pytest.fixture()
def scratch(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARPLAN_CATALOG_PATH", str(tmp_path / "user-catalog"))
    (tmp_path / "user-catalog").mkdir()
    return tmp_path


def test_readme_journey_runs_end_to_end(scratch):
    distributed = pytest.importorskip("dask.distributed")
    runner = CliRunner()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        for cmd in journey_commands():
            cmd = cmd.replace("tcp://127.0.0.1:8786", lc.scheduler_address)
            r = runner.invoke(app, shlex.split(cmd)[1:])
            assert r.exit_code == 0, f"{cmd}\n{r.output}"
            check_step(cmd, r, scratch)


def check_step(cmd: str, r, folder: Path) -> None:
    if cmd.startswith("parplan suggest llama3-70b --hw dgx-h100-64 --top 5 --export"):
        cfg = tomllib.loads((folder / "llama3-70b.toml").read_text())
        assert cfg["parallelism"]["tensor_parallel_degree"] >= 1 and "activation_checkpoint" in cfg
    elif cmd.startswith("parplan suggest"):
        assert re.search(r"^\s*1\s+\d", r.stdout, re.M), r.stdout  # a ranked first plan
    elif cmd.startswith("parplan export"):
        script = (folder / "launch_megatron.sh").read_text()
        assert "--tensor-model-parallel-size 8" in script and "--pipeline-model-parallel-size 4" in script
        assert "--num-layers-per-virtual-pipeline-stage 4" in script and "--sequence-parallel" in script
    elif cmd.startswith("parplan plot"):
        out = folder / shlex.split(cmd)[-1]
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    elif cmd.startswith("parplan sweep"):
        df = pd.read_parquet(folder / "sweep.parquet")
        assert len(df) == 20 and set(df["size"]) == {8, 16, 32, 64} and df["model"].nunique() == 5
        assert set(df["status"]) <= {"ok", "infeasible"} and (df["status"] == "ok").sum() >= 15
    elif cmd.startswith("parplan catalog add"):
        assert (folder / "user-catalog" / "hardware" / "devices" / "h100-nvl.yaml").is_file()
    elif cmd.startswith("parplan estimate"):
        assert "NVIDIA H100 NVL" in r.stdout or "h100-nvl" in r.stdout
        assert "tokens/s" in r.stdout


def test_the_custom_gpu_prices_as_its_datasheet_says(scratch):
    """The README's custom GPU: the same plan on it and on the catalog's H100 SXM differs as the datasheets do
    (less FLOP/s and bandwidth, PCIe inside the node: slower)."""
    runner = CliRunner()
    args = ["estimate", "llama3-8b", "--plan", "tp=2,pp=1,mbs=1,zero=1,recompute=none,sp=true", "--format", "json"]
    nvl = json.loads(runner.invoke(app, args + ["--hw", "examples/cluster-h100-nvl-32.yaml"]).stdout)["plans"][0]
    sxm = json.loads(runner.invoke(app, args + ["--hw", "h100-sxm-80gb:4x8"]).stdout)["plans"][0]
    assert nvl["memory_capacity_bytes"] > sxm["memory_capacity_bytes"]  # 94 GB > 80 GiB
    assert nvl["step_time_s"] > sxm["step_time_s"]
