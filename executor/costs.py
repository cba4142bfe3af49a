"""What the executor plays out: per-operation costs of one pipeline, taken from the analytical model.

``PipelineCosts`` holds, per *virtual stage* k = c·pp + s (model chunk c on pipeline device s; k = s when vpp = 1),
the cost of one micro-batch's forward and backward on one device, the activation bytes it keeps, the size of its
data-parallel collectives, the p2p transfer between stages and, where the model has MoE layers, the layer pattern
and the expert-parallel all-to-all of every MoE layer.  Each model family's executor module (reached through
``executor.families``) fills it from its cost model — the executor never re-derives FLOPs, bytes or memory
formulas.  Where it needs a finer cost than the model exposes, it divides
exposed costs, as documented in the family modules.  Shared here: the layer split over virtual stages (the
model's rules, incl. the uneven-split knobs) and the split of the data-parallel collectives by gradient bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Activation buffers per micro-batch that are not per layer (embedding output on the first stage; final-norm input
# and fp32 logits on the last).  The analytical model charges them in its activation total; when it exposes them
# under these keys, the executor allocates them too.
EXTRA_ACT_FIRST_KEY = "op_activation_bytes_first_stage_extra"
EXTRA_ACT_LAST_KEY = "op_activation_bytes_last_stage_extra"


@dataclass(frozen=True)
class PipelineCosts:
    """Per-operation costs of one pipeline replica (seconds and bytes per micro-batch per device)."""

    pp: int
    vpp: int
    micro_batches: int
    fwd_s: tuple  # per virtual stage: forward of one micro-batch (exposed all-to-all included)
    bwd_s: tuple  # per virtual stage: backward of one micro-batch, recompute (and exposed all-to-all) included
    layers: tuple  # per virtual stage: transformer layers (the unit of per-layer parts; MTP modules included)
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
    wgrad_fraction: float = 0.5  # ZB-H1: share of (backward − recompute − exposed all-to-all) that is W
    # placement (ranks ordered tp, cp, pp, dp as in the analytical model); 0 = no node boundary
    ranks_per_stage: int = 1  # tp × cp ranks that run a stage in lockstep
    dp_replicas: int = 1
    devices_per_node: int = 0
    notes: tuple = field(default=())
    # --- mixture-of-experts layers (all empty / zero for dense plans: then no all-to-all is played) -------------
    moe_layers: tuple = ()  # per virtual stage: MoE layers (DeepSeek-V3's MTP modules included, on the last)
    layer_moe: tuple = ()  # per virtual stage: per layer in order, True for an MoE layer (default: MoE layers last)
    dense_fwd_s: float = 0.0  # one dense-FFN layer, one micro-batch: forward
    dense_bwd_s: float = 0.0  # … backward without its recompute
    dense_recompute_s: float = 0.0
    moe_fwd_s: float = 0.0  # one MoE layer, one micro-batch: forward, its exposed all-to-all included
    moe_bwd_s: float = 0.0  # … backward without its recompute, its exposed all-to-all included
    moe_recompute_s: float = 0.0  # … recompute (full: the layer forward again, its exposed all-to-all included)
    moe_full_recompute: bool = False  # the recompute replays the MoE layer's forward, dispatch and combine included
    head_fwd_s: float = 0.0  # output heads + losses of the last virtual stage (1 + MTP modules), forward
    head_bwd_s: float = 0.0
    a2a_fwd_s: tuple = ()  # per MoE layer per micro-batch, each alone on its link: (dispatch, combine), × γ
    a2a_bwd_s: tuple = ()  # (combine gradient, dispatch gradient), × γ
    a2a_fwd_exposed_s: float = 0.0  # part of the forward's all-to-all that the compute waits for
    a2a_bwd_exposed_s: float = 0.0
    a2a_recompute_exposed_s: float = 0.0  # full recompute: the recomputed forward's exposed all-to-all
    ep_ranks: int = 1  # ep × etp: one all-to-all group (consecutive ranks; NVLink port inside a scale-up domain)
    # the ETP gather / scatter share of every all-to-all transfer above (seconds): it travels within the expert-
    # tensor group (etp consecutive ranks, inside one scale-up domain: NVLink), not on the EP group's port
    a2a_etp_s: float = 0.0
    ep_group_replicas: int = 1  # dp replicas one EP group spans (full mode plays their all-to-all jointly)
    expert_imbalance: float = 1.0  # γ = max/mean tokens per EP rank (already in the sizes and the expert compute)
    # --- RTP (``rotate``; 0 / empty otherwise): every layer part plays its shard ring (``executor/rotation.py``) ---
    rtp_shards: int = 0  # S: ranks of the shard ring (≤ 1: no rotation)
    rtp_sub_fwd_s: float = 0.0  # one forward sub-step: the layer's GEMMs on one shard
    rtp_sub_bwd_s: float = 0.0  # one backward sub-step: data- and weight-gradient GEMMs on one shard
    rtp_xfer_fwd_s: tuple = ()  # per virtual stage: one forward hop of a layer part's shard, alone on its link
    rtp_xfer_bwd_s: tuple = ()  # … backward: weight shard + gradient accumulator
    rtp_replay: bool = False  # full recompute: the replayed forward rotates the shards once more

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

    @property
    def has_moe(self) -> bool:
        return any(int(x) > 0 for x in self.moe_layers)

    def moe_mask(self, k: int) -> tuple:
        """Per layer of virtual stage k, in order: True for an MoE layer."""
        if self.layer_moe:
            return tuple(self.layer_moe[k])
        n, moe = int(self.layers[k]), int(self.moe_layers[k]) if self.moe_layers else 0
        return (False,) * (n - moe) + (True,) * moe


def default_split(L: int, p: int, v: int) -> list[int]:
    """The default rule: floor(L/p) layers each with the L mod p extra ones on the first stages; with
    interleaving the model requires L divisible by p·v and every chunk has L/(p·v)."""
    if v > 1:
        return [L // (p * v)] * (p * v)
    base, extra = divmod(L, p)
    return [base + (1 if s < extra else 0) for s in range(p)]


def layer_split(L: int, plan) -> tuple[list[int], str]:
    """Transformer layers per virtual stage (in virtual-stage order; layers are assigned contiguously) under the
    plan's split rule, and a note where the model's own stage counts differ from it ("" otherwise).

    * default: ``default_split``;
    * ``embed_as_layer`` / ``loss_as_layer`` (Megatron-Core ``--account-for-embedding/loss-in-pipeline-split``):
      (L + e + l)/(p·v) slots per virtual stage, the first one less by the embedding, the last by the loss;
    * ``first_layers`` / ``last_layers`` (``--decoder-first/last-pipeline-num-layers``): those on the first / last
      stage, the rest split evenly over the other stages (as ``validate_plan`` requires); a stage's layers are
      split over its chunks as evenly as possible, the extra ones to the earlier chunks.
    """
    p, v = plan.pp, plan.vpp
    ea, la = int(plan.embed_as_layer), int(plan.loss_as_layer)
    first, last = int(plan.first_layers or 0), int(plan.last_layers or 0)
    if p == 1:
        return [L], ""
    if first or last:
        rest_stages = p - (1 if first else 0) - (1 if last else 0)
        rest = L - first - last
        per = rest // rest_stages if rest_stages else 0
        dev = [per] * p
        if first:
            dev[0] = first
        if last:
            dev[-1] = last
        note = ""
        if bool(first) != bool(last):
            note = (f"layer split: first_layers/last_layers give {dev[0]} / {dev[-1]} layers on the first / last stage "
                    f"and {per} on each other stage (Megatron-Core, validate_plan); the analytical model prices the "
                    "stage that was not given with the default rule")
    elif ea or la:
        slots = (L + ea + la) // (p * v)
        n = [slots] * (p * v)
        n[0] -= ea
        n[-1] -= la
        return n, ""
    else:
        return default_split(L, p, v), ""
    if v == 1:
        return dev, note
    n = [0] * (p * v)
    for s in range(p):
        q, r = divmod(dev[s], v)
        for c in range(v):
            n[c * p + s] = q + (1 if c < r else 0)
    return n, note


def device_layers(n: list[int], p: int, v: int) -> list[int]:
    """Layers per pipeline device (all its chunks) from layers per virtual stage."""
    return [sum(n[c * p + s] for c in range(v)) for s in range(p)]


def check_split(n_dev: list, r: dict, note: str, notes: list) -> None:
    """The executor's layers on the first / last device against the model's; where the model prices a stage the
    plan's split rule does not give it, say so (``note``), else it is a bug."""
    p = len(n_dev)
    ok = n_dev[0] == int(r["layers_first_stage"]) and (p == 1 or n_dev[-1] == int(r["layers_last_stage"]))
    if not ok:
        if not note:
            raise AssertionError("executor layer split disagrees with the analytical model")
        notes.append(note)


def dp_collectives(r: dict, zero: int) -> tuple:
    """The model's data-parallel collectives of the first and last stage: gradient (all-reduce at zero 0, else
    reduce-scatter) and parameter all-gather seconds, and the gradient bytes they move."""
    grad_key = "allreduce" if zero == 0 else "reduce_scatter"
    return (r[f"op_dp_{grad_key}_first_s"], r[f"op_dp_{grad_key}_last_s"], r["op_dp_allgather_first_s"],
            r["op_dp_allgather_last_s"], r["op_dp_grad_bytes_first"], r["op_dp_grad_bytes_last"])


def split_dp(nbytes: list, B_first: float, B_last: float, g_first: float, g_last: float, a_first: float,
             a_last: float, zero: int) -> tuple[list, list]:
    """Data-parallel collectives per virtual stage: the model prices the first and the last stage; every other
    virtual stage takes the first stage's time scaled by its share of the first stage's gradient bytes (the last
    one the last stage's)."""
    K = len(nbytes)
    if K == 1:
        dp_grad, dp_param = [g_first], [a_first]
    else:
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
    return dp_grad, dp_param


def clean_split(plan):
    """``plan`` with the default layer-split rule (for sibling plans priced at another pp)."""
    from dataclasses import replace

    return replace(plan, first_layers=0, last_layers=0, embed_as_layer=False, loss_as_layer=False)


def model_costs(workload, cluster, plan, eff=None):
    """The per-op costs of ``plan`` from its workload family's executor module (``executor.families``)."""
    from parplan.executor.families import model_costs as family_costs

    return family_costs(workload, cluster, plan, eff)
