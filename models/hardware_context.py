"""What the training formulas need of one homogeneous device group, resolved once: peaks for the math dtype, HBM,
the scale-up and scale-out links with their measured collective curves, the device's kernel profile, the
framework profile (which overlaps exist, fp8 recipe costs, gradient bucket size) and the global framework terms."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parplan.errors import SpecError
from parplan.hardware.types import NodeGroup
from parplan.models.efficiency import Efficiency, efficiency_for
from parplan.models.primitives.calibration import KernelProfile
from parplan.models.primitives.collectives import Curve, curve_for
from parplan.models.primitives.framework_terms import FrameworkTerms

# Elements per data-parallel gradient bucket (DDP / distributed optimizer; FSDP reduces one layer at a time):
# Megatron-Core DistributedDataParallelConfig bucket_size default max(40M, 1M·dp) parameters
# (megatron/core/distributed/distributed_data_parallel.py); DeepSpeed ZeRO reduce_bucket_size default 5e8
# (DeepSpeed config docs, "zero_optimization"); PyTorch DDP bucket_cap_mb = 25 MiB (torch.nn.parallel.
# DistributedDataParallel docs) = 6.6M fp32 elements; XLA combines all gradient all-reduces of a step (MaxText).
DP_BUCKET_ELEMENTS = {"megatron-core": 40e6, "nemo": 40e6, "deepspeed": 5e8, "torchtitan": 6.6e6,
                      "llm-foundry": 6.6e6, "maxtext": 1e12}
# fp8 GEMM-input casts when a profile gives no figure: read bf16 (2 B) + write fp8 (1 B) per input element
DEFAULT_CAST_BYTES = 3.0


def ring_allreduce_s(nbytes, ranks, bw, lat):
    """Ring all-reduce, α–β: 2(p−1)/p·n/β + 2(p−1)·α (Thakur et al. 2005; Patarasuk & Yuan 2009)."""
    p = np.maximum(ranks, 1)
    return np.where(p > 1, 2.0 * (p - 1) / p * nbytes / bw + 2.0 * (p - 1) * lat, 0.0)


def ring_allgather_s(nbytes, ranks, bw, lat):
    """Ring all-gather or reduce-scatter of n total bytes, α–β: (p−1)/p·n/β + (p−1)·α."""
    p = np.maximum(ranks, 1)
    return np.where(p > 1, (p - 1) / p * nbytes / bw + (p - 1) * lat, 0.0)


def framework_of(workload):
    """The framework profile a workload's training job names (default megatron-core)."""
    from parplan.models.framework import DEFAULT_FRAMEWORK, get_framework

    return get_framework(getattr(workload.training, "framework", DEFAULT_FRAMEWORK) or DEFAULT_FRAMEWORK)


@dataclass(frozen=True)
class HardwareContext:
    peak_flops_per_s: float  # dense peak for the GEMM dtype
    peak16_flops_per_s: float  # 16-bit peak (attention kernels run in 16-bit even under fp8)
    memory_bandwidth_bytes_per_s: float
    memory_capacity_bytes: float
    devices_per_node: int  # devices on one scale-up fabric (a node, an NVL72 rack, a TPU slice)
    intra_rate: float  # scale-up link, bytes/s per device per direction (datasheet)
    intra_lat: float
    inter_rate: float  # scale-out NIC bytes/s available to one device
    inter_lat: float
    intra_kind: str
    intra_nvls: bool
    inter_kind: str
    kernels: KernelProfile
    framework: object  # FrameworkProfile
    terms: FrameworkTerms
    eff: Efficiency
    math_dtype: str
    kernel_overhead_s: float
    cast_bytes_per_element: float
    dp_bucket_elements: float
    attention: object  # AttnCurves of the fused-attention kernel the framework runs on this device
    launches_kernels: bool = True  # host-launched kernels (GPUs); a TPU runs one compiled program per step

    def curve_intra(self, collective: str) -> Curve:
        return curve_for(self.intra_kind, collective, self.intra_nvls)

    def curve_inter(self, collective: str) -> Curve:
        return curve_for(self.inter_kind, collective)

    def group_busbw(self, nbytes, extent, per_node, ranks, collective: str):
        """Bus bandwidth, latency and measured ring length of a collective whose ranks occupy ``extent``
        consecutive devices, ``per_node`` of them in each scale-up domain.  Inside the domain: the scale-up
        link's measured curve.  Across domains NCCL runs one ring per NIC, so the r members of a domain drive r
        NICs in parallel: min(scale-up, r·NIC) (NCCL multi-ring)."""
        ci, cx = self.curve_intra(collective), self.curve_inter(collective)
        n = np.maximum(np.asarray(nbytes, dtype=np.float64), 1.0)
        x = np.log2(n)
        intra = ci.busbw_of(n, x, self.intra_rate, ranks)
        nic = cx.busbw_of(n, x, self.inter_rate) * np.maximum(per_node, 1)
        cross = extent > self.devices_per_node
        return (np.where(cross, np.minimum(intra, nic), intra), np.where(cross, self.inter_lat, self.intra_lat),
                np.where(cross, cx.measured_ranks, ci.measured_ranks))


def math_dtype(device_supports, precision: str) -> str:
    """dtype whose peak prices the GEMMs: fp32 training uses tf32 tensor cores where present."""
    if precision == "fp32":
        return "tf32" if device_supports("tf32") else "fp32"
    return precision


def _cast_bytes(fw, precision: str) -> float:
    """Extra HBM bytes per GEMM input element for the low-precision casts of the framework's recipe."""
    if precision not in ("fp8", "mxfp8", "nvfp4", "int8"):
        return 0.0
    recipe = precision if precision in ("mxfp8", "nvfp4") else fw.fp8_default_recipe
    if recipe not in fw.fp8_cast_bytes_per_element:  # a framework without a recipe of its own (DeepSpeed)
        return DEFAULT_CAST_BYTES
    return fw.fp8_cast_bytes(recipe)


def hardware_context(group: NodeGroup, precision: str, eff: Efficiency | None = None,
                     framework=None) -> HardwareContext:
    dev = group.device
    eff = eff or efficiency_for(dev)
    if framework is None:
        from parplan.models.framework import DEFAULT_FRAMEWORK, get_framework

        framework = get_framework(DEFAULT_FRAMEWORK)
    dt = math_dtype(dev.supports, precision)
    if not dev.supports(dt):
        raise SpecError(f"device {dev.id} has no {precision} math", key="training.precision",
                        allowed=sorted(d for d in dev.peak_flops_per_s if d not in ("fp64", "tf32")))
    p16 = dev.peak_flops_per_s.get("bf16", dev.peak_flops_per_s.get("fp16", dev.peak_flops_per_s.get(dt)))
    if precision == "fp32":
        p16 = dev.peak(dt)
    scale_up = int(getattr(group, "scale_up_devices", group.devices_per_node))
    return HardwareContext(
        peak_flops_per_s=dev.peak(dt), peak16_flops_per_s=p16,
        memory_bandwidth_bytes_per_s=dev.memory_bandwidth_bytes_per_s, memory_capacity_bytes=dev.memory_bytes,
        devices_per_node=scale_up,
        intra_rate=group.intra_node.bandwidth_bytes_per_s, intra_lat=group.intra_node.latency_s,
        inter_rate=group.inter_node_bandwidth_per_device_bytes_per_s, inter_lat=group.inter_node.latency_s,
        intra_kind=group.intra_node.kind, intra_nvls=bool(getattr(group.intra_node, "nvls", False)),
        inter_kind=group.inter_node.kind, kernels=eff.kernels, framework=framework, terms=eff.terms, eff=eff,
        math_dtype=dt, kernel_overhead_s=eff.kernel_overhead_s, cast_bytes_per_element=_cast_bytes(framework, precision),
        dp_bucket_elements=DP_BUCKET_ELEMENTS[framework.id],
        attention=eff.kernels.attention_for(framework.attention_kernel),
        launches_kernels=dev.kind != "tpu",
    )
