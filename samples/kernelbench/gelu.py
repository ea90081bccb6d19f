"""KernelBench-format task (level 1 style): exact (erf) GELU over a large tensor.

Full size: 4096 x 393216 fp32 (6.4 GB in, 6.4 GB out); eager about 3 ms on an
H200, torch.compile about the same."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("STARK_SMALL") == "1"
batch_size = 16 if SMALL else 4096
dim = 1024 if SMALL else 393216


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
