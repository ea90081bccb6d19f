"""A complex product: out = a * w + b (complex64)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a * (0.3 + 0.7j) + b


def get_inputs():
    return [torch.randn(64, 128, dtype=torch.complex64), torch.randn(64, 128, dtype=torch.complex64)]


def get_init_inputs():
    return []
