"""Named time and energy terms of an inductive loop nest mapped onto a DSP's cores × vector lanes, vectorized over
configurations (numpy arrays of cores ``c``, vectorize flag, unroll ``U``, sync mode) and outer iterations k.

Per iteration k (REVEL's cost ingredients, SEEDS S06(b); ANCHORS Part B §2.1), in cycles:

* a vector loop of length m on v lanes unrolled U times issues U·⌈m/(v·U)⌉ vector ops (padded tail) — or m/v
  with implicit masking, where inductive streams keep the lanes full (u_k → 1); loops are dealt to c cores as
  ``group_slots`` says and the busiest core counts; over a triangular group of lengths hi … hi−count+1 the sum is
  closed: S(M, w) = Σ_{m≤M} ⌈m/w⌉ = w·q(q+1)/2 + r(q+1), q = ⌊M/w⌋, r = M − q·w;
* a reduction (loop-carried accumulator) issues one vector op every max(1, L_mac/U) cycles;
* control: ``loop_overhead_cycles`` per vector loop per core, or once per loop group and iteration with
  vector-stream control (one stream command describes the whole inductive loop of loops);
* the dependence chain L_dep,k = mac·L_mac + div·L_div + sqrt·L_sqrt + reduce·L_add·⌈log2(c·v)⌉: added to the
  iteration (in-order DSP phases) or overlapped with its vector work, T_k = max(work, L_dep) (dataflow);
* memory: bytes_k over the bandwidth of the innermost level that holds the working set on c cores (roofline);
* sync: hand-offs_k × the mode's cycles (a barrier between cores; none on one core; a stream hand-off always).

``compute_s + masking_s + stall_s + control_s + dependence_s + memory_s + sync_s = total_s``.
"""
from __future__ import annotations

import numpy as np

from parplan.errors import SpecError

TIME_PARTS = ("compute_s", "masking_s", "stall_s", "control_s", "dependence_s", "memory_s", "sync_s")
ENERGY_PARTS = ("mac_j", "memory_j", "static_j")
SYNC_MODES = ("barrier", "stream")


def tri_ceil_sum(M: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_{m=1..M} ⌈m/w⌉ for integer M ≥ 0, w ≥ 1 (closed form, elementwise)."""
    M = np.maximum(M, 0.0)
    q = np.floor(M / w)
    r = M - q * w
    return w * q * (q + 1) / 2 + r * (q + 1)


def floor_sum(n, m, a, b) -> np.ndarray:
    """Σ_{i<n} ⌊(a·i + b)/m⌋ elementwise for integers n ≥ 0, m ≥ 1, a, b ≥ 0 (the Euclid-like reduction of the
    AtCoder Library's ``floor_sum``: O(log m) passes, exact in float64 below 2⁵³)."""
    n, m, a, b = (np.array(x, dtype=np.float64) for x in np.broadcast_arrays(n, m, a, b))
    ans = np.zeros(n.shape)
    live = n > 0
    while live.any():
        qa = np.floor(a / m)
        ans += np.where(live, n * (n - 1) / 2 * qa, 0.0)
        a = a - qa * m
        qb = np.floor(b / m)
        ans += np.where(live, n * qb, 0.0)
        b = b - qb * m
        y = a * n + b
        live &= y >= m
        n, b, m, a = np.where(live, np.floor(y / m), n), np.where(live, y - np.floor(y / m) * m, b), \
            np.where(live, a, m), np.where(live, m, a)
    return ans


def cyclic_ceil_sum(hi, c, q, w) -> np.ndarray:
    """Σ_{j<q} ⌈(hi − j·c)/w⌉ elementwise: the padded vector ops of core 0's loops (lengths hi, hi − c, …, all ≥ 1)
    under a cyclic deal of a triangular group — in reverse order Σ_{i<q} ⌊(c·i + hi − (q − 1)·c + w − 1)/w⌋."""
    return floor_sum(q, w, c, np.maximum(hi - (q - 1) * c, 1.0) + w - 1)


def group_slots(g, c, v, U, masking: bool) -> tuple:
    """(vector ops, of them at full lanes, loops) on the busiest core for loop group ``g`` (arrays configs × k).

    Distribution (what the executor plays): with implicit masking the group's loops are one concatenated stream
    dealt to the c lanes in equal chunks (⌈E/c⌉ elements); else a group of at least c loops is dealt loop-cyclic
    (core 0 gets loops hi, hi−c, …: q0 = ⌈count/c⌉ of them), a smaller group splits each loop's elements
    (⌈m/c⌉ each).  Padded tails cost U·⌈m/(v·U)⌉ per loop — summed in closed form over triangular groups
    (``tri_ceil_sum``) and, for the cyclic deal of a triangular group, over core 0's loops (``cyclic_ceil_sum``)."""
    cnt, hi = g.count[None, :], g.hi[None, :]
    w = v * U
    if masking:
        e = np.ceil(g.elements[None, :] / c)
        return e / v, e / v, np.ceil(cnt / c)
    cyc = cnt >= c
    q0 = np.ceil(cnt / c)
    if g.triangular:
        e0 = q0 * hi - c * q0 * (q0 - 1) / 2  # core 0: lengths hi, hi − c, …
        pad_cyc = U * cyclic_ceil_sum(hi, c, q0, w)
        split_m = (tri_ceil_sum(hi, c) - tri_ceil_sum(hi - cnt, c)) / v
        split_p = U * (tri_ceil_sum(hi, c * w) - tri_ceil_sum(hi - cnt, c * w))
    else:
        e0 = q0 * hi
        pad_cyc = U * q0 * np.ceil(hi / w)
        split_m = cnt * np.ceil(hi / c) / v
        split_p = U * cnt * np.ceil(hi / (c * w))
    masked = np.where(cyc, e0 / v, split_m)
    slots = np.maximum(np.where(cyc, pad_cyc, split_p), masked)
    return slots, masked, np.where(cyc, q0, cnt)


def memory_bandwidth(dsp, ws_bytes: float, c: np.ndarray) -> tuple:
    """(bytes/s, level name index) of the innermost level holding ``ws_bytes`` on ``c`` cores: per-core levels
    hold c × their size and stream c × their bandwidth; DRAM when nothing on chip holds it."""
    bw = np.full(np.shape(c), float(dsp.dram_bytes_per_s or 0.0))
    level = np.full(np.shape(c), len(dsp.memory))
    done = np.zeros(np.shape(c), bool)
    for i, m in enumerate(dsp.memory):
        cap = m.bytes * (c if m.per_core else 1.0)
        fits = (~done) & (cap >= ws_bytes)
        bw = np.where(fits, m.bytes_per_s * (c if m.per_core else 1.0), bw)
        level = np.where(fits, i, level)
        done |= fits
    if np.any(bw <= 0):
        raise SpecError(f"{dsp.name}: the working set ({ws_bytes:,.0f} B) fits no memory level and the device has no "
                        "dram bandwidth", key="dram")
    return bw, level


def nest_terms(nest, dsp, c, vec, U, mode, dtype: str) -> dict:
    """Time parts (seconds, arrays over configurations) and cycles of ``nest`` on ``dsp``.  ``c`` cores used,
    ``vec`` vectorized (bool), ``U`` unroll, ``mode`` index into SYNC_MODES."""
    c = np.asarray(c, float)[:, None]
    vec = np.asarray(vec, bool)[:, None]
    U = np.asarray(U, float)[:, None]
    mode = np.asarray(mode, int)[:, None]
    v = np.where(vec, dsp.width(dtype, True), dsp.width(dtype, False))
    lat = dsp.latency
    zero = np.zeros((c.shape[0], nest.iterations))
    useful, pad, stall, ctrl = zero.copy(), zero.copy(), zero.copy(), zero.copy()
    for g in nest.groups:
        slots, masked, loops = group_slots(g, c, v, U, dsp.implicit_masking)
        tps = np.maximum(1.0, lat["mac"] / U) if g.carried else np.ones_like(U)
        useful += masked
        pad += (slots - masked) * tps
        stall += masked * (tps - 1.0)
        ctrl += dsp.loop_overhead_cycles * ((g.count[None, :] > 0) if dsp.vector_stream_control else loops)
    busy = useful + pad + stall + ctrl
    lanes = np.maximum(c * v, 1.0)
    ldep = (nest.dep_mac * lat["mac"] + nest.dep_div * lat["div"] + nest.dep_sqrt * lat["sqrt"])[None, :] \
        + nest.dep_reduce[None, :] * lat["add"] * np.ceil(np.log2(lanes))
    dep = np.maximum(0.0, ldep - busy) if dsp.fine_grain_overlap else ldep + 0.0 * busy
    bw, level = memory_bandwidth(dsp, nest.working_set_bytes, c[:, 0])
    mem_cycles = nest.bytes[None, :] * dsp.clock_hz / bw[:, None]
    mem = np.maximum(0.0, mem_cycles - busy - dep)
    costs = np.array([dsp.sync_cycles.get(m, np.nan) for m in SYNC_MODES])
    s = np.where((c == 1) & (mode == 0), 0.0, costs[mode])  # one core: no barrier
    if np.any(np.isnan(s)):
        raise SpecError(f"{dsp.name} has no such sync mode", key="--plan sync", allowed=dsp.sync_modes())
    sync = nest.handoffs[None, :] * s
    hz = dsp.clock_hz
    out = {"compute_s": useful.sum(1) / hz, "masking_s": pad.sum(1) / hz, "stall_s": stall.sum(1) / hz,
           "control_s": ctrl.sum(1) / hz, "dependence_s": dep.sum(1) / hz, "memory_s": mem.sum(1) / hz,
           "sync_s": sync.sum(1) / hz}
    out["total_s"] = sum(out[k] for k in TIME_PARTS)
    out["cycles"] = out["total_s"] * hz
    out["memory_level"] = level
    out["utilization"] = nest.macs / (out["cycles"] * c[:, 0] * dsp.width(dtype, True))
    return out


def nest_energy(nest, dsp, t: dict, c, dtype: str) -> dict:
    """Energy parts (joules): MACs × E_MAC(dtype) + bytes × E_byte(level) + static power × time; a device with only a
    typical ``power`` figure pays power × time (``static_j``)."""
    c = np.asarray(c, float)
    e_mac = dsp.mac_energy_j.get(dtype)
    mac = np.full(c.shape, nest.macs * e_mac if e_mac is not None else 0.0)
    per_byte = [m.energy_per_byte_j for m in dsp.memory] + [dsp.dram_energy_per_byte_j]
    eb = np.array([x if x is not None else 0.0 for x in per_byte])
    mem = float(nest.bytes.sum()) * eb[np.asarray(t["memory_level"], int)]
    dynamic_known = e_mac is not None
    p = dsp.static_power_w if dsp.static_power_w is not None else (None if dynamic_known else dsp.power_w)
    static = t["total_s"] * (p or 0.0)
    out = {"mac_j": mac, "memory_j": mem + 0.0 * c, "static_j": static}
    out["energy_j"] = out["mac_j"] + out["memory_j"] + out["static_j"]
    out["energy_known"] = bool(dynamic_known or p)
    return out
