"""Harness of matmul_naive.cu: C = A @ B in fp32.

Full size: 3072 x 3072 x 3072, 58 GFLOP; eager (cuBLAS, fp32 without TF32)
takes over 1 ms on an H200, the naive kernel about 30 times that. B is scaled
by 1/sqrt(K) so that C is of order one and the fp32 tolerance (1e-4) separates
a reordered fp32 sum (errors about 1e-6) from TF32 arithmetic (errors about
1e-3)."""
import os

import torch

SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for CPU tests


def reference(a, b):
    return a @ b


def get_inputs():
    m, n, k = (96, 80, 128) if SMALL else (3072, 3072, 3072)
    return [torch.randn(m, k), torch.randn(k, n) / k ** 0.5]


def run(lib, a, b):
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty(m, n, device=a.device, dtype=a.dtype)
    lib.matmul_naive(a, b, c, m, n, k)
    return c
