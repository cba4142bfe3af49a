"""The 1F1B makespan of unequal stages (models/primitives/pipeline.py) against the exact max-plus recurrence of
the 1F1B order (warm-up forwards, one forward / one backward, cool-down), on hand cases and random pipelines."""
from __future__ import annotations

import numpy as np
import pytest

from parplan.models.primitives.pipeline import one_f_one_b_makespan


def _order(p, m, s):
    warm = min(p - s - 1, m)
    out, f, b = [("F", j) for j in range(warm)], warm, 0
    while b < m:
        if f < m:
            out.append(("F", f))
            f += 1
        out.append(("B", b))
        b += 1
    return out


def exact_1f1b(fs, bs, m):
    """Each stage runs its 1F1B order; F(s, j) after F(s − 1, j), B(s, j) after B(s + 1, j) (and F(p − 1, j))."""
    p = len(fs)
    fe, be = {}, {}
    pos, clock = [0] * p, [0.0] * p
    orders = [_order(p, m, s) for s in range(p)]
    while any(pos[s] < len(orders[s]) for s in range(p)):
        moved = False
        for s in range(p):
            while pos[s] < len(orders[s]):
                kind, j = orders[s][pos[s]]
                dep = (0.0 if s == 0 else fe.get((s - 1, j))) if kind == "F" else \
                    (fe.get((s, j)) if s == p - 1 else be.get((s + 1, j)))
                if dep is None:
                    break
                end = max(clock[s], dep) + (fs[s] if kind == "F" else bs[s])
                (fe if kind == "F" else be)[(s, j)] = end
                clock[s] = end
                pos[s] += 1
                moved = True
        assert moved
    return be[(0, m - 1)]


def _groups(fs, bs):
    return [(f + b, f, 1.0) for f, b in zip(fs, bs)]


def test_equal_stages_are_the_balanced_formula():
    fs, bs = [1.0] * 8, [2.0] * 8
    assert float(one_f_one_b_makespan(_groups(fs, bs), 16)) == pytest.approx((16 + 8 - 1) * 3.0)
    assert exact_1f1b(fs, bs, 16) == pytest.approx((16 + 8 - 1) * 3.0)


def test_faster_stages_after_the_slowest_do_not_add_their_whole_slot():
    # 8 stages of slot 3 (f 1, b 2) then 8 of slot 2: the balanced formula says 16·3 + 7·3 + 8·2 = 85; the later
    # stages add max(0, 2·2 − 3, 2 − 1) = 1 each: 77, which is the 1F1B order's makespan
    fs, bs = [1.0] * 8 + [2 / 3] * 8, [2.0] * 8 + [4 / 3] * 8
    assert exact_1f1b(fs, bs, 16) == pytest.approx(77.0)
    grouped = [(3.0, 1.0, 8.0), (2.0, 2 / 3, 8.0)]
    assert float(one_f_one_b_makespan(grouped, 16)) == pytest.approx(77.0)
    # the slowest stage last: the balanced formula is exact
    assert float(one_f_one_b_makespan([(2.0, 2 / 3, 8.0), (3.0, 1.0, 8.0)], 16)) == pytest.approx(85.0)
    # one micro-batch: every stage's slot is on the path
    assert float(one_f_one_b_makespan(grouped, 1)) == pytest.approx(8 * 3 + 8 * 2)


def test_random_pipelines_within_two_percent_of_the_exact_order():
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(150):
        p, m = int(rng.integers(2, 13)), int(rng.integers(1, 30))
        n, r = int(rng.integers(1, 4)), int(rng.integers(0, p))
        lay = np.array([n + (1 if i < r else 0) for i in range(p)], dtype=float)  # Megatron's default split
        fs, bs = lay * rng.uniform(0.5, 1.5), lay * rng.uniform(1.0, 3.0)
        fs[0] += rng.uniform(0, 0.3)  # embedding
        fs[-1], bs[-1] = fs[-1] + rng.uniform(0, 2.0), bs[-1] + rng.uniform(0, 3.0)  # output head
        exact = exact_1f1b(list(fs), list(bs), m)
        got = float(one_f_one_b_makespan(_groups(fs, bs), m))
        sl = fs + bs
        assert got <= m * sl.max() + sl.sum() - sl.max() + 1e-9  # never above the balanced formula
        worst = max(worst, abs(got / exact - 1.0))
    assert worst <= 0.02


def test_vectorized_over_plans_and_empty_groups():
    T = np.array([3.0, 3.0])
    out = one_f_one_b_makespan([(T, np.array([1.0, 1.0]), 1.0), (np.array([2.0, 2.0]), np.array([2 / 3, 2 / 3]),
                                                                np.array([1.0, 0.0]))], 4)
    assert out.shape == (2,)
    assert out[1] == pytest.approx(4 * 3.0)  # the second group is empty in plan 1
    assert out[0] == pytest.approx(exact_1f1b([1.0, 2 / 3], [2.0, 4 / 3], 4))


def test_interleaved_warm_up_share_is_megatrons_count():
    from parplan.models.primitives.pipeline import interleaved_warmup_share

    # p = 4, v = 2, m = 8: stage 0 runs (4 − 1)·2 + (2 − 1)·4 = 10 of its 16 forwards before its first backward,
    # the last stage (2 − 1)·4 = 4; the count never exceeds m·v
    assert float(interleaved_warmup_share(4.0, 2.0, 8.0, 0.0)) == pytest.approx(10 / 16)
    assert float(interleaved_warmup_share(4.0, 2.0, 8.0, 3.0)) == pytest.approx(4 / 16)
    assert float(interleaved_warmup_share(8.0, 4.0, 1.0, 0.0)) == pytest.approx(1.0)
