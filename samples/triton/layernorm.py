"""Layer normalization over the last dimension in Triton, with affine weight
and bias: y = (x - mean) / sqrt(var + eps) * w + b.

One program per row walks the row in BLOCK_SIZE chunks three times (sum,
squared deviations, write). Correct, but the chunks are small and one warp
does all the work. The harness is layernorm.harness.py beside this file."""
import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    offs = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=0.0)
        acc += x
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=0.0)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + start + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + start + offs, mask=mask, other=0.0)
        tl.store(y_row + start + offs, (x - mean) * rstd * w + b, mask=mask)


def layernorm(x, w, b, eps=1e-5):
    rows, cols = x.shape
    y = torch.empty_like(x)
    layernorm_kernel[(rows,)](x, w, b, y, cols, x.stride(0), eps, BLOCK_SIZE=64, num_warps=1)
    return y
