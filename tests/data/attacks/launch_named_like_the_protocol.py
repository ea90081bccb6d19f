"""Falls back to PyTorch, and names its never-launched Triton kernel like the device chain's digest kernel,
whose launches (the protocol's, in the same process) the launch check must not count as the candidate's."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def digest_kernel(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(a_ptr + offs, mask=m) * 2 + tl.load(b_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if a.numel() < 0:  # never
            o = torch.empty_like(a)
            digest_kernel[(1,)](a, b, o, a.numel(), BLOCK=1024)
            return o
        return a * 2 + b
