"""Launch exporters refuse the research knobs (``launch/common.py`` RESEARCH_KNOBS) with a one-line SpecError naming
the knob, never writing the job without it: RTP's rotate=true and HelixPipe's helix=true."""
from __future__ import annotations

import pytest

from parplan.errors import SpecError
from parplan.launch import LaunchConfig, export_plan
from parplan.launch.common import TARGETS


def refused(workload, cluster, plan, to) -> SpecError:
    with pytest.raises(SpecError) as e:
        export_plan(workload, cluster, plan, to)
    assert "\n" not in str(e.value)
    return e.value


@pytest.mark.parametrize("to", ["megatron", "torchtitan", "deepspeed", "maxtext"])
def test_rotate_is_refused_by_every_target(to):
    plan = "dp=8,zero=3,rotate=true,mbs=1"
    err = refused("llama2-7b", "dgx-a100-8", plan, to)
    assert err.key == "plan.rotate"
    assert "cannot express rotate=true" in str(err) and "RTP" in str(err) and "rotate=false" in str(err)
    assert isinstance(export_plan("llama2-7b", "dgx-a100-8", plan.replace(",rotate=true", ""), to), LaunchConfig)


def test_rotate_is_refused_where_the_profile_refuses_zero3_first():
    err = refused("llama2-7b", "dgx-a100-8", "dp=8,zero=3,rotate=true,mbs=1", "nemo")
    assert "no zero=3" in str(err)


def test_helix_is_refused_as_a_megatron_fork():
    plan = "dp=4,pp=2,zero=1,helix=true,mbs=1"
    err = refused("llama2-7b", "dgx-a100-8", plan, "megatron")
    assert err.key == "plan.helix"
    msg = str(err)
    assert "cannot express helix=true" in msg and "HelixPipe's attention-parallel pipeline is in a Megatron-LM fork, " \
                                                 "not an upstream flag" in msg
    assert isinstance(export_plan("llama2-7b", "dgx-a100-8", plan.replace(",helix=true", ""), "megatron"),
                      LaunchConfig)


@pytest.mark.parametrize("to", sorted(TARGETS))
def test_helix_is_never_exported(to):
    refused("llama2-7b", "dgx-a100-8", "dp=4,pp=2,zero=1,helix=true,mbs=1", to)
