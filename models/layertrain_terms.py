"""Cost terms of the layer-training family, vectorized over plans: per-layer data- or model-parallel training
(SplitBrain, S23) and layer-parallel ADMM with quantized exchange (pdADMM-G / -Q, S26).

Collectives are the shared primitive's ring forms (``models/primitives/collectives.py``: ``allreduce_s``,
``gather_s``, ``alltoall_s`` with one measured rank, i.e. the α–β ring ``2(k−1)/k·n/bw + 2(k−1)·α``) on the link's
large-message bus-bandwidth fraction (``curve_for(kind, ...).fraction``, as ``Efficiency.link`` does).  The measured
size shapes of that module were taken on 100–400 GB/s fabrics, where their small-message fall-off is a latency
effect; on 10–25 GbE the α–β form with the measured fraction is the faithful reading, so it is used for every link.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.models.primitives.collectives import allreduce_s, alltoall_s, curve_for, gather_s

# fraction of the dense peak reached by cuDNN convolutions / cuBLAS GEMMs of training-sized layers (assumed: VGG /
# ResNet training on V100 reaches roughly half of peak; a job's compute_efficiency overrides it)
COMPUTE_EFFICIENCY = 0.5
# optimizer step traffic, bytes per local parameter (fp32 states): SGD reads w, g and writes w (3 × 4 B); momentum
# also reads + writes the buffer (5 × 4 B); Adam two buffers (7 × 4 B) — a memory-bound elementwise update
OPT_TRAFFIC_BYTES = {"sgd": 12.0, "sgd-momentum": 20.0, "adam": 28.0}
HBM_FRACTION = 0.75  # streaming-copy fraction of HBM bandwidth (catalogs/calibration/kernels.yaml memory.default)

HYBRID_PARTS = ("forward_s", "backward_s", "mp_comm_s", "transition_s", "dp_allreduce_exposed_s", "optimizer_s")
MEMORY_PARTS = ("state_bytes", "activation_bytes", "gather_buffer_bytes")
ADMM_PARTS = ("compute_s", "exchange_s")


@dataclass(frozen=True)
class TrainHw:
    """What the formulas need of a homogeneous GPU group: peak, HBM, and both link levels as (bus bw, α)."""
    name: str
    device: str
    n_devices: int
    devices_per_node: int
    peak_flops_per_s: float
    memory_bytes: float
    hbm_bytes_per_s: float
    intra_busbw: float  # bytes/s: link rate × measured large-message fraction (ring collectives)
    intra_lat: float
    inter_busbw: float
    inter_lat: float
    intra_p2p: float  # point-to-point bytes/s (one message to a peer)
    inter_p2p: float

    def ring(self, k):
        """(bus bandwidth, α) of a ring over k consecutive devices: the NIC level once it leaves a node."""
        k = np.asarray(k, float)
        cross = k > self.devices_per_node
        return (np.where(cross, np.minimum(self.intra_busbw, self.inter_busbw), self.intra_busbw),
                np.where(cross, self.inter_lat, self.intra_lat))


def train_hw(cluster, dtype: str) -> TrainHw:
    if len(cluster.groups) != 1:
        raise SpecError(f"cluster {cluster.name!r} has {len(cluster.groups)} device groups: layer-training plans "
                        "one homogeneous group", key="--hw")
    g = cluster.group
    dev = g.device
    dt = dtype if dev.supports(dtype) else ("fp16" if dtype == "bf16" and dev.supports("fp16") else None)
    if dt is None:
        raise SpecError(f"device {dev.id} has no {dtype} peak", key="job.dtype",
                        allowed=sorted(d for d in dev.peak_flops_per_s if d in ("fp32", "fp16", "bf16")))
    fi = min(curve_for(g.intra_node.kind, "allreduce").fraction, 1.0)
    fx = min(curve_for(g.inter_node.kind, "allreduce").fraction, 1.0)
    pi = min(curve_for(g.intra_node.kind, "p2p").fraction, 1.0)
    px = min(curve_for(g.inter_node.kind, "p2p").fraction, 1.0)
    nic = g.inter_node_bandwidth_per_device_bytes_per_s
    return TrainHw(cluster.name, dev.id, g.n_devices, g.devices_per_node, dev.peak(dt), dev.memory_bytes,
                   dev.memory_bandwidth_bytes_per_s, g.intra_node.bandwidth_bytes_per_s * fi, g.intra_node.latency_s,
                   nic * fx, g.inter_node.latency_s, g.intra_node.bandwidth_bytes_per_s * pi, nic * px)


def hybrid_terms(arr, mp, k, batch, hw: TrainHw, *, eff, state_bpp, grad_bpp, optimizer) -> dict:
    """Per-layer terms for plans ``mp`` (P × L booleans: layer sharded model-parallel) on ``k`` workers (P,) with
    ``batch`` samples per worker.  Every time array is P × L (``end_*``: P), every byte array P × L."""
    mp = np.asarray(mp, bool)
    P, L = mp.shape
    k = np.broadcast_to(np.asarray(k, float), (P,))[:, None]
    train = np.array([kd != "graph" for kd in arr.kinds])
    mp = mp & train  # graph propagation is a one-off input transform: never sharded
    B = float(batch)
    rate = hw.peak_flops_per_s * eff
    fwd = np.where(train, arr.flops * B / rate, 0.0) + 0.0 * k  # DP: F·B/k of kB samples; MP: kB samples, 1/k neurons
    bwd = 2.0 * fwd  # input- and weight-gradient GEMMs, each the forward's FLOPs
    bw, lat = hw.ring(k)
    prev = np.concatenate([np.zeros((P, 1), bool), mp[:, :-1]], axis=1)  # mode of the layer before (input: DP)
    gin = k * B * arr.in_bytes  # the global mini-batch's input activation of the layer
    # into an MP layer: all-gather the input activations (from DP workers' samples or MP shards), forward; its input
    # gradient is reduce-scattered back, backward (SEEDS S23(b)): (k−1)/k·n/bw + (k−1)·α each
    ag = gather_s(gin, k, bw, lat, 1)
    # MP → DP: the sharded output (kB samples × d/k per worker) is exchanged to B samples × d: all-to-all, both ways
    a2a = alltoall_s(gin / k, k, bw, lat, 1)
    in_fwd = np.where(mp, ag, np.where(prev, a2a, 0.0))
    first = np.argmax(train)
    in_bwd = in_fwd.copy()
    in_bwd[:, first] = 0.0  # no gradient flows into the input data
    transition = mp != prev  # DP↔MP boundaries: SplitBrain's group communication
    last_out = k[:, 0] * B * arr.out_bytes[-1]
    end = np.where(mp[:, -1], alltoall_s(last_out / k[:, 0], k[:, 0], bw[:, 0], lat[:, 0], 1), 0.0)  # logits → loss
    # DP layers: ring all-reduce of the layer's gradients, 2(k−1)/k·|W|·bytes/bw + 2(k−1)·α (Thakur et al. 2005)
    ar = np.where(~mp & train, allreduce_s(arr.params * grad_bpp + 0.0 * k, k, bw, lat, 1), 0.0)
    local = np.where(mp, arr.params / k, arr.params + 0.0 * k)  # MP: weights /k; DP: replicated
    opt = local * OPT_TRAFFIC_BYTES[optimizer] / (hw.hbm_bytes_per_s * HBM_FRACTION)
    return {"ag": ag, "a2a": a2a, "first": int(first), "fwd": fwd, "bwd": bwd, "in_fwd": in_fwd, "in_bwd": in_bwd, "transition": transition, "end": end,
            "ar": ar, "opt": opt, "local_params": local,
            "state_bytes": local * state_bpp, "activation_bytes": B * arr.act_bytes + 0.0 * k,
            "gather_buffer_bytes": np.where(mp, gin, 0.0)}


def hybrid_time(t: dict) -> np.ndarray:
    """One iteration (P,): forward with blocking boundary exchanges, then backward from the last layer with each DP
    layer's all-reduce queued on the gradient stream behind its backward (hidden under the layers below: a
    two-machine flow shop, C = max(C, t) + AR_l), and each backward boundary exchange blocking the next backward.
    An exchange of x seconds that meets b seconds of queued all-reduce shares the link with it (processor sharing,
    two NCCL communicators): it ends after x + min(x, b), and the all-reduces end x later; then the optimizer."""
    fwd_total = (t["fwd"] + t["in_fwd"]).sum(axis=1) + t["end"]
    now = fwd_total + t["end"]  # the logits' gradient comes back before the backward starts
    comm = now.copy()
    L = t["fwd"].shape[1]
    for l in range(L - 1, -1, -1):
        now = now + t["bwd"][:, l]
        comm = np.where(t["ar"][:, l] > 0, np.maximum(comm, now) + t["ar"][:, l], comm)
        now, comm = blocking_exchange(now, comm, t["in_bwd"][:, l])
    return np.maximum(now, comm) + t["opt"].sum(axis=1)


def blocking_exchange(now, comm, x):
    """(compute clock, gradient-stream clock) after a blocking exchange of ``x`` seconds (0: none) that shares the
    link with the b = comm − now seconds of all-reduce still queued: it ends at now + x + min(x, b); the queue
    ends x later (the link stays busy with both)."""
    b = np.maximum(comm - now, 0.0)
    return (np.where(x > 0, now + x + np.minimum(x, b), now), np.where(x > 0, np.maximum(comm, now) + x, comm))


def hybrid_parts(t: dict) -> dict:
    """Named parts (P,) that sum to ``hybrid_time``; the all-reduce is charged only where it is not hidden."""
    total = hybrid_time(t)
    comm = t["in_fwd"] + t["in_bwd"]
    parts = {"forward_s": t["fwd"].sum(axis=1), "backward_s": t["bwd"].sum(axis=1),
             "mp_comm_s": np.where(t["transition"], 0.0, comm).sum(axis=1),
             "transition_s": np.where(t["transition"], comm, 0.0).sum(axis=1) + 2.0 * t["end"],
             "optimizer_s": t["opt"].sum(axis=1)}
    rest = sum(parts.values())
    parts["dp_allreduce_exposed_s"] = np.maximum(total - rest, 0.0)
    return {k: parts[k] for k in HYBRID_PARTS} | {"total_s": total, "dp_allreduce_s": t["ar"].sum(axis=1)}


# --- pdADMM-G (S26) ---------------------------------------------------------------------------------------------
def admm_layout(arr, workers: int) -> tuple:
    """Trainable layers (indices) and the worker of each: contiguous blocks of ⌈L/w⌉ or ⌊L/w⌋ layers."""
    idx = [i for i, kd in enumerate(arr.kinds) if kd != "graph"]
    L = len(idx)
    owner = [min(workers - 1, j * workers // L) for j in range(L)]
    return idx, owner


def admm_messages(arr, nodes: float, workers: int, bits: int, quantize, dtype_bytes: float,
                  base_bytes: float = 4.0) -> list:
    """Messages of one ADMM iteration (src, dst, variable, bytes): at each boundary l|l+1 between workers, q_l goes
    forward, p_{l+1} and the dual u_l backward — each n × d_l (S26(b)); quantized variables at ``bits`` bits, the
    others at ``base_bytes`` (fp32)."""
    idx, owner = admm_layout(arr, workers)
    out = []
    for j in range(len(idx) - 1):
        a, b = owner[j], owner[j + 1]
        if a == b:
            continue
        elems = nodes * float(arr.out_bytes[idx[j]]) / dtype_bytes  # n × d_l
        for var, src, dst in (("q", a, b), ("p", b, a), ("u", b, a)):
            width = bits / 8.0 if var in quantize else base_bytes
            out.append((src, dst, var, elems * width))
    return out


def admm_terms(arr, nodes: float, workers: int, bits: int, quantize, hw: TrainHw, *, eff, update_cost,
               dtype_bytes: float = 4.0) -> dict:
    """One bulk-synchronous pdADMM iteration: T_it = max_w compute_w + max_w exchange_w (S26(b)).

    compute_w = update_cost · Σ_{l∈w} 2·n·d_{l−1}·d_l / (peak·eff) (W, b, z, q, p updates: ≈ update_cost dense
    products per layer); exchange_w = max(bytes sent, bytes received)/bw + α on each link level the worker uses
    (sends and receives overlap: full-duplex links)."""
    idx, owner = admm_layout(arr, workers)
    rate = hw.peak_flops_per_s * eff
    comp = np.zeros(workers)
    for j, i in enumerate(idx):
        comp[owner[j]] += update_cost * arr.flops[i] * nodes / rate
    msgs = admm_messages(arr, nodes, workers, bits, quantize, dtype_bytes)
    tx = np.zeros((workers, 2))
    rx = np.zeros((workers, 2))
    for src, dst, _, nb in msgs:
        lvl = int(src // hw.devices_per_node != dst // hw.devices_per_node)
        tx[src, lvl] += nb
        rx[dst, lvl] += nb
    bw = np.array([hw.intra_p2p, hw.inter_p2p])
    lat = np.array([hw.intra_lat, hw.inter_lat])
    per = np.where((tx + rx) > 0, np.maximum(tx, rx) / bw + lat, 0.0)
    exch = per.max(axis=1)
    return {"compute_s": float(comp.max()), "exchange_s": float(exch.max()), "compute_per_worker_s": comp,
            "exchange_per_worker_s": exch, "bytes_per_iteration": float(sum(m[3] for m in msgs)),
            "messages": msgs}


def serial_backprop_s(arr, nodes: float, hw: TrainHw, *, eff) -> float:
    """Layer-serial full-batch backprop on one device: 3·Σ_l 2·n·d_{l−1}·d_l / (peak·eff) (S26(b))."""
    train = np.array([kd != "graph" for kd in arr.kinds])
    return float(3.0 * (arr.flops * train).sum() * nodes / (hw.peak_flops_per_s * eff))
