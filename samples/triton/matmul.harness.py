"""Harness of matmul.py: fp16 C = A @ B (fp32 accumulation, fp16 result).

Full size: 8192 x 8192 x 8192, 1.1 TFLOP; eager (cuBLAS on tensor cores)
takes about 2 ms on an H200. B is scaled by 1/sqrt(K) so that C is of order
one; fp16 tolerance (1e-2) applies."""
import os

import torch

ENTRY = "matmul"
SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for CPU tests


def reference(a, b):
    return a @ b


def get_inputs():
    m, n, k = (64, 96, 80) if SMALL else (8192, 8192, 8192)
    return [torch.randn(m, k).half(), (torch.randn(k, n) / k ** 0.5).half()]
