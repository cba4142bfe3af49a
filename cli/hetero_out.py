"""Output of heterogeneous plans (multi-group clusters): ``suggest`` tables/CSV/JSON and ``estimate --plan-file``."""
from __future__ import annotations

import io

import pandas as pd
from rich.markup import escape
from rich.table import Table

from parplan.cli.common import gib, human_s, out_console
from parplan.hardware.types import Cluster
from parplan.models.hetero import HeteroPlan, HeteroResult

# columns of `suggest --format csv` on a multi-group cluster (stable from now on)
HETERO_COLUMNS = [
    "rank", "label", "workload", "cluster", "n_devices_used", "tp", "mbs", "zero", "recompute", "sp", "pipelines",
    "stages", "fits", "step_time_s", "tokens_per_s", "mfu", "memory_peak_bytes", "pipeline_time_max_s",
    "sync_exposed_s", "optimizer_s", "speedup_vs_uniform", "speedup_vs_fastest_group", "heuristic",
]


def stages_text(plan: HeteroPlan, cluster: Cluster) -> str:
    """Compact, readable: identical replicas folded, e.g. ``4× m=128 [a100-sxm-80gb:0-13 | v100-sxm-32gb:14-39]``."""
    out: list[list] = []
    for p in plan.pipelines:
        body = f"m={p.micro_batches} [" + " | ".join(_runs(p.stages, cluster)) + "]"
        if out and out[-1][1] == body:
            out[-1][0] += 1
        else:
            out.append([1, body])
    return "; ".join(f"{n}× {b}" for n, b in out)


def _runs(stages, cluster: Cluster) -> list[str]:
    """Consecutive stages on one group as one run: ``a100-sxm-80gb 0-13,14-27`` or, for long runs,
    ``a100-sxm-80gb ×8 0-23 (3 layers each)``."""
    runs: list[list] = []
    for s in stages:
        if runs and runs[-1][0] == s.group:
            runs[-1][1].append(s)
        else:
            runs.append([s.group, [s]])
    out = []
    for g, ss in runs:
        dev = cluster.groups[g].device.id
        if len(ss) <= 3:
            out.append(dev + " " + ",".join(f"{x.first_layer}-{x.last_layer - 1}" for x in ss))
        else:
            sizes = sorted({x.layers for x in ss})
            each = f"{sizes[0]} layers each" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]} layers"
            out.append(f"{dev} ×{len(ss)} {ss[0].first_layer}-{ss[-1].last_layer - 1} ({each})")
    return out


def result_row(rank: int, label: str, res: HeteroResult, cluster: Cluster, workload: str, speedups: dict,
               heuristic: bool = False) -> dict:
    p = res.plan
    return {"rank": rank, "label": label, "workload": workload, "cluster": cluster.name,
            "n_devices_used": sum(p.devices_per_group(len(cluster.groups))), "tp": p.tp, "mbs": p.mbs,
            "zero": p.zero, "recompute": p.recompute, "sp": p.sp, "pipelines": len(p.pipelines),
            "stages": stages_text(p, cluster), "fits": res.fits, "step_time_s": res.step_time_s,
            "tokens_per_s": res.tokens_per_s, "mfu": res.mfu, "memory_peak_bytes": res.memory_peak_bytes,
            "pipeline_time_max_s": max(res.pipeline_times_s), "sync_exposed_s": res.sync_exposed_s,
            "optimizer_s": res.optimizer_s, "speedup_vs_uniform": speedups.get("speedup_vs_uniform"),
            "speedup_vs_fastest_group": speedups.get("speedup_vs_fastest_group"), "heuristic": heuristic}


def _speedups(step: float, uniform: HeteroResult | None, fastest) -> dict:
    return {"speedup_vs_uniform": uniform.step_time_s / step if uniform is not None else None,
            "speedup_vs_fastest_group": fastest.step_time_s / step if fastest is not None else None}


def hetero_frame(ps, workload_name: str, cluster: Cluster, top: int) -> pd.DataFrame:
    rows = []
    cands = ps.candidates if top == 0 else ps.candidates[:top]
    for i, c in enumerate(cands, 1):
        rows.append(result_row(i, c.result.plan.label, c.result, cluster, workload_name,
                               _speedups(c.result.step_time_s, ps.uniform, ps.fastest_group), c.heuristic))
    return pd.DataFrame(rows, columns=HETERO_COLUMNS)


def hetero_json(ps, workload_name: str, cluster: Cluster, top: int) -> dict:
    cands = ps.candidates if top == 0 else ps.candidates[:top]
    plans = []
    for i, c in enumerate(cands, 1):
        d = c.result.to_dict(cluster)
        d.update({"rank": i, "heuristic": c.heuristic, "ilp_objective_s": c.ilp_objective_s,
                  **_speedups(c.result.step_time_s, ps.uniform, ps.fastest_group)})
        plans.append(d)
    fast = None
    if ps.fastest_group is not None:
        fast = ps.fastest_group.to_dict()
        fast["group"] = ps.fastest_group_id
    return {"workload": workload_name, "cluster": cluster.name, "heterogeneous": True,
            "groups": [{"index": g, "device": grp.device.id, "devices": grp.n_devices}
                       for g, grp in enumerate(cluster.groups)],
            "plans": plans,
            "baselines": {"uniform": ps.uniform.to_dict(cluster) if ps.uniform is not None else None,
                          "fastest_group": fast},
            "infeasible": dict(ps.infeasible), "stats": dict(ps.stats)}


def render_hetero(ps, workload_name: str, cluster: Cluster, top: int) -> str:
    con = out_console(220)
    with con.capture() as cap:
        groups = ", ".join(f"{g.nodes}×{g.devices_per_node} {g.device.id}" for g in cluster.groups)
        t = Table(title=f"{workload_name} on {cluster.name} ({cluster.n_devices} devices: {groups})")
        for col in ("#", "plan", "tp", "mbs", "recomp", "step", "tokens/s", "MFU", "mem GiB", "vs uniform",
                    "vs fastest group", escape("pipelines (replicas × share [device:layers | …])")):
            t.add_column(col, justify="right" if col in ("#", "tp", "mbs", "step", "tokens/s", "MFU", "mem GiB",
                                                           "vs uniform", "vs fastest group") else "left")
        cands = ps.candidates if top == 0 else ps.candidates[:top]
        for i, c in enumerate(cands, 1):
            r = c.result
            sp = _speedups(r.step_time_s, ps.uniform, ps.fastest_group)
            t.add_row(str(i), r.plan.label, str(r.plan.tp), str(r.plan.mbs), r.plan.recompute, human_s(r.step_time_s),
                      f"{r.tokens_per_s:,.0f}", f"{100 * r.mfu:.1f}%", gib(r.memory_peak_bytes),
                      f"{sp['speedup_vs_uniform']:.2f}×" if sp["speedup_vs_uniform"] else "—",
                      f"{sp['speedup_vs_fastest_group']:.2f}×" if sp["speedup_vs_fastest_group"] else "—",
                      escape(stages_text(r.plan, cluster)))
        if ps.uniform is not None:
            u = ps.uniform
            t.add_row("base", "uniform (equal layers, equal data)", str(u.plan.tp), str(u.plan.mbs), u.plan.recompute,
                      human_s(u.step_time_s), f"{u.tokens_per_s:,.0f}", f"{100 * u.mfu:.1f}%",
                      gib(u.memory_peak_bytes), "1.00×", "", escape(stages_text(u.plan, cluster)), style="dim")
        if ps.fastest_group is not None:
            f = ps.fastest_group
            g = cluster.groups[ps.fastest_group_id]
            t.add_row("base", f"fastest group only ({g.n_devices}× {g.device.id})", str(f.plan.tp), str(f.plan.mbs),
                      f.plan.recompute, human_s(f.step_time_s), f"{f.tokens_per_s:,.0f}", f"{100 * f.mfu:.1f}%",
                      gib(f.memory_peak_bytes), "", "1.00×", f.plan.to_string(), style="dim")
        con.print(t)
    return cap.get()


def render_hetero_estimate(res: HeteroResult, workload_name: str, cluster: Cluster) -> str:
    con = out_console(200)
    with con.capture() as cap:
        t = Table(title=f"{workload_name} on {cluster.name}: {res.plan.label}", show_header=False)
        t.add_column("k", style="bold")
        t.add_column("v")
        t.add_row("plan", f"tp={res.plan.tp}, mbs={res.plan.mbs}, zero={res.plan.zero}, recompute={res.plan.recompute}"
                          f", sp={'true' if res.plan.sp else 'false'}")
        t.add_row("pipelines", escape(stages_text(res.plan, cluster)))
        t.add_row("step time", human_s(res.step_time_s))
        t.add_row("throughput", f"{res.tokens_per_s:,.0f} tokens/s; MFU {100 * res.mfu:.1f} %")
        t.add_row("pipeline times", ", ".join(human_s(x) for x in sorted(set(res.pipeline_times_s))))
        t.add_row("chunked gradient sync (exposed)", human_s(res.sync_exposed_s))
        t.add_row("optimizer step", human_s(res.optimizer_s))
        t.add_row("memory", f"peak {gib(res.memory_peak_bytes)} GiB per device")
        t.add_row("fits", "yes" if res.fits else "NO — " + "; ".join(res.reasons))
        con.print(t)
    return cap.get()


def frame_to_csv(df: pd.DataFrame) -> str:
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()
