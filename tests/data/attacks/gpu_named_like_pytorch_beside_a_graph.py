"""Falls back to PyTorch, and names its never-launched Triton kernel exactly like PyTorch's elementwise kernel
(``at::native::vectorized_elementwise_kernel``), launched by name in dead code only. Prefixed with a comment
that speaks of CUDA graphs (tests/test_evaluator_attacks_review27.py), the source's launch check went to the
profiler (``launch_rule.uses_cuda_graph``), which names every kernel of the call: PyTorch's ``a * 2 + b``
answered for the Triton kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def vectorized_elementwise_kernel(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(a_ptr + offs, mask=m) * 2 + tl.load(b_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if a.numel() < 0:  # never
            o = torch.empty_like(a)
            vectorized_elementwise_kernel[(1,)](a, b, o, a.numel(), BLOCK=1024)
            return o
        return a * 2 + b
