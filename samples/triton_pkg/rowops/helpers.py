"""Triton helpers the kernels call (a @triton.jit function may call one from another module)."""
import triton
import triton.language as tl


@triton.jit
def chunk_sum_of_squares(row_ptr, start, n_cols, BLOCK_SIZE: tl.constexpr):
    offs = start + tl.arange(0, BLOCK_SIZE)
    x = tl.load(row_ptr + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
    return tl.sum(x * x, axis=0)
