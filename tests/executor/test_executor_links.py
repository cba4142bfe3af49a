"""The event engine: shared links (processor sharing with re-timing), latency, determinism, deadlock detection."""
from __future__ import annotations

import pytest

from parplan.executor.engine import BWD, FWD, P2P_FWD, DeadlockError, Program, run


def two_streams(n_streams=2):
    prog = Program()
    ss = [prog.add_stream(f"s{i}", i) for i in range(n_streams)]
    return prog, ss


def test_two_equal_concurrent_transfers_take_twice_as_long():
    prog, (a, b) = two_streams()
    link = prog.add_link("nic", 0)
    x = prog.add_op(P2P_FWD, a, 1.0, links=(link,))
    y = prog.add_op(P2P_FWD, b, 1.0, links=(link,))
    r = run(prog)
    assert r.end[x] == pytest.approx(2.0) and r.end[y] == pytest.approx(2.0)


def test_alone_a_transfer_takes_its_work():
    prog, (a, _) = two_streams()
    link = prog.add_link("nic", 0)
    x = prog.add_op(P2P_FWD, a, 1.5, links=(link,))
    assert run(prog).end[x] == pytest.approx(1.5)


def test_unequal_transfers_are_retimed_when_one_leaves():
    prog, (a, b) = two_streams()
    link = prog.add_link("nic", 0)
    x = prog.add_op(P2P_FWD, a, 1.0, links=(link,))
    y = prog.add_op(P2P_FWD, b, 3.0, links=(link,))
    r = run(prog)
    assert r.end[x] == pytest.approx(2.0)  # half rate until done
    assert r.end[y] == pytest.approx(4.0)  # 1 done by t=2, the remaining 2 at full rate


def test_a_late_joiner_slows_the_transfer_in_flight():
    prog, (a, b) = two_streams()
    link = prog.add_link("nic", 0)
    x = prog.add_op(P2P_FWD, a, 2.0, links=(link,))
    c = prog.add_op(FWD, b, 1.0)
    y = prog.add_op(P2P_FWD, b, 1.0, links=(link,))
    r = run(prog)
    assert r.start[y] == pytest.approx(1.0) and r.end[c] == pytest.approx(1.0)
    assert r.end[x] == pytest.approx(3.0) and r.end[y] == pytest.approx(3.0)


def test_latency_is_paid_before_joining_the_link():
    prog, (a, b) = two_streams()
    link = prog.add_link("nic", 0)
    x = prog.add_op(P2P_FWD, a, 1.0, links=(link,), lat=0.5)
    y = prog.add_op(P2P_FWD, b, 1.0, links=(link,), lat=0.5)
    r = run(prog)
    assert r.join[x] == pytest.approx(0.5)
    assert r.end[x] == pytest.approx(2.5) and r.end[y] == pytest.approx(2.5)


def test_transfer_on_two_links_moves_at_its_smallest_share():
    prog, (a, b, c) = two_streams(3)
    l0, l1 = prog.add_link("l0", 0), prog.add_link("l1", 1)
    x = prog.add_op(P2P_FWD, a, 1.0, links=(l0, l1))  # shares l1 with y
    y = prog.add_op(P2P_FWD, b, 1.0, links=(l1,))
    z = prog.add_op(P2P_FWD, c, 3.0, links=(l0,))  # shares l0 with x
    r = run(prog)
    assert r.end[x] == pytest.approx(2.0) and r.end[y] == pytest.approx(2.0)
    assert r.end[z] == pytest.approx(4.0)


def test_stream_order_and_dependencies():
    prog, (a, b) = two_streams()
    f = prog.add_op(FWD, a, 1.0)
    g = prog.add_op(FWD, a, 2.0)  # same stream: after f
    h = prog.add_op(BWD, b, 1.0)
    prog.dep(g, h)
    r = run(prog)
    assert (r.start[g], r.end[g]) == (pytest.approx(1.0), pytest.approx(3.0))
    assert r.start[h] == pytest.approx(3.0) and r.unblocker[h] == g and r.unblocker[f] == -1


def test_runs_are_deterministic():
    def build():
        prog, ss = two_streams(4)
        link = prog.add_link("nic", 0)
        ops = []
        for i in range(40):
            s = ss[i % 4]
            ops.append(prog.add_op(FWD, s, 0.5 + (i % 3) * 0.25))
            ops.append(prog.add_op(P2P_FWD, s, 0.3, links=(link,)))
            if i >= 4:
                prog.dep(ops[-3 - 8 + 1], ops[-2])
        return prog

    r1, r2 = run(build()), run(build())
    assert r1.start == r2.start and r1.end == r2.end and r1.events == r2.events


def test_cycles_are_reported():
    prog, (a, b) = two_streams()
    x = prog.add_op(FWD, a, 1.0)
    y = prog.add_op(FWD, b, 1.0)
    prog.dep(x, y)
    prog.dep(y, x)
    with pytest.raises(DeadlockError, match="never ran"):
        run(prog)
