"""A Triton candidate for samples/triton/softmax.py with an error in the kernel."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=float("-inf"))
    y = tl.exp(x - tl.max(x, axis=0)) / undefined_name
    tl.store(y_ptr + row * stride + offs, y, mask=offs < n_cols)


def softmax(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
    return y
