"""The S12 seed benchmark runs and states every claim as reached or not reached."""
from __future__ import annotations

import seed_rtp  # benchmarks/ (tests/conftest.py puts it on the path)


def test_seed_rtp_prints_the_table_and_its_claims(capsys):
    assert seed_rtp.main([]) == 0
    out = capsys.readouterr().out
    for model in seed_rtp.MODELS:
        assert out.count(f"{model} (") == 8  # 2 micro-batch sizes × DDP, FSDP, TP, RTP
    claims = [line for line in out.splitlines() if ": reached" in line or ": not reached" in line]
    assert len(claims) >= 5, out
    assert "executor vs model on RTP" in out and "largest trainable model RTP / DDP" in out
    exec_line = next(line for line in out.splitlines() if line.startswith("executor vs model on RTP"))
    assert exec_line.endswith(": reached")  # the 10 % bound
