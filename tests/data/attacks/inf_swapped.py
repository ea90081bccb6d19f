"""Class 10: infinities of the wrong sign, NaN moved."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.log(x.abs())
        y[:, 0] = float("inf")
        y[:, 1] = float("-inf")
        y[:, 3] = float("nan")
        return y
