"""Expert-parallel fields of the framework profiles: every catalog file states them (cited), the profile exposes
them, the schema rejects inconsistent values, and the existing plan checks are unchanged."""
from __future__ import annotations

import pytest
import yaml

from parplan.errors import SpecError
from parplan.models.framework import EP_OVER_DEFAULT, framework_ids, get_framework, profile_from_entry
from parplan.models.framework_schema import FrameworkFile
from parplan.spec import load_yaml_file, validate

EXPECT = {  # id: (etp, ep_over, ep_a2a_overlap, moe_dispatcher, moe_dispatch_fp8)
    "megatron-core": (True, ("dp", "cp", "tp"), "1f1b", "flex", False),
    "nemo": (True, ("dp", "cp", "tp"), "none", "alltoall", False),
    "torchtitan": (True, ("dp", "cp", "tp"), "none", "alltoall", False),
    "deepspeed": (False, ("dp",), "none", "alltoall", False),
    "llm-foundry": (False, ("dp",), "none", "alltoall", False),
    "maxtext": (False, ("dp", "cp"), "none", "alltoall", False),
}


def test_every_profile_exposes_the_ep_fields():
    assert set(framework_ids()) == set(EXPECT)
    for i, (etp, over, ov, disp, fp8) in EXPECT.items():
        f = get_framework(i)
        assert (f.etp, f.ep_over, f.ep_a2a_overlap, f.moe_dispatcher, f.moe_dispatch_fp8) == (etp, over, ov, disp, fp8)
        assert f.ep  # every catalog framework has expert parallelism


def test_every_catalog_file_states_the_ep_fields_with_a_citation(root):
    for path in sorted((root / "catalogs" / "frameworks").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert {"etp", "ep_over"} <= set(raw["supports"]), path.name
        assert "ep_a2a_overlap" in raw["overlaps"], path.name
        assert {"moe_dispatcher", "moe_dispatch_fp8"} <= set(raw), path.name
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            key = line.strip().split(":")[0]
            if key in ("etp", "ep_over", "ep_a2a_overlap", "moe_dispatcher", "moe_dispatch_fp8"):
                above = []
                m = n - 1
                while m >= 0 and lines[m].strip().startswith("#"):
                    above.insert(0, lines[m].strip())
                    m -= 1
                assert len(" ".join(above)) > 40, f"{path.name}:{n + 1}: {key} has no citation comment above it"


def _entry(root, fw="megatron-core", **changes):
    raw = load_yaml_file(root / "catalogs" / "frameworks" / f"{fw}.yaml")
    for dotted, v in changes.items():
        d = raw
        *head, last = dotted.split(".")
        for k in head:
            d = d[k]
        if v is None:
            d.pop(last)
        else:
            d[last] = v
    return validate(FrameworkFile, raw, file="fw.yaml")


@pytest.mark.parametrize("change, msg", [
    ({"overlaps.ep_a2a_overlap": "always"}, "overlaps.ep_a2a_overlap: bad value 'always'"),
    ({"moe_dispatcher": "deepep"}, "moe_dispatcher: bad value 'deepep'"),
    ({"supports.ep_over": ["dp", "pp"]}, "bad value 'pp'"),
    ({"supports.ep_over": ["dp", "dp"]}, "ep_over lists an axis twice"),
    ({"supports.ep": False, "supports.etp": False}, "empty when ep is false"),
    ({"supports.ep": False, "supports.ep_over": []}, "etp (expert tensor parallelism) needs ep"),
])
def test_schema_rejects_inconsistent_ep_fields(root, change, msg):
    with pytest.raises(SpecError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        _entry(root, **change)


def test_omitted_fields_take_documented_defaults(root):
    e = _entry(root, **{"supports.etp": None, "supports.ep_over": None, "overlaps.ep_a2a_overlap": None,
                        "moe_dispatcher": None, "moe_dispatch_fp8": None})
    f = profile_from_entry(e)
    assert (f.etp, f.ep_over, f.ep_a2a_overlap, f.moe_dispatcher, f.moe_dispatch_fp8) == \
        (False, EP_OVER_DEFAULT, "none", "alltoall", False)
    g = profile_from_entry(_entry(root, **{"supports.ep": False, "supports.etp": False, "supports.ep_over": []}))
    assert g.ep_over == () and not g.ep


def test_plan_checks_unchanged_by_the_ep_fields():
    from parplan.models.plan import Plan
    f = get_framework("megatron-core")
    assert f.plan_reasons(Plan(dp=8, ep=8), 8) == []
    assert get_framework("deepspeed").plan_reasons(Plan(dp=8, ep=8, zero=1), 8) == []
