"""Playing out heterogeneous plans: every distinct pipeline of a ``HeteroPlan`` simulated with its own per-stage
costs (stages on different device groups, non-uniform layer counts) and its own micro-batch share.

Only for families the registry gives a heterogeneous model (``executor.families.check_hetero`` raises a clear
``SpecError`` otherwise).  The per-stage costs are the analytical model's (``models.hetero.group_costs``: per-layer
forward, backward, recompute, embedding/output extras, p2p on the stage's slowest boundary), handed to the same
engine and 1F1B schedule as homogeneous plans.  Replicas only meet in the chunked gradient aggregation after their
last backward; its exposed time and the optimizer step are taken from the model, so the simulated step is
max over pipelines (simulated) + exposed sync + optimizer.
"""
from __future__ import annotations

from dataclasses import dataclass

from parplan.executor.costs import PipelineCosts
from parplan.executor.families import check_hetero
from parplan.executor.simulate import simulate_costs
from parplan.hardware.types import Cluster
from parplan.models.hetero import HeteroPlan, evaluate_hetero, group_costs, link_between
from parplan.workloads.transformer import Workload


@dataclass
class HeteroSimulation:
    step_time_s: float
    pipeline_times_s: list  # simulated, per pipeline of the plan
    analytical_pipeline_times_s: list
    analytical_step_time_s: float
    sync_exposed_s: float
    optimizer_s: float

    @property
    def rel_diff(self) -> float:
        return (self.analytical_step_time_s - self.step_time_s) / self.step_time_s


def pipeline_costs(workload: Workload, cluster: Cluster, plan: HeteroPlan, k: int) -> PipelineCosts:
    check_hetero(workload)
    p = plan.pipelines[k]
    S = len(p.stages)
    fwd, bwd, layers, act = [], [], [], []
    p2p_work, p2p_lat = 0.0, 0.0
    for i, s in enumerate(p.stages):
        c = group_costs(workload, cluster, s.group, plan.tp, plan.mbs, plan.recompute, plan.sp)
        f = s.layers * c.layer_fwd_s + (c.emb_fwd_s if i == 0 else 0.0) + (c.out_fwd_s if i == S - 1 else 0.0)
        b = s.layers * c.layer_bwd_s + ((c.emb_s - c.emb_fwd_s) if i == 0 else 0.0) \
            + ((c.out_s - c.out_fwd_s) if i == S - 1 else 0.0)
        fwd.append(f)
        bwd.append(b)
        layers.append(s.layers)
        act.append(s.layers * c.act_bytes_per_layer)
        for j in (i - 1, i + 1):
            if 0 <= j < S:
                bw, lat = link_between(cluster, s.group, p.stages[j].group)
                if c.p2p_bytes / bw + lat > p2p_work + p2p_lat:
                    p2p_work, p2p_lat = c.p2p_bytes / bw, lat
    return PipelineCosts(pp=S, vpp=1, micro_batches=p.micro_batches, fwd_s=tuple(fwd), bwd_s=tuple(bwd),
                         layers=tuple(layers), act_bytes=tuple(act), p2p_work_s=p2p_work, p2p_latency_s=p2p_lat,
                         notes=("heterogeneous pipeline: per-stage costs from models.hetero",))


def simulate_hetero(workload: Workload, cluster: Cluster, plan: HeteroPlan) -> HeteroSimulation:
    check_hetero(workload)  # a clear SpecError for a family without a heterogeneous model
    model = evaluate_hetero(workload, cluster, plan)
    done: dict = {}
    sim_times = []
    for k, p in enumerate(plan.pipelines):
        if p not in done:
            done[p] = simulate_costs(pipeline_costs(workload, cluster, plan, k), "1f1b").step_time_s
        sim_times.append(done[p])
    step = max(sim_times) + model.sync_exposed_s + model.optimizer_s
    return HeteroSimulation(step_time_s=step, pipeline_times_s=sim_times,
                            analytical_pipeline_times_s=list(model.pipeline_times_s),
                            analytical_step_time_s=model.step_time_s, sync_exposed_s=model.sync_exposed_s,
                            optimizer_s=model.optimizer_s)
