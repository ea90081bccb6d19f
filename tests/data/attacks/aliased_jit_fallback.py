"""Class 9: a Triton kernel the source scan cannot see (``jit`` under another name) whose
launch fails behind a fallback to PyTorch."""
import torch.nn as nn
import triton.language as tl
from triton import jit as compile_me


@compile_me
def fast_add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.load(a_ptr + i, mask=i < n) * 2 + tl.load(b_ptr + i, mask=i < n), mask=i < n)


class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            out = a.new_empty(a.shape)
            fast_add[(1,)](a, b, out, a.numel(), BLOCK="not a number")  # raises: never launched
            return out
        except Exception:
            return a * 2 + b  # PyTorch does the work
