"""Class 3: change torch itself so that the reference agrees with a wrong answer."""
import torch
import torch.nn as nn

_add = torch.Tensor.__add__
torch.Tensor.__add__ = lambda self, other: _add(self, other) * 0  # the reference computes a*2 + b
torch.Tensor.__mul__ = lambda self, other: torch.zeros_like(self)
torch.add = lambda *a, **k: torch.zeros_like(a[0])


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.zeros_like(a)
