"""What the executor plays out: per-operation costs of one pipeline, taken from the analytical model.

``PipelineCosts`` holds, per *virtual stage* k = c·pp + s (model chunk c on pipeline device s; k = s when vpp = 1),
the cost of one micro-batch's forward and backward on one device, the activation bytes it keeps, the size of its
data-parallel collectives, and the p2p transfer between stages.  ``model_costs`` fills it from
``models.training.evaluate`` — the executor never re-derives FLOPs, bytes or memory formulas.  Where it needs a
finer cost than the model exposes, it divides exposed costs, as documented on each field:

* per virtual stage compute: ``n_k · op_layer_*`` (+ ``op_emb_*`` on the first, ``op_out_*`` on the last), with
  n_k from the model's uneven layer rule (``layers_first_stage`` … reproduced exactly and checked);
* per-layer parts (gradient buckets, ZeRO-3 prefetch, per-layer backward chunks): the virtual stage's cost
  divided evenly by its layer count;
* data-parallel collectives of a middle stage or a model chunk: the model prices the first and the last stage
  (``op_dp_*_first/last``); the other stages' collective time is the first stage's scaled by their share of its
  gradient bytes.  The per-layer gradient bytes come from differencing ``op_dp_grad_bytes_first`` of the plan and
  of a sibling plan with another ``pp`` (same model, other layer count on the first stage);
* the working set of full recompute (a layer's activations while it is recomputed) is the model's
  ``op_activation_bytes_per_layer`` of the sibling plan with ``recompute=selective``;
* ZB-H1's split of a backward into input-gradient B and weight-gradient W: W = half of the backward without
  recompute (the data- and weight-gradient GEMMs have the same size; the model prices them as 2× forward).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.plan import Plan
from parplan.models.training import PlanArrays, evaluate_workload
from parplan.workloads.transformer import Workload

# Activation buffers per micro-batch that are not per layer (embedding output on the first stage; final-norm input
# and fp32 logits on the last).  The analytical model charges them in its activation total but does not expose
# them per op yet; when it does under these keys, the executor allocates them too.
EXTRA_ACT_FIRST_KEY = "op_activation_bytes_first_stage_extra"
EXTRA_ACT_LAST_KEY = "op_activation_bytes_last_stage_extra"


@dataclass(frozen=True)
class PipelineCosts:
    """Per-operation costs of one pipeline replica (seconds and bytes per micro-batch per device)."""

    pp: int
    vpp: int
    micro_batches: int
    fwd_s: tuple  # per virtual stage: forward of one micro-batch
    bwd_s: tuple  # per virtual stage: backward of one micro-batch, recompute included
    layers: tuple  # per virtual stage: transformer layers (the unit of per-layer parts)
    recompute_s: tuple = ()  # part of bwd_s that is recompute (accounting only)
    tp_fwd_s: tuple = ()  # part of fwd_s that is tensor-parallel communication (accounting only)
    tp_bwd_s: tuple = ()  # part of bwd_s that is exposed tensor-parallel communication (accounting only)
    act_bytes: tuple = ()  # activations kept from forward to backward, per micro-batch per virtual stage
    bwd_working_bytes: float = 0.0  # transient buffer while one layer is recomputed (full recompute)
    p2p_work_s: float = 0.0  # one activation (gradient) transfer alone on its link: bytes / bandwidth
    p2p_latency_s: float = 0.0
    p2p_bytes: float = 0.0
    dp_ranks: int = 1  # members of the gradient-sharing group (dp × cp)
    zero: int = 0
    dp_grad_s: tuple = ()  # per virtual stage: gradient all-reduce (zero 0) or reduce-scatter (zero ≥ 1), alone
    dp_param_s: tuple = ()  # per virtual stage: parameter all-gather (zero ≥ 1), alone
    optimizer_s: float = 0.0
    wgrad_fraction: float = 0.5  # ZB-H1: share of (backward − recompute) that is the weight gradient
    # placement (ranks ordered tp, cp, pp, dp as in the analytical model); 0 = no node boundary
    ranks_per_stage: int = 1  # tp × cp ranks that run a stage in lockstep
    dp_replicas: int = 1
    devices_per_node: int = 0
    notes: tuple = field(default=())

    @property
    def virtual_stages(self) -> int:
        return self.pp * self.vpp

    def _z(self, name: str) -> tuple:
        v = getattr(self, name)
        return v if v else (0.0,) * self.virtual_stages

    @classmethod
    def uniform(cls, pp: int, micro_batches: int, fwd: float = 1.0, bwd: float = 2.0, *, vpp: int = 1,
                layers: int = 1, act_bytes: float = 1.0, p2p_s: float = 0.0, **kw) -> "PipelineCosts":
        """Equal stages; ``fwd``/``bwd``/``act_bytes`` are per *device* (split over its vpp chunks)."""
        K = pp * vpp
        return cls(pp=pp, vpp=vpp, micro_batches=micro_batches, fwd_s=(fwd / vpp,) * K, bwd_s=(bwd / vpp,) * K,
                   layers=(layers,) * K, act_bytes=(act_bytes / vpp,) * K, p2p_work_s=p2p_s, **kw)

    def stage_layers(self) -> list[int]:
        return [sum(self.layers[c * self.pp + s] for c in range(self.vpp)) for s in range(self.pp)]


def _layer_split(L: int, p: int, v: int) -> list[int]:
    """Layers per virtual stage: floor(L/p) each with the L mod p extra layers on the first stages (the model's
    rule); with interleaving the model requires L divisible by p·v and every chunk has L/(p·v)."""
    if v > 1:
        return [L // (p * v)] * (p * v)
    base, extra = divmod(L, p)
    return [base + (1 if s < extra else 0) for s in range(p)]


def model_costs(workload: Workload, cluster: Cluster, plan: Plan,
                eff: Efficiency | None = None) -> tuple[PipelineCosts, dict]:
    """Per-op costs of ``plan`` (already validated) and the analytical result (scalars) it came from."""
    eff = eff or efficiency_for(cluster.group.device)
    L = int(workload.model.layers)
    p, v = plan.pp, plan.vpp
    siblings = [plan, replace(plan, recompute="selective")]
    n_first = _layer_split(L, p, 1)[0]
    alt_pp = None
    if p >= 3 or (p >= 2 and v > 1):
        alt_pp = next(q for q in range(2, L + 1) if q != p and _layer_split(L, q, 1)[0] != n_first)
        siblings.append(replace(plan, pp=alt_pp, vpp=1))
    res_all = evaluate_workload(workload, cluster, PlanArrays.from_plans(siblings), eff)
    r = {k: float(np.asarray(a)[0]) for k, a in res_all.items()}
    m = int(round(r["micro_batches"]))

    K = p * v
    n = _layer_split(L, p, v)
    # the layer rule above is the model's: check it against what the model reports
    if v == 1 and (n[0] != int(r["layers_first_stage"]) or (p > 1 and n[-1] != int(r["layers_last_stage"]))):
        raise AssertionError("executor layer split disagrees with the analytical model")
    lf, lb, lrc = r["op_layer_fwd_s"], r["op_layer_bwd_s"], r["op_layer_recompute_s"]
    fwd = [n[k] * lf for k in range(K)]
    bwd = [n[k] * (lb + lrc) for k in range(K)]
    fwd[0] += r["op_emb_fwd_s"]
    bwd[0] += r["op_emb_bwd_s"]
    fwd[K - 1] += r["op_out_fwd_s"]
    bwd[K - 1] += r["op_out_bwd_s"]
    full_rc = plan.recompute == "full"
    tp_f = [n[k] * r["op_layer_tp_fwd_s"] for k in range(K)]
    tp_b = [n[k] * (r["op_layer_tp_bwd_exposed_s"] + (r["op_layer_tp_fwd_s"] if full_rc else 0.0)) for k in range(K)]
    act = [n[k] * r["op_activation_bytes_per_layer"] for k in range(K)]
    act[0] += r.get(EXTRA_ACT_FIRST_KEY, 0.0)
    act[K - 1] += r.get(EXTRA_ACT_LAST_KEY, 0.0)
    ws = float(np.asarray(res_all["op_activation_bytes_per_layer"])[1]) if full_rc else 0.0

    # data-parallel collectives per virtual stage (see the module docstring)
    zero = plan.zero
    grad_key = "allreduce" if zero == 0 else "reduce_scatter"
    g_first, g_last = r[f"op_dp_{grad_key}_first_s"], r[f"op_dp_{grad_key}_last_s"]
    a_first, a_last = r["op_dp_allgather_first_s"], r["op_dp_allgather_last_s"]
    if K == 1:
        dp_grad, dp_param = [g_first], [a_first]
    else:
        B_first, B_last = r["op_dp_grad_bytes_first"], r["op_dp_grad_bytes_last"]
        if alt_pp is not None:
            B_alt = float(np.asarray(res_all["op_dp_grad_bytes_first"])[2])
            g_layer = (B_alt - B_first) / (_layer_split(L, alt_pp, 1)[0] - n_first)
        else:  # p == 2, v == 1: both stages are priced by the model directly
            g_layer = 0.0
        emb = B_first - _layer_split(L, p, 1)[0] * g_layer
        out = B_last - _layer_split(L, p, 1)[-1] * g_layer
        nbytes = [n[k] * g_layer for k in range(K)]
        nbytes[0] += emb
        nbytes[K - 1] += out
        dp_grad, dp_param = [], []
        for k in range(K):
            if k == K - 1:
                f = nbytes[k] / B_last if B_last > 0 else 0.0
                dp_grad.append(g_last * f)
                dp_param.append(a_last * f)
            else:
                f = nbytes[k] / B_first if B_first > 0 else 0.0
                dp_grad.append(g_first * f)
                dp_param.append(a_first * f)
    if zero == 0:
        dp_param = [0.0] * K

    pp_bw = r["link_pp_bytes_per_s"]
    costs = PipelineCosts(
        pp=p, vpp=v, micro_batches=m, fwd_s=tuple(fwd), bwd_s=tuple(bwd), layers=tuple(n),
        recompute_s=tuple(n[k] * lrc for k in range(K)), tp_fwd_s=tuple(tp_f), tp_bwd_s=tuple(tp_b),
        act_bytes=tuple(act), bwd_working_bytes=ws,
        p2p_work_s=(r["op_p2p_bytes"] / pp_bw) if p > 1 else 0.0, p2p_latency_s=r["link_pp_latency_s"] if p > 1 else 0.0,
        p2p_bytes=r["op_p2p_bytes"], dp_ranks=int(round(r["op_dp_ranks"])), zero=zero,
        dp_grad_s=tuple(dp_grad), dp_param_s=tuple(dp_param), optimizer_s=r["op_optimizer_s"],
        ranks_per_stage=plan.tp * plan.cp, dp_replicas=plan.dp, devices_per_node=cluster.group.devices_per_node,
    )
    return costs, r
