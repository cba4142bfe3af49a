"""The ``parplan export`` command: a plan written as a training framework's launch arguments or config, or (with
``--serve`` and ``--deployment``) a serving deployment written as a vLLM / SGLang / TensorRT-LLM launch script.

Exit codes: 0 written; 2 bad input — a bad option, file or plan, or a plan the framework cannot launch or express
(one ``error:`` line naming the knob and what would be expressible).
"""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer

from parplan.cli.common import (check_precision, DebugOpt, GlobalBatchOpt, handle_errors, HwOpt, ImbalanceOpt, ModelArg,
                                one_line, OutputOpt, PrecisionOpt, SeqLenOpt)
from parplan.errors import SpecError, short


class Target(str, Enum):
    megatron = "megatron"
    nemo = "nemo"
    torchtitan = "torchtitan"
    deepspeed = "deepspeed"
    maxtext = "maxtext"
    vllm = "vllm"  # serving engines: with --serve and --deployment (launch/serve_common.py SERVE_TARGETS)
    sglang = "sglang"
    trtllm = "trtllm"


def _write(cfg, output: Path, plan_text: str) -> None:
    try:
        output.write_text(cfg.text, encoding="utf-8")
    except ValueError:  # a NUL byte in the path
        raise SpecError(f"bad file name {short(str(output))}", key="--output") from None
    if output.suffix == ".sh":
        output.chmod(output.stat().st_mode | 0o111)
    from parplan.launch.common import TARGET_NAMES

    sys.stderr.write(f"wrote {one_line(output)}: {TARGET_NAMES[cfg.framework]} launch "
                     f"{'script' if output.suffix == '.sh' else 'config'} for {plan_text}\n")


def export_framework(export: "Target | None", framework: str | None, export_output: Path | None) -> str | None:
    """``suggest --export``: the framework the search ranks under: ``--export``'s own (so the best plan is one it can launch), or
    ``--framework``; both given and different is an error."""
    if export is None:
        if export_output is not None:
            raise SpecError("--export-output without --export", key="--export-output",
                            hint="add --export megatron|nemo|torchtitan|deepspeed|maxtext")
        return framework
    from parplan.launch.common import TARGETS

    if export.value not in TARGETS:  # a serving engine: its launch script comes from a deployment, not a plan
        raise SpecError(f"--export {export.value} launches a serving deployment, not a training plan", key="--export",
                        allowed=sorted(TARGETS), hint=f"parplan export MODEL --hw HW --serve serve.yaml --deployment "
                        f"… --to {export.value}")
    own = TARGETS[export.value]
    if framework is not None and framework != own:
        raise SpecError(f"--export {export.value} launches with framework {own!r}, not --framework {framework!r}",
                        key="--export", hint=f"drop --framework, or give --framework {own}")
    return own


def write_launch(workload: Any, cluster: Any, plan: Any, to: str, output: Optional[Path] = None):
    """Write the launch arguments / config of a complete ``plan`` for framework ``to`` (``suggest --export``).

    ``workload`` / ``cluster``: loaded objects or references (as ``export_plan`` takes them); ``plan``: a ``Plan``
    (e.g. ``PlanSet.best.plan``).  Writes ``output`` (default: the config's suggested file name in the current
    folder) and says on stderr what it wrote; returns the ``LaunchConfig``.  A refused plan raises ``SpecError``.
    """
    from parplan.launch import export_plan

    cfg = export_plan(workload, cluster, plan, to)
    p = getattr(plan, "to_string", None)
    _write(cfg, Path(output) if output is not None else Path(cfg.filename), p() if p else str(plan))
    return cfg


SERVE_TO = ("vllm", "sglang", "trtllm")


def _export_serving(model: str, hw: str, serve: str | None, deployment: str | None, to: str, plan: str | None,
                    output: Path | None, training_opts: dict) -> None:
    """``export --serve serve.yaml --deployment … --to vllm|sglang|trtllm``: the engine's launch script."""
    if to not in SERVE_TO:
        raise SpecError(f"--to {to} is a training framework; a serving export goes to vllm, sglang or trtllm",
                        key="--to", allowed=list(SERVE_TO))
    for flag, value in (("--serve", serve), ("--deployment", deployment)):
        if value is None:
            raise SpecError(f"a serving export (--to {to}) needs {flag}", key=flag,
                            hint='e.g. --serve serve.yaml --deployment "tp=8,batch=64,chunk=2048"')
    if plan is not None:
        raise SpecError("--plan is a training plan; a serving export takes --deployment", key="--plan")
    given = [k.replace("_", "-") for k, v in training_opts.items() if v is not None]
    if given:
        raise SpecError(f"--{given[0]} sets a training key; a serving export reads the request mix from --serve",
                        key=f"--{given[0]}")
    from parplan.launch.export import export_serving

    cfg = export_serving(model, hw, serve, deployment, to)
    if output is None:
        sys.stdout.write(cfg.text)
    else:
        _write(cfg, output, deployment)


def register(app: typer.Typer) -> None:
    @app.command("export")
    @handle_errors
    def export_cmd(
        model: ModelArg,
        hw: HwOpt,
        plan: Optional[str] = typer.Option(None, "--plan", show_default=False,
                                           help='e.g. "tp=8,pp=4,vpp=5,mbs=1,zero=1,recompute=selective,sp=true"; '
                                                "knobs left out are chosen as `estimate` chooses them"),
        to: Target = typer.Option(..., "--to", help="megatron | nemo | torchtitan | deepspeed | maxtext; with --serve: "
                                                    "vllm | sglang | trtllm"),
        serve: Optional[str] = typer.Option(None, "--serve", show_default=False,
                                            help="serve.yaml (request mix, SLOs, precisions): a serving export"),
        deployment: Optional[str] = typer.Option(None, "--deployment", show_default=False,
                                                 help='with --serve, e.g. "tp=8,batch=64,chunk=2048" or '
                                                      '"prefill:2x(tp=4)+decode:1x(tp=8,batch=128)"'),
        seq_len: SeqLenOpt = None,
        global_batch: GlobalBatchOpt = None,
        precision: PrecisionOpt = None,
        expert_imbalance: ImbalanceOpt = None,
        output: OutputOpt = None,
        max_plans: Optional[int] = typer.Option(None, "--max-plans", show_default=False,
                                                help="a partial plan: the work budget of its completion"),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
        debug: DebugOpt = False,
    ) -> None:
        """Write a plan as a framework's launch arguments or config (Megatron-LM script, NeMo YAML, torchtitan TOML,
        DeepSpeed config + launcher, MaxText YAML), or a serving deployment (--serve, --deployment) as a vLLM,
        SGLang or TensorRT-LLM launch script."""
        if serve is not None or deployment is not None or to.value in SERVE_TO:
            _export_serving(model, hw, serve, deployment, to.value, plan, output,
                            dict(seq_len=seq_len, global_batch=global_batch, precision=precision,
                                 expert_imbalance=expert_imbalance, max_plans=max_plans))
            return
        if plan is None:
            raise SpecError("a training export needs --plan", key="--plan",
                            hint='e.g. --plan "tp=8,pp=4" (or --serve serve.yaml --deployment … --to vllm)')
        from parplan.api import _complete
        from parplan.cli.progress import LazyProgress
        from parplan.hardware.catalog import load_cluster
        from parplan.launch import TARGETS, export_plan
        from parplan.planner.budget import check_max_plans
        from parplan.workloads.loader import load_workload

        if max_plans is not None:
            check_max_plans(max_plans)
        check_precision(precision)
        target = to.value
        # the target's catalog profile decides which completions are launchable (as `estimate --framework` does)
        w = load_workload(model, seq_len=seq_len, global_batch=global_batch, precision=precision,
                          framework=TARGETS[target], expert_imbalance=expert_imbalance)
        c = load_cluster(hw)
        bar = LazyProgress(not quiet, "completing the plan")
        try:
            p = _complete(w, c, plan, max_plans=max_plans, progress=bar)
        finally:
            bar.close()
        cfg = export_plan(w, c, p, target)
        if output is None:
            sys.stdout.write(cfg.text)
        else:
            _write(cfg, output, p.to_string())
