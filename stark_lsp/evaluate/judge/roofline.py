"""How far a kernel is from the hardware: the floor set by bytes and by operations.

The floor of a task is the larger of two times:

* memory: the bytes it must move (every input read once, every output written
  once) over the device-to-device copy bandwidth measured on this GPU;
* compute: the floating-point operations of the reference (counted by
  ``torch.utils.flop_counter``: matrix products and convolutions; elementwise
  work counts as zero) over the matrix-product rate measured on this GPU for
  the task's dtype. A float32 convolution counts at the TF32 rate where cuDNN
  may use TF32 (``torch.backends.cudnn.allow_tf32``, PyTorch's default): a
  floor is the least time, and on an H100 float32's 52 TFLOP/s put
  convolutions' floors above their measured times (session 24).

Ceilings are measured once per worker process, in the same run as the
timings they are compared with. GPU only: on the CPU there is no floor.
"""

from __future__ import annotations

import statistics
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from stark_lsp.evaluate.result import Floor


class Ceilings:
    """Measured copy bandwidth and matrix-product rate of one GPU (cached)."""

    def __init__(self, device: torch.device):
        self.device = device
        self._bandwidth: float | None = None
        self._peak: dict[tuple[torch.dtype, bool], float] = {}

    def bandwidth_gbs(self) -> float:
        if self._bandwidth is None:
            n = 1 << 28  # 1 GiB of float32 each way
            src = torch.empty(n, dtype=torch.float32, device=self.device).normal_()
            dst = torch.empty_like(src)
            ms = _median_ms(lambda: dst.copy_(src), reps=10)
            self._bandwidth = 2 * src.numel() * src.element_size() / (ms * 1e-3) / 1e9
            del src, dst
        return self._bandwidth

    def peak_tflops(self, dtype: torch.dtype, tf32: bool = False) -> float:
        """The matrix-product rate for ``dtype``; ``tf32``: float32's with TF32 allowed (cuDNN's default
        for convolutions), measured with cuBLAS's switch on for that product alone."""
        dtype = dtype if dtype in (torch.float16, torch.bfloat16, torch.float64) else torch.float32
        tf32 = tf32 and dtype == torch.float32
        key = (dtype, tf32)
        if key not in self._peak:
            n = 4096 if dtype == torch.float64 else 8192
            a = torch.randn(n, n, device=self.device, dtype=dtype)
            b = torch.randn(n, n, device=self.device, dtype=dtype)
            with _tf32_products(tf32):
                ms = _median_ms(lambda: torch.matmul(a, b), reps=5)
            self._peak[key] = 2 * n**3 / (ms * 1e-3) / 1e12
            del a, b
        return self._peak[key]


@contextmanager
def _tf32_products(on: bool) -> Iterator[None]:
    """cuBLAS allowed TF32 for the block (``on``; otherwise nothing is touched), then restored exactly,
    by whichever of torch's two APIs the process used (the other is refused once one was set)."""
    if not on:
        yield
        return
    try:
        was = torch.get_float32_matmul_precision()
    except RuntimeError:  # the legacy flag was set: use it
        legacy = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = legacy
        return
    torch.set_float32_matmul_precision("high")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(was)


def _median_ms(fn: Any, reps: int) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def tensor_bytes(values: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def main_dtype(values: list[Any]) -> torch.dtype:
    floats = [v for v in values if isinstance(v, torch.Tensor) and v.dtype.is_floating_point]
    if not floats:
        return torch.float32
    return max(floats, key=lambda v: v.numel()).dtype


CONVOLUTIONS = ("convolution", "_convolution", "cudnn_convolution", "cudnn_convolution_transpose")


def count_flops(fn: Any, inputs: list[Any]) -> tuple[int, int]:
    """The reference's counted operations on these inputs: (all of them, those of convolutions)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        fn(*inputs)
    conv = 0
    for op, n in counter.get_flop_counts().get("Global", {}).items():
        if str(op).split(".")[-1] in CONVOLUTIONS:  # aten.convolution, whatever the layer
            conv += int(n)
    return int(counter.get_total_flops()), conv


def convolutions_in_tf32() -> bool:
    """Whether cuDNN may run float32 convolutions in TF32 here (PyTorch's default), by whichever of
    torch's two ways of saying it the task used (reading the old one is refused once the new was set)."""
    try:
        return bool(torch.backends.cudnn.allow_tf32)
    except RuntimeError:
        return getattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision", "") == "tf32"


def task_floor(ceilings: Ceilings, fn: Any, inputs: list[Any], outputs: list[Any]) -> Floor:
    """The floor of one call of the reference on these inputs."""
    nbytes = tensor_bytes(inputs) + tensor_bytes(outputs)
    try:
        flops, conv = count_flops(fn, inputs)
    except Exception:  # noqa: BLE001 - an op the counter cannot trace: no compute floor
        flops = conv = 0
    dtype = main_dtype(inputs)
    bw = ceilings.bandwidth_gbs()
    mem_ms = nbytes / (bw * 1e9) * 1e3
    comp_ms, peak, tf32 = 0.0, 0.0, False
    if flops:
        tf32 = dtype == torch.float32 and conv > 0 and convolutions_in_tf32()
        rate = ceilings.peak_tflops(dtype)
        comp_ms = ((flops - conv) / rate + conv / (ceilings.peak_tflops(dtype, tf32=True) if tf32 else rate)) / 1e9
        peak = flops / (comp_ms * 1e9) if comp_ms > 0 else rate  # the rate the floor assumes, all counted
    return Floor(bytes=nbytes, flops=flops, memory_floor_ms=mem_ms, compute_floor_ms=comp_ms,
                 bandwidth_gbs=bw, peak_tflops=peak or None,
                 dtype=str(dtype).replace("torch.", "") + (", convolutions in TF32" if tf32 else ""),
                 bound="compute" if comp_ms > mem_ms else "memory")
