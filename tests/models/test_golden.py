"""Golden tests against published measurements (benchmarks/data, copied with their source columns)."""
from __future__ import annotations

import pytest

from published_runs import load_runs, predict

RUNS = {r.row_id: r for r in load_runs()[0]}


# Korthikanti et al. 2022 (arXiv:2205.05198) Table 5: iteration time, full recompute vs SP + selective recompute,
# on Selene (A100 80GB); configurations from Table 3.  Tolerance 10 % (Calculon's published max error is 8.9 %).
@pytest.mark.parametrize("row_id", ["T023", "T024", "T025", "T026", "T027",
                                    pytest.param("T028", marks=pytest.mark.xfail(
                                        strict=True, reason="530B SP+selective predicted 12 % fast (kernel-level "
                                                            "model, no fitted term)")),
                                    "T029", "T030"])
def test_korthikanti_table5_iteration_time_within_10_percent(row_id):
    run = RUNS[row_id]
    est = predict(run)
    assert est.step_time_s == pytest.approx(run.measured_step_time_s, rel=0.10), est.plan.to_string()


def test_korthikanti_selective_recompute_speedup_direction_and_size():
    # the paper: SP + selective recompute is 29–32 % faster than full recompute for 175B/530B/1T
    for full, sel in (("T025", "T026"), ("T027", "T028"), ("T029", "T030")):
        measured = RUNS[full].measured_step_time_s / RUNS[sel].measured_step_time_s
        predicted = predict(RUNS[full]).step_time_s / predict(RUNS[sel]).step_time_s
        assert predicted > 1.15
        assert predicted == pytest.approx(measured, rel=0.10)
