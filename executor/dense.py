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
    if plan.helix:  # HelixPipe's attention-parallel pipeline: its own ops and schedule (``executor/helix.py``)
        from parplan.executor.helix import helix_costs

        return helix_costs(workload, cluster, plan, eff)
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
    if plan.cp > 1 and "op_layer_attn_fwd_s" in r:  # long-context layouts: attention + CP played per device
        pf, pb, pcore = play_cp_layer(workload, cluster, plan, r)
        d_f = pf - r["op_layer_attn_fwd_s"] - r["op_layer_cp_fwd_s"]
        lf, lb = lf + d_f, lb + pb - r["op_layer_attn_bwd_s"] - r["op_layer_cp_bwd_s"]
        lrc += d_f if plan.recompute == "full" else (pcore - r["op_layer_attn_fwd_s"]) if plan.recompute in (
            "selective", "modules") else 0.0
        notes.append(f"cp_kind={plan.cp_kind}: attention and CP exchange played per device and ring step")
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
    rtp = rotation_costs(plan, r, K) if plan.rotate else {}
    if rtp:  # RTP: the shard rings replace ZeRO-3's gathers and reduce-scatters
        dp_grad, dp_param = [0.0] * K, [0.0] * K
        notes.append(f"rotate=true: each layer plays {rtp['rtp_shards']} sub-steps with its shards on the ring")

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
        notes=tuple(notes), **rtp,
    )
    return costs, r


def rotation_costs(plan: Plan, r: dict, K: int) -> dict:
    """RTP's ring per layer part (``executor/rotation.py``): the model's sub-step GEMMs and the hops of the first,
    last or a middle device's layer parts (``models/rtp_terms.py`` spreads a stage's embedding / output shards over
    its layers, every chunk of a device alike)."""
    p = plan.pp
    where = ["first" if k % p == 0 else "last" if k % p == p - 1 else "mid" for k in range(K)]
    return {"rtp_shards": int(round(r["op_rtp_shards"])), "rtp_sub_fwd_s": r["op_rtp_sub_fwd_s"],
            "rtp_sub_bwd_s": r["op_rtp_sub_bwd_s"], "rtp_replay": plan.recompute == "full",
            "rtp_xfer_fwd_s": tuple(r[f"op_rtp_xfer_fwd_{w}_s"] for w in where),
            "rtp_xfer_bwd_s": tuple(r[f"op_rtp_xfer_bwd_{w}_s"] for w in where)}


def play_cp_layer(workload: Workload, cluster: Cluster, plan: Plan, r: dict) -> tuple[float, float, float]:
    """One layer's attention core + context-parallel exchange of one micro-batch, played device by device
    (forward, backward, forward compute only), from the model's per-op costs and the packs of the workload:

    * ring / hybrid's ring: each device computes its Q chunks against the K,V block it holds while the block moves
      on; step k+1 starts when its own step k is done and the block its predecessor held at step k has arrived
      (Ring Attention's send/recv per step, double-buffered): start[d,k+1] = max(start[d,k] + comp[d,k],
      start[d−1,k] + block);
    * ulysses / hybrid: the Q,K,V all-to-all before and the O all-to-all after attention, serial;
    * dcp: each device's blocks behind its own K,V receives, max over devices.

    Per-pair compute time is the model's attention time over its busiest device's pairs (the kernel efficiency
    stays the model's); the packs come from ``models/longctx.py``."""
    from parplan.models import longctx as lc
    from parplan.models.framework import get_framework

    job, mdl = workload.training, workload.model
    seqs = job.sequences
    mask, param = ("causal", 0.0) if seqs is None else (seqs.mask, seqs.mask_param)
    packs = lc.build_packs(seqs, int(job.seq_len))
    a_f, a_b = r["op_layer_attn_fwd_s"], r["op_layer_attn_bwd_s"]
    tau = a_f / max(r["op_cp_pairs_dev"] * plan.mbs, 1.0)  # seconds per admitted pair, forward
    bwd_ratio = a_b / a_f if a_f > 0 else 2.5
    a2a = r["op_cp_a2a_s"]
    c = plan.cp
    dpn = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    if plan.cp_kind == "ulysses":
        return a2a + a_f, a2a + a_b, a_f
    if plan.cp_kind == "dcp":
        # seconds per received K,V token: the model's transfer time over the busiest receiver's tokens
        per_tok = (r["op_cp_ring_fwd_s"] / max(_dcp_max_recv(packs, mask, param, c) * plan.mbs, 1.0)
                   if r["op_cp_kv_bytes"] > 0 else 0.0)
        f_, b_, core = [], [], []
        for docs in packs:
            load, recv, _ = lc._dcp(np.array([int(docs.sum())]) if mask == "causal" else docs, mask, param, c)
            comp = load * plan.mbs * tau
            comm = recv * plan.mbs * per_tok
            f_.append(float(np.max(np.maximum(comp, comm))))
            b_.append(float(np.max(np.maximum(bwd_ratio * comp, 2.0 * comm))))
            core.append(float(comp.max()))
        return float(np.mean(f_)), float(np.mean(b_)), float(np.mean(core))
    u = lc.hybrid_ulysses_degree(c, mdl.kv_heads // plan.tp, dpn // plan.tp) if plan.cp_kind == "hybrid" else 1
    ring = c // u
    if ring <= 1:
        return a2a + a_f, a2a + a_b, a_f
    blk_f, blk_b = r["op_cp_ring_fwd_s"] / (ring - 1), r["op_cp_ring_bwd_s"] / (ring - 1)
    overlap = bool(get_framework(job.framework).cp_comm_overlap)  # as the model: the framework's CP overlap
    f_, b_, core = [], [], []
    for docs in packs:
        _, steps, _ = lc._ring(docs, mask, param, ring)
        comp = steps * plan.mbs * tau / u  # (device, step)
        f_.append(_ring_play(comp, blk_f, overlap))
        b_.append(_ring_play(bwd_ratio * comp, blk_b, overlap))
        core.append(float(comp.sum(axis=1).max()))
    return a2a + float(np.mean(f_)), a2a + float(np.mean(b_)), float(np.mean(core))


def _ring_play(comp: np.ndarray, block_s: float, overlap: bool) -> float:
    """Finish time of the last device of a ring of ``comp`` (device × step) compute times and ``block_s`` per hop."""
    n, K = comp.shape
    start = np.zeros(n)
    for k in range(K - 1):
        done = start + comp[:, k]
        arrive = np.roll(start, 1) + block_s  # the predecessor forwards its block when its step k starts
        start = np.maximum(done, arrive) if overlap else done + block_s
    return float(np.max(start + comp[:, K - 1]))


def _dcp_max_recv(packs, mask, param, c) -> float:
    from parplan.models import longctx as lc

    return float(np.mean([lc._dcp(np.array([int(d.sum())]) if mask == "causal" else d, mask, param, c)[1].max()
                          for d in packs]))
