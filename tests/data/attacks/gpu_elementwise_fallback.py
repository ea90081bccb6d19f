"""Class 9 on a GPU: a Triton kernel named like PyTorch's, never launched, with a fallback."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def elementwise(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(a_ptr + offs, mask=m) * 2 + tl.load(b_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        y = torch.empty_like(a)
        try:
            elementwise[(triton.cdiv(a.numel(), 1024),)](a, b, y, a.numel(), BLOCK=1000)  # not a power of 2: fails
        except Exception:
            return a * 2 + b  # PyTorch's vectorized_elementwise_kernel runs instead
        return y
