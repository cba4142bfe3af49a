"""Single-plan estimate: validates a plan against a workload and cluster, runs the vectorized model on it and
wraps the result in named, unit-suffixed dataclasses."""
from __future__ import annotations

from dataclasses import dataclass, field


from parplan.errors import SpecError
from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.plan import Plan
from parplan.models.training import MEMORY_PARTS, TIME_PARTS, PlanArrays, evaluate_workload
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
    if plan.ep != 1:
        raise SpecError(f"ep={plan.ep} needs a mixture-of-experts workload; {workload.name} is dense", key="plan.ep",
                        allowed=["1"])
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
        if mdl.layers % (plan.pp * plan.vpp):
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
    if plan.tp > cluster.group.devices_per_node and plan.tp % cluster.group.devices_per_node:
        raise SpecError(f"tp={plan.tp} spans nodes unevenly ({cluster.group.devices_per_node} devices per node)",
                        key="plan.tp")


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
                         provenance: str) -> Estimate:
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
        breakdown=CostBreakdown(time_s={k: float(res[k][i]) for k in TIME_PARTS},
                                memory_bytes={k: float(res[k][i]) for k in MEMORY_PARTS}),
        micro_batches=int(round(float(res["micro_batches"][i]))), critical_stage=crit,
        heaviest_memory_stage=int(res["heaviest_memory_stage"][i]), compute_bound_s=float(res["compute_bound_s"][i]),
        provenance=provenance,
    )


def estimate_plan(workload: Workload, cluster: Cluster, plan: Plan, eff: Efficiency | None = None) -> Estimate:
    """Estimate one plan (validated first).  Same formulas as the search: ``evaluate`` on a 1-plan array."""
    validate_plan(workload, cluster, plan)
    eff = eff or efficiency_for(cluster.group.device.id)
    res = evaluate_workload(workload, cluster, PlanArrays.from_plans([plan]), eff)
    return estimate_from_arrays(workload, cluster, plan, res, 0, eff.provenance)


__all__ = ["CostBreakdown", "Estimate", "estimate_plan", "validate_plan"]
