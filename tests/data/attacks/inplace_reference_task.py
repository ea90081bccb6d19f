"""A task whose reference changes its input in place (as nn.ReLU(inplace=True) first does)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(x) * 2


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
