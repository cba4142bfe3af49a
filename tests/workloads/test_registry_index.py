"""The family registry's source index (a lookup imports only the family's module) agrees with full discovery."""
from __future__ import annotations

import subprocess
import sys

from parplan.workloads import registry


def test_index_equals_full_discovery():
    full = registry._families()
    idx = registry._index()
    assert set(idx) == set(full)
    for name, info in full.items():
        assert registry._indexed(name) is info
        assert registry.family_info(name) is info


def test_family_of_a_spec_is_its_own_modules_family():
    from parplan.workloads import load_workload

    assert registry.family_of(load_workload("llama3-8b").model).name == "dense-transformer"
    assert registry.family_of(load_workload("mixtral-8x7b").model).name == "moe-transformer"


def test_a_transformer_job_imports_no_other_family(tmp_path):
    code = ("import sys; from parplan.workloads import load_workload; load_workload('llama3-8b'); "
            "print(sorted(m for m in sys.modules if m.startswith('parplan.workloads.')))")
    # -P and a folder outside the checkout: the installed package is what is imported (as tests/test_startup.py)
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert "taskgraph" not in out and "replication" not in out, out
