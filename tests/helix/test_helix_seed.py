"""The S19 reproduction (``benchmarks/seed_helixpipe.py``) runs, prints parplan's figures beside the paper's, and
the executor confirms every row within 10 % and the direction against 1F1B on the same layout."""
from __future__ import annotations

import seed_helixpipe  # benchmarks/ (tests/conftest.py puts it on the path)


def test_seed_helixpipe(capsys):
    assert seed_helixpipe.main([]) == 0
    out = capsys.readouterr().out
    assert "paper: HelixPipe: 26 %" in out
    assert "(bound 10 %): confirmed" in out and "direction of B vs A₌ confirmed" in out
    assert "grows with the sequence length" in out and "(yes)" in out
    assert "claim (B ≈ 1.26× the pipeline baselines at 128k, within 10 %)" in out
