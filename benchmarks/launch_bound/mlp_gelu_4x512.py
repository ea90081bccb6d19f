import torch
import torch.nn as nn


class Model(nn.Module):
    """Four Linear + GELU layers on a small batch: each GEMM is microseconds of GPU work."""

    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(width, width), nn.GELU())])

    def forward(self, x):
        return self.layers(x)


batch = 16
width = 512
depth = 4


def get_inputs():
    return [torch.randn(batch, width)]


def get_init_inputs():
    return [width, depth]
