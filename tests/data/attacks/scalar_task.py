"""A task whose reference returns a Python number: the dot product of two float32 vectors, as ``.item()``."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return (a * b).sum().item()


def get_inputs():
    return [torch.randn(1 << 20), torch.randn(1 << 20)]


def get_init_inputs():
    return []
