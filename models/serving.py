"""Serving estimate of deployments (vectorized over them: one formula for ``estimate_serving`` and the planner):
memory and KV capacity per pool, the steady decode batch under the load, TTFT and TPOT percentiles, throughput and
goodput under the SLOs, with an 80 % interval.

Deployments are priced as arrays, one block per mode (``models/serving_arrays.py``; a list of ``Deployment``
objects is laid out so): ``evaluate`` returns ``ServingArrays``, whose time breakdowns, goodput and reasons are
priced only for the rows asked (``rows``); ``evaluate_serving`` is every quantity of every row, as a dict.
One block's estimate: ``models/serving_eval.py``; load and latency: ``models/serving_agg.py`` (aggregated and
attention pools under chunked prefill, open and closed loops; disaggregated prefill/decode), closed forms in
``models/serving_queue.py``; the executor's ``PoolCost`` in ``models/serving_pool.py`` (re-exported here).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models import serving_memory as sm
from parplan.models.serving_arrays import as_deployment_set
from parplan.models.serving_eval import (GiB, _iter_fn, _Pools, evaluate_block, goodput, normal_cdf,  # noqa: F401
                                         reasons)
from parplan.models.serving_plan import Deployment, parse_deployment
from parplan.models.serving_terms import PARTS, serving_context
from parplan.models.serving_pool import PoolCost, pool_cost  # noqa: F401  (the executor's interface)
from parplan.workloads.serving import load_serving


def _check(workload, cluster, dep: Deployment) -> None:
    m = workload.model
    if dep.n_devices > cluster.n_devices:
        raise SpecError(f"deployment uses {dep.n_devices} devices, the cluster has {cluster.n_devices}",
                        key="deployment")
    dpn = int(getattr(cluster.group, "scale_up_devices", cluster.group.devices_per_node))
    for p in dep.pools:
        if p.role == "expert":
            if not hasattr(m, "experts") or m.experts % p.ep:
                raise SpecError(f"ep={p.ep} must divide the experts of an MoE model", key="deployment.ep")
            continue
        if m.heads % p.tp:
            raise SpecError(f"tp={p.tp} does not divide heads={m.heads}", key="deployment.tp")
        if p.tp > dpn:
            raise SpecError(f"tp={p.tp} spans scale-up domains ({dpn} devices each)", key="deployment.tp",
                            hint="use pp or more replicas across nodes")
        if p.pp > m.layers:
            raise SpecError(f"pp={p.pp} exceeds the {m.layers} layers", key="deployment.pp")
        if p.ep > 1 and (not hasattr(m, "experts") or m.experts % p.ep):
            raise SpecError(f"ep={p.ep} needs an MoE model whose experts it divides", key="deployment.ep")
    if dep.mode == "af-disaggregated" and not hasattr(m, "experts"):
        raise SpecError("af-disaggregated deployments need an MoE model", key="deployment")


# the keys of evaluate_serving, in its order (decode_/prefill_ breakdown parts follow)
KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "output_tokens_per_s", "requests_per_s",
        "goodput_tokens_per_s", "n_devices", "batch_per_replica", "batch_cap", "kv_capacity_tokens", "weights_bytes",
        "kv_cache_bytes", "activations_bytes", "reserved_bytes", "memory_capacity_bytes", "kv_transfer_s", "fits",
        "overloaded", "prefill_utilization", "interval_low", "interval_high", "slo_fail", "reasons",
        "output_tokens_per_s_per_device", "slo_ok")
BREAKDOWN_KEYS = tuple(p + k for k in PARTS for p in ("decode_", "prefill_"))


class ServingArrays:
    """``evaluate``'s quantities over every row (in the deployments' order): the arrays of ``evaluate_block``
    (``arrays``), and on demand the goodput, the reasons and the breakdowns (``rows``, ``[key]``)."""

    def __init__(self, ds, arrays: dict, lazies: list, serving):
        self.ds, self.arrays, self.lazies, self.serving = ds, arrays, lazies, serving
        self.n = len(ds)

    @property
    def complete(self) -> bool:
        """Whether every row's load and latencies were priced (not only the fitting rows')."""
        return bool(self.n == 0 or self.arrays["_evaluated"].all())

    def __getitem__(self, k: str):
        if k not in self.arrays:
            if k == "goodput_tokens_per_s":
                self.arrays[k] = goodput(self.arrays, self.serving)
            else:
                return self.rows(np.arange(self.n))[k]
        return self.arrays[k]

    def rows(self, idx) -> dict:
        """Every quantity (``KEYS``, ``BREAKDOWN_KEYS``) of the rows ``idx``, as arrays over them."""
        idx = np.asarray(idx, dtype=np.int64)
        out = {k: v[idx] for k, v in self.arrays.items()}
        out["goodput_tokens_per_s"] = goodput(out, self.serving)
        blk = self.ds.block_of[idx]
        modes = [self.ds.blocks[b].mode for b in range(len(self.ds.blocks))]
        out["reasons"] = np.array([reasons(out, j, modes[int(blk[j])], self.serving) for j in range(len(idx))],
                                  dtype=object)
        for k in BREAKDOWN_KEYS:
            out[k] = np.full(len(idx), np.nan)
        for b, lazy in enumerate(self.lazies):
            sel = np.flatnonzero(blk == b)
            if len(sel):
                for k, v in lazy.breakdowns(self.ds.local[idx[sel]]).items():
                    out[k][sel] = v
        return out

    def materialize(self) -> dict:
        """``evaluate_serving``'s dict: every quantity of every row."""
        if self.n == 0:
            return {}
        r = self.rows(np.arange(self.n))
        return {k: r[k] for k in KEYS + BREAKDOWN_KEYS}


def evaluate(workload, cluster, serving, deps, *, engine_terms: dict | None = None,
             only_fitting: bool = False) -> ServingArrays:
    """``ServingArrays`` of deployments (a list of ``Deployment`` objects or a ``DeploymentSet``) of any modes;
    ``only_fitting``: the load and latencies of the rows that fit in memory only (``serving_eval``);
    ``engine_terms``: fitted engine-profile values (``serving_terms.serving_context``)."""
    ds = as_deployment_set(deps)
    n = len(ds)
    arrays: dict = {}
    lazies = []
    if n:
        c = serving_context(workload, cluster, serving, engine_terms)
    for blk, ix in zip(ds.blocks, ds.index):
        res, lazy = evaluate_block(c, serving, blk, only_fitting)
        for k, v in res.items():
            if k not in arrays:
                shape = (n,) + v.shape[1:]
                arrays[k] = np.full(shape, np.nan) if v.dtype.kind == "f" else np.zeros(shape, dtype=v.dtype)
            arrays[k][ix] = v
        lazies.append(lazy)
    return ServingArrays(ds, arrays, lazies, serving)


def evaluate_serving(workload, cluster, serving, deps, *, engine_terms: dict | None = None) -> dict:
    """Arrays (one entry per deployment, in order) of every estimate quantity; deployments of any modes
    (``engine_terms``: fitted engine-profile values, see ``serving_terms.serving_context``)."""
    return evaluate(workload, cluster, serving, deps, engine_terms=engine_terms).materialize()


def as_deployment(deployment, n_devices: int) -> Deployment:
    return deployment if isinstance(deployment, Deployment) else parse_deployment(str(deployment), n_devices)


SLO_KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_s", "min_tokens_per_s")


@dataclass(frozen=True)
class ServingEstimate:
    """One deployment's predicted latencies (s), throughput (tokens/s), memory per device (bytes), time breakdowns
    of a decode iteration and of one prompt's prefill (named parts summing to their totals), fits and SLOs."""

    deployment: Deployment
    workload: str
    cluster: str
    n_devices: int
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_device: float
    requests_per_s: float
    goodput_tokens_per_s: float
    batch_per_replica: float
    kv_capacity_tokens: int
    kv_transfer_s: float
    memory_bytes: dict
    memory_capacity_bytes: float
    decode_breakdown_s: dict
    prefill_breakdown_s: dict
    fits: bool
    reasons: tuple
    slo_ok: bool
    slo_failures: tuple
    interval: tuple  # (low, high) multipliers of the latencies (80 %)
    provenance_class: str = "defaults"

    @property
    def tpot_s(self) -> float:
        return self.tpot_p50_s

    @property
    def decode_iteration_s(self) -> float:
        return float(sum(self.decode_breakdown_s.values()))

    @property
    def prefill_s(self) -> float:
        return float(sum(self.prefill_breakdown_s.values()))

    def bounds(self, key: str) -> tuple[float, float]:
        """80 % interval of a latency (``ttft_p99_s`` …) or of ``output_tokens_per_s`` (inverse)."""
        lo, hi = self.interval
        v = getattr(self, key)
        return (v / hi, v / lo) if "tokens_per_s" in key else (v * lo, v * hi)

    def to_dict(self) -> dict:
        keys = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "output_tokens_per_s",
                "output_tokens_per_s_per_device", "requests_per_s", "goodput_tokens_per_s", "batch_per_replica",
                "kv_capacity_tokens", "kv_transfer_s", "memory_capacity_bytes", "fits", "slo_ok")
        d = {"deployment": self.deployment.to_string(), "mode": self.deployment.mode, "workload": self.workload,
             "cluster": self.cluster, "n_devices": self.n_devices, **{k: getattr(self, k) for k in keys}}
        d.update({"tpot_s": self.tpot_s, "reasons": list(self.reasons), "slo_failures": list(self.slo_failures),
                  "memory_bytes": dict(self.memory_bytes), "memory_peak_bytes": sum(self.memory_bytes.values()),
                  "decode_iteration_s": self.decode_iteration_s, "prefill_s": self.prefill_s,
                  "decode_breakdown_s": dict(self.decode_breakdown_s),
                  "prefill_breakdown_s": dict(self.prefill_breakdown_s),
                  "pools": [p.as_dict() for p in self.deployment.pools],
                  "provenance_class": self.provenance_class})
        for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "output_tokens_per_s"):
            d[k + "_low"], d[k + "_high"] = self.bounds(k)
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in d.items()}


def estimate_at(res: dict, i: int, dep: Deployment, workload, cluster, serving) -> ServingEstimate:
    """The ``ServingEstimate`` of row ``i`` of ``evaluate_serving``'s arrays."""
    f = lambda k: float(res[k][i])  # noqa: E731
    slo = serving.slos()
    fails = tuple(k for j, k in enumerate(SLO_KEYS) if k in slo and bool(res["slo_fail"][i, j]))
    reasons = tuple(r for r in str(res["reasons"][i]).split("; ") if r)
    return ServingEstimate(
        deployment=dep, workload=workload.name, cluster=cluster.name, n_devices=int(dep.n_devices),
        ttft_p50_s=f("ttft_p50_s"), ttft_p99_s=f("ttft_p99_s"), tpot_p50_s=f("tpot_p50_s"),
        tpot_p99_s=f("tpot_p99_s"), output_tokens_per_s=f("output_tokens_per_s"),
        output_tokens_per_s_per_device=f("output_tokens_per_s_per_device"), requests_per_s=f("requests_per_s"),
        goodput_tokens_per_s=f("goodput_tokens_per_s"), batch_per_replica=f("batch_per_replica"),
        kv_capacity_tokens=int(f("kv_capacity_tokens")), kv_transfer_s=f("kv_transfer_s"),
        memory_bytes={k: f(k) for k in sm.MEMORY_PARTS}, memory_capacity_bytes=f("memory_capacity_bytes"),
        decode_breakdown_s={k: f("decode_" + k) for k in PARTS}, prefill_breakdown_s={k: f("prefill_" + k) for k in PARTS},
        fits=bool(res["fits"][i]), reasons=reasons, slo_ok=bool(res["slo_ok"][i]), slo_failures=fails,
        interval=(f("interval_low"), f("interval_high")))


def estimate_serving(workload, cluster, serving, deployment, *, engine_terms: dict | None = None) -> ServingEstimate:
    """Estimate one deployment (a ``Deployment`` or its string) — ``evaluate_serving`` on a list of one."""
    serving = load_serving(serving)
    if not cluster.is_homogeneous:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups; serving plans one group",
                        key="--hw")
    dep = as_deployment(deployment, cluster.n_devices)
    _check(workload, cluster, dep)
    res = evaluate_serving(workload, cluster, serving, [dep], engine_terms=engine_terms)
    return estimate_at(res, 0, dep, workload, cluster, serving)
