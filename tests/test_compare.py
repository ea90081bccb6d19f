"""The judge's comparison rule (evaluate/judge/compare.py), a chunk at a time."""

from __future__ import annotations

import os
import sys

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


@pytest.fixture
def compare_kernel(monkeypatch):
    """Where the one-pass comparison runs: the GPU where there is one, else Triton's interpreter."""
    pytest.importorskip("triton")
    gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
    name = "stark_lsp.evaluate.judge.compare_kernel"
    if not gpu:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        sys.modules.pop(name, None)  # Triton reads the variable when the kernel is defined
    monkeypatch.setattr(C, "_kernel", None)
    yield torch.device("cuda" if gpu else "cpu")
    if not gpu:
        sys.modules.pop(name, None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_the_one_pass_comparison_gives_the_torch_paths_figures(compare_kernel, dtype):
    """The kernel's nine figures are the torch path's: the NaN/inf counts both ways, the worst
    errors, and the count outside the tolerance, with elements on both sides of it."""
    dev = compare_kernel
    g = torch.Generator().manual_seed(5)
    r = (torch.randn(5000, generator=g) * 4).to(dtype)
    a, rt = C.tolerance_for(dtype, None, None)
    c = r.double() + (torch.rand(5000, generator=g, dtype=torch.float64) * 2 - 1) * 1.5 * (a + rt * r.double().abs())
    c = c.to(dtype)
    clean_r, clean_c = r.clone().to(dev), c.clone().to(dev)
    r[[10, 11]], c[[10, 12]] = float("nan"), float("nan")
    r[20], c[21] = float("inf"), float("inf")
    r[30], c[30] = float("-inf"), float("-inf")
    c[40] = float("-inf")
    r, c = r.to(dev), c.to(dev)
    tol = torch.tensor([a, rt], dtype=torch.float64, device=dev)
    got = C._chunk_figures(r, c, a, rt, tol, any_device=True).tolist()
    clean = C._chunk_figures(clean_r, clean_c, a, rt, tol, any_device=True).tolist()
    assert C._kernel not in (None, False), "the kernel path did not run"
    C._kernel = False
    want = C._chunk_figures(r, c, a, rt, tol).tolist()
    want_clean = C._chunk_figures(clean_r, clean_c, a, rt, tol).tolist()
    assert got[:6] == want[:6] == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]  # (the worst errors there: NaN or inf, unused)
    assert clean[:6] == want_clean[:6] == [0.0] * 6
    assert clean[8] == want_clean[8] and 0 < clean[8] < 5000
    assert clean[6] == pytest.approx(want_clean[6], rel=1e-12) and clean[7] == pytest.approx(want_clean[7], rel=1e-12)


def test_a_few_elements_just_outside_with_the_trials_error_size_read_as_rounding():
    """compare.as_rounding: a timed call's failure like the trials' rounding (incorrect, not a cheat) or not."""
    as_rounding, compare_outputs = C.as_rounding, C.compare_outputs

    ref = torch.full((1000,), 3000.0)
    ref[7] = 0.0  # a sum's element near zero, where the tolerance is about atol
    cand = ref.clone()
    cand[7] = 2e-4
    cmp = compare_outputs(ref, cand)
    assert not cmp.passed and cmp.outside == 1 and cmp.size == 1000
    assert as_rounding(cmp, trials_max_abs=1e-4)  # 2e-4 within 4x the trials' largest error
    assert not as_rounding(cmp, trials_max_abs=4e-5)  # 5x the trials': not rounding
    assert not as_rounding(cmp, trials_max_abs=0.0)  # exact trials: any difference while timed is a cheat
    half = ref.half().float() + torch.linspace(-0.4, 0.4, 1000)  # float16's error on thousands, everywhere
    cmp = compare_outputs(ref, half)
    assert not cmp.passed and cmp.outside > 10
    assert not as_rounding(cmp, trials_max_abs=1.0)  # too many elements outside, however large the trials' error
    assert not as_rounding(compare_outputs(ref, ref.clone()), trials_max_abs=1.0)  # a pass is not a failure
