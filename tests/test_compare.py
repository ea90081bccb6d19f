"""The judge's comparison rule (evaluate/judge/compare.py), a chunk at a time."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from stark_lsp.evaluate.judge import compare as C  # noqa: E402


@pytest.fixture(params=[7, 1 << 24])
def chunk(request, monkeypatch):
    """Chunks smaller than the outputs (the gigabyte case, shrunk) and one chunk for everything."""
    monkeypatch.setattr(C, "CHUNK", request.param)
    return request.param


def test_equal_outputs_pass_and_the_worst_error_is_the_whole_tensors(chunk):
    r = torch.randn(100, generator=torch.Generator().manual_seed(0))
    c = r.clone()
    c[93] += 5e-5  # in the last chunk when chunks are small
    got = C.compare_outputs([r], [c])
    assert got.passed and got.max_abs_error == pytest.approx(5e-5, rel=1e-2)


def test_elements_outside_the_tolerance_are_counted_over_every_chunk(chunk):
    r = torch.zeros(50)
    c = r.clone()
    c[[1, 20, 49]] = 1.0
    got = C.compare_outputs([r], [c])
    assert not got.passed and "3 of 50 elements outside" in got.message and got.max_abs_error == 1.0


def test_nan_and_inf_positions_must_match_wherever_they_are(chunk):
    r = torch.ones(40)
    c = r.clone()
    c[33] = float("nan")
    assert "1 NaN where the reference has a number" in C.compare_outputs([r], [c]).message
    r2 = r.clone()
    r2[2] = float("inf")
    assert "1 +inf of the reference missing" in C.compare_outputs([r2], [r]).message
    r2[2], c2 = float("-inf"), r.clone()
    c2[2] = float("-inf")
    assert C.compare_outputs([r2], [c2]).passed


def test_complex_outputs_are_compared_as_pairs_of_reals(chunk):
    r = torch.randn(30, dtype=torch.complex64, generator=torch.Generator().manual_seed(1))
    c = r.clone()
    c[17] += 1j
    assert not C.compare_outputs([r], [c]).passed
