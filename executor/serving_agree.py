"""Analytical serving estimate vs the serving executor on one deployment: TTFT p50/p99, TPOT, throughput."""
from __future__ import annotations

from dataclasses import dataclass

from parplan.executor.serving import DEFAULT_REQUESTS, ServingSimulation, simulate_serving

KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_s", "output_tokens_per_s")


@dataclass(frozen=True)
class ServingAgreement:
    deployment: str
    mode: str
    analytical: dict  # KEYS → the model's value
    simulated: dict  # KEYS → the simulation's value
    sim: ServingSimulation
    compared: tuple = KEYS  # the figures both sides have (no TPOT when no request decodes: osl 1)

    def diff(self, key: str) -> float:
        """(analytical − simulated) / simulated; inf when the model says unbounded; 0 for a figure not compared."""
        if key not in self.compared:
            return 0.0
        a, s = self.analytical[key], self.simulated[key]
        if s <= 0:
            return 0.0 if a == s else float("inf")
        return (a - s) / s

    def ok(self, tolerance: float) -> bool:
        return all(abs(self.diff(k)) <= tolerance for k in self.compared)

    def row(self) -> dict:
        out = {"deployment": self.deployment, "mode": self.mode}
        for k in KEYS:
            out[f"analytical_{k}"] = self.analytical[k]
            out[f"simulated_{k}"] = self.simulated[k]
            out[f"diff_{k}"] = self.diff(k) if k in self.compared else None
        out.update({"simulated_tpot_p99_s": self.sim.tpot_s.p99, "simulated_itl_p99_s": self.sim.itl_s.p99,
                    "preemptions": self.sim.preemptions, "saturated": self.sim.saturated,
                    "requests": self.sim.n_requests, "warmup": self.sim.warmup})
        return out


def compare_serving(workload, cluster, serving, deployment, *, n_requests: int = DEFAULT_REQUESTS, seed: int = 0,
                    max_events: int | None = None) -> ServingAgreement:
    from parplan.models.serving import as_deployment, estimate_serving

    dep = as_deployment(deployment, cluster.n_devices)
    e = estimate_serving(workload, cluster, serving, dep)
    warmup = None
    users = getattr(serving, "concurrency", None)
    if users:  # a closed loop starts with all N users at t = 0: measure after 2N requests, over at least 4N more
        n_requests, warmup = max(int(n_requests), 6 * int(users)), 2 * int(users)
    s = simulate_serving(workload, cluster, serving, dep, n_requests=n_requests, seed=seed, max_events=max_events,
                         warmup=warmup)
    return ServingAgreement(
        deployment=dep.to_string(), mode=dep.mode,
        analytical={"ttft_p50_s": e.ttft_p50_s, "ttft_p99_s": e.ttft_p99_s, "tpot_s": e.tpot_p50_s,
                    "output_tokens_per_s": e.output_tokens_per_s},
        simulated={"ttft_p50_s": s.ttft_s.p50, "ttft_p99_s": s.ttft_s.p99, "tpot_s": s.tpot_s.p50,
                   "output_tokens_per_s": s.output_tokens_per_s},
        sim=s, compared=KEYS if float(serving.osl.p99) > 1.0 else tuple(k for k in KEYS if k != "tpot_s"))
