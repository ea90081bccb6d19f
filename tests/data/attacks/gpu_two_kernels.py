"""Class 11 on a GPU: an honest Triton candidate with its own two kernels (resources name only these)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale2(a_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(a_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def add_into(y_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        y = torch.empty_like(a)
        n = a.numel()
        scale2[(triton.cdiv(n, 1024),)](a, y, n, BLOCK=1024)
        add_into[(triton.cdiv(n, 1024),)](y, b, n, BLOCK=1024)
        return y
