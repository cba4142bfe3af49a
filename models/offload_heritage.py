"""The 3D heritage case of the offload family (SEEDS.md S25(b)): information layers stored in 2D textures edited and
queried by GPU passes, against per-point information indexed in an octree on the CPU — storage, brush-edit latency,
per-frame layer query and upload, each as named parts (SI units).

* Storage — textures: layers · W² · (b_data + b_mask); octree: L leaves (the painted surface points,
  L = painted_fraction · coverage · W²) of leaf_overhead + layers · (b_data + b_mask) bytes, plus L/7 internal nodes
  of node_bytes (a full 8-ary tree has (L − 1)/7 internal nodes).
* Edit with a brush of k texels — GPU: t_launch + k · 2(b_data + b_mask)/BW_mem (read-modify-write of the brushed
  texels) + a depth-visibility pass over the screen, W_s·H_s · 2 · 4 B/BW_mem; octree on the CPU: k · depth · t_miss
  (depth = ⌈log₈ L⌉ dependent pointer loads per point, each a DRAM miss), over octree_threads.
* Per-frame query of one layer — GPU: t_launch + W_s·H_s · (b_data + b_mask)/BW_mem (one cached texture fetch per
  fragment); octree: W_s·H_s · depth · t_miss over octree_threads (one lookup per fragment).
* Upload of every layer from the host: bytes/BW_H2D + latency.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEPTH_BYTES = 4.0  # a 32-bit depth buffer texel (visibility pass)


@dataclass(frozen=True)
class HeritageReport:
    workload: str
    node: str
    device: str
    storage_bytes: dict  # texture_bytes, octree_bytes (+ parts)
    octree_depth: int
    brush_texels: list
    edit_gpu_s: list  # per brush size
    edit_octree_s: list
    edit_parts_s: list  # per brush size: the GPU edit's named parts
    frame_gpu_s: float
    frame_octree_s: float
    upload_s: float
    break_even_painted_fraction: float  # the octree is smaller below this painted share

    def to_dict(self) -> dict:
        return {"workload": self.workload, "node": self.node, "device": self.device, "storage": self.storage_bytes,
                "octree_depth": self.octree_depth, "edits": [
                    {"brush_texels": k, "gpu_s": g, "octree_s": o, "speedup": o / g, "gpu_breakdown_s": p}
                    for k, g, o, p in zip(self.brush_texels, self.edit_gpu_s, self.edit_octree_s, self.edit_parts_s)],
                "frame_gpu_s": self.frame_gpu_s, "frame_octree_s": self.frame_octree_s,
                "frame_speedup": self.frame_octree_s / self.frame_gpu_s, "upload_s": self.upload_s,
                "break_even_painted_fraction": self.break_even_painted_fraction}


def storage(h) -> dict:
    texel = h.data_bytes + h.mask_bytes
    texture = h.layers * h.texture ** 2 * texel  # layers · W·H · (b_data + b_mask)
    leaves = h.painted_fraction * h.coverage * h.texture ** 2
    leaf_bytes = leaves * (h.leaf_overhead_bytes + h.layers * texel)
    inner_bytes = max(leaves - 1.0, 0.0) / 7.0 * h.node_bytes  # (L − 1)/7 internal nodes of a full 8-ary tree
    return {"texture_bytes": texture, "octree_bytes": leaf_bytes + inner_bytes, "octree_leaf_bytes": leaf_bytes,
            "octree_inner_bytes": inner_bytes, "octree_leaves": leaves}


def heritage_report(spec, node, device: "str | None" = None) -> HeritageReport:
    h = spec.heritage
    a = node.accelerator(device) if device else node.accelerators[0]
    st = storage(h)
    depth = max(1, math.ceil(math.log(max(st["octree_leaves"], 2.0), 8)))  # ⌈log₈ L⌉ levels
    miss = node.host.dram_latency_s
    texel = h.data_bytes + h.mask_bytes
    ws, hs = h.screen
    k = np.asarray(h.brush_texels, dtype=float)
    vis = ws * hs * 2 * DEPTH_BYTES / a.memory_bytes_per_s  # depth-visibility pass: read + write the depth buffer
    rmw = k * 2 * texel / a.memory_bytes_per_s  # read-modify-write of the brushed data + mask texels
    gpu = a.launch_s + rmw + vis
    octree = k * depth * miss / h.octree_threads  # k · log₈ N · t_miss (S25(b))
    parts = [{"launch_s": a.launch_s, "texels_s": float(r), "visibility_s": vis} for r in rmw]
    frame_gpu = a.launch_s + ws * hs * texel / a.memory_bytes_per_s
    frame_oct = ws * hs * depth * miss / h.octree_threads
    upload = 0.0 if a.shared_memory else a.h2d_latency_s + st["texture_bytes"] / a.h2d_bytes_per_s
    per_fraction = st["octree_bytes"] / h.painted_fraction  # octree bytes are ∝ the painted share (to ±1 node)
    be = min(1.0, st["texture_bytes"] / per_fraction)
    return HeritageReport(spec.name, node.name, a.id, st, depth, [float(x) for x in k], [float(x) for x in gpu],
                          [float(x) for x in octree], parts, float(frame_gpu), float(frame_oct), float(upload),
                          float(be))
