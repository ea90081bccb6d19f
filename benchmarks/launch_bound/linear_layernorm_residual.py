import torch
import torch.nn as nn


class Model(nn.Module):
    """A pre-norm residual block at a small size: LayerNorm, Linear, SiLU, Linear, then the residual add."""

    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        h = self.norm(x)
        h = self.up(h)
        h = torch.nn.functional.silu(h)
        h = self.down(h)
        return x + h


tokens = 64
width = 256
hidden = 1024


def get_inputs():
    return [torch.randn(tokens, width)]


def get_init_inputs():
    return [width, hidden]
