import pytest

from parplan.errors import SpecError, did_you_mean
from parplan.units import parse_quantity


@pytest.mark.parametrize("text,kind,expected", [
    ("80 GiB", "bytes", 80 * 2**30),
    ("40 GB", "bytes", 40e9),
    ("900 GB/s", "bytes_per_s", 900e9),
    ("400 Gb/s", "bytes_per_s", 50e9),  # bits
    ("989.4 TFLOP/s", "flops_per_s", 989.4e12),
    ("2 us", "seconds", 2e-6),
    ("1.5 ms", "seconds", 1.5e-3),
    (3.5, "seconds", 3.5),  # bare numbers are SI
    ("700 W", "watts", 700.0),
])
def test_parse_quantity(text, kind, expected):
    assert parse_quantity(text, kind) == pytest.approx(expected)


def test_parse_quantity_errors_name_key_and_allowed_units():
    with pytest.raises(SpecError) as e:
        parse_quantity("80 GiBs", "bytes", key="memory", file="dev.yaml")
    msg = str(e.value)
    assert msg.startswith("dev.yaml: memory: unknown unit 'GiBs' in '80 GiBs' (allowed: ")
    assert "GiB" in msg
    with pytest.raises(SpecError, match="must be > 0"):
        parse_quantity("0 GB", "bytes", key="memory")
    with pytest.raises(SpecError, match="cannot read quantity"):
        parse_quantity("lots", "bytes")


@pytest.mark.parametrize("text,kind", [("1e-300 B/s", "bytes_per_s"), ("5e-324 B/s", "bytes_per_s"),
                                       (1e-310, "bytes_per_s"), ("0.5 FLOP/s", "flops_per_s")])
def test_rates_below_one_per_second_are_refused(text, kind):
    # rates near the float minimum turned the times they divide into inf, then NaN, printed as a result
    with pytest.raises(SpecError, match="must be ≥ 1"):
        parse_quantity(text, kind, key="socket.stream_bandwidth")
    assert parse_quantity("1 B/s" if kind == "bytes_per_s" else "1 FLOP/s", kind) == 1.0
    assert parse_quantity(0, kind, positive=False) == 0.0  # 0 stays allowed where the caller allows it


def test_spec_error_render_is_one_line():
    err = SpecError("bad value 'x'", file="m.yaml", key="training.precision", allowed=["bf16", "fp8"],
                    hint="did you mean 'fp8'?", line=3, col=14)
    assert str(err) == "m.yaml:3:14: training.precision: bad value 'x' (allowed: bf16, fp8); did you mean 'fp8'?"
    assert "\n" not in str(err)


def test_did_you_mean():
    assert did_you_mean("hiden", ["hidden", "heads", "layers"]) == "did you mean 'hidden'?"
    assert did_you_mean("zzz", ["hidden"]) is None
