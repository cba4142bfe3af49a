"""Issue 10: the inference source may be any device of the cluster — a board or the server, in any slot.  The inputs
start at the source and the results return to it (PipeEdge's model, as for board sources): a last stage on the
source returns nothing, any other pays the hop to the source; a source that is no device is a one-line error
(exit 2) listing the cluster's ids."""
from __future__ import annotations

import yaml
import pytest
from typer.testing import CliRunner

from parplan.cli.app import app
from parplan.errors import SpecError
from parplan.hardware.edge import cluster_from_dict
from parplan.models import edge as M
from parplan.models import edge_terms as T
from parplan.models.edge_stages import stage_tables
from parplan.planner.spaces.layerchain import pipeedge_dp, pipeedge_tables, search
from tests.layerchain.dp_cases import EX, load
from tests.layerchain.test_dp_pins import reference_dp

runner = CliRunner()
HW = str(EX / "edge-4pi-server.yaml")
BOARDS = ("pi-0", "pi-1", "pi-2", "pi-3")


def _vit(source: str) -> dict:
    w = yaml.safe_load((EX / "vit-edge.yaml").read_text())
    w["inference"]["source"] = source
    return w


def _yaml(tmp_path, source: str) -> str:
    """The bundled example with its ``source:`` line edited, as the issue's ``sed`` does."""
    text = (EX / "vit-edge.yaml").read_text()
    assert "  source: pi-0 " in text
    path = tmp_path / f"vit-{source}.yaml"
    path.write_text(text.replace("  source: pi-0 ", f"  source: {source} "))
    return str(path)


def _returns_to_source(e, cluster, source: str) -> None:
    """The plan's input leaves the source and its result comes back to it, priced on the links between."""
    src, nb, mb = cluster.ids.index(source), 4, 8  # fp32, microbatch 8 (the example)
    first, last = e.stages[0], e.stages[-1]
    if first["device"] == source:
        assert e.parts["input_s"] == 0.0
    else:
        net = cluster.link(src, cluster.ids.index(first["device"]))
        assert e.parts["input_s"] == T.transfer_s(150528 * nb * mb, net.up_bytes_per_s, net.rtt_s)  # 3×224×224
    if last["device"] == source:
        assert last["transfer_s"] == 0.0 and last["out_bytes"] == 0.0
    else:
        net = cluster.link(cluster.ids.index(last["device"]), src)
        assert last["out_bytes"] == 1000 * nb * mb  # the 1000 class scores of each image
        assert last["transfer_s"] == T.transfer_s(last["out_bytes"], net.up_bytes_per_s, net.rtt_s)


@pytest.mark.parametrize("verb", ["suggest", "estimate", "simulate", "validate"])
def test_every_verb_takes_the_server_as_source(tmp_path, verb):
    r = runner.invoke(app, [verb, _yaml(tmp_path, "server"), "--hw", HW])
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and "stages=server:1-48" in r.output


def test_server_source_plans_start_and_end_at_the_server():
    spec, c = load(_vit("server"), HW)
    ps = search(spec, c, top=0)
    best = ps.rows[0]
    # the server is ~150× a board: the whole chain there, no hop at all (the input is already there)
    assert best.plan == "stages=server:1-48" and best.technique == "pipeline"
    assert best.metrics["latency_s"] == best.stages[0]["compute_s"] == best.metrics["bottleneck_s"]
    assert not any(n.startswith("pipeline DP") for n in ps.notes), ps.notes  # the boards-alone DP ran too
    boards = [e for e in ps.rows if all(s["device"] != "server" for s in e.stages)]
    assert any(len(e.stages) == 4 for e in boards)  # the pipeline on the four boards, fed by the server
    for e in ps.rows:
        _returns_to_source(e, c, "server")
    assert all(e.technique != "split" for e in ps.rows)  # no board to split from: Neurosurgeon has no plan
    assert any("Neurosurgeon" in n for n in ps.notes)


@pytest.mark.parametrize("board", BOARDS)
def test_each_board_as_source(tmp_path, board):
    r = runner.invoke(app, ["suggest", _yaml(tmp_path, board), "--hw", HW, "--top", "3"])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    spec, c = load(_vit(board), HW)
    ps = search(spec, c, top=0)
    assert not any(n.startswith("pipeline DP") for n in ps.notes), ps.notes
    for e in ps.rows:
        _returns_to_source(e, c, board)
        if e.stages[0]["type"] == "raspberry-pi-5":  # a board stage first: the source board runs it
            assert e.stages[0]["device"] == board
    assert any(e.technique == "split" and e.stages[0]["device"] == board for e in ps.rows)


@pytest.mark.parametrize("verb", ["suggest", "estimate", "simulate", "validate"])
def test_an_unknown_source_is_one_line_listing_the_ids(tmp_path, verb):
    r = runner.invoke(app, [verb, _yaml(tmp_path, "pi-9"), "--hw", HW])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert "inference.source" in r.output and "allowed: pi-0, pi-1, pi-2, pi-3, server" in r.output


def test_unknown_source_through_the_api():
    spec, c = load(_vit("gpu-0"), HW)
    with pytest.raises(SpecError, match="unknown device 'gpu-0'") as err:
        search(spec, c)
    assert err.value.key == "inference.source"


def test_the_server_source_dp_equals_the_state_by_state_recurrence():
    spec, c = load(_vit("server"), HW)
    h, par, stages, res = reference_dp(spec, c)
    assert pipeedge_dp(spec, c)[:2] == (stages, res) == ([(4, 0, 48)], res)


def _server_first(memory: str) -> dict:
    """The example's devices with the server listed first (its only device in slot 0) and every link its own (no
    shared channel, so the DP's bottleneck is the plan's), the server's memory cut to ``memory``."""
    srv = yaml.safe_load((EX.parent / "catalogs" / "hardware" / "edge" / "gpu-server-a100.yaml").read_text())
    return {"name": "server-first", "kind": "edge-cluster", "source": "test cluster: the server in the first slot",
            "devices": [{"device": {**srv, "memory": memory}, "ids": ["server"], "network": "gige"},
                        {"device": "raspberry-pi-5", "count": 4, "ids": list(BOARDS), "network": "gige"}]}


@pytest.mark.parametrize("memory, server_stage", [("300 MiB", -1), ("200 MiB", 0)])
def test_a_last_stage_on_a_lone_source_returns_nothing(memory, server_stage):
    """The server cannot hold the whole chain.  With 300 MiB the boards run its first layers and the server (the
    source, its type's only device) the last stage: the result is already at the source, the DP prices no return hop
    (before the fix it looked up "the next slot of the server's type": a board, or past the cluster's end).  With
    200 MiB the server runs the first stage (no input hop) and a board's last stage sends the result back to it."""
    spec, c = load(_vit("server"), cluster_from_dict(_server_first(memory)))
    assert stage_tables(spec, c).back_hop(0) == 0.0
    stages, res, _ = pipeedge_dp(spec, c)
    assert stages[server_stage][0] == 0 and len(stages) == 5
    e = M.chain_estimate(spec, c, stages)
    _returns_to_source(e, c, "server")
    assert res == pytest.approx(e.metrics["bottleneck_s"], rel=1e-12)
    h, par, ref_stages, ref_res = reference_dp(spec, c)
    assert (stages, res) == (ref_stages, ref_res)
    assert pipeedge_tables(spec, c).res == res
    _returns_to_source(search(spec, c, top=1).rows[0], c, "server")


def test_a_lone_board_source_in_a_middle_slot():
    """b-0 is its type's only board, between two other types: a last stage there returns nothing, on any other type
    the hop to b-0 is that type's own link (not the next slot's device)."""
    from tests.layerchain.dp_cases import SMALL_MIXED

    spec, c = load({"family": "layer-chain", "name": "m", "dnn": {"arch": "mobilenetv2"},
                    "inference": {"microbatch": 2, "requests": 5, "source": "b-0"}}, SMALL_MIXED)
    st, out = stage_tables(spec, c), float(spec.arrays()["out_elements"][-1]) * 4 * 2
    assert st.back_hop(1) == 0.0
    assert st.back_hop(0) == out / c.link(0, 2).up_bytes_per_s and st.back_hop(2) == out / c.link(3, 2).up_bytes_per_s


def test_a_split_on_the_server_itself_is_refused():
    r = runner.invoke(app, ["estimate", str(EX / "vit-edge.yaml"), "--hw", HW, "--plan", "split=server:12"])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "--plan split" in r.output and "allowed: pi-0, pi-1, pi-2, pi-3" in r.output


def test_the_bundled_example_is_bit_identical_to_its_pins():
    """Sources anywhere change nothing for the example's board source: its searches equal their pins exactly."""
    import json

    from tests.layerchain.dp_cases import SEARCH_CASES
    from tests.layerchain.test_dp_pins import PINS

    pins = json.loads(PINS.read_text())["search"]
    for name, w, hw, objective in SEARCH_CASES:
        if name.startswith("vit-example"):
            spec, c = load(w, hw)
            assert json.loads(json.dumps(search(spec, c, objective=objective, top=0).to_dict())) == pins[name], name
