"""The floor arithmetic, on the CPU (the ceilings themselves are measured on a GPU)."""
import torch

from stark_lsp.evaluate.result import EvalResult, Floor, Runtime, Status, Timing
from stark_lsp.evaluate.judge.roofline import count_flops, main_dtype, task_floor, tensor_bytes


def test_flops_of_a_matrix_product_are_counted():
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    assert count_flops(lambda x, y: torch.relu(x @ y), [a, b]) == (2 * 64 * 32 * 16, 0)


class FakeCeilings:
    """Round rates: 1000 GB/s; float32 10 TFLOP/s, with TF32 40."""

    def bandwidth_gbs(self):
        return 1000.0

    def peak_tflops(self, dtype, tf32=False):
        return 40.0 if tf32 else 10.0


def test_a_float32_convolution_counts_at_tf32s_rate_where_cudnn_may_use_it(monkeypatch):
    """A floor is the least time: cuDNN runs float32 convolutions in TF32 by PyTorch's default, so their
    operations count at that rate; a matrix product (cuBLAS: no TF32 by default) at float32's."""
    conv, lin = torch.nn.Conv2d(3, 8, 3), torch.nn.Linear(64, 64)
    x, v = torch.randn(2, 3, 64, 64), torch.randn(128, 64)
    total, in_conv = count_flops(lambda t, u: (conv(t), lin(u)), [x, v])
    assert 0 < in_conv < total
    for allowed in (True, False):
        monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", allowed)
        f = task_floor(FakeCeilings(), lambda t, u: (conv(t), lin(u)), [x, v], [])
        conv_rate = 40.0 if allowed else 10.0
        want = ((total - in_conv) / 10.0 + in_conv / conv_rate) / 1e9
        assert abs(f.compute_floor_ms - want) < 1e-12 and f.flops == total
        assert abs(f.peak_tflops - total / (want * 1e9)) < 1e-9
        assert f.dtype == ("float32, convolutions in TF32" if allowed else "float32")  # what the rate is


def test_bytes_and_dtype_of_inputs():
    xs = [torch.zeros(10, dtype=torch.float16), torch.zeros(100), 3]
    assert tensor_bytes(xs) == 10 * 2 + 100 * 4
    assert main_dtype(xs) == torch.float32


def test_floor_is_the_larger_of_memory_and_compute():
    f = Floor(bytes=4_000_000, flops=10**12, memory_floor_ms=1.0, compute_floor_ms=2.5, bandwidth_gbs=4000,
              peak_tflops=400, bound="compute")
    assert f.floor_ms == 2.5 and f.gap(5.0) == 2.0


def test_floor_survives_json():
    t = Timing(1, 1, 1, 1, 0, 0, 10)
    f = Floor(8, 0, 0.5, 0.0, 4000.0, None)
    r = EvalResult(Status.OK, runtime=Runtime("gpu", True, t, t, 1.0, floor=f))
    assert EvalResult.from_json(r.to_json()).runtime.floor == f


def test_the_tf32_ceiling_leaves_the_processs_precision_as_it_found_it():
    """The judge's TF32 product is allowed for its own measurement only, by either of torch's APIs."""
    from stark_lsp.evaluate.judge.roofline import _tf32_products

    before = torch.get_float32_matmul_precision()
    with _tf32_products(False):
        assert torch.get_float32_matmul_precision() == before  # nothing touched
    with _tf32_products(True):
        assert torch.get_float32_matmul_precision() == "high"
    assert torch.get_float32_matmul_precision() == before
