"""Single-plan estimate: validates a plan against a workload and cluster, runs the vectorized model on it and
wraps the result in named, unit-suffixed dataclasses."""
from __future__ import annotations

from dataclasses import dataclass, field


from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.plan import Plan
from parplan.models.families import cost_model
from parplan.models.plan_arrays import PlanArrays
from parplan.models.training_memory import MEMORY_PARTS
from parplan.workloads.transformer import Workload

GiB = float(2**30)


@dataclass(frozen=True)
class CostBreakdown:
    """Where the time of one step goes (seconds, critical pipeline stage) and what one device holds (bytes)."""

    time_s: dict[str, float]
    memory_bytes: dict[str, float]

    @property
    def total_time_s(self) -> float:
        return float(sum(self.time_s.values()))

    @property
    def total_memory_bytes(self) -> float:
        return float(sum(self.memory_bytes.values()))


@dataclass(frozen=True)
class Estimate:
    plan: Plan
    workload: str
    cluster: str
    n_devices: int
    step_time_s: float
    tokens_per_s: float
    mfu: float
    hfu: float
    model_flops_per_step: float
    memory_peak_bytes: float
    memory_capacity_bytes: float
    fits: bool
    reasons: tuple[str, ...]
    breakdown: CostBreakdown
    micro_batches: int
    critical_stage: str
    heaviest_memory_stage: int
    compute_bound_s: float
    provenance: str
    extras: dict = field(default_factory=dict)
    provenance_class: str = "defaults"
    framework: str = "megatron-core"
    step_time_low_s: float = float("nan")  # 80 % interval from the cross-validated residuals of provenance_class
    step_time_high_s: float = float("nan")
    chosen: dict = field(default_factory=dict)  # knobs a partial plan left out, as chosen

    @property
    def tokens_per_s_low(self) -> float:
        return self.tokens_per_s * self.step_time_s / self.step_time_high_s

    @property
    def tokens_per_s_high(self) -> float:
        return self.tokens_per_s * self.step_time_s / self.step_time_low_s

    def to_dict(self) -> dict:
        """JSON-ready dict (contract v1 keys: fits, step_time_s, tokens_per_s, mfu, memory_peak_bytes, breakdown, plan)."""
        return {
            "workload": self.workload,
            "cluster": self.cluster,
            "n_devices": self.n_devices,
            "plan": self.plan.as_dict(),
            "plan_string": self.plan.to_string(),
            "fits": self.fits,
            "reasons": list(self.reasons),
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_device": self.tokens_per_s / self.n_devices,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "model_flops_per_step": self.model_flops_per_step,
            "memory_peak_bytes": self.memory_peak_bytes,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "micro_batches": self.micro_batches,
            "critical_stage": self.critical_stage,
            "heaviest_memory_stage": self.heaviest_memory_stage,
            "compute_bound_s": self.compute_bound_s,
            "breakdown": {"time_s": dict(self.breakdown.time_s), "memory_bytes": dict(self.breakdown.memory_bytes)},
            "provenance": self.provenance,
            "provenance_class": self.provenance_class,
            "framework": self.framework,
            "step_time_low_s": self.step_time_low_s,
            "step_time_high_s": self.step_time_high_s,
            "tokens_per_s_low": self.tokens_per_s_low,
            "tokens_per_s_high": self.tokens_per_s_high,
            "chosen": dict(self.chosen),
        }


def validate_plan(workload: Workload, cluster: Cluster, plan: Plan) -> None:
    """Raise ``SpecError`` when a plan cannot run at all (as opposed to not fitting in memory)."""
    mdl, job = workload.model, workload.training
    if not cluster.is_homogeneous:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups; a plan string describes "
                        "a homogeneous plan", key="groups",
                        hint="give a heterogeneous plan with --plan-file, or let `parplan suggest` plan it")
    n = cluster.n_devices
    if plan.n_devices != n:
        raise SpecError(f"dp×tp×pp×cp = {plan.dp}×{plan.tp}×{plan.pp}×{plan.cp} = {plan.n_devices} but the cluster "
                        f"has {n} devices", key="plan", hint="omit dp to derive it from the device count")
    if mdl.heads % plan.tp:
        raise SpecError(f"tp={plan.tp} does not divide heads={mdl.heads}", key="plan.tp",
                        hint=f"choose tp among {_divisors(mdl.heads)}")
    if mdl.kv_heads % plan.tp:
        raise SpecError(f"tp={plan.tp} does not divide kv_heads={mdl.kv_heads}", key="plan.tp",
                        hint=f"choose tp among {_divisors(mdl.kv_heads)}")
    if plan.pp > mdl.layers:
        raise SpecError(f"pp={plan.pp} exceeds the {mdl.layers} layers", key="plan.pp")
    if plan.vpp > 1:
        if plan.pp == 1:
            raise SpecError("vpp>1 (interleaved schedule) needs pp>1", key="plan.vpp")
        uneven = plan.first_layers or plan.last_layers or plan.embed_as_layer or plan.loss_as_layer
        if not uneven and mdl.layers % (plan.pp * plan.vpp):
            raise SpecError(f"layers={mdl.layers} is not divisible by pp×vpp={plan.pp * plan.vpp}", key="plan.vpp",
                            hint="interleaving needs equal model chunks")
    per = plan.dp * plan.mbs
    if job.global_batch % per:
        raise SpecError(f"global_batch={job.global_batch} is not divisible by dp×mbs={plan.dp}×{plan.mbs}={per}",
                        key="training.global_batch", hint="change mbs, dp or the global batch")
    m = job.global_batch // per
    if plan.vpp > 1 and m % plan.pp:
        raise SpecError(f"the interleaved schedule needs micro-batches per pipeline ({m}) divisible by pp={plan.pp}",
                        key="plan.vpp")
    if plan.cp > 1 and job.seq_len % (2 * plan.cp):
        raise SpecError(f"seq_len={job.seq_len} is not divisible by 2×cp={2 * plan.cp} (load-balanced causal CP)",
                        key="plan.cp")
    dpn = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    if plan.tp > dpn and plan.tp % dpn:
        raise SpecError(f"tp={plan.tp} spans scale-up domains unevenly ({dpn} devices per domain)", key="plan.tp")
    _validate_v2(mdl, plan)
    cost_model(workload).validate(workload, cluster, plan)


def _validate_v2(mdl, plan: Plan) -> None:
    """Contract-v2 knobs: re-sharding, hybrid sharding, uneven pipeline stages."""
    if not plan.reshard and plan.zero != 3:
        raise SpecError(f"reshard=false needs zero=3 (FSDP), got zero={plan.zero}", key="plan.reshard")
    group = plan.dp * plan.cp
    if plan.shard:
        if plan.zero == 0:
            raise SpecError("shard (hybrid sharding) needs zero ≥ 1", key="plan.shard")
        if group % plan.shard:
            raise SpecError(f"shard={plan.shard} does not divide dp×cp={group}", key="plan.shard",
                            hint=f"choose shard among {_divisors(group)}")
    ea, la = int(plan.embed_as_layer), int(plan.loss_as_layer)
    explicit = plan.first_layers or plan.last_layers
    if (ea or la or explicit) and plan.pp == 1:
        raise SpecError("uneven pipeline stages (first_layers, last_layers, embed_as_layer, loss_as_layer) need pp>1",
                        key="plan.pp")
    if explicit and (ea or la):
        raise SpecError("give either first_layers/last_layers or embed_as_layer/loss_as_layer, not both", key="plan")
    L, p, v = mdl.layers, plan.pp, plan.vpp
    if ea or la:
        if (L + ea + la) % (p * v):
            raise SpecError(f"layers + embedding + loss = {L + ea + la} is not divisible by pp×vpp={p * v}",
                            key="plan.embed_as_layer", hint="Megatron-Core splits them into equal chunks")
        if (L + ea + la) // p <= max(ea, la):
            raise SpecError("a stage would hold no transformer layer", key="plan.pp")
    elif explicit:
        first = plan.first_layers or 0
        last = plan.last_layers or 0
        rest_stages = p - (1 if first else 0) - (1 if last else 0)
        rest = L - first - last
        if rest < 0 or (rest_stages == 0 and rest != 0) or (rest_stages > 0 and (rest <= 0 or rest % rest_stages)):
            raise SpecError(f"first_layers={first}, last_layers={last} leave {rest} layers for {rest_stages} other "
                            "stages: they must split evenly", key="plan.first_layers")
        if first and last == 0 and p == 2 and rest <= 0:
            raise SpecError("the last stage would hold no layer", key="plan.first_layers")



def _divisors(x: int) -> str:
    return ", ".join(str(d) for d in range(1, x + 1) if x % d == 0 and d <= 64)


def memory_reasons(res: dict, i: int, plan: Plan, capacity: float, flash: bool = True) -> list[str]:
    """Why a plan does not fit, with what would help."""
    peak = float(res["memory_peak_bytes"][i])
    if peak <= capacity:
        return []
    stage = int(res["heaviest_memory_stage"][i])
    parts = {k: float(res[k][i]) for k in MEMORY_PARTS}
    big = max(("params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes"), key=lambda k: parts[k])
    tips = []
    if big == "activations_bytes":
        if plan.recompute != "full":
            # with fused attention no score matrices are stored, so selective recompute saves nothing
            tips.append("recompute=" + ("selective" if plan.recompute == "none" and not flash else "full"))
        if plan.mbs > 1:
            tips.append("a smaller mbs")
        if not plan.sp and plan.tp > 1:
            tips.append("sp=true")
        tips.append("larger tp or pp")
    else:
        if plan.zero < 3:
            tips.append(f"zero={plan.zero + 1}" if plan.dp * plan.cp > 1 else "more devices for zero sharding")
        tips.append("larger tp or pp")
    return [f"memory {peak / GiB:.1f} GiB/device > {capacity / GiB:.1f} GiB at stage {stage} "
            f"(largest part: {big.replace('_bytes', '')} {parts[big] / GiB:.1f} GiB): try " + ", ".join(tips)]


def estimate_from_arrays(workload: Workload, cluster: Cluster, plan: Plan, res: dict, i: int,
                         provenance: str, provenance_class: str = "defaults") -> Estimate:
    cap = float(res["memory_capacity_bytes"][i])
    reasons = memory_reasons(res, i, plan, cap, workload.training.attention == "flash")
    crit = {0: "first", 1: "middle", 2: "last"}[int(res["critical_stage"][i])]
    if plan.pp == 1:
        crit = "only"
    return Estimate(
        plan=plan, workload=workload.name, cluster=cluster.name, n_devices=cluster.n_devices,
        step_time_s=float(res["step_time_s"][i]), tokens_per_s=float(res["tokens_per_s"][i]),
        mfu=float(res["mfu"][i]), hfu=float(res["hfu"][i]), model_flops_per_step=float(res["model_flops_per_step"][i]),
        memory_peak_bytes=float(res["memory_peak_bytes"][i]), memory_capacity_bytes=cap,
        fits=bool(res["fits"][i]), reasons=tuple(reasons),
        breakdown=CostBreakdown(time_s={k: float(res[k][i]) for k in cost_model(workload).TIME_PARTS},
                                memory_bytes={k: float(res[k][i]) for k in MEMORY_PARTS}),
        micro_batches=int(round(float(res["micro_batches"][i]))), critical_stage=crit,
        heaviest_memory_stage=int(res["heaviest_memory_stage"][i]), compute_bound_s=float(res["compute_bound_s"][i]),
        provenance=provenance, provenance_class=provenance_class,
        framework=getattr(workload.training, "framework", "megatron-core"),
        step_time_low_s=float(res["step_time_low_s"][i]) if "step_time_low_s" in res else float("nan"),
        step_time_high_s=float(res["step_time_high_s"][i]) if "step_time_high_s" in res else float("nan"),
    )


def estimate_plan(workload: Workload, cluster: Cluster, plan: Plan, eff: Efficiency | None = None) -> Estimate:
    """Estimate one plan (validated first).  Same formulas as the search: ``evaluate`` on a 1-plan array."""
    validate_plan(workload, cluster, plan)
    eff = eff or efficiency_for(cluster.group.device)
    res = cost_model(workload).evaluate_workload(workload, cluster, PlanArrays.from_plans([plan]), eff)
    return estimate_from_arrays(workload, cluster, plan, res, 0, eff.provenance, eff.provenance_class)


__all__ = ["CostBreakdown", "Estimate", "estimate_plan", "validate_plan"]
