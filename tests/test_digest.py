"""The timed-call digest (pure torch on the CPU): honest outputs agree, stale ones do not."""

import pytest

torch = pytest.importorskip("torch")

from stark_lsp.evaluate import digest as D  # noqa: E402


def test_an_honest_output_within_tolerance_agrees_and_a_stale_one_does_not():
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(300_000, generator=g)
    honest = ref + 1e-5 * torch.randn(300_000, generator=g)
    stale = torch.randn(300_000, generator=g)  # another call's answer
    bounds = D.bound([ref], 1e-4, 1e-4)
    want = D.digest([ref], 42)
    assert D.agrees(D.digest([honest], 42), want, bounds) == ""
    assert "off by" in D.agrees(D.digest([stale], 42), want, bounds)


def test_special_values_are_counted_and_scalars_kept():
    x = torch.tensor([1.0, float("nan"), float("inf"), float("-inf"), float("-inf")])
    (d, s) = D.digest([x, 3], 5)
    assert d[1:] == [1.0, 1.0, 2.0] and s == [3.0, 0.0, 0.0, 0.0]
    assert "NaN/inf counts" in D.agrees(D.digest([torch.zeros(5), 3], 5), [d, s], D.bound([x, 3], 1e-4, 1e-4))


def test_the_signs_depend_on_the_seed():
    x = torch.arange(1000, dtype=torch.float32)
    assert D.digest([x], 1)[0][0] != D.digest([x], 2)[0][0]
    assert D.digest([x], 1) == D.digest([x], 1)


def test_malformed_digests_are_refused():
    want = D.digest([torch.ones(4)], 3)
    bounds = D.bound([torch.ones(4)], 1e-4, 1e-4)
    for bad in (None, [], [[1.0, 0, 0]], [[float("nan"), 0, 0, 0]], [[True, 0, 0, 0]]):
        assert D.agrees(bad, want, bounds)
