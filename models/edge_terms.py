"""The named terms of the layer-chain family (seconds, bytes, joules), vectorized with numpy where a planner sweeps them.

* Per-layer time on a device — a measured profile when the workload has one for that device (PipeEdge's
  ``device_types.yml`` ``time_s``, scaled linearly from its batch to the microbatch), else the roofline
  ``max(b·FLOPs / (peak[dtype]·efficiency), (weights + b·(in + out)·dtype bytes) / memory bandwidth)`` (Williams,
  Waterman, Patterson, CACM 2009; efficiency per device in the catalog, cited there).
* Transfer of ``n`` bytes over a network: ``n / bandwidth + RTT / 2`` (one-way latency = half the round trip).
* Neurosurgeon (Kang et al., ASPLOS 2017; ANCHORS.md Part B §3.1): ``T(k) = Σ_{i≤k} t_dev(i) + D_k/B_up +
  Σ_{i>k} t_srv(i) + result/B_down`` and ``E(k) = P_active·Σ_{i≤k} t_dev(i) + P_tx·D_k/B_up + P_idle·(server and
  download time)`` for every split ``k = 0..N`` at once (cumulative sums).
* Pipelines (PipeEdge, ``src-native/schedule.cpp``; ANCHORS §3.2): the bottleneck is the largest per-microbatch
  load of any resource — a device's compute, a link's (or a shared wireless channel's) transfers; with one link per
  stage that is PipeEdge's ``max over stages of max(compute, comm)``; a stream of M microbatches takes
  ``latency + (M − 1)·bottleneck`` (the flow-shop makespan of identical jobs).
* PiPar (SEEDS.md §S28(b), ANCHORS §3.4) and CEC-PA (§S29(b)) terms: see ``pipar_terms`` and ``availability``.
"""
from __future__ import annotations

import numpy as np

BACKWARD_FACTOR = 2.0  # backward ≈ 2 × forward FLOPs (activation + weight gradients; Narayanan et al., SC'21 §3)
DATA_BUFFERS_IN = 1  # PipeEdge sched-pipeline receive-queue depth (assumed 1: its -h default is not retrieved)
DATA_BUFFERS_OUT = 1  # send-queue depth (assumed 1)
OPTIMIZER_COPIES = 2.0  # training on a device: weights + gradients (SGD without momentum state, PiPar's setting; assumed)


def layer_times(spec, dev, batch: int, dtype: str, a: "dict | None" = None) -> tuple[np.ndarray, str]:
    """Seconds per layer of one microbatch of ``batch`` samples on ``dev``, and where they come from (``a``: the
    workload's ``arrays()`` where the caller holds them)."""
    prof = spec.profiles.get(dev.id)
    if prof is not None:
        pb, _pdtype, t = prof
        return t * (batch / pb), "profile"  # measured at batch pb; linear in the batch (assumed beyond pb)
    a = a if a is not None else spec.arrays()
    nbytes = spec.dtype_bytes
    compute = a["flops"] * batch / (dev.peak(dtype) * dev.efficiency)  # roofline compute side
    ins = np.concatenate([[spec.input_elements], a["out_elements"][:-1]])
    memory = (a["mem_bytes"] + batch * (ins + a["out_elements"]) * nbytes) / dev.memory_bytes_per_s  # bytes side
    return np.maximum(compute, memory), "roofline"


def stage_memory_bytes(layer_bytes, in_bytes, out_bytes, first):
    """A stage's memory (schedule.cpp ``is_layers_fit``): its layers + the receive queue (none on the chain's first
    stage, ``first``) + the send queue + the processing buffers of its input and output, added in that order."""
    return layer_bytes + np.where(first, 0.0, in_bytes * DATA_BUFFERS_IN) + out_bytes * DATA_BUFFERS_OUT + in_bytes \
        + out_bytes


def transfer_s(nbytes, bytes_per_s, rtt_s):
    """``bytes / bandwidth + RTT/2``; zero bytes cost nothing (no message)."""
    if isinstance(nbytes, (int, float)):  # one message (a plan's stage): the same floats without array calls
        return nbytes / bytes_per_s + rtt_s / 2.0 if nbytes > 0 else 0.0
    nbytes = np.asarray(nbytes, dtype=float)
    return np.where(nbytes > 0, nbytes / bytes_per_s + rtt_s / 2.0, 0.0)


def neurosurgeon(t_dev, t_srv, d_bytes, result_bytes, up, down, rtt_s, p_active, p_idle, p_tx) -> dict:
    """Every split k = 0..N at once: layers [0, k) on the device, [k, N) on the server (Kang et al. 2017)."""
    n = len(t_dev)
    dev = np.concatenate([[0.0], np.cumsum(t_dev)])  # Σ_{i≤k} t_dev(i)
    srv = np.concatenate([[0.0], np.cumsum(t_srv[::-1])])[::-1]  # Σ_{i>k} t_srv(i)
    k = np.arange(n + 1)
    upload = np.where(k < n, transfer_s(d_bytes, up, rtt_s), 0.0)  # D_k / B_up + RTT/2 (nothing when k = N)
    download = np.where(k < n, transfer_s(result_bytes, down, rtt_s), 0.0)  # result back to the device
    airtime = np.where(k < n, np.asarray(d_bytes, float) / up, 0.0)
    energy_dev = p_active * dev  # the device computing
    energy_tx = p_tx * airtime  # radio sending D_k
    energy_wait = p_idle * (upload - airtime + srv + download)  # idle while the request is away
    return {"device_s": dev, "upload_s": upload, "server_s": srv, "download_s": download,
            "total_s": dev + upload + srv + download, "device_j": energy_dev, "radio_j": energy_tx,
            "idle_j": energy_wait, "energy_j": energy_dev + energy_tx + energy_wait}


def pipeline_makespan(latency_s, bottleneck_s, microbatches):
    """Identical microbatches through a pipeline of resources: the first one's latency, then one per bottleneck."""
    return latency_s + (np.asarray(microbatches, float) - 1.0) * bottleneck_s


def pipar_terms(f_c, f_s, u, d, k_devices: int, n_inflight, *, shared_medium: bool = False) -> dict:
    """PiPar per-batch terms (SEEDS.md §S28(b)): device fwd f_c and bwd b_c = 2·f_c, upload u, server fwd+bwd
    3·f_s shared by K devices, download d.  Sequential: ``t_seq = f_c + u + f_s + b_s + d + b_c``; pipelined with N
    batches in flight: ``t_cycle = max(f_c + b_c, u, d, K·(f_s + b_s), t_seq / N)`` (the last term: N batches in a
    closed loop of t_seq each, Little's law)."""
    b_c = BACKWARD_FACTOR * f_c
    fb_s = (1.0 + BACKWARD_FACTOR) * f_s
    t_seq = f_c + u + fb_s + d + b_c
    link = (u + d) * (k_devices if shared_medium else 1)  # one channel: every device's both directions share it
    up_load = np.where(shared_medium, link, u)
    down_load = np.where(shared_medium, link, d)
    server = k_devices * fb_s
    loop = t_seq / np.asarray(n_inflight, float)
    cycle = np.maximum.reduce([f_c + b_c + 0.0 * loop, up_load + 0.0 * loop, down_load + 0.0 * loop,
                               server + 0.0 * loop, loop])
    return {"device_fwd_s": f_c, "device_bwd_s": b_c, "upload_s": u, "server_s": fb_s, "download_s": d,
            "t_seq_s": t_seq, "cycle_s": cycle, "server_load_s": server,
            "server_idle_fraction": 1.0 - server / np.maximum(cycle, 1e-300)}


def availability(rate_per_s, downtime_s):
    """Steady-state availability with failures at ``rate`` each costing ``downtime``: A = 1 − λ·T (λ·T ≪ 1; the exact
    renewal form 1 / (1 + λ·T) differs by (λT)²)."""
    return 1.0 - np.asarray(rate_per_s, float) * np.asarray(downtime_s, float)
