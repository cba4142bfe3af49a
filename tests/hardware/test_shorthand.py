"""`--hw DEVICE:NODESxDPN[@INTRA,INTER]` and `DEVICE:N`: a homogeneous cluster whose default links are the ones the
shipped cluster files use for that device."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from parplan.errors import SpecError
from parplan.hardware import device_ids, link_ids, load_cluster
from parplan.hardware.shorthand import FORM, PLATFORMS_BY_DEVICE, PLATFORMS_BY_GENERATION, platform_of
from user_devices import no_user_catalog  # noqa: F401

runner = CliRunner()

# shipped single-group clusters built on each device's usual platform: the shorthand must give the same groups
SAME_AS = {"dgx-h100-64": "h100-sxm-80gb:8x8", "dgx-h100-256": "h100-sxm-80gb:256",
           "dgx-h100-1024": "h100-sxm-80gb:128x8", "dgx-a100-8": "a100-sxm-80gb:8",
           "selene-a100-3072": "a100-sxm-80gb:3072", "mi300x-64": "mi300x:64", "gaudi3-64": "gaudi3:8x8",
           "gb200-nvl72-576": "gb200:576", "gb300-nvl72-576": "gb300:144x4", "tpu-v5e-256": "tpu-v5e:256",
           "tpu-v5p-1024": "tpu-v5p:1024"}


def _group(cluster):
    g = cluster.groups[0]
    return (g.device.id, g.nodes, g.devices_per_node, g.intra_node.id, g.inter_node.id, g.nics_per_node,
            g.scale_up_domain, g.topology)


@pytest.mark.parametrize("ident,shorthand", sorted(SAME_AS.items()))
def test_shorthand_matches_the_shipped_cluster(ident, shorthand):
    assert _group(load_cluster(shorthand)) == _group(load_cluster(ident))


def test_platform_links_are_catalog_ids():
    for plat in [*PLATFORMS_BY_GENERATION.values(), *filter(None, PLATFORMS_BY_DEVICE.values())]:
        assert plat.intra_node in link_ids() and plat.inter_node in link_ids(), plat
        assert len(plat.source) >= 20
    assert set(PLATFORMS_BY_DEVICE) <= set(device_ids())


def test_forms():
    c = load_cluster("h100-sxm-80gb:32x8")
    assert (c.name, c.n_devices, len(c.groups)) == ("h100-sxm-80gb:32x8", 256, 1)
    assert _group(load_cluster("h100-sxm-80gb:4")) == ("h100-sxm-80gb", 1, 4, "nvlink4", "ib-ndr400", None, None,
                                                       "switch")
    assert _group(load_cluster("h100-sxm-80gb:2x8@nvlink4,roce-400"))[3:6] == ("nvlink4", "roce-400", None)
    assert _group(load_cluster("h100-pcie-80gb:2x4@pcie5-x16,roce-200"))[:5] == \
        ("h100-pcie-80gb", 2, 4, "pcie5-x16", "roce-200")
    assert _group(load_cluster("h800-sxm-80gb:16"))[3] == "nvlink4-h800"
    assert _group(load_cluster("gb200:8"))[1:3] == (2, 4)  # NVL72 compute trays of 4
    assert load_cluster("tpu-v5p:64").groups[0].scale_up_domain == 64  # one torus across the slice


def test_every_verb_and_the_api_take_it():
    from parplan import estimate
    from parplan.cli.app import app

    est = estimate("llama2-7b", "a100-sxm-80gb:2x8", "tp=8", seq_len=2048, global_batch=64)
    assert est.step_time_s > 0
    for verb in (["estimate", "llama2-7b", "--hw", "a100-sxm-80gb:2x8", "--plan", "tp=8"],
                 ["check", "llama2-7b", "--hw", "a100-sxm-80gb:2x8", "--plan", "tp=8"],
                 ["suggest", "llama2-7b", "--hw", "a100-sxm-80gb:2x8", "--top", "1"]):
        r = runner.invoke(app, verb + ["--seq-len", "2048", "--global-batch", "64"])
        assert r.exit_code in (0, 1), (verb, r.output)
        assert "error" not in r.stderr, (verb, r.stderr)


@pytest.mark.parametrize("ref,needle", [
    ("h100-sxm-80gb:", "not of the allowed form"),
    ("h100-sxm-80gb:8y8", "not of the allowed form"),
    ("h100-sxm-80gb:4x8@nvlink4", "not of the allowed form"),
    ("h100-sxm-80gb:4x8@nvlink4,ib-ndr400,x", "not of the allowed form"),
    (":4x8", "not of the allowed form"),
    ("h100-sxm-80gb:0x8", "NODES and DPN must be ≥ 1"),
    ("h100-sxm-80gb:0", "the device count must be ≥ 1"),
    ("h100-sxm-80gb:12", "12 devices do not fill whole nodes of 8"),
    ("h100-pcie-80gb:8", "h100-pcie-80gb has no usual node size here"),
    ("h100-pcie-80gb:1x8", "h100-pcie-80gb has no usual platform links here; add @INTRA,INTER"),
    ("h100:4x8", "unknown device id 'h100'; did you mean 'h100-pcie-80gb' or 'h100-sxm-80gb'"),
    ("h100-sxm-80gb:4x8@nvlink9,ib-ndr400", "intra-node link: unknown link id 'nvlink9'; did you mean"),
    ("h100-sxm-80gb:9999999x8", "nodes: bad value 9999999"),
])
def test_bad_shorthand_is_one_line(ref, needle):
    with pytest.raises(SpecError) as e:
        load_cluster(ref)
    msg = str(e.value)
    assert "\n" not in msg and needle in msg, msg
    assert msg.startswith(f"bad --hw shorthand {ref!r}"), msg
    if "allowed form" in needle or "must be" in needle or "whole nodes" in needle:
        assert FORM in msg


def test_bad_shorthand_on_the_command_line():
    from parplan.cli.app import app

    r = runner.invoke(app, ["estimate", "llama2-7b", "--hw", "h100-sxm-80gb:8x", "--plan", "tp=8"])
    assert r.exit_code == 2
    assert r.stderr.strip() == f"error: bad --hw shorthand 'h100-sxm-80gb:8x': not of the allowed form; write {FORM}"


def test_files_and_ids_come_first(tmp_path, monkeypatch):
    """A file whose name holds a colon is still read as a file; an unknown plain name keeps its old error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab:a").write_text("name: lab\ngroups:\n  - {device: a100-sxm-80gb, nodes: 1, devices_per_node: 8,"
                                    " intra_node: nvlink3, inter_node: ib-hdr200}\n", encoding="utf-8")
    assert load_cluster("lab:a").name == "lab"
    with pytest.raises(SpecError, match="no cluster file or catalog id 'dgx-h100-65'"):
        load_cluster("dgx-h100-65")


def test_platform_lookup_order():
    assert platform_of("gb200", "blackwell") is PLATFORMS_BY_DEVICE["gb200"]
    assert platform_of("b200", "blackwell") is PLATFORMS_BY_GENERATION["blackwell"]
    assert platform_of("h100-pcie-80gb", "hopper") is None
    assert platform_of("mygpu", "hopper") is PLATFORMS_BY_GENERATION["hopper"]
    assert platform_of("mygpu", "") is None
