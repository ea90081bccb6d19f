"""KernelBench-format task (level 1 style): ReLU over a large tensor."""
import os

import torch
import torch.nn as nn

SMALL = os.environ.get("STARK_SMALL") == "1"
batch_size = 16 if SMALL else 4096
dim = 1024 if SMALL else 393216


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
