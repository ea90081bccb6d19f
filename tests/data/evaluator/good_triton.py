import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpb_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, a * 2 + b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        y = torch.empty_like(a)
        n = a.numel()
        axpb_kernel[(triton.cdiv(n, 1024),)](a, b, y, n, BLOCK=1024)
        return y
