"""The plan: how a training job is split over devices (degrees of each parallelism and knobs)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from parplan.errors import SpecError, did_you_mean

RECOMPUTE = ("none", "selective", "full", "modules")
# context-parallel layouts (models/longctx.py): zig-zag ring attention, DeepSpeed-Ulysses all-to-all, USP hybrid
# (Ulysses inside a node × ring across), DCP's per-batch block placement (Jiang et al., SOSP 2025)
CP_KINDS = ("ring", "ulysses", "hybrid", "dcp")
# layouts priced when a plan names them that no framework flag selects (a framework check lets them through; the
# launch export refuses them; the search does not enumerate them)
RESEARCH_CP_KINDS = ("hybrid", "dcp")
PLAN_KEYS = ("dp", "tp", "pp", "cp", "ep", "etp", "mbs", "vpp", "zero", "recompute", "sp",
             "reshard", "shard", "first_layers", "last_layers", "embed_as_layer", "loss_as_layer", "cp_kind",
             "helix", "rotate")
BOOL_KEYS = ("sp", "reshard", "embed_as_layer", "loss_as_layer", "helix", "rotate")
# knobs of contract v2, written into plan strings only when they differ from their default (v1 strings unchanged)
V2_DEFAULTS = {"reshard": True, "shard": 0, "first_layers": 0, "last_layers": 0, "embed_as_layer": False,
               "loss_as_layer": False, "etp": 1, "helix": False, "rotate": False}


@dataclass(frozen=True)
class Plan:
    """Degrees (dp × tp × pp × cp = devices) and knobs of one parallel configuration.

    ``recompute``: none; selective (the attention core: Korthikanti et al. 2022); full (the whole layer, only its
    input kept); modules (Megatron-Core's fine-grained ``--recompute-granularity selective --recompute-modules
    core_attn layernorm moe_act mla_up_proj``: the attention core, both layer norms, the experts' activation
    function and MLA's up-projections are recomputed in backward and their outputs not kept).
    ``zero``: 0 plain data parallel, 1 distributed optimizer (optimizer states sharded), 2 + gradients,
    3 + parameters (FSDP FULL_SHARD).  ``vpp``: model chunks per device (interleaved 1F1B).
    ``reshard`` (zero=3): free the gathered parameters after forward (FSDP2 ``reshard_after_forward``; False keeps
    them until backward: one all-gather per micro-batch instead of two).  ``shard``: hybrid sharding (HSDP) — the
    ZeRO shard group has ``shard`` ranks and ``dp·cp/shard`` replica groups all-reduce the shards; 0 = the whole
    data-parallel group.  ``first_layers`` / ``last_layers``: explicit layer counts of the first / last pipeline
    stage (Megatron-Core ``--decoder-first/last-pipeline-num-layers``; 0 = the default split).
    ``embed_as_layer`` / ``loss_as_layer``: the embedding / the loss count as one layer in the pipeline split
    (Megatron-Core ``--account-for-embedding/loss-in-pipeline-split``).
    ``ep`` / ``etp`` (mixture-of-experts workloads): expert-parallel and expert-tensor-parallel degrees.  The
    expert layers are laid out over the same dp·cp·tp ranks as attention (Megatron-Core "MoE parallel folding":
    ep·etp divides dp·cp·tp; the rest, dp·cp·tp/(ep·etp), is the expert-data-parallel group); ``etp`` defaults to
    1 (Megatron-Core's MoE recipes set ``--expert-tensor-parallel-size 1``).
    ``cp_kind``: the context-parallel layout (``CP_KINDS``; default ring with zig-zag chunks; see
    docs/cost_model.md "Long context").
    ``helix``: HelixPipe's attention-parallel pipeline (S19: every micro-batch's attention runs on one stage, the
    micro-batches' attentions on different stages in parallel, two-fold FILO schedule; ``models/helix_terms.py``).
    ``rotate`` (zero=3): RTP's rotated weight shards (S12: each rank keeps its shard of every weight and the
    shards travel around the shard ring while each rank computes on its own data, instead of all-gathering whole
    layers as FSDP does).
    """

    dp: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    mbs: int = 1
    vpp: int = 1
    zero: int = 0
    recompute: str = "none"
    sp: bool = False
    reshard: bool = True
    shard: int = 0
    first_layers: int = 0
    last_layers: int = 0
    embed_as_layer: bool = False
    loss_as_layer: bool = False
    etp: int = 1
    cp_kind: str = "ring"
    helix: bool = False
    rotate: bool = False

    @property
    def n_devices(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    def to_string(self) -> str:
        base = (f"dp={self.dp},tp={self.tp},pp={self.pp},cp={self.cp},ep={self.ep},mbs={self.mbs},vpp={self.vpp},"
                f"zero={self.zero},recompute={self.recompute},sp={'true' if self.sp else 'false'}")
        extra = [f"{k}={_fmt(getattr(self, k))}" for k, d in V2_DEFAULTS.items() if getattr(self, k) != d]
        if self.cp_kind != "ring":  # v2 convention: written only when not the default
            extra.append(f"cp_kind={self.cp_kind}")
        return ",".join([base, *extra])

    @property
    def shard_group(self) -> int:
        """Ranks of one ZeRO shard group (the whole dp×cp group unless hybrid sharding)."""
        return self.shard if self.shard else self.dp * self.cp

    def as_dict(self) -> dict:
        return asdict(self)


def _fmt(v: object) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _label(where: str, key: str) -> str:
    return f"{where}.{key}" if where == "plan" else f"{where} {key}"


def split_pairs(items, where: str = "plan") -> list[tuple[str, object]]:
    """``"tp=8,pp=4"``, ``["tp=8", "pp=4"]`` or a mapping → ``[("tp", "8"), ("pp", "4")]``."""
    if isinstance(items, dict):
        return list(items.items())
    pairs: list[tuple[str, object]] = []
    for item in [items] if isinstance(items, str) else items:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise SpecError(f"expected key=value, got {part!r}", key=where, hint='write e.g. "tp=8,pp=4"')
            key, _, raw = part.partition("=")
            pairs.append((key.strip(), raw.strip()))
    return pairs


def parse_plan_values(pairs, where: str = "plan") -> dict:
    """Typed, range-checked plan values from (key, raw) pairs: ``recompute`` a name, ``sp`` a bool, the rest whole
    numbers (``zero`` 0–3, the degrees ≥ 1).  Shared by plan strings and the planner's ``--fix`` pins."""
    values: dict[str, object] = {}
    for key, raw in pairs:
        if key not in PLAN_KEYS:
            raise SpecError(f"unknown plan key {key!r}", key=where, allowed=list(PLAN_KEYS),
                            hint=did_you_mean(key, PLAN_KEYS))
        if key in values:
            raise SpecError(f"key {key!r} given twice", key=where)
        if key == "recompute":
            if raw not in RECOMPUTE:
                raise SpecError(f"bad value {raw!r}", key=_label(where, key), allowed=list(RECOMPUTE),
                                hint=did_you_mean(str(raw), RECOMPUTE))
            values[key] = raw
        elif key == "cp_kind":
            if raw not in CP_KINDS:
                raise SpecError(f"bad value {raw!r}", key=_label(where, key), allowed=list(CP_KINDS),
                                hint=did_you_mean(str(raw), CP_KINDS))
            values[key] = raw
        elif key in BOOL_KEYS:
            low = str(raw).strip().lower()
            if isinstance(raw, bool):
                values[key] = raw
            elif low in ("true", "1", "yes", "on"):
                values[key] = True
            elif low in ("false", "0", "no", "off"):
                values[key] = False
            else:
                raise SpecError(f"bad value {raw!r}", key=_label(where, key), allowed=["true", "false"])
        else:
            try:
                iv = int(raw)
                if isinstance(raw, bool) or (isinstance(raw, float) and iv != raw):
                    raise ValueError
            except (TypeError, ValueError):
                raise SpecError(f"bad value {raw!r}: expected a whole number", key=_label(where, key)) from None
            if key == "zero" and iv not in (0, 1, 2, 3):
                raise SpecError(f"bad value {iv}", key=_label(where, key), allowed=["0", "1", "2", "3"])
            if key in ("shard", "first_layers", "last_layers"):
                if iv < 0:
                    raise SpecError(f"bad value {iv}: must be a whole number ≥ 0 (0 = default)", key=_label(where, key))
            elif key != "zero" and iv < 1:
                raise SpecError(f"bad value {iv}: must be a whole number ≥ 1", key=_label(where, key))
            values[key] = iv
    return values


def parse_plan(text: str, n_devices: int | None = None) -> Plan:
    """Parse ``"dp=64,tp=8,pp=16,mbs=1,zero=1,recompute=selective,sp=true"``.

    ``dp`` may be omitted when ``n_devices`` is known (it is derived).  Unknown keys are errors.
    """
    if not isinstance(text, str) or not text.strip():
        raise SpecError("empty plan", key="plan", hint='write e.g. "tp=8,pp=4,mbs=1"')
    values = parse_plan_values(split_pairs(text))
    if not values:
        raise SpecError(f"no key=value in plan {text!r}", key="plan", hint='write e.g. "tp=8,pp=4"')
    return make_plan(values, n_devices)


def make_plan(values: dict, n_devices: int | None = None) -> Plan:
    """Build a ``Plan`` from a mapping, deriving ``dp`` from ``n_devices`` if absent; range checks only."""
    v = dict(values)
    for key in ("tp", "pp", "cp", "ep", "etp", "mbs", "vpp"):
        if key in v and (not isinstance(v[key], int) or isinstance(v[key], bool) or v[key] < 1):
            raise SpecError(f"bad value {v[key]!r}: must be a whole number ≥ 1", key=f"plan.{key}")
    if "zero" in v and v["zero"] not in (0, 1, 2, 3):
        raise SpecError(f"bad value {v['zero']!r}", key="plan.zero", allowed=["0", "1", "2", "3"])
    rest = 1
    for key in ("tp", "pp", "cp"):
        rest *= int(v.get(key, 1))
    if "dp" not in v:
        if n_devices is None:
            raise SpecError("dp is missing and the device count is unknown", key="plan.dp")
        if n_devices % rest:
            raise SpecError(f"tp×pp×cp = {rest} does not divide the {n_devices} devices", key="plan",
                            hint="choose degrees whose product divides the device count")
        v["dp"] = n_devices // rest
    elif not isinstance(v["dp"], int) or isinstance(v["dp"], bool) or v["dp"] < 1:
        raise SpecError(f"bad value {v['dp']!r}: must be a whole number ≥ 1", key="plan.dp")
    if n_devices is not None and v["dp"] * rest != n_devices:
        raise SpecError(f"dp×tp×pp×cp = {v['dp']}×{v.get('tp', 1)}×{v.get('pp', 1)}×{v.get('cp', 1)} = "
                        f"{v['dp'] * rest} but the cluster has {n_devices} devices", key="plan",
                        hint="omit dp to derive it from the device count")
    return Plan(**v)
