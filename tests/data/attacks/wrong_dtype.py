"""Class 10: the right values in a wider dtype."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return (a * 2 + b).double()
