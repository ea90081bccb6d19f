"""Honest, against inplace_reference_task.py: the reference's own code, which changes its input in place
(``nn.ReLU(inplace=True)`` first) as the reference does. Not a cheat."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(x) * 2
