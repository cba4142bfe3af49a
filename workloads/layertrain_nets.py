"""Layer tables of standard networks from architecture arithmetic (``family: layer-training`` generators).

Every layer is a row ``(name, kind, params, flops_per_sample, in_elems, out_elems, act_elems)``: trainable parameters
(weights + biases, batch-norm scale/shift), forward FLOPs for one sample (2 per multiply-accumulate), elements of one
sample's input and output activation (what a neighbouring layer exchanges) and the elements kept for the backward
pass.  A pooling layer is folded into the convolution before it (its output is the pooled map).

* VGG-16 (Simonyan & Zisserman 2015, configuration "D"): 13 3×3 convolutions, 5 max-pools, FC head.  On 224×224
  ImageNet the head is 25088→4096→4096→1000: 123,642,856 of 138,357,544 parameters (the conv part 14,714,688).
* VGG-16 on CIFAR-10 (32×32, 10 classes): the same convolutions, the head on the 512-element 1×1 map
  (``fc_hidden`` widths; the paper's exact head was not read).
* ResNet-50 (He et al. 2016, Table 1): stem 7×7/2 + max-pool, bottleneck stages [3, 4, 6, 3] of widths 64…512
  (×4 expansion, 1×1 projection on each stage's first block), global pool, FC 2048→1000; batch-norm scale/shift
  counted as parameters — 25,557,032 in all (the torchvision count).  One row per bottleneck block (its branches
  form one unit of the layer chain).
* GA-MLP (S26): ``K`` propagation hops precomputed once (``K·nnz·d`` multiply-adds, kind ``graph``, no parameters),
  then ``L`` dense layers (kind ``mlp``) on ``(K+1)·features`` inputs per node: hidden widths ``hidden``, output
  ``classes``.
"""
from __future__ import annotations

VGG16_CONV = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def _conv(name, cin, cout, k, h_out, w_out, stride_in_h=None, bias=True, bn=False):
    params = cin * cout * k * k + (cout if bias else 0) + (2 * cout if bn else 0)
    flops = 2.0 * cin * cout * k * k * h_out * w_out  # 2 FLOPs per MAC, one MAC per weight per output pixel
    return params, flops


def vgg16(dataset: str = "imagenet", fc_hidden: "tuple | None" = None, classes: "int | None" = None) -> list:
    side = 224 if dataset == "imagenet" else 32
    classes = classes or (1000 if dataset == "imagenet" else 10)
    fc_hidden = tuple(fc_hidden) if fc_hidden is not None else ((4096, 4096) if dataset == "imagenet" else (512, 512))
    rows, cin, h, i = [], 3, side, 0
    cfg = list(VGG16_CONV)
    for j, c in enumerate(cfg):
        if c == "M":
            continue
        i += 1
        pooled = j + 1 < len(cfg) and cfg[j + 1] == "M"
        params, flops = _conv(f"conv{i}", cin, c, 3, h, h)  # 3×3, stride 1, padding 1: output side = input side
        out_h = h // 2 if pooled else h
        rows.append((f"conv{i}", "conv", params, flops, cin * h * h, c * out_h * out_h, c * h * h))
        cin, h = c, out_h
    d = cin * h * h  # 512·7·7 = 25088 (ImageNet), 512 (CIFAR-10)
    widths = list(fc_hidden) + [classes]
    for n, w in enumerate(widths, 1):
        rows.append((f"fc{13 + n}", "fc", d * w + w, 2.0 * d * w, d, w, w))
        d = w
    return rows


def resnet50(classes: int = 1000) -> list:
    rows = []
    # stem: 7×7/2 conv 3→64 on 224 → 112, BN, then 3×3/2 max-pool → 56 (no conv bias in torchvision ResNets)
    p, f = _conv("stem", 3, 64, 7, 112, 112, bias=False, bn=True)
    rows.append(("stem", "conv", p, f, 3 * 224 * 224, 64 * 56 * 56, 64 * 112 * 112))
    cin, side = 64, 56
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), 1):
        for b in range(blocks):
            stride = 2 if (b == 0 and stage > 1) else 1
            out_side = side // stride
            cout = 4 * width
            p1, f1 = _conv("", cin, width, 1, side, side, bias=False, bn=True)  # 1×1 reduce (stride on the 3×3)
            p2, f2 = _conv("", width, width, 3, out_side, out_side, bias=False, bn=True)
            p3, f3 = _conv("", width, cout, 1, out_side, out_side, bias=False, bn=True)
            params, flops = p1 + p2 + p3, f1 + f2 + f3
            if b == 0:  # projection shortcut 1×1 (stride) on the first block of every stage
                pp, fp = _conv("", cin, cout, 1, out_side, out_side, bias=False, bn=True)
                params, flops = params + pp, flops + fp
            act = width * side * side + width * out_side ** 2 + 2 * cout * out_side ** 2
            rows.append((f"res{stage + 1}{chr(97 + b)}", "conv", params, flops, cin * side * side,
                         cout * out_side ** 2, act))
            cin, side = cout, out_side
    rows.append(("fc", "fc", cin * classes + classes, 2.0 * cin * classes, cin, classes, classes))
    return rows


def gamlp(layers: int, hidden: int, features: int, classes: int, hops: int, nnz: float) -> list:
    d0 = (hops + 1) * features  # X̃ = [X, ÂX, …, Â^K X] concatenated per node (S26(b))
    # propagation: K sparse-dense products Â·(Â^{j}X), 2·nnz·features FLOPs each, done once before training;
    # "flops_per_sample" holds the one-off total (kind graph: the models price it once, not per iteration)
    rows = [("propagate", "graph", 0, 2.0 * hops * nnz * features, features, d0, 0)]
    dims = [d0] + [hidden] * (layers - 1) + [classes]
    for i in range(layers):
        a, b = dims[i], dims[i + 1]
        rows.append((f"mlp{i + 1}", "mlp", a * b + b, 2.0 * a * b, a, b, b))
    return rows
