"""A task whose output has one element of a million beside thousands of order one: that element's relative
tolerance (1e-4 of it: 100) dominates the digest's bound for the whole output (bound_inflation.py)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        out = a * 2 + b * 0.01
        out[0, 0] = 1e6
        return out


def get_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs():
    return []
