"""Class 10, control: the honest candidate for inf_task.py."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.log(x.abs())
        y[:, 0] = float("-inf")
        y[:, 1] = float("inf")
        y[:, 2] = float("nan")
        return y
