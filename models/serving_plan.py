"""A serving deployment: pools of model replicas, each with its own parallelism, batch limit and chunk size.

Grammar of a deployment string (``parse_deployment``; ``Deployment.to_string`` writes it back):

    DEPLOYMENT := [MODE ";"] POOLS [";" KNOBS]
    POOLS      := POOL ("+" POOL)*
    POOL       := [ROLE ":"] [N "x"] "(" PAIRS ")"   |   PAIRS          (a bare PAIRS is one "mixed" pool)
    PAIRS      := key=value ("," key=value)*         keys: tp, pp, ep, dp (= attn_dp), batch, chunk, replicas
    KNOBS      := key=value ("," key=value)*         keys: spd_drop (0–1), fused (true|false), micro_batches (≥ 1)

Examples::

    tp=8,batch=64,chunk=2048                                     one aggregated pool of one tp=8 replica
    tp=2,batch=64,replicas=4                                     four tp=2 replicas (8 devices)
    prefill:2x(tp=4)+decode:1x(tp=8,batch=128)                   disaggregated prefill / decode
    attention:2x(tp=4,dp=2,batch=256)+expert:1x(ep=8);micro_batches=2   MegaScale-Infer attention / FFN
    tp=8,batch=64;spd_drop=0.5                                   SPD: half the TP all-reduces dropped

The mode is inferred from the roles (mixed → aggregated, prefill/decode → disaggregated, attention/expert →
af-disaggregated) unless written first (``aggregated;tp=8``).  A bare mixed pool without ``replicas=`` fills
``n_devices`` with replicas (``tp=2`` on 8 devices = 4 replicas); with ``replicas`` or explicit pools the devices
must add up to at most ``n_devices``.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace

from parplan.errors import SpecError, did_you_mean, short

ROLES = ("mixed", "prefill", "decode", "attention", "expert")
MODES = ("aggregated", "disaggregated", "af-disaggregated")
MODE_ROLES = {"aggregated": ("mixed",), "disaggregated": ("prefill", "decode"),
              "af-disaggregated": ("attention", "expert")}
POOL_KEYS = ("tp", "pp", "ep", "dp", "batch", "chunk", "replicas")
KNOB_KEYS = ("spd_drop", "fused", "micro_batches")
DEFAULT_BATCH = 256  # vLLM's default --max-num-seqs (https://docs.vllm.ai/en/latest/serving/engine_args.html)
MAX_DEGREE = 1 << 16  # bound on any degree / batch in a string (a typo of 10**9 is refused, not planned)
MAX_REPLICAS = 1 << 20  # replicas of a pool: as many as a cluster holds devices (hardware.types.MAX_DEVICES)


@dataclass(frozen=True)
class Pool:
    """``replicas`` identical model replicas of one role.  One replica spans ``devices_per_replica`` =
    tp·pp·attn_dp devices, the experts laid over those same ranks with ``ep`` dividing tp·attn_dp (vLLM/SGLang
    ``--enable-expert-parallel``: EP size = TP × DP); the ``expert`` role of an af-disaggregated deployment spans
    ep·tp expert devices of its own.

    ``max_batch``: sequences one replica runs at once (vLLM ``--max-num-seqs``); ``chunk_tokens``: prompt tokens per
    iteration of chunked prefill (vLLM ``--max-num-batched-tokens``; 0 = prefill whole prompts, no chunking).
    """

    role: str
    replicas: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    attn_dp: int = 1
    max_batch: int = DEFAULT_BATCH
    chunk_tokens: int = 0

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise SpecError(f"unknown pool role {short(self.role)}", key="deployment", allowed=list(ROLES),
                            hint=did_you_mean(str(self.role), ROLES))
        for name in ("replicas", "tp", "pp", "ep", "attn_dp", "max_batch"):
            v = getattr(self, name)
            cap = MAX_REPLICAS if name == "replicas" else MAX_DEGREE  # tp=1 replicas fill a 2^20-device cluster
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= cap:
                raise SpecError(f"{name} must be a whole number 1–{cap}, got {short(v)}", key="deployment")
        c = self.chunk_tokens
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= (1 << 24):
            raise SpecError(f"chunk_tokens must be a whole number ≥ 0, got {short(c)}", key="deployment")
        if self.role == "expert":
            if self.pp != 1 or self.attn_dp != 1:
                raise SpecError("an expert pool has only tp and ep degrees", key="deployment")
        elif self.ep > 1 and (self.tp * self.attn_dp) % self.ep:
            raise SpecError(f"ep={self.ep} must divide tp·dp = {self.tp * self.attn_dp} (experts are laid over the "
                            "attention ranks)", key="deployment", hint="pick ep from the divisors of tp·dp")

    @property
    def devices_per_replica(self) -> int:
        if self.role == "expert":
            return self.ep * self.tp
        return self.tp * self.pp * self.attn_dp

    @property
    def n_devices(self) -> int:
        return self.replicas * self.devices_per_replica

    def pairs(self) -> str:
        parts = [f"tp={self.tp}"]
        if self.pp != 1:
            parts.append(f"pp={self.pp}")
        if self.ep != 1:
            parts.append(f"ep={self.ep}")
        if self.attn_dp != 1:
            parts.append(f"dp={self.attn_dp}")
        if self.role != "expert":
            parts.append(f"batch={self.max_batch}")
        if self.chunk_tokens:
            parts.append(f"chunk={self.chunk_tokens}")
        return ",".join(parts)

    def as_dict(self) -> dict:
        return {**asdict(self), "devices_per_replica": self.devices_per_replica, "n_devices": self.n_devices}


@dataclass(frozen=True)
class Deployment:
    """Pools of one serving deployment and its cross-pool knobs.

    ``spd_drop``: fraction of the TP all-reduces removed (SPD, seed S07: sync-point drop of the attention output
    all-reduce in insensitive blocks); ``fused_ar_a2a``: MixServe's fused all-reduce + all-to-all of hybrid TP/EP
    (seed S15); ``micro_batches``: ping-pong micro-batches between attention and expert pools (MegaScale-Infer,
    seed S09; af-disaggregated only).
    """

    mode: str
    pools: tuple[Pool, ...]
    spd_drop: float = 0.0
    fused_ar_a2a: bool = False
    micro_batches: int = 1
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SpecError(f"unknown deployment mode {short(self.mode)}", key="deployment", allowed=list(MODES),
                            hint=did_you_mean(str(self.mode), MODES))
        if not self.pools:
            raise SpecError("a deployment needs at least one pool", key="deployment")
        want = MODE_ROLES[self.mode]
        roles = [p.role for p in self.pools]
        bad = [r for r in roles if r not in want]
        if bad:
            raise SpecError(f"role {bad[0]!r} does not belong in a {self.mode} deployment", key="deployment",
                            allowed=list(want))
        if sorted(set(roles)) != sorted(want) or len(roles) != len(want):
            raise SpecError(f"a {self.mode} deployment has exactly one pool of each role {' and '.join(want)}",
                            key="deployment")
        if not (isinstance(self.spd_drop, (int, float)) and not isinstance(self.spd_drop, bool)
                and 0.0 <= float(self.spd_drop) <= 1.0):
            raise SpecError(f"spd_drop must be a fraction 0–1, got {short(self.spd_drop)}", key="deployment")
        mb = self.micro_batches
        if isinstance(mb, bool) or not isinstance(mb, int) or not 1 <= mb <= 16:
            raise SpecError(f"micro_batches must be a whole number 1–16, got {short(mb)}", key="deployment")
        if mb > 1 and self.mode != "af-disaggregated":
            raise SpecError("micro_batches > 1 is the ping-pong of an af-disaggregated deployment",
                            key="deployment", hint="use attention:…+expert:… pools")

    @property
    def n_devices(self) -> int:
        return sum(p.n_devices for p in self.pools)

    def pool(self, role: str) -> Pool:
        for p in self.pools:
            if p.role == role:
                return p
        raise KeyError(role)

    def to_string(self) -> str:
        if self.mode == "aggregated":
            p = self.pools[0]
            text = p.pairs() + f",replicas={p.replicas}"  # always: a bare pool fills the cluster when parsed
        else:
            text = "+".join(f"{p.role}:{p.replicas}x({p.pairs()})" for p in self.pools)
        knobs = []
        if self.spd_drop:
            knobs.append(f"spd_drop={float(self.spd_drop):g}")
        if self.fused_ar_a2a:
            knobs.append("fused=true")
        if self.micro_batches != 1:
            knobs.append(f"micro_batches={self.micro_batches}")
        return text + (";" + ",".join(knobs) if knobs else "")

    def with_knobs(self, **kw) -> "Deployment":
        return replace(self, **kw)

    def as_dict(self) -> dict:
        return {"mode": self.mode, "pools": [p.as_dict() for p in self.pools], "spd_drop": float(self.spd_drop),
                "fused_ar_a2a": self.fused_ar_a2a, "micro_batches": self.micro_batches,
                "n_devices": self.n_devices, "deployment": self.to_string()}


_POOL_RE = re.compile(r"^\s*(?:(?P<role>[A-Za-z_-]+)\s*:)?\s*(?:(?P<n>\d+)\s*[xX×]\s*)?\((?P<pairs>[^()]*)\)\s*$")
MAX_TEXT = 2000  # characters of a deployment string


def _int(key: str, raw: str, lo: int = 1) -> int:
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise SpecError(f"{key} must be a whole number, got {short(raw)}", key=f"deployment.{key}") from None
    if not lo <= v <= (1 << 24 if key == "chunk" else MAX_DEGREE):
        raise SpecError(f"{key} out of range: {v}", key=f"deployment.{key}")
    return v


def _pairs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise SpecError(f"expected key=value, got {short(part)}", key="deployment",
                            hint='write e.g. "tp=8,batch=64,chunk=2048"')
        k, _, v = part.partition("=")
        k = k.strip()
        if k in out:
            raise SpecError(f"key {k!r} given twice", key="deployment")
        out[k] = v.strip()
    return out


def _make_pool(role: str, replicas: int | None, kv: dict[str, str]) -> tuple[Pool, bool]:
    for k in kv:
        if k not in POOL_KEYS:
            raise SpecError(f"unknown pool key {short(k)}", key="deployment", allowed=list(POOL_KEYS),
                            hint=did_you_mean(k, POOL_KEYS))
    explicit = replicas is not None or "replicas" in kv
    if replicas is not None and "replicas" in kv:
        raise SpecError("replicas given twice (N x (...) and replicas=)", key="deployment")
    reps = replicas if replicas is not None else _int("replicas", kv.get("replicas", "1"))
    pool = Pool(role=role, replicas=reps, tp=_int("tp", kv.get("tp", "1")), pp=_int("pp", kv.get("pp", "1")),
                ep=_int("ep", kv.get("ep", "1")), attn_dp=_int("dp", kv.get("dp", "1")),
                max_batch=_int("batch", kv.get("batch", str(DEFAULT_BATCH))),
                chunk_tokens=_int("chunk", kv.get("chunk", "0"), lo=0))
    return pool, explicit


def _knobs(text: str) -> dict:
    kv = _pairs(text)
    out: dict = {}
    for k, v in kv.items():
        if k not in KNOB_KEYS:
            raise SpecError(f"unknown deployment knob {short(k)}", key="deployment", allowed=list(KNOB_KEYS),
                            hint=did_you_mean(k, KNOB_KEYS))
        if k == "spd_drop":
            try:
                out["spd_drop"] = float(v)
            except ValueError:
                raise SpecError(f"spd_drop must be a number, got {short(v)}", key="deployment.spd_drop") from None
        elif k == "fused":
            low = v.lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise SpecError(f"fused must be true or false, got {short(v)}", key="deployment.fused")
            out["fused_ar_a2a"] = low in ("true", "1", "yes")
        else:
            out["micro_batches"] = _int("micro_batches", v)
    return out


def parse_deployment(text: str, n_devices: int) -> Deployment:
    """A ``Deployment`` from its string (grammar in the module docstring) on a cluster of ``n_devices``."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError("empty deployment", key="deployment", hint='write e.g. "tp=8,batch=64,chunk=2048"')
    if len(text) > MAX_TEXT:
        raise SpecError(f"deployment string longer than {MAX_TEXT} characters", key="deployment")
    parts = [s.strip() for s in text.split(";")]
    mode = None
    if parts and parts[0] in MODES:
        mode = parts.pop(0)
    elif parts and "=" not in parts[0] and "(" not in parts[0]:
        raise SpecError(f"unknown deployment mode {short(parts[0])}", key="deployment", allowed=list(MODES),
                        hint=did_you_mean(parts[0], MODES))
    if not parts:
        raise SpecError("a deployment needs at least one pool", key="deployment")
    body, knob_parts = parts[0], parts[1:]
    knobs: dict = {}
    for kp in knob_parts:
        new = _knobs(kp)
        twice = sorted(set(new) & set(knobs))
        if twice:  # across ';' parts (within one part _pairs refuses it): the last one silently won
            raise SpecError(f"knob {twice[0]!r} given twice", key="deployment")
        knobs.update(new)
    pools: list[Pool] = []
    explicit = True
    if "(" in body:
        for chunk in body.split("+"):
            m = _POOL_RE.match(chunk)
            if not m:
                raise SpecError(f"cannot read pool {short(chunk)}", key="deployment",
                                hint='write e.g. "prefill:2x(tp=4)+decode:1x(tp=8,batch=128)"')
            role = (m.group("role") or "mixed").strip()
            if role not in ROLES:
                raise SpecError(f"unknown pool role {short(role)}", key="deployment", allowed=list(ROLES),
                                hint=did_you_mean(role, ROLES))
            n = _int("replicas", m.group("n")) if m.group("n") else None
            pool, _ = _make_pool(role, n if n is not None else 1, _pairs(m.group("pairs")))
            pools.append(pool)
    else:
        pool, explicit = _make_pool("mixed", None, _pairs(body))
        pools.append(pool)
    if mode is None:
        roles = {p.role for p in pools}
        mode = next((m for m, rs in MODE_ROLES.items() if roles & set(rs)), "aggregated")
    if not explicit and len(pools) == 1 and mode == "aggregated":
        per = pools[0].devices_per_replica
        if n_devices >= per and n_devices % per == 0:
            pools[0] = replace(pools[0], replicas=n_devices // per)
    dep = Deployment(mode=mode, pools=tuple(pools), **knobs)
    if n_devices and dep.n_devices > n_devices:
        raise SpecError(f"deployment uses {dep.n_devices} devices, the cluster has {n_devices}", key="deployment",
                        hint="lower tp/pp/dp or the replica counts")
    return dep
