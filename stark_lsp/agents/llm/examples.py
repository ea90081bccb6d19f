"""One short, correct candidate per backend, shown to the agents that write code
(KernelBench's own prompts carry such a one-shot example; a model that has
never seen this project's formats copies the shape of the file from it).

* CUDA: a ``__global__`` kernel and the ``extern "C"`` launcher the harness's
  ``run(lib, ...)`` calls (pointers take tensors, numbers the declared C types);
* Triton: a ``@triton.jit`` kernel and the entry function that launches it;
* KernelBench: a ``ModelNew`` whose forward launches a Triton kernel (Triton
  runs on a GPU and in the CPU interpreter alike, where CUDA cannot).

Each is about the format, not an optimization: an elementwise ``relu``.
tests/test_agent_examples.py runs the Python ones (and builds the CUDA one
where nvcc is found).
"""

from __future__ import annotations

CUDA = '''\
#include <cuda_runtime.h>

#define THREADS 256

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    if (i < n) {
        y[i] = fmaxf(x[i], 0.0f);
    }
}

// the harness: def run(lib, x): y = torch.empty_like(x); lib.relu(x, y, x.numel()); return y
extern "C" void relu(const float* x, float* y, long long n) {
    int blocks = (int)((n + THREADS - 1) / THREADS);
    relu_kernel<<<blocks, THREADS>>>(x, y, n);
}
'''

TRITON = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def relu(x):  # the entry function the harness calls (ENTRY = "relu")
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4)
    return y
'''

KERNELBENCH = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):  # replaces Model (here: torch.relu(x)); same constructor arguments
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4)
        return y
'''

EXAMPLES = {"cuda": ("cuda", CUDA), "triton": ("python", TRITON), "kernelbench": ("python", KERNELBENCH)}
WHAT = {
    "cuda": "a complete CUDA candidate",
    "triton": "a complete Triton candidate",
    "kernelbench": "a complete KernelBench candidate (ModelNew with its own Triton kernel)",
}


def example_for(kind: str) -> str:
    """The example of the task's backend as prompt text ('' for a kind without one)."""
    if kind not in EXAMPLES:
        return ""
    lang, code = EXAMPLES[kind]
    return (f"Example of {WHAT[kind]}, an elementwise relu: the shape of the file, not an optimization to copy:\n"
            f"```{lang}\n{code.rstrip()}\n```")
