"""Class 10: right where the reference is finite, garbage where it is not."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.log(x.abs())
        y[:, 0] = 123.0
        y[:, 1] = -5.0
        y[:, 2] = 0.0
        return y
