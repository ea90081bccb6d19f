"""Honest: one preallocated output buffer, written in place every call (as a CUDA graph's static output)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, a, b):
        if self.out is None or self.out.shape != a.shape:
            self.out = torch.empty_like(a)
        torch.mul(a, 2, out=self.out)
        return self.out.add_(b)
