"""Layer tables of standard DNNs from architecture arithmetic: per layer, forward FLOPs per sample, parameters, and
output elements per sample (what crosses the network when the chain is cut after that layer).

FLOPs count a multiply-add as 2.  A k×k convolution with C_in → C_out channels and an H×W output costs
2·k²·(C_in/groups)·C_out·H·W; a linear layer d_in → d_out costs 2·d_in·d_out per token.  Sources of the shapes:

* ViT-Base/Large/Huge — Dosovitskiy et al., ICLR 2021, Table 1 (layers, hidden d, MLP 4d, heads; patch 16 for B/L,
  14 for H); tokens n = (image/patch)² + 1.  Each encoder block is split into PipeEdge's four sub-layers
  (usc-isi/PipeEdge ``src/pipeedge/models/transformers/vit.py``): (1) LN + self-attention: 2·(3nd² + 2n²d),
  (2) attention output projection + residual: 2nd², (3) LN + MLP intermediate: 8nd², (4) MLP output + residual: 8nd².
  The sub-layers' outputs carry the skip tensor too (PipeEdge's ``parameters_out``: 2nd, 2nd, 5nd, 2nd — 302,592 and
  756,480 for ViT-Base); the patch embedding joins the first sub-layer, the classifier head the last.
* VGG-16 — Simonyan & Zisserman, ICLR 2015, configuration D: 13 3×3 convolutions in 5 blocks (64, 128, 256, 512,
  512), 2×2 max-pools, classifier 4096-4096-classes at 224²; below 64² pixels the CIFAR form (one 512 → classes
  linear layer after the last pool) of the widely used CIFAR ports.
* ResNet-18 — He et al., CVPR 2016, Table 1: a 7×7/2 stem + 3×3/2 max-pool, 4 stages × 2 basic blocks (64, 128, 256,
  512), 1×1/2 projection shortcuts; below 64² the CIFAR stem (3×3/1, no pool).  One layer per basic block.
* MobileNetV2 — Sandler et al., CVPR 2018, Table 2 (t, c, n, s rows): inverted residual blocks (1×1 expand ×t,
  3×3 depthwise, 1×1 project), a 32-channel 3×3/2 stem and a 1×1 → 1280 head.  One layer per block.
"""
from __future__ import annotations

from dataclasses import dataclass

ARCHS = ("vit-base", "vit-large", "vit-huge", "vgg16", "resnet18", "mobilenetv2")
VIT = {"vit-base": (12, 768, 16), "vit-large": (24, 1024, 16), "vit-huge": (32, 1280, 14)}  # layers, d, patch


@dataclass(frozen=True)
class Layer:
    name: str
    flops: float  # forward FLOPs per sample
    params: float  # parameters (weights + biases)
    out_elements: float  # output elements per sample
    mem_bytes: float | None = None  # memory of the layer when measured (PipeEdge mem_MB); else params × dtype bytes


def vit(arch: str, image: int = 224, classes: int = 1000) -> tuple[list[Layer], float]:
    L, d, p = VIT[arch]
    n = (image // p) ** 2 + 1
    layers = []
    for b in range(L):
        att = Layer(f"block{b}.attention", 2.0 * (3 * n * d * d + 2 * n * n * d), 3 * (d * d + d) + 2 * d, 2.0 * n * d)
        if b == 0:  # patch embedding (conv p×p, 3 → d, on (n − 1) patches) + class token + position embeddings
            emb_f = 2.0 * (n - 1) * 3 * p * p * d
            att = Layer(att.name, att.flops + emb_f, att.params + 3 * p * p * d + d + d + n * d, att.out_elements)
        layers.append(att)
        layers.append(Layer(f"block{b}.attn_out", 2.0 * n * d * d, d * d + d, 2.0 * n * d))
        layers.append(Layer(f"block{b}.mlp_in", 8.0 * n * d * d, 4 * d * d + 4 * d + 2 * d, 5.0 * n * d))
        layers.append(Layer(f"block{b}.mlp_out", 8.0 * n * d * d, 4 * d * d + d, 2.0 * n * d))
    last = layers[-1]  # final LN + classifier head on the class token
    layers[-1] = Layer(last.name + "+head", last.flops + 2.0 * d * classes, last.params + 2 * d + d * classes + classes,
                       float(classes))
    return layers, 3.0 * image * image


def _conv(name, cin, cout, k, h_out, groups=1):
    return Layer(name, 2.0 * k * k * (cin // groups) * cout * h_out * h_out, k * k * (cin // groups) * cout + cout,
                 float(cout * h_out * h_out))


def vgg16(image: int = 224, classes: int = 1000) -> tuple[list[Layer], float]:
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    layers, c, h, i = [], 3, image, 0
    for v in cfg:
        if v == "M":
            h //= 2
            layers.append(Layer(f"pool{len([x for x in layers if 'pool' in x.name])}", float(c * h * h * 4), 0.0,
                                float(c * h * h)))
        else:
            layers.append(_conv(f"conv{i}", c, v, 3, h))
            c, i = v, i + 1
    if image >= 64:
        dims = [c * h * h, 4096, 4096, classes]
    else:
        dims = [c * h * h, classes]
    for j in range(len(dims) - 1):
        layers.append(Layer(f"fc{j}", 2.0 * dims[j] * dims[j + 1], dims[j] * dims[j + 1] + dims[j + 1],
                            float(dims[j + 1])))
    return layers, 3.0 * image * image


def resnet18(image: int = 224, classes: int = 1000) -> tuple[list[Layer], float]:
    layers = []
    if image >= 64:
        h = image // 2
        stem = _conv("conv1", 3, 64, 7, h)
        h //= 2
        layers.append(Layer("conv1+pool", stem.flops + 64 * h * h * 9, stem.params, float(64 * h * h)))
    else:
        h = image
        layers.append(_conv("conv1", 3, 64, 3, h))
    c = 64
    for si, cout in enumerate((64, 128, 256, 512)):
        for bi in range(2):
            stride = 2 if (si > 0 and bi == 0) else 1
            h_out = h // stride
            a = _conv("a", c, cout, 3, h_out)
            b = _conv("b", cout, cout, 3, h_out)
            f, prm = a.flops + b.flops, a.params + b.params
            if stride != 1 or c != cout:
                sc = _conv("sc", c, cout, 1, h_out)
                f, prm = f + sc.flops, prm + sc.params
            layers.append(Layer(f"layer{si + 1}.{bi}", f, prm, float(cout * h_out * h_out)))
            c, h = cout, h_out
    layers.append(Layer("avgpool+fc", float(c * h * h) + 2.0 * c * classes, c * classes + classes, float(classes)))
    return layers, 3.0 * image * image


def mobilenetv2(image: int = 224, classes: int = 1000) -> tuple[list[Layer], float]:
    rows = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    h = image // 2
    layers = [_conv("stem", 3, 32, 3, h)]
    c = 32
    for t, cout, n, s in rows:
        for i in range(n):
            stride = s if i == 0 else 1
            h_out = h // stride
            hid = c * t
            parts = ([_conv("e", c, hid, 1, h)] if t != 1 else []) + [_conv("dw", hid, hid, 3, h_out, groups=hid),
                                                                       _conv("p", hid, cout, 1, h_out)]
            layers.append(Layer(f"block{len(layers)}", sum(x.flops for x in parts), sum(x.params for x in parts),
                                float(cout * h_out * h_out)))
            c, h = cout, h_out
    head = _conv("head", c, 1280, 1, h)
    layers.append(Layer("conv_head", head.flops, head.params, float(1280 * h * h)))
    layers.append(Layer("avgpool+fc", 1280.0 * h * h + 2.0 * 1280 * classes, 1280 * classes + classes, float(classes)))
    return layers, 3.0 * image * image


def generate(arch: str, image: int = 224, classes: int = 1000) -> tuple[list[Layer], float]:
    """(layers, input elements per sample) of ``arch`` (one of ``ARCHS``)."""
    if arch in VIT:
        return vit(arch, image, classes)
    return {"vgg16": vgg16, "resnet18": resnet18, "mobilenetv2": mobilenetv2}[arch](image, classes)
