"""The one speedup format: labelled, never 0.00x, never exponent notation."""

import pytest

from stark_lsp.speedups import ratio_text, speedup_text


@pytest.mark.parametrize("x, text", [
    (2.345, "2.35×"), (1.0, "1.00×"), (0.45, "0.45×"), (12.34, "12.3×"), (123.4, "123×"),
    (0.0456, "0.046×"), (0.000491, "0.00049×"), (2.1e-05, "<0.0001×"), (5000.0, ">1000×"),
    (float("inf"), ">1000×"), (None, "-"),
])
def test_ratio_text(x, text):
    assert ratio_text(x) == text


@pytest.mark.parametrize("x", [1e-4, 3.3e-05, 0.00123, 0.01, 0.0999, 0.1, 0.999, 9.99, 99.9, 999.0])
def test_no_zero_and_no_exponent(x):
    t = ratio_text(x)
    assert "e" not in t and t not in ("0.00×", "0×", "0.0×")
    assert not t.startswith("0.00×")


def test_labels_say_what_a_speedup_is_against():
    assert speedup_text(2.0, "yours") == "2.00× your kernel"
    assert speedup_text(2.0, "eager") == "2.00× eager"
    assert speedup_text(2.0, "compiled") == "2.00× torch.compile"
    assert speedup_text(0.002, "eager", cpu=True) == "0.0020× eager (CPU interpreter: for checking, not speed)"
    assert speedup_text(1.5, "yours", sign="x") == "1.50x your kernel"
    with pytest.raises(ValueError):
        speedup_text(1.0, "reference")
