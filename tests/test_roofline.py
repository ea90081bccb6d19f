"""The floor arithmetic, on the CPU (the ceilings themselves are measured on a GPU)."""
import torch

from stark_lsp.evaluate.result import EvalResult, Floor, Runtime, Status, Timing
from stark_lsp.evaluate.judge.roofline import count_flops, main_dtype, tensor_bytes


def test_flops_of_a_matrix_product_are_counted():
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    assert count_flops(lambda x, y: torch.relu(x @ y), [a, b]) == 2 * 64 * 32 * 16


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
