"""What every exporter shares: the export targets, the ``LaunchConfig`` result, the plan → degrees arithmetic
(nodes, micro-batches, gradient accumulation, per-stage layer counts, an ICI × DCN mesh split) and the refusal rules.

Refusals come in two layers.  (1) The framework catalog (``catalogs/frameworks/<id>.yaml``): a plan its profile
cannot launch (``FrameworkProfile.plan_reasons``) is refused with the profile's own reason, so the export never
accepts what the planner would not offer for that framework.  (2) The exporter: a knob the framework's launch
arguments cannot state the way the plan means it (``refuse``), with what would be expressible instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.framework import FrameworkProfile, get_framework
from parplan.models.plan import Plan
from parplan.workloads.transformer import Workload

# export target → the framework catalog id whose launchability rules apply (catalogs/frameworks/*.yaml)
TARGETS = {"megatron": "megatron-core", "nemo": "nemo", "torchtitan": "torchtitan", "deepspeed": "deepspeed",
           "maxtext": "maxtext"}
TARGET_NAMES = {"megatron": "Megatron-LM", "nemo": "NeMo 2.0", "torchtitan": "torchtitan", "deepspeed": "DeepSpeed",
                "maxtext": "MaxText",
                # serving engines (``--serve``; launch/serve_common.py SERVE_TARGETS): no training profile
                "vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


@dataclass(frozen=True)
class LaunchConfig:
    """A plan written as one framework's launch arguments or config.

    ``framework``: the export target (``megatron`` …); ``filename``: a suggested file name; ``text``: the file
    itself; ``mapping``: the same settings as a structure (flag → value for command lines, the nested config for
    config files) — what the text was rendered from."""

    framework: str
    filename: str
    text: str
    mapping: dict = field(default_factory=dict)


def check_target(to: str) -> str:
    if to not in TARGETS:
        from parplan.errors import did_you_mean

        raise SpecError(f"bad value {to!r}", key="--to", allowed=list(TARGETS), hint=did_you_mean(str(to), TARGETS))
    return to


def refuse(to: str, knob: str, why: str, expressible: str) -> SpecError:
    """The one-line refusal of a plan the target cannot express: the knob, why, and what it could express."""
    return SpecError(f"{TARGET_NAMES[to]} cannot express {knob}: {why}", key=f"plan.{knob.split('=')[0]}",
                     hint=f"expressible: {expressible}")


@dataclass(frozen=True)
class Job:
    """A validated plan with the quantities every exporter derives from it."""

    to: str
    workload: Workload
    cluster: Cluster
    plan: Plan
    fw: FrameworkProfile

    @property
    def model(self):
        return self.workload.model

    @property
    def training(self):
        return self.workload.training

    @property
    def nodes(self) -> int:
        return int(self.cluster.group.nodes)

    @property
    def per_node(self) -> int:
        return int(self.cluster.group.devices_per_node)

    @property
    def domain(self) -> int:
        """Devices on one scale-up fabric (a node, an NVL72 rack, a TPU slice)."""
        g = self.cluster.group
        return int(getattr(g, "scale_up_devices", g.devices_per_node))

    @property
    def n_devices(self) -> int:
        return int(self.cluster.n_devices)

    @property
    def micro_batches(self) -> int:
        """Micro-batches per pipeline per step: global_batch / (dp · mbs) (validate_plan checks divisibility)."""
        return self.training.global_batch // (self.plan.dp * self.plan.mbs)

    @property
    def is_moe(self) -> bool:
        return getattr(self.model, "family", "") == "moe-transformer"

    @property
    def catalog_id(self) -> str | None:
        """The workload catalog id whose model this is (matched by name), for the frameworks' own model names."""
        return _catalog_ids().get(self.workload.name)

    @property
    def precision(self) -> str:
        return self.training.precision


@lru_cache(maxsize=1)
def _catalog_ids() -> dict[str, str]:
    """Workload display name → catalog id (catalogs/workloads/<id>.yaml ``name:``)."""
    from parplan.catalogs import entries
    from parplan.spec import load_yaml_file

    out: dict[str, str] = {}
    for ident, path in entries("workloads").items():
        data = load_yaml_file(str(path))
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            out.setdefault(data["name"], ident)
    return out


def make_job(to: str, workload: Workload, cluster: Cluster, plan: Plan) -> Job:
    """Validate ``plan`` for ``workload`` on ``cluster`` and against the target's framework profile."""
    from parplan.models.estimate import validate_plan

    check_target(to)
    if not cluster.is_homogeneous:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups; a launch export writes "
                        "one homogeneous job", key="--hw", hint="export a plan for a single-group cluster")
    validate_plan(workload, cluster, plan)
    fw = get_framework(TARGETS[to])
    reasons = fw.plan_reasons(plan, int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node)),
                              workload)
    if reasons:
        raise SpecError(f"{fw.name} cannot launch this plan: {reasons[0]}", key="plan",
                        hint=f"the {fw.id} profile (catalogs/frameworks/{fw.id}.yaml) rules it out")
    check_cp_kind(to, plan)
    check_research_knobs(to, plan)
    return Job(to=to, workload=workload, cluster=cluster, plan=plan, fw=fw)


# the context-parallel layouts each export writes (models/plan.py CP_KINDS): Megatron-Core's --cp-comm-type p2p is
# the ring, a2a is Ulysses (arguments.py, docs/source/api-guide/context_parallel.rst); the other targets' CP is the
# ring only (torchtitan: ring attention with a rotate method; NeMo/MaxText: as written by these exporters)
CP_KINDS_WRITTEN = {"megatron": ("ring", "ulysses"), "deepspeed": ("ulysses",)}


def check_cp_kind(to: str, plan: Plan) -> None:
    """A plan's cp_kind is written or refused, never dropped (a dropped layout would launch another job)."""
    kind = getattr(plan, "cp_kind", "ring")
    if plan.cp <= 1 or kind == "ring":
        return
    ok = CP_KINDS_WRITTEN.get(to, ("ring",))
    if kind not in ok:
        why = ("DCP's per-batch document placement is a research scheduler no framework flag selects"
               if kind == "dcp" else f"this export writes the {' and '.join(ok)} layout{'s' if len(ok) > 1 else ''} "
               "of context parallelism only")
        raise refuse(to, f"cp_kind={kind}", why, f"cp_kind={' or cp_kind='.join(ok)}")


# plan knobs priced from research systems that no export target has a launch argument for (models/plan.py): a plan
# with one of them is refused, never exported without it (that would launch another job)
RESEARCH_KNOBS = (
    ("rotate", "RTP's rotated weight shards (Luo, Zhong, Fox, arXiv 2311.01635) are a research prototype "
               "(wdlctc/rtp), not a flag of this framework", "rotate=false (zero=3: FSDP / ZeRO-3 gathers)"),
    ("helix", "HelixPipe's attention-parallel pipeline is in a Megatron-LM fork, not an upstream flag",
              "helix=false (1F1B or interleaved 1F1B pipelines)"),
)


def check_research_knobs(to: str, plan: Plan) -> None:
    """A plan with a research knob (``RESEARCH_KNOBS``) is refused, naming it: no target writes it."""
    for knob, why, expressible in RESEARCH_KNOBS:
        if getattr(plan, knob, False):
            raise refuse(to, f"{knob}=true", why, expressible)


# --- layer splits -------------------------------------------------------------------------------------------------
def stage_layer_counts(job: Job) -> list[int]:
    """Transformer layers per pipeline stage (vpp = 1), as Megatron-Core splits them: explicit first/last counts
    with the rest even over the middle stages; else (layers + embedding + loss, where they count as layers) even
    over the stages, the embedding / loss taken off the first / last (docs/api-guide/pipeline_parallel_layout.md,
    arguments.py --decoder-first/last-pipeline-num-layers, --account-for-*-in-pipeline-split)."""
    p, L = job.plan, int(job.model.layers)
    if p.pp == 1:
        return [L]
    fl, ll = p.first_layers, p.last_layers
    if fl or ll:
        mid = p.pp - (1 if fl else 0) - (1 if ll else 0)
        rest = L - fl - ll
        if mid == 0 or rest % mid:
            raise SpecError(f"{rest} layers left after first_layers={fl}, last_layers={ll} do not split evenly over "
                            f"{mid} stages", key="plan.first_layers")
        each = rest // mid
        return [fl or each] + [each] * (p.pp - 2) + [ll or each]
    e, lo = int(p.embed_as_layer), int(p.loss_as_layer)
    total = L + e + lo
    if total % p.pp:
        raise SpecError(f"layers + embedding + loss = {total} is not divisible by pp={p.pp}", key="plan.pp",
                        hint="Megatron-Core needs an even split when the embedding / loss count as layers")
    each = total // p.pp
    counts = [each] * p.pp
    counts[0] -= e
    counts[-1] -= lo
    return counts


def chunk_layer_counts(job: Job) -> list[int]:
    """Layers of every model chunk in pipeline order (pp·vpp chunks; chunk i runs on rank i mod pp)."""
    p = job.plan
    if p.vpp == 1:
        return stage_layer_counts(job)
    return [int(job.model.layers) // (p.pp * p.vpp)] * (p.pp * p.vpp)


def explicit_split(plan: Plan) -> bool:
    return bool(plan.first_layers or plan.last_layers or plan.embed_as_layer or plan.loss_as_layer)


# --- mesh split -----------------------------------------------------------------------------------------------------
def split_mesh(axes: list[tuple[str, int]], inner: int, total: int) -> dict[str, tuple[int, int]]:
    """Split each axis degree into (within a scale-up domain, across domains), filling the ``inner`` devices of a
    domain innermost-axis first (the order of ``axes``) — the Megatron-Core rank order tp, cp, (ep), dp, pp.
    Returns ``{axis: (ici, dcn)}``; a SpecError when the degrees cannot fill the domain exactly."""
    left = inner
    out: dict[str, tuple[int, int]] = {}
    for name, d in axes:
        ici = math.gcd(d, left)
        out[name] = (ici, d // ici)
        left //= ici
    if left != 1 or math.prod(d for _, d in axes) != total:
        raise SpecError(f"the degrees {dict(axes)} do not tile {total} devices in domains of {inner}", key="plan")
    return out


def fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
