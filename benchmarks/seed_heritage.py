"""SEEDS.md S25(d): an efficient GPU approach for 3D cultural heritage information systems (López, Torres, Arroyo,
Cano, Martín; J. Cultural Heritage 41, 2020) — 8 information layers of a 5M-triangle scanned model in 4096² textures
(RGBA8 data + R8 mask) edited and queried on an RTX-class GPU, against an octree of the same surface resolution on
the CPU (catalogs/offload_nodes/heritage-rtx4090.yaml, examples/offload-heritage.yaml).

    python benchmarks/seed_heritage.py

Expected (SEEDS.md, derived — the paper's models, GPUs and numbers were not read): texture storage ≈ 8·4096²·5 B ≈
671 MB; edits/queries 10–1000× faster on the GPU for large brushes; texture wins when coverage is dense, the octree
when sparse.  The model's figures are printed as they come; where they leave the range the last line says why.
"""
from __future__ import annotations

import sys

from parplan.hardware.offload import load_offload_node
from parplan.models.offload_heritage import heritage_report
from parplan.workloads.offload import load_offload

HW = "heritage-rtx4090"
BASE = {"triangles": 5e6, "layers": 8, "texture": 4096, "data_bytes": 4, "mask_bytes": 1,
        "brush_texels": [1e2, 1e3, 1e4, 1e5, 1e6], "screen": [1920, 1080]}


def report(**over):
    spec = load_offload({"family": "offload", "name": "heritage", "heritage": {**BASE, **over}})
    return heritage_report(spec, load_offload_node(HW))


def claims(dense, sparse) -> list[tuple[str, bool, str]]:
    tex = dense.storage_bytes["texture_bytes"]
    big = [o / g for k, g, o in zip(dense.brush_texels, dense.edit_gpu_s, dense.edit_octree_s) if k >= 1e4]
    return [("texture storage ≈ 671 MB", abs(tex / 671e6 - 1) < 0.01, f"{tex / 1e6:.1f} MB"),
            ("edits 10–1000× faster on the GPU for large brushes (≥ 1e4 texels)", all(10 <= s <= 1000 for s in big),
             ", ".join(f"{s:,.0f}×" for s in big)),
            ("texture smaller when dense, octree when sparse",
             dense.storage_bytes["octree_bytes"] > tex and sparse.storage_bytes["octree_bytes"] < tex,
             f"octree {dense.storage_bytes['octree_bytes'] / 1e6:.0f} MB dense, "
             f"{sparse.storage_bytes['octree_bytes'] / 1e6:.0f} MB at 10 % painted; break-even "
             f"{dense.break_even_painted_fraction:.2f}")]


def main() -> int:
    dense, sparse = report(), report(painted_fraction=0.1)
    print("# SEEDS.md S25(d): 5M triangles, 8 layers at 4096², RGBA8 + R8; RTX 4090 vs an 8-core CPU octree")
    print(f"storage: textures {dense.storage_bytes['texture_bytes'] / 1e6:.1f} MB; octree "
          f"{dense.storage_bytes['octree_bytes'] / 1e6:.1f} MB (dense), {sparse.storage_bytes['octree_bytes'] / 1e6:.1f}"
          f" MB (10 % painted); octree depth {dense.octree_depth}")
    print(f"{'brush texels':>12} {'GPU edit':>12} {'octree edit':>12} {'speedup':>10}")
    for k, g, o in zip(dense.brush_texels, dense.edit_gpu_s, dense.edit_octree_s):
        print(f"{k:>12,.0f} {g * 1e6:>10.1f}µs {o * 1e3:>10.3f}ms {o / g:>9,.0f}×")
    print(f"frame query of one layer: GPU {dense.frame_gpu_s * 1e6:.1f} µs vs octree {dense.frame_octree_s:.3f} s; "
          f"upload of all layers {dense.upload_s * 1e3:.1f} ms over PCIe 4")
    print("\npaper (derived, SEEDS.md S25(d)) vs parplan:")
    res = claims(dense, sparse)
    for text, good, fig in res:
        print(f"  {'reached' if good else 'NOT reached'}: {text} — parplan {fig}")
    if all(r[1] for r in res):
        print("reached: all claims hold")
    else:
        print("not reached (edit range): the model's octree edit is S25(b)'s k·⌈log₈ N⌉·t_miss — every level of every "
              "point a DRAM miss on one thread — while the GPU edit of a brush is bandwidth-bound and dominated by the "
              "fixed visibility pass, so the ratio grows with k past 1000× (20,000× at 1e6 texels); cached upper octree "
              "levels or a parallel octree edit would narrow it; storage and the dense/sparse crossover are reached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
