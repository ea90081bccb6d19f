"""KernelBench-format task (level 1 style): sum over one dimension, keeping it.

Full size: (128, 4096, 2048) fp32 reduced over dim 1 (4.3 GB read); eager
about 1.2-2 ms on an H200, torch.compile a little slower. Values in [0, 1)
keep the relative error of a reordered fp32 sum small."""
import os

import torch
import torch.nn as nn

SMALL = os.environ.get("STARK_SMALL") == "1"
batch_size = 4 if SMALL else 128
dim1 = 256 if SMALL else 4096
dim2 = 64 if SMALL else 2048
reduce_dim = 1


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
