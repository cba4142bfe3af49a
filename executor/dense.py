"""The dense-transformer family's executor costs: ``model_costs`` fills ``PipelineCosts`` from the dense cost model
(``models.training``).  Where it needs a finer cost than the model exposes, it divides exposed costs:

* per virtual stage compute: ``n_k · op_layer_*`` (+ ``op_emb_*`` on the first, ``op_out_*`` on the last), with
  n_k from the model's layer rule (``costs.layer_split``: the default split and the uneven-split knobs, checked
  against the model's ``layers_first_stage`` / ``layers_last_stage``);
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

from dataclasses import replace

import numpy as np

from parplan.executor.costs import (EXTRA_ACT_FIRST_KEY, EXTRA_ACT_LAST_KEY, PipelineCosts, check_split, dp_collectives,
                                    clean_split, default_split, device_layers, layer_split, split_dp)
from parplan.hardware.types import Cluster
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.plan import Plan
from parplan.models.training import PlanArrays, evaluate_workload
from parplan.workloads.transformer import Workload

def model_costs(workload: Workload, cluster: Cluster, plan: Plan,
                eff: Efficiency | None = None) -> tuple[PipelineCosts, dict]:
    """Per-op costs of ``plan`` (already validated) and the analytical result (scalars) it came from."""
    eff = eff or efficiency_for(cluster.group.device)
    L = int(workload.model.layers)
    p, v = plan.pp, plan.vpp
    n, split_note = layer_split(L, plan)
    n_dev = device_layers(n, p, v)
    siblings = [plan, replace(plan, recompute="selective")]
    n_first = n_dev[0]
    alt_pp = None
    if p >= 3 or (p >= 2 and v > 1):
        alt_pp = next(q for q in range(2, L + 1) if q != p and default_split(L, q, 1)[0] != n_first)
        siblings.append(clean_split(replace(plan, pp=alt_pp, vpp=1)))
    res_all = evaluate_workload(workload, cluster, PlanArrays.from_plans(siblings), eff)
    r = {k: float(np.asarray(a)[0]) for k, a in res_all.items()}
    m = int(round(r["micro_batches"]))

    K = p * v
    notes: list = []
    check_split(n_dev, r, split_note, notes)
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
    g_first, g_last, a_first, a_last, B_first, B_last = dp_collectives(r, zero)
    nbytes = [0.0] * K
    if K > 1:
        if alt_pp is not None:
            B_alt = float(np.asarray(res_all["op_dp_grad_bytes_first"])[2])
            g_layer = (B_alt - B_first) / (default_split(L, alt_pp, 1)[0] - n_first)
        else:  # p == 2, v == 1: both stages are priced by the model directly
            g_layer = 0.0
        emb = B_first - n_first * g_layer
        out = B_last - n_dev[-1] * g_layer
        nbytes = [n[k] * g_layer for k in range(K)]
        nbytes[0] += emb
        nbytes[K - 1] += out
    dp_grad, dp_param = split_dp(nbytes, B_first, B_last, g_first, g_last, a_first, a_last, zero)

    pp_bw = r["link_pp_bytes_per_s"]
    costs = PipelineCosts(
        pp=p, vpp=v, micro_batches=m, fwd_s=tuple(fwd), bwd_s=tuple(bwd), layers=tuple(n),
        recompute_s=tuple(n[k] * lrc for k in range(K)), tp_fwd_s=tuple(tp_f), tp_bwd_s=tuple(tp_b),
        act_bytes=tuple(act), bwd_working_bytes=ws,
        p2p_work_s=(r["op_p2p_bytes"] / pp_bw) if p > 1 else 0.0, p2p_latency_s=r["link_pp_latency_s"] if p > 1 else 0.0,
        p2p_bytes=r["op_p2p_bytes"], dp_ranks=int(round(r["op_dp_ranks"])), zero=zero,
        dp_grad_s=tuple(dp_grad), dp_param_s=tuple(dp_param), optimizer_s=r["op_optimizer_s"],
        ranks_per_stage=plan.tp * plan.cp, dp_replicas=plan.dp,
        devices_per_node=int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node)),
        notes=tuple(notes),
    )
    return costs, r
