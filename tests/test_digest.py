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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int8, torch.bool, torch.complex64])
def test_the_signed_sum_is_exact_in_float64_for_every_dtype(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5000, generator=g) * 100
    x = torch.complex(x, -x) if dtype.is_complex else x.to(dtype)
    flat = torch.view_as_real(x).reshape(-1) if dtype.is_complex else x.reshape(-1)
    flat = flat.view(torch.uint8) if dtype == torch.bool else flat
    signs = D._draw_signs(D._generator(11, 0, flat.device), flat.numel(), torch.float64, flat.device)
    exact = float((flat.to(torch.float64) * signs).sum())
    assert D.digest([x], 11)[0] == [exact, 0.0, 0.0, 0.0]


def test_outputs_too_big_to_keep_signs_for_are_summed_in_chunks(monkeypatch):
    x = torch.randn(10_000, generator=torch.Generator().manual_seed(4))
    kept = D.digest([x], 9)
    monkeypatch.setattr(D, "KEEP_ELEMENTS", 1000)
    monkeypatch.setattr(D, "CHUNK", 1024)
    monkeypatch.setattr(D, "_SIGNS", D._SignCache(1000))
    chunked = D.digest([x], 9)
    assert chunked == D.digest([x], 9)  # the same signs every time
    assert abs(chunked[0][0] - kept[0][0]) <= 1e-6 * (10_000 ** 0.5)  # on the CPU, the same stream of signs
    stale = D.digest([torch.randn(10_000)], 9)
    assert "off by" in D.agrees(stale, chunked, D.bound([x], 1e-4, 1e-4))


def test_the_sign_cache_stays_within_its_size():
    cache = D._SignCache(keep=3000)
    a = cache.get(1, 0, 2000, torch.float32, torch.device("cpu"))
    assert cache.get(1, 0, 2000, torch.float32, torch.device("cpu")) is a  # kept
    cache.get(2, 0, 2000, torch.float32, torch.device("cpu"))  # 4000 > 3000: the oldest goes
    assert cache.size == 2000 and len(cache.items) == 1
    assert torch.equal(cache.get(1, 0, 2000, torch.float32, torch.device("cpu")), a)  # drawn again, the same


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


def test_a_gpu_with_memory_to_spare_keeps_more_signs(monkeypatch):
    class Props:
        def __init__(self, total):
            self.total_memory = total

    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: Props(141 << 30))  # an H200
    assert D.keep_for(cuda) >= 16384 * 8192  # the softmax sample's output: kept
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: Props(24 << 30))
    assert D.keep_for(cuda) == D.KEEP_ELEMENTS  # a 24 GB card: the floor
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: Props(1 << 40))
    assert D.keep_for(cuda) == D.KEEP_MAX
    assert D.keep_for(torch.device("cpu")) == D.KEEP_ELEMENTS
