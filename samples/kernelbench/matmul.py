"""KernelBench-format task (level 1 style): square fp32 matrix product.

Full size: 4096 x 4096 x 4096, 137 GFLOP; eager (cuBLAS, fp32 without TF32)
about 2.7 ms on an H200. B is scaled by 1/sqrt(N) so that C is of order one
and the fp32 tolerance (1e-4) separates a reordered fp32 sum from TF32."""
import os

import torch
import torch.nn as nn

SMALL = os.environ.get("STARK_SMALL") == "1"
N = 128 if SMALL else 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N) / N ** 0.5]


def get_init_inputs():
    return []
