"""Reference executor of the layer-training family: one training iteration per worker played on the shared engine
(``executor/engine.py``): a compute stream, a gradient (all-reduce) stream and an activation-exchange stream per
worker, all transfers of a worker on its one link.

* ``method=hybrid``: forward layer by layer (an MP layer waits for the all-gather of its input, an MP → DP boundary
  for its all-to-all, every worker's collective starting when all members reached it), the logits' exchange, then
  backward from the last layer — a DP layer's all-reduce queued on the gradient stream behind its backward, a
  boundary's reduce-scatter / all-to-all on the activation stream, blocking the next backward — then the optimizer.
  Unlike the closed form (one communication stream: a blocking exchange waits for the queued all-reduces), the two
  streams here share the link (processor sharing), as two NCCL communicators do.
* ``method=admm``: bulk-synchronous iterations — every worker's layer updates, a barrier, then the p / q / dual
  messages to the neighbouring workers, each on its sender's transmit and its receiver's receive link (full duplex;
  a message progresses at its smaller share), then the next iteration.

Durations come from ``models/layertrain_terms.py`` (one formula serves both); the executor checks the schedule
algebra — overlap, blocking, link sharing — not the collective prices.
"""
from __future__ import annotations

import numpy as np

from parplan.executor import engine as E
from parplan.models.layertrain import efficiency, estimate_plan, modes_vector, parse_plan
from parplan.models.layertrain_terms import admm_terms, hybrid_terms

ADMM_ITERATIONS = 3


def _collective(prog, streams, links, dur, ready, kind):
    """One collective: an op per worker on its stream and link, each waiting for every member's ``ready`` op."""
    ops = []
    for w, s in enumerate(streams):
        o = prog.add_op(kind, s, float(dur), links=(links[w],))
        for r in ready:
            if r >= 0:
                prog.dep(r, o)
        ops.append(o)
    return ops


def hybrid_program(spec, hw, plan) -> tuple:
    k = plan["workers"]
    mp = modes_vector(spec, plan["modes"])[None, :]
    t = hybrid_terms(spec.arrays(), mp, k, spec.batch_per_worker, hw, eff=efficiency(spec),
                     state_bpp=spec.state_bytes_per_param, grad_bpp=spec.dtype_bytes, optimizer=spec.job.optimizer)
    L = mp.shape[1]
    prog = E.Program()
    comp = [prog.add_stream(f"w{w}.compute", w) for w in range(k)]
    grad = [prog.add_stream(f"w{w}.grad", w) for w in range(k)]
    act = [prog.add_stream(f"w{w}.act", w) for w in range(k)]
    link = [prog.add_link(f"w{w}.link", w) for w in range(k)]
    last = [-1] * k  # each worker's last op on the critical chain
    for l in range(L):
        if t["in_fwd"][0, l] > 0:
            last = _collective(prog, act, link, t["in_fwd"][0, l], last, E.P2P_FWD)
        nxt = []
        for w in range(k):
            o = prog.add_op(E.FWD, comp[w], float(t["fwd"][0, l]))
            if last[w] >= 0:
                prog.dep(last[w], o)
            nxt.append(o)
        last = nxt
    if t["end"][0] > 0:
        last = _collective(prog, act, link, t["end"][0], last, E.EP_A2A)
        last = _collective(prog, act, link, t["end"][0], last, E.EP_A2A)
    ars = []
    for l in range(L - 1, -1, -1):
        nxt = []
        for w in range(k):
            o = prog.add_op(E.BWD, comp[w], float(t["bwd"][0, l]))
            if last[w] >= 0:
                prog.dep(last[w], o)
            nxt.append(o)
        last = nxt
        if t["ar"][0, l] > 0:
            ars.append(_collective(prog, grad, link, t["ar"][0, l], last, E.DP_GRAD))
        if t["in_bwd"][0, l] > 0:
            last = _collective(prog, act, link, t["in_bwd"][0, l], last, E.P2P_BWD)
    opt = float(t["opt"][0].sum())
    ends = []
    for w in range(k):
        o = prog.add_op(E.OPTIMIZER, comp[w], opt)
        prog.dep(last[w], o)
        for a in ars:
            prog.dep(a[w], o)
        ends.append(o)
    return prog, ends


def admm_program(spec, hw, plan, iterations: int = ADMM_ITERATIONS) -> tuple:
    n = float(spec.nodes or spec.batch_per_worker)
    quant = tuple(spec.admm.quantize) if spec.admm else ("p", "q")
    cost = spec.admm.update_cost if spec.admm else 6.0
    w = plan["workers"]
    a = admm_terms(spec.arrays(), n, w, plan["bits"], quant, hw, eff=efficiency(spec), update_cost=cost,
                   dtype_bytes=spec.dtype_bytes)
    prog = E.Program()
    comp = [prog.add_stream(f"w{i}.compute", i) for i in range(w)]
    tx = [[prog.add_link(f"w{i}.tx{lv}", i) for lv in (0, 1)] for i in range(w)]
    rx = [[prog.add_link(f"w{i}.rx{lv}", i) for lv in (0, 1)] for i in range(w)]
    pair: dict = {}
    bw = (hw.intra_p2p, hw.inter_p2p)
    lat = (hw.intra_lat, hw.inter_lat)
    prev: list = []
    ends = []
    for _ in range(iterations):
        cops = []
        for i in range(w):
            o = prog.add_op(E.OPTIMIZER, comp[i], float(a["compute_per_worker_s"][i]))
            for p in prev:
                prog.dep(p, o)
            cops.append(o)
        msgs = []
        for src, dst, _, nb in a["messages"]:
            lv = int(src // hw.devices_per_node != dst // hw.devices_per_node)
            if (src, dst) not in pair:
                pair[(src, dst)] = prog.add_stream(f"w{src}->w{dst}", src)
            o = prog.add_op(E.P2P_FWD, pair[(src, dst)], nb / bw[lv], links=(tx[src][lv], rx[dst][lv]),
                            lat=lat[lv])
            for c in cops:  # bulk-synchronous: the exchange starts when every worker has updated
                prog.dep(c, o)
            msgs.append(o)
        prev = msgs or cops
        ends = prev
    return prog, ends


def simulate_plan(spec, hw, plan) -> float:
    """Seconds of one iteration as the engine plays it (ADMM: the mean of ``ADMM_ITERATIONS``)."""
    if plan["method"] == "admm":
        prog, ends = admm_program(spec, hw, plan)
        res = E.run(prog)
        return max(res.end[o] for o in ends) / ADMM_ITERATIONS
    if plan["method"] == "serial":
        plan = {"method": "hybrid", "workers": 1, "modes": "dp"}
    prog, ends = hybrid_program(spec, hw, plan)
    res = E.run(prog)
    return max(res.end[o] for o in ends)


def agreement(model, hw_ref, *, plans: "list[str] | None" = None) -> list[dict]:
    """Closed form vs the engine for a workload's standard plans (or ``plans``) on one cluster."""
    from parplan.hardware.catalog import load_cluster
    from parplan.models.layertrain_terms import train_hw
    from parplan.workloads.layertrain import load_layertrain

    spec = load_layertrain(model)
    hw = train_hw(load_cluster(hw_ref), spec.job.dtype)
    if plans is None:  # (2 workers where the devices and layers allow: 2 was asked of a one-device cluster)
        if spec.admm is not None:
            most = min(hw.n_devices, len([r for r in spec.rows if r[1] != "graph"]))
            ws = sorted({min(2, most), most})
            plans = [f"method=admm,workers={w},bits={b}" for w in ws for b in (32, 8)]
        else:
            ks = sorted({min(2, hw.n_devices), hw.n_devices})
            plans = [f"workers={k},modes={m}" for k in ks for m in ("dp", "hybrid", "mp")]
    rows = []
    for text in plans:
        plan = parse_plan(text, spec, hw)
        e = estimate_plan(spec, hw, plan)
        sim = simulate_plan(spec, hw, plan)
        rows.append({"plan": e.plan_string(), "simulated_s": sim, "predicted_s": e.total_s,
                     "error": e.total_s / sim - 1.0})
    return rows
