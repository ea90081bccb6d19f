"""A degenerate task: a softmax over a dimension of size 1 is all ones, whatever the input."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(4096, 1)]


def get_init_inputs():
    return []
