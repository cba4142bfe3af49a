"""The mixture-of-experts family's executor costs: ``model_costs`` fills ``PipelineCosts`` from the MoE cost model
(``models.moe``) — the layer pattern of every virtual stage, the costs of its dense-FFN and MoE layers, and the
expert-parallel all-to-all of every MoE layer — for ``program`` / ``a2a`` to play out.

Layers: virtual stage k = c·pp + s holds the next ``layer_split`` layers of ``model.moe_layer_mask`` (contiguous in
virtual-stage order, interleaving included); the MTP modules (``training.mtp_layers``, else ``model.mtp_layers``)
are MoE layers at the end of the last virtual stage, whose output head is priced (1 + mtp)×.

What the model exposes, and what is derived from it:

* an MoE layer: ``op_moe_layer_fwd_s`` / ``op_moe_layer_bwd_s`` (exposed all-to-all included) and
  ``op_moe_layer_recompute_s`` (where the model does not give it: full = the forward, selective = the attention
  core forward, ``op_layer_recompute_s`` of the selective sibling: one attention block for both kinds);
* a dense-FFN layer: not exposed (``op_layer_*`` are the model's first layer kind, the MoE layer): forward and
  backward + recompute derived from the first (else the last, else a pp=1 sibling's) stage total minus its MoE
  layers, embedding and heads; its recompute: full = its forward, selective / modules = the attention core (for
  ``modules`` a lower bound: the norms and MLA up-projections are not exposed; accounting only, totals exact);
* the all-to-all per MoE layer and micro-batch: dispatch and combine forward (``op_moe_a2a_*_s``, × γ), their
  gradients backward (both at the combine's 16-bit size, as the model prices them), half the ETP gather with
  each; the exposed parts ``op_moe_ep_*_exposed_s`` (full recompute replays the forward's);
* activations of an MoE layer: ``op_activation_bytes_per_layer`` + the expert extra, which the model does not
  expose per layer: the difference of a pp=1 sibling's activation total and its dense per-layer formula, over its
  MoE layers;
* data-parallel collectives (dense and expert parameters): the first / last stage's time scaled by the virtual
  stage's share of the gradient bytes; bytes per dense-FFN layer, per MoE layer and of the embedding solved from
  ``op_dp_grad_bytes_first`` of sibling plans with other pp (least squares over their first-stage patterns);
* tensor-parallel shares (accounting only): ``op_layer_tp_*`` for every layer.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from parplan.executor.costs import (EXTRA_ACT_FIRST_KEY, EXTRA_ACT_LAST_KEY, PipelineCosts, check_split, dp_collectives,
                                    clean_split, default_split, device_layers, layer_split, split_dp)
from parplan.models.efficiency import efficiency_for
from parplan.models.moe import evaluate_workload
from parplan.models.plan_arrays import PlanArrays

REL = 1e-9


def _pattern(model, n: list, mtp: int) -> list:
    """Per virtual stage, per layer in order: True for an MoE layer (MTP modules last on the last)."""
    mask = tuple(bool(x) for x in model.moe_layer_mask)
    out, at = [], 0
    for nk in n:
        out.append(mask[at:at + nk])
        at += nk
    out[-1] = out[-1] + (True,) * mtp
    return out


def model_costs(workload, cluster, plan, eff=None) -> tuple[PipelineCosts, dict]:
    """Per-op costs of an MoE ``plan`` (already validated) and the analytical result (scalars) it came from."""
    eff = eff or efficiency_for(cluster.group.device)
    mdl, job = workload.model, workload.training
    L = int(mdl.layers)
    p, v = plan.pp, plan.vpp
    K = p * v
    mtp = int(job.mtp_layers if getattr(job, "mtp_layers", None) is not None else getattr(mdl, "mtp_layers", 0))
    n, split_note = layer_split(L, plan)
    n_dev = device_layers(n, p, v)
    pat = _pattern(mdl, n, mtp)
    cum = np.concatenate([[0], np.cumsum(~np.asarray(mdl.moe_layer_mask, dtype=bool))]).astype(int)
    full_rc, sel_rc, mod_rc = plan.recompute == "full", plan.recompute == "selective", plan.recompute == "modules"

    # siblings: selective recompute (working set), pp=1 (MoE activations, dense layers), other pp (DP bytes)
    sib = [plan, replace(plan, recompute="selective"), clean_split(replace(plan, pp=1, vpp=1))]
    qs = []
    if K > 1 and not (p == 2 and v == 1):
        seen = set()
        for q in range(2, L + 1):
            nf = default_split(L, q, 1)[0]
            comp = (int(cum[nf]), nf - int(cum[nf]))
            if q != p and comp not in seen:
                seen.add(comp)
                qs.append(q)
            if len(qs) >= 6:
                break
        sib += [clean_split(replace(plan, pp=q, vpp=1)) for q in qs]
    res_all = evaluate_workload(workload, cluster, PlanArrays.from_plans(sib), eff)
    col = {k: np.asarray(a, dtype=float) for k, a in res_all.items()}
    r = {k: float(a[0]) for k, a in col.items()}
    m = int(round(r["micro_batches"]))
    notes: list = []
    check_split(n_dev, r, split_note, notes)

    # --- layer costs ----------------------------------------------------------------------------------------
    mf, mb = r["op_moe_layer_fwd_s"], r["op_moe_layer_bwd_s"]
    # the attention core forward (selective recompute; one attention block for both kinds): the selective sibling's
    att_rc = float(col["op_layer_recompute_s"][1]) if (sel_rc or mod_rc) else 0.0
    m_rc = r.get("op_moe_layer_recompute_s", mf if full_rc else att_rc)
    emb_f, emb_b = r["op_emb_fwd_s"], r["op_emb_bwd_s"]
    heads = 1.0 + mtp
    head_f, head_b = heads * r["op_out_fwd_s"], heads * r["op_out_bwd_s"]
    df = db_tot = 0.0
    if int(cum[L]) > 0:  # dense-FFN layers: the stage total minus what is known (see the module docstring)
        nf_m, nl_m = int(r["layers_first_stage"]), int(r["layers_last_stage"])
        d_first, d_last = int(cum[nf_m]), int(cum[L] - cum[L - nl_m])
        if d_first > 0:
            extra_f = emb_f + (head_f if p == 1 else 0.0)
            extra_b = emb_b + (head_b if p == 1 else 0.0)
            df = (r["op_stage_first_fwd_s"] - extra_f - (nf_m - d_first) * mf) / d_first
            db_tot = (r["op_stage_first_bwd_s"] - extra_b - (nf_m - d_first) * (mb + m_rc)) / d_first
        elif p > 1 and d_last > 0:
            df = (r["op_stage_last_fwd_s"] - head_f - (nl_m - d_last + mtp) * mf) / d_last
            db_tot = (r["op_stage_last_bwd_s"] - head_b - (nl_m - d_last + mtp) * (mb + m_rc)) / d_last
        else:
            d1 = int(cum[L])
            df = (col["op_stage_first_fwd_s"][2] - emb_f - head_f - (L - d1) * mf) / d1
            db_tot = (col["op_stage_first_bwd_s"][2] - emb_b - head_b - (L - d1) * (mb + m_rc)) / d1
    d_rc = df if full_rc else att_rc
    d_b = db_tot - d_rc

    nm = [sum(x) for x in pat]
    nd = [len(x) - sum(x) for x in pat]
    fwd = [nd[k] * df + nm[k] * mf for k in range(K)]
    bwd = [nd[k] * db_tot + nm[k] * (mb + m_rc) for k in range(K)]
    fwd[0] += emb_f
    bwd[0] += emb_b
    fwd[K - 1] += head_f
    bwd[K - 1] += head_b
    _check_stages(fwd, bwd, r, p, v, mtp, split_note, notes)
    tpl_f, tpl_b = r["op_layer_tp_fwd_s"], r["op_layer_tp_bwd_exposed_s"] + (r["op_layer_tp_fwd_s"] if full_rc else 0.0)

    # --- activations ------------------------------------------------------------------------------------------
    pl = r["op_activation_bytes_per_layer"]
    ws = float(col["op_activation_bytes_per_layer"][1]) if full_rc else 0.0
    if "op_moe_activation_bytes_per_layer" in r:
        moe_act = r["op_moe_activation_bytes_per_layer"]
    else:
        n_moe_model = int(mdl.n_moe_layers)
        known = L * col["op_activation_bytes_per_layer"][2] + ws + col[EXTRA_ACT_FIRST_KEY][2] \
            + col[EXTRA_ACT_LAST_KEY][2]
        moe_act = pl + ((col["activations_bytes"][2] - known) / n_moe_model if n_moe_model else 0.0)
    act = [nd[k] * pl + nm[k] * moe_act for k in range(K)]
    act[0] += r.get(EXTRA_ACT_FIRST_KEY, 0.0)
    act[K - 1] += r.get(EXTRA_ACT_LAST_KEY, 0.0)

    # --- data-parallel collectives ----------------------------------------------------------------------------
    zero = plan.zero
    g_first, g_last, a_first, a_last, B_first, B_last = dp_collectives(r, zero)
    nbytes = [0.0] * K
    if K > 1 and p == 2 and v == 1:
        nbytes = [B_first, B_last]
    elif K > 1:
        rows, rhs = [], []
        for i, q in enumerate([p] + qs):
            nf = int(r["layers_first_stage"]) if i == 0 else default_split(L, q, 1)[0]
            rows.append([1.0, float(cum[nf]), float(nf - cum[nf])])
            rhs.append(col["op_dp_grad_bytes_first"][0 if i == 0 else 2 + i])
        emb, g_d, g_m = np.linalg.lstsq(np.asarray(rows), np.asarray(rhs), rcond=None)[0]
        nl_m = int(r["layers_last_stage"])
        d_last = float(cum[L] - cum[L - nl_m])
        out = B_last - d_last * g_d - (nl_m - d_last + mtp) * g_m
        nbytes = [nd[k] * g_d + nm[k] * g_m for k in range(K)]
        nbytes[0] += emb
        nbytes[K - 1] += out
    dp_grad, dp_param = split_dp(nbytes, B_first, B_last, g_first, g_last, a_first, a_last, zero)

    # --- all-to-all -------------------------------------------------------------------------------------------
    disp, comb, etp_x = r["op_moe_a2a_dispatch_s"], r["op_moe_a2a_combine_s"], r["op_moe_etp_gather_s"]
    a2a_f = (disp + etp_x / 2, comb + etp_x / 2)
    a2a_b = (comb + etp_x / 2, comb + etp_x / 2)
    e_f, e_b = r["op_moe_ep_fwd_exposed_s"], r["op_moe_ep_bwd_exposed_s"]
    gamma = r.get("expert_imbalance", 1.0)
    scale_up = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    n_ep = plan.ep * plan.etp
    if sum(a2a_f) > 0:
        where = "NVLink" if (n_ep <= scale_up and scale_up % n_ep == 0) else "NIC"
        notes.append(f"expert load imbalance γ = {gamma:.3f} (the busiest EP rank's all-to-all and expert compute)")
        notes.append(f"all-to-all on the {where} port: EP group of ep×etp = {n_ep} ranks, scale-up domain of "
                     f"{scale_up}; exposed per MoE layer and micro-batch {1e3 * e_f:.3f} of {1e3 * sum(a2a_f):.3f} ms "
                     f"forward, {1e3 * e_b:.3f} of {1e3 * sum(a2a_b):.3f} ms backward")

    pp_bw = r["link_pp_bytes_per_s"]
    costs = PipelineCosts(
        pp=p, vpp=v, micro_batches=m, fwd_s=tuple(fwd), bwd_s=tuple(bwd), layers=tuple(len(x) for x in pat),
        recompute_s=tuple(nd[k] * d_rc + nm[k] * m_rc for k in range(K)),
        tp_fwd_s=tuple(len(pat[k]) * tpl_f for k in range(K)), tp_bwd_s=tuple(len(pat[k]) * tpl_b for k in range(K)),
        act_bytes=tuple(act), bwd_working_bytes=ws,
        p2p_work_s=(r["op_p2p_bytes"] / pp_bw) if p > 1 else 0.0, p2p_latency_s=r["link_pp_latency_s"] if p > 1 else 0.0,
        p2p_bytes=r["op_p2p_bytes"], dp_ranks=int(round(r["op_dp_ranks"])), zero=zero,
        dp_grad_s=tuple(dp_grad), dp_param_s=tuple(dp_param), optimizer_s=r["op_optimizer_s"],
        ranks_per_stage=plan.tp * plan.cp, dp_replicas=plan.dp, devices_per_node=scale_up, notes=tuple(notes),
        moe_layers=tuple(nm), layer_moe=tuple(pat), dense_fwd_s=df, dense_bwd_s=d_b, dense_recompute_s=d_rc,
        moe_fwd_s=mf, moe_bwd_s=mb, moe_recompute_s=m_rc, moe_full_recompute=full_rc,
        head_fwd_s=head_f, head_bwd_s=head_b, a2a_fwd_s=a2a_f, a2a_bwd_s=a2a_b, a2a_fwd_exposed_s=e_f,
        a2a_bwd_exposed_s=e_b, a2a_recompute_exposed_s=e_f if full_rc else 0.0, ep_ranks=n_ep,
        a2a_etp_s=etp_x / 2 if (plan.etp > 1 and scale_up % plan.etp == 0) else 0.0,
        ep_group_replicas=max(1, n_ep // (plan.tp * plan.cp)), expert_imbalance=gamma,
    )
    return costs, r


def _check_stages(fwd, bwd, r, p, v, mtp, split_note, notes) -> None:
    """The first and last device's forward / backward against the model's stage totals; where they differ by a
    rule the model approximates (interleaving, a single stage with MTP modules, a split knob), a note."""
    dev = lambda xs, s: sum(xs[c * p + s] for c in range(v))  # noqa: E731
    pairs = [(dev(fwd, 0), r["op_stage_first_fwd_s"]), (dev(bwd, 0), r["op_stage_first_bwd_s"])]
    if p > 1:
        pairs += [(dev(fwd, p - 1), r["op_stage_last_fwd_s"]), (dev(bwd, p - 1), r["op_stage_last_bwd_s"])]
    worst = max(abs(a - b) / max(abs(b), 1e-300) for a, b in pairs)
    if worst <= REL:
        return
    if p == 1 and mtp > 0:
        notes.append(f"the analytical model prices a single stage without its {mtp} MTP module(s)' layers "
                     "(only their output heads); the executor plays them")
    elif v > 1 or split_note:
        notes.append(f"the model's first / last stage differs from the layer pattern by {100 * worst:.2f} % (it takes "
                     "a stage as consecutive layers of the pattern; the executor plays each chunk's own layers)")
    else:
        raise AssertionError(f"executor stage costs disagree with the analytical model ({worst:.3g} relative)")
