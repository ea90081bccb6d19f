"""What the judge accepts from a candidate process (pure): numbers and output headers."""

import pytest

from stark_lsp.evaluate.wire.channel import ALIGN, ChannelError, check_output_headers
from stark_lsp.evaluate.wire.digest import agrees

HUGE = int("1" + "0" * 400)  # parses as JSON, overflows math.isfinite


def tensor(offset=0, shape=(4,), dtype="float32", stored=True, nbytes=None):
    n = 1
    for d in shape:
        n *= d
    return {"kind": "tensor", "dtype": dtype, "shape": list(shape), "offset": offset, "stored": stored,
            "nbytes": n * 4 if nbytes is None else nbytes}


def test_good_headers_pass():
    out = check_output_headers([tensor(), tensor(offset=ALIGN), {"kind": "scalar", "value": "nan"},
                                {"kind": "other", "type": "NoneType"}], capacity=4 * ALIGN)
    assert [o["kind"] for o in out] == ["tensor", "tensor", "scalar", "other"]


@pytest.mark.parametrize("headers", [
    [{"kind": "scalar", "value": HUGE}],
    [{"kind": "scalar", "value": "42"}],
    [tensor(offset=8)],  # misaligned
    [tensor(offset=2 * ALIGN)],  # past the buffer
    [tensor(), tensor()],  # overlapping
    [tensor(nbytes=1)],  # size not matching the shape
    [tensor(shape=(1 << 30, 1 << 30), stored=False)],  # more elements than any output
    [tensor(dtype="object")],
    "not a list",
])
def test_bad_headers_are_a_channel_error(headers):
    with pytest.raises(ChannelError):
        check_output_headers(headers, capacity=2 * ALIGN)


def test_a_malformed_digest_is_refused_not_a_crash():
    assert agrees([[HUGE, 0, 0, 0]], [[1.0, 0.0, 0.0, 0.0]], [1e-3]) == "output 1: malformed digest"
