"""Mistuned Triton sample: out = x * sigmoid(x) + y, elementwise.

Deliberately slow: 32 elements per program and a single warp. The built-in
team should find larger blocks and more warps."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 32


@triton.jit
def swish_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    out = x * tl.sigmoid(x) + y
    tl.store(out_ptr + offs, out, mask=mask)


def swish_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    swish_add_kernel[grid](x, y, out, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=1)
    return out
