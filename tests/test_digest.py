"""The timed-call digest (pure torch on the CPU): honest outputs agree, stale ones do not."""

import functools
import math
import os
import sys

import pytest

torch = pytest.importorskip("torch")

from stark_lsp.evaluate.wire import digest as D  # noqa: E402
from stark_lsp.evaluate.wire import signed_sum as S  # noqa: E402

KERNELS = "stark_lsp.evaluate.wire.device_chain_kernels"


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


def _flips(seed, n, dtype=torch.float32):
    """1 where an element of output 0 of a call with ``seed`` is negated (one chunk)."""
    return S.signs_negative(n, S.key(seed, 0, 0), torch.device("cpu")).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int8, torch.bool, torch.complex64])
def test_the_signed_sum_is_exact_in_float64_for_every_dtype(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5000, generator=g) * 100
    x = torch.complex(x, -x) if dtype.is_complex else x.to(dtype)
    flat = torch.view_as_real(x).reshape(-1) if dtype.is_complex else x.reshape(-1)
    work = D._flat(x).dtype
    signs = 1.0 - 2.0 * _flips(11, flat.numel(), torch.float32 if work != torch.float64 else torch.float64).double()
    exact = float((flat.to(torch.float64) * signs).sum())
    got = D.digest([x], 11)[0]
    assert got[1:] == [0.0, 0.0, 0.0] and abs(got[0] - exact) <= 1e-12 * float(flat.double().abs().sum()) + 1e-9


def test_big_outputs_are_summed_in_steps_with_the_same_signs(monkeypatch):
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(4))
    whole = D.digest([x], 9)
    monkeypatch.setattr(S, "CHUNK", 1024)
    stepped = D.digest([x], 9)
    assert stepped == D.digest([x], 9)  # the same signs every time
    assert stepped != whole  # each chunk has its own key
    stale = D.digest([torch.randn(10_000)], 9)
    assert "off by" in D.agrees(stale, stepped, D.bound([x], 1e-4, 1e-4))


def test_every_call_gets_new_signs():
    # signs that stayed the same would let a candidate forge a linear task's digests from its
    # input (tests/data/attacks/forge_digest_linear.py): no two seeds give the same signs
    a, b = _flips(1, 4096), _flips(2, 4096)
    assert not torch.equal(a, b) and 1500 < int(a.sum()) < 2600


def test_the_largest_halves_do_not_overflow():
    x = torch.full((64,), 65504.0, dtype=torch.float16)
    d = D.digest([x], 3)[0]
    assert d[1:] == [0.0, 0.0, 0.0] and math.isfinite(d[0])


def test_the_bound_holds_for_extreme_values():
    lowest = torch.full((16,), -128, dtype=torch.int8)  # abs(-128) is -128 in int8
    b = D.bound([lowest], 0.0, 0.0)[0]
    assert b > 0 and D.agrees(D.digest([lowest], 5), D.digest([lowest], 5), [b]) == ""
    big = torch.full((8,), 3e37, dtype=torch.float32)  # (rtol * |x|)^2 overflows float32
    bb = D.bound([big], 1e-5, 1e-5)[0]
    assert math.isfinite(bb) and bb > 0
    stale = D.digest([big * 0.5], 6)
    assert "off by" in D.agrees(stale, D.digest([big], 6), [bb])


def test_a_nan_among_finite_values_is_counted_and_left_out_of_the_sum():
    x = torch.randn(1000, generator=torch.Generator().manual_seed(5))
    y = x.clone()
    y[17] = float("nan")
    y[400] = float("-inf")
    d = D.digest([y], 2)[0]
    assert d[1:] == [1.0, 0.0, 1.0]
    masked = x.clone()
    masked[17] = masked[400] = 0.0
    assert d[0] == D.digest([masked], 2)[0][0]


def test_the_torch_hash_is_murmurs_finaliser_bit_for_bit():
    k = S.key(123456789, 2, 0)
    got = S.signs_negative(70, k, torch.device("cpu")).tolist()
    want = [bool(S.fmix32(i * S.GOLDEN + k) >> 31) for i in range(70)]
    assert got == want


def test_keys_differ_by_seed_output_and_chunk_and_are_never_a_constant_for_triton():
    keys = {S.key(s, o, c) for s in (1, 2, 2**40 + 1) for o in (0, 1) for c in (0, 1)}
    assert len(keys) == 12 and min(keys) > 1


@pytest.fixture
def kernels(monkeypatch):
    """The protocol's kernels and where they run: on the GPU where there is one, else under Triton's
    interpreter on the CPU."""
    pytest.importorskip("triton")
    gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
    if not gpu:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        sys.modules.pop(KERNELS, None)  # Triton reads the variable when the kernels are defined
    monkeypatch.setattr(D, "_check_sums", None)
    try:
        import stark_lsp.evaluate.wire.device_chain_kernels as K
    except Exception:  # noqa: BLE001
        pytest.skip("Triton is not usable here")
    yield K, torch.device("cuda" if gpu else "cpu")
    if not gpu:
        sys.modules.pop(KERNELS, None)


def test_the_triton_kernel_gives_the_same_sum_as_torch(kernels):
    """The GPU path's kernel (``device_chain_kernels.sum_kernel``, through the launch a candidate
    process uses) draws the same signs as the CPU's."""
    K, dev = kernels
    assert K.SUM_BLOCK == S.SUM_BLOCK
    dtypes = (torch.float32, torch.float16, torch.float64) + ((torch.bfloat16,) if dev.type == "cuda" else ())
    for dtype in dtypes:  # (bfloat16: not every interpreter has it)
        x = (torch.randn(10_000, generator=torch.Generator().manual_seed(6)) * 10).to(dtype).to(dev)
        k = S.key(77, 0, 0)
        acc = torch.zeros((), dtype=torch.float64, device=dev)
        K.launch("sum", S._TRITON[dtype], 3, x, acc, x.numel(), k, block=S.SUM_BLOCK)
        want = float(S._torch_sum(x, k))
        assert abs(float(acc) - want) <= 1e-12 * float(x.double().abs().sum()), (dtype, float(acc), want)


def test_the_judges_one_pass_check_gives_the_digest_and_bound_of_the_torch_path(kernels, monkeypatch):
    """``check_parts`` (one Triton pass) gives what the torch path gives: the same signed sum (a
    non-finite one stays non-finite), the same bound, over several chunks too."""
    _, dev = kernels
    cases = ((torch.float32, False, None), (torch.float16, False, None), (torch.float32, True, None),
             (torch.float32, False, 3000))
    for dtype, special, chunk in cases:
        x = (torch.randn(7_000, generator=torch.Generator().manual_seed(8)) * 30).to(dtype)
        if special:
            x[[3, 400]] = float("inf")
            x[77] = float("nan")
        flat = D._flat(x.to(dev))
        if chunk:
            D_chunk, S_chunk = D.CHUNK, S.CHUNK
            D.CHUNK = S.CHUNK = chunk
        try:
            got = D.check_parts(flat, 21, 1, 1e-3, 1e-2, any_device=True)
            s = float(sum(S._torch_sum(flat[i:i + S.CHUNK], S.key(21, 1, c))
                          for c, i in enumerate(range(0, flat.numel(), S.CHUNK))))
        finally:
            if chunk:
                D.CHUNK, S.CHUNK = D_chunk, S_chunk
        assert got is not None
        mag, var, scale = (float(t) for t in D._bound_parts(x, D._flat(x), 1e-3, 1e-2))
        total, gmag, gvar, gscale = got.tolist()
        if special:
            assert not math.isfinite(total) and not math.isfinite(s)
        else:
            assert abs(total - s) <= 1e-12 * float(flat.double().abs().sum()), (dtype, chunk, total, s)
        assert gscale == 1.0 and abs(gmag - mag) <= 1e-12 * mag
        want, have = D._bound_of(mag, var, scale), D._bound_of(gmag, gvar, gscale)
        if special:  # the torch path adds atol**2 for each element that is not finite; the kernel nothing
            assert want * (1 - 1e-6) <= have <= want, (dtype, have, want)
        else:
            assert abs(have - want) <= 1e-9 * want, (dtype, have, want)
    assert D.check_parts(torch.ones(4, dtype=torch.float64, device=dev), 1, 0, 1e-3, 1e-3, any_device=True) is None
    ints = torch.arange(-50, 50, dtype=torch.int16, device=dev)  # exact: a tolerance given for it never loosens its bound
    deferred = D.Deferred()
    with monkeypatch.context() as m:  # the one-pass check wherever it can run (the interpreter too)
        m.setattr(D, "check_parts", functools.partial(D.check_parts, any_device=True))
        deferred.add([ints], 3, [(0.5, 0.5)])
    assert deferred.resolve()[0][1] == D.bound([ints], 0.5, 0.5)
    assert D.check_parts(torch.ones(4), 1, 0, 1e-3, 1e-3) is None  # the CPU: the torch path
    big = D.check_parts(torch.ones(4, device=dev), 1, 0, 1e39, 0.0, any_device=True)  # past float32: still exact
    assert big is not None and big.tolist()[2] == pytest.approx(4e78, rel=1e-12)
    for atol, rtol in ((float("inf"), 0.0), (1e120, 0.0), (0.0, float("nan")), (-1.0, 0.0)):
        # tolerances whose squares could overflow (or that are no tolerance): the torch path's scaled sums
        assert D.check_parts(torch.ones(4, device=dev), 1, 0, atol, rtol, any_device=True) is None, (atol, rtol)


def test_the_largest_finite_values_fail_closed():
    # 3e38 * -2 overflowed float32 in an earlier flip (x - 2 x flip): the reference's digest
    # became NaN, and any digest "agreed" with it
    x = torch.linspace(-3e38, 3e38, 61, dtype=torch.float32)  # a sum near the largest floats, never cancelling out
    want, b = D.digest([x], 4), D.bound([x], 1e-5, 1e-5)
    assert all(math.isfinite(v) for v in want[0]) and math.isfinite(b[0])
    assert D.agrees(D.digest([x], 4), want, b) == ""
    assert D.agrees([[0.0, 0.0, 0.0, 0.0]], want, b)  # a forged zero does not pass
    assert D.agrees([[0.0, 0.0, 0.0, 0.0]], [[float("nan"), 0.0, 0.0, 0.0]], [1.0])  # nor against a NaN
    huge = torch.full((4,), 1e200, dtype=torch.float64)
    assert math.isfinite(D.bound([huge], 1e-5, 1e-5)[0])
