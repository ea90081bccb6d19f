"""A task big enough for GPU timing checks: a * 2 + b over 8192 x 8192."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a * 2 + b


def get_inputs():
    return [torch.randn(8192, 8192), torch.randn(8192, 8192)]


def get_init_inputs():
    return []
