"""Per-stage tables of PipeEdge's DP (usc-isi/PipeEdge ``src-native/schedule.cpp``; ANCHORS.md Part B §3.2): every
stage — layers [i, j) on one device of type u — of a layer chain on a cluster's device types, as arrays built once
per search (``planner.spaces.layerchain`` reads them; the floats are those of the stage-by-stage formulas):

* ``compute_s[u, i, j] = Σ_{i ≤ l < j} t_u(l)``, the cumulative sums' difference (schedule.cpp ``compute_time``);
* ``fits[u, i, j]``: the stage's layers + receive/send queues + processing buffers below the type's memory
  (schedule.cpp ``is_layers_fit``; False unless i < j);
* ``comm_s[u, v, j − 1] = bytes_out(j − 1) / bw(u → v)``: the stage ending at layer j on type u sends to type v (a
  link is busy for its airtime, no RTT); ∞ from a type's only device to itself;
* ``first_hop_s[u]``: the input from the source to the first stage on type u (0 where the source's type runs it);
* ``back_first[u]``: the result of the chain as one stage on type u back to the source (0 on the source's type);
  ``back_hop(u)``: that of a later last stage on type u, from a device of type u other than the source — 0 where
  the source is its type's only device (a type is used once per device, so that stage runs on the source itself);
  None without a source — called only for the types the DP ends on, as schedule.cpp's loop only reaches those.

The source may be any device of the cluster (a board or a server) or, with ``within``, a device of a larger cluster
outside the part planned on (the edge boards alone fed by the server): hops are priced on the larger cluster's links.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from parplan.models import edge_terms as T
from parplan.models.edge import _Times, source_slot


@dataclass(frozen=True)
class StageTables:
    counts: tuple  # devices per type (the cluster's groups, in order)
    first: tuple  # first slot of each type
    compute_s: np.ndarray  # [u, i, j], i, j = 0..L
    fits: np.ndarray  # [u, i, j]
    comm_s: np.ndarray  # [u, v, j − 1]
    first_hop_s: np.ndarray  # [u]
    back_first: np.ndarray  # [u]: the whole chain as one stage (i = 0)
    back_hop: Optional[Callable[[int], float]]  # u -> seconds: a last stage from layer i > 0


def stage_tables(spec, cluster, times: "_Times | None" = None, within: "tuple | None" = None) -> StageTables:
    """The tables of ``spec`` on ``cluster`` (``times``: per-layer times by device id, shared with other calls;
    ``within``: (the full cluster, its slot per slot of ``cluster``) when ``cluster`` is a part of it)."""
    job = spec.inference
    mb, nb, L = job.microbatch, spec.dtype_bytes, len(spec.layers)
    times = times or _Times(spec, cluster, mb, job.dtype)
    a = times.arrays
    groups = cluster.groups
    n = len(groups)
    counts = tuple(g[2] for g in groups)
    first = tuple(g[1] for g in groups)
    full, slot = within if within is not None else (cluster, range(len(cluster)))
    src = source_slot(spec, full)  # a slot of the full cluster (group names are the same in a part of it)
    src_group = full.group_of(src) if src is not None else None
    out_b = a["out_elements"] * nb * mb
    in_b = np.concatenate([[spec.input_elements], a["out_elements"][:-1]]) * nb * mb

    def up(x: int, y: int) -> float:  # slots of the full cluster
        return full.link(x, y).up_bytes_per_s

    def dev(u: int, k: int = 0) -> int:  # the full cluster's slot of type u's device k
        return slot[first[u] + k]

    cum = np.stack([np.concatenate([[0.0], np.cumsum(times.device(cluster.devices[first[u]]))]) for u in range(n)])
    compute = cum[:, None, :] - cum[:, :, None]
    # memory of the stage [i, j) (``edge_terms.stage_memory_bytes``; row i = L and column j = 0 are never a stage)
    mem_cum = np.concatenate([[0.0], np.cumsum(a["mem_bytes"])])
    in_i = np.concatenate([in_b, [0.0]])[:, None]
    out_j = out_b[np.maximum(np.arange(L + 1) - 1, 0)][None, :]
    mem = T.stage_memory_bytes(mem_cum[None, :] - mem_cum[:, None], in_i, out_j, (np.arange(L + 1) == 0)[:, None])
    stage = np.arange(L + 1)[None, :] > np.arange(L + 1)[:, None]
    cap = np.array([cluster.devices[first[u]].memory_bytes for u in range(n)])
    fits = (cap[:, None, None] > mem[None]) & stage[None]
    comm = np.empty((n, n, L))
    for u in range(n):
        for v in range(n):
            if u == v and counts[u] == 1:
                comm[u, v] = np.inf
            else:
                comm[u, v] = out_b / up(dev(u), dev(v, 1 if u == v else 0))
    hop0 = np.array([0.0 if src is None or src_group == groups[u][0] else in_b[0] / up(src, dev(u))
                     for u in range(n)])

    def back_hop(u: int) -> float:
        if groups[u][0] == src_group and counts[u] == 1:  # the source is type u's only device: it ran the last stage
            return 0.0
        other = dev(u, 1) if dev(u) == src else dev(u)  # a device of type u other than the source
        return out_b[-1] / up(other, src)

    back_first = np.array([0.0 if src is None or src_group == groups[u][0] else back_hop(u) for u in range(n)])
    return StageTables(counts, first, compute, fits, comm, hop0, back_first, back_hop if src is not None else None)
