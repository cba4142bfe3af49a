"""Discrete-event play of one denoising step of a DiT plan on the shared engine (``executor/engine.py``): every device of
one TP rank's sequence-parallel group (u·r devices; the other TP ranks run the same schedule on their own head
slices, so one rank's group is the whole step), every block of the model.

Per device: a compute stream, two exchange streams (the in-node and off-node shares of an all-to-all, on the
device's NVLink and NIC links) and a ring stream.  Per block: the block's GEMMs and element-wise kernels (one op),
its TP all-reduces (an op on the NVLink link), then per chunk the Q, K, V all-to-alls — which start only when every
member of the Ulysses group has finished its GEMMs — the ring hops (hop j into a device waits for hop j − 1 into its
ring predecessor, whose block it forwards), the attention blocks (block j after hop j), and the O all-to-all after
every group member's last block of the chunk.  Durations come from the model's terms (``models.dit.layer_terms``),
never re-derived here; the engine plays the cross-device waits and the queues.
"""
from __future__ import annotations

from dataclasses import dataclass

from parplan.errors import SpecError
from parplan.executor import engine as E
from parplan.models import dit_terms as T
from parplan.models.dit import layer_terms, plan_arrays

MAX_OPS = 1_500_000


@dataclass(frozen=True)
class DiTSim:
    step_s: float
    devices: int  # simulated (one TP rank's SP group)
    ops: int
    events: int


def _f(x) -> float:
    return float(x[0]) if hasattr(x, "__len__") else float(x)


def simulate_plan(spec, cluster, plan: dict, c=None) -> DiTSim:
    c = c or T.dit_context(spec, cluster)
    t = layer_terms(spec, c, plan_arrays([plan]))
    u, r, k, sp = plan["u"], plan["r"], plan["chunks"], plan["sp"]
    a = spec.arch
    nb = a.double_blocks + a.single_blocks
    per_block = 2 + k * (8 + 2 * r)
    if u * r * nb * per_block > MAX_OPS:
        raise SpecError(f"{u * r} devices × {nb} blocks × {per_block} ops is above the simulation budget "
                        f"({MAX_OPS:,} ops)", key="--plan", hint="fewer chunks or a smaller SP group")
    a_in, a_out, a_lat = _f(t["a_in_s"]), _f(t["a_out_s"]), _f(t["a_lat_s"])
    x_t, x_lat = _f(t["x_t"]), _f(t["x_lat"])
    cb, cb_nom = _f(t["cb"]), _f(t["cb_nom"])
    uly_cross, ring_cross = bool(t["uly_cross"][0]), bool(t["ring_cross"][0])
    pre = [_f(v) for v in t["pre"]]
    tpc = [_f(v) for v in t["tp"]]
    torus = sp == "torus"
    D = u * r

    def coord(d):  # (Ulysses index, ring index): torus puts the ring innermost, the others Ulysses
        return (d // r, d % r) if torus else (d % u, d // u)

    def dev(ui, ri):
        return ui * r + ri if torus else ri * u + ui

    p = E.Program()
    comp = [p.add_stream(f"compute{d}", d) for d in range(D)]
    ex_in = [p.add_stream(f"a2a-node{d}", d) for d in range(D)]
    ex_out = [p.add_stream(f"a2a-net{d}", d) for d in range(D)]
    ring = [p.add_stream(f"ring{d}", d) for d in range(D)]
    nvl = [p.add_link(f"nvlink{d}", d) for d in range(D)]
    nic = [p.add_link(f"nic{d}", d) for d in range(D)]
    group = [[dev(ui, coord(d)[1]) for ui in range(u)] for d in range(D)]
    pred = [dev(coord(d)[0], (coord(d)[1] - 1) % r) for d in range(D)]
    last = [-1] * D

    def op(kind, stream, dur, deps, links=None, lat=0.0):
        o = p.add_op(kind, stream, dur, links=links, lat=lat)
        for q in deps:
            if q >= 0:
                p.dep(q, o)
        return o

    def exchange(d, deps):
        """One all-to-all on device d: the in-node share on NVLink, the off-node share (if the group crosses nodes)
        on the NIC, both after ``deps``; returns the ops to wait on."""
        if u == 1:
            return list(deps)
        if not uly_cross:
            return [op(E.EP_A2A, ex_in[d], _f(t["a1"]) - a_lat, deps, (nvl[d],), a_lat)]
        return [op(E.EP_A2A, ex_in[d], a_in, deps, (nvl[d],), a_lat),
                op(E.EP_A2A, ex_out[d], a_out, deps, (nic[d],), a_lat)]

    for blk in range(nb):
        kind = 1 if blk < a.double_blocks else 0  # double blocks first (FLUX order)
        gem = [op(E.FWD, comp[d], pre[kind], [last[d]]) for d in range(D)]
        ar = [op(E.DP_GRAD, ex_in[d], tpc[kind], [gem[d]], (nvl[d],)) if tpc[kind] > 0 else gem[d] for d in range(D)]
        ins = [[None] * k for _ in range(D)]
        for i in range(k):
            for d in range(D):
                deps = [ar[g] for g in group[d]] if i == 0 else ins[d][i - 1]
                for _ in range(3):  # Q, K, V
                    deps = exchange(d, deps)
                ins[d][i] = deps
        ends = [[None] * k for _ in range(D)]
        outs = [None] * D
        hops = [[-1] * D for _ in range(r)]
        cmp_last = [-1] * D
        for i in range(k):
            for j in range(r):
                lastblk = i == k - 1 and j == r - 1
                for d in range(D):
                    if j == 0:
                        deps = ins[d][i] + [cmp_last[d]]
                    else:
                        src = ins[pred[d]][i] if j == 1 else [hops[j - 1][pred[d]]]
                        link = nic[d] if ring_cross else nvl[d]
                        hops[j][d] = op(E.P2P_FWD, ring[d], x_t, src, (link,), x_lat)
                        deps = [hops[j][d], cmp_last[d]]
                    cmp_last[d] = op(E.FWD, comp[d], cb_nom if lastblk else cb, deps)
                if j == r - 1:
                    for d in range(D):
                        ends[d][i] = cmp_last[d]
            for d in range(D):
                outs[d] = exchange(d, [ends[g][i] for g in group[d]] + ins[d][k - 1])
        for d in range(D):
            last[d] = op(E.FWD, comp[d], 0.0, outs[d] + [cmp_last[d]])
    res = E.run(p)
    return DiTSim(max(res.end), D, len(p), res.events)


def agreement(model, hw, *, plans: "list[str] | None" = None) -> list[dict]:
    """Closed form vs simulation of one step: each SP kind at two-sided and one-sided, torus at 1, 2 and 4 chunks
    (or the given --plan strings)."""
    from parplan.hardware.catalog import load_cluster
    from parplan.models.dit import estimate_plan, parse_plan, plan_string
    from parplan.workloads.dit import load_dit

    spec, cluster = load_dit(model), load_cluster(hw)
    c = T.dit_context(spec, cluster)
    if plans is None:
        plans = default_cases(spec, c)
    rows = []
    for text in plans:
        plan = parse_plan(text, spec, c)
        e = estimate_plan(spec, cluster, plan, c)
        sim = simulate_plan(spec, cluster, plan, c)
        rows.append({"plan": plan_string(plan), "simulated_s": sim.step_s, "predicted_s": e.step_s,
                     "error": e.step_s / sim.step_s - 1.0, "devices": sim.devices, "ops": sim.ops})
    return rows


def default_cases(spec, c) -> list:
    from parplan.models.dit import problems

    nodes = max(1, c.n_devices // c.dpn)
    H = spec.arch.heads
    cand = [f"sp=ulysses,u={c.dpn}", f"sp=ring,r={c.dpn}", f"sp=usp,u={c.dpn // 2},r=2"]
    if nodes > 1:
        cand += [f"sp=usp,u={c.dpn},r={nodes}", f"sp=ring,r={c.n_devices}", f"sp=ulysses,u={nodes * c.dpn}"]
        cand += [f"sp=torus,u={nodes},r={c.dpn},chunks={k}" for k in (1, 2, 4)]
        cand += [f"sp=usp,u={c.dpn // 2},r={nodes},tp=2"]
    out = []
    for text in cand:
        for comm in ("two-sided", "one-sided"):
            p = dict(kv.split("=") for kv in text.split(","))
            full = {"sp": p["sp"], "u": int(p.get("u", 1)), "r": int(p.get("r", 1)), "tp": int(p.get("tp", 1)),
                    "dp": 1, "comm": comm, "chunks": int(p.get("chunks", 1))}
            if full["u"] <= H and not problems(spec, c, full):
                out.append(f"{text},comm={comm}")
    return out
